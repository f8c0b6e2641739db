"""The local cluster's egress proxy (wincon/localcluster/egress.py): the API server's CONNECT tunnel into the cluster."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import pytest

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import dataplane, egress


def test_parse_connect_reads_host_and_port_and_refuses_anything_else():
    assert egress.parse_connect(b"CONNECT 10.244.2.6:9080 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") == ("10.244.2.6", 9080)
    assert egress.parse_connect(b"CONNECT [fd00::1]:443 HTTP/1.1\r\n\r\n") == ("fd00::1", 443)
    for bad in (b"GET / HTTP/1.1\r\n\r\n", b"CONNECT 10.0.0.1 HTTP/1.1\r\n\r\n", b"CONNECT a:0 HTTP/1.1\r\n\r\n"):
        with pytest.raises(ValueError):
            egress.parse_connect(bad)


def test_only_addresses_inside_the_given_ranges_are_allowed():
    cidrs = [ipaddress.ip_network(c) for c in ("10.244.0.0/16", "10.0.0.0/24")]
    assert egress.allowed("10.244.2.6", cidrs)
    assert egress.allowed("10.0.0.10", cidrs)
    assert not egress.allowed("10.0.1.1", cidrs)
    assert not egress.allowed("192.0.2.1", cidrs)
    assert not egress.allowed("example.com", cidrs)  # names are never resolved


async def _exchange(sock: Path, request: bytes, payload: bytes = b"") -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(sock))
    writer.write(request + payload)
    await writer.drain()
    if payload:
        writer.write_eof()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return data


def test_the_proxy_tunnels_to_an_allowed_address_and_refuses_others(tmp_path):
    sock = tmp_path / "egress.sock"

    async def scenario() -> tuple[bytes, bytes]:
        async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            w.write(b"echo:" + await r.read())
            await w.drain()
            w.close()

        target = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = target.sockets[0].getsockname()[1]
        proxy = asyncio.create_task(egress.serve(str(sock), ["127.0.0.0/8"]))
        while not sock.exists():
            await asyncio.sleep(0.01)
        tunneled = await _exchange(sock, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), b"hi")
        refused = await _exchange(sock, b"CONNECT 192.0.2.1:80 HTTP/1.1\r\nHost: x\r\n\r\n")
        target.close()
        await target.wait_closed()
        closed = await _exchange(sock, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        proxy.cancel()
        return tunneled, refused, closed, port

    tunneled, refused, closed, port = asyncio.run(scenario())
    assert tunneled == b"HTTP/1.1 200 Connection established\r\n\r\necho:hi"
    assert refused == b"HTTP/1.1 403 192.0.2.1 is outside the cluster's address ranges\r\n\r\n"
    # The dial's own error is in the status line, which the API server quotes in its error.
    assert closed.startswith(f"HTTP/1.1 502 dial tcp 127.0.0.1:{port}: Connection refused".encode()), closed
    assert closed.endswith(b"\r\n\r\n") and closed.count(b"\r\n") == 2, closed
    assert oct(sock.stat().st_mode & 0o777) == "0o600"


def test_relay_carries_both_ways_passes_each_eof_on_and_closes_both_ends():
    async def scenario() -> tuple[bytes, bytes, bool, bool]:
        async def pair() -> tuple[
            asyncio.StreamReader, asyncio.StreamWriter, asyncio.StreamReader, asyncio.StreamWriter
        ]:
            accepted: asyncio.Future = asyncio.get_running_loop().create_future()
            server = await asyncio.start_server(lambda r, w: accepted.set_result((r, w)), "127.0.0.1", 0)
            outer_r, outer_w = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
            inner_r, inner_w = await accepted
            server.close()
            return outer_r, outer_w, inner_r, inner_w

        # a: the client's connection (the relay holds its inner end); b: the upstream's connection, likewise.
        client_r, client_w, a_r, a_w = await pair()
        upstream_r, upstream_w, b_r, b_w = await pair()
        relayed = asyncio.create_task(egress.relay(a_r, a_w, b_r, b_w))
        client_w.write(b"request")
        client_w.write_eof()
        request = await asyncio.wait_for(upstream_r.read(), 5)  # to EOF: the client's half-close came through
        upstream_w.write(b"answer to " + request)
        upstream_w.write_eof()
        answer = await asyncio.wait_for(client_r.read(), 5)
        await asyncio.wait_for(relayed, 5)
        closed = a_w.transport.is_closing(), b_w.transport.is_closing()
        client_w.close()
        upstream_w.close()
        return request, answer, *closed

    assert asyncio.run(scenario()) == (b"request", b"answer to request", True, True)


def test_the_api_servers_egress_selector_names_the_proxy_socket(tmp_path):
    plan = dataplane.Plan("wincon-h6", "172.30.9.0/24", "172.30.9.1", "172.30.9.254")
    path = dataplane.write_egress_config(plan, tmp_path)
    import yaml

    doc = yaml.safe_load(path.read_text())
    assert doc["kind"] == "EgressSelectorConfiguration"
    (selection,) = doc["egressSelections"]
    assert selection["name"] == "cluster"
    assert selection["connection"] == {
        "proxyProtocol": "HTTPConnect",
        "transport": {"uds": {"udsName": str(dataplane.egress_socket("wincon-h6"))}},
    }
    assert dataplane.egress_ranges(plan) == ["10.244.0.0/16", "10.0.0.0/24", "172.30.9.0/24", "10.224.0.0/16"]


def _plan(name: str) -> dataplane.Plan:
    return dataplane.Plan(
        name,
        "172.30.9.0/24",
        "172.30.9.1",
        "172.30.9.254",
        [dataplane.RealNode("worker-0", 0, "172.30.9.2", "10.244.2.0/24")],
    )


def test_a_kubelet_socket_path_too_long_is_refused_before_anything_starts_naming_the_fix(tmp_path, monkeypatch):
    """The first fresh-check run (cache /tmp/wincon-fresh.XXXXXX/wincon-cache, cluster fresh-<hex>-ipf) started the
    control plane, then worker-0's kubelet exited with 'bind: invalid argument' on its pod-resources socket (115 bytes).
    Now writing the API server's configuration refuses such a plan with the path, its length and the fix."""
    monkeypatch.setenv("WINCON_CACHE", "/tmp/wincon-fresh.x6Gdrr/wincon-cache")
    with pytest.raises(LocalClusterError) as refused:
        dataplane.write_egress_config(_plan("fresh-3130ce-ipf"), tmp_path)
    message = str(refused.value)
    assert "worker-0/kubelet/pod-resources/0000000000 would be 115 bytes" in message
    assert "8 characters shorter (--cluster-name)" in refused.value.fix and "WINCON_CACHE" in refused.value.fix
    assert not (tmp_path / dataplane.EGRESS_CONFIG_FILE).exists()


def test_a_kubelet_socket_path_that_fits_is_taken(tmp_path, monkeypatch):
    """The counter-case: the same cluster under the fresh-check's short cache, and the default cache's longest name."""
    monkeypatch.setenv("WINCON_CACHE", "/tmp/wf.XHjLpq/c")
    assert dataplane.write_egress_config(_plan("fd590da-ipf"), tmp_path).is_file()
    monkeypatch.setenv("WINCON_CACHE", "/root/.cache/wincon")
    assert dataplane.write_egress_config(_plan("w" * 26), tmp_path).is_file()  # 107 bytes
    with pytest.raises(LocalClusterError, match="108 bytes"):
        dataplane.write_egress_config(_plan("w" * 27), tmp_path)
