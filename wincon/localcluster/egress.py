"""The API server's way into the cluster: an HTTP CONNECT proxy on a Unix socket, inside a real node's namespace.

On a real cluster the API server reaches pods and Services (``pods/proxy``, ``services/proxy``, admission
webhooks, aggregated APIs such as metrics-server) over the cluster network. Here the API server runs in the
host's network namespace, and every local cluster on this machine uses the same pod and Service ranges, so a
host route into one cluster would steal another's addresses; the host keeps rejecting those ranges instead.
The API server's ``cluster`` egress (its EgressSelectorConfiguration, protocol HTTPConnect over a Unix socket,
as konnectivity is used by clusters whose control plane sits outside the node network) dials through this
proxy, which runs inside the first real node's namespace: there the pod subnets are routed node to node and
kube-proxy's rules translate Service addresses, as on the node a kind control plane runs on.

The proxy only opens connections to the address ranges it is given (the pod range, the Service range and the
cluster's node network); anything else is answered ``403``. Those ranges have no route off the machine.

Run as ``python3 -m wincon.localcluster.egress SOCKET CIDR [CIDR...]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import sys
from collections.abc import Sequence

CONNECT_TIMEOUT = 10.0
MAX_HEAD = 8192


def parse_connect(head: bytes) -> tuple[str, int]:
    """``CONNECT host:port HTTP/1.1`` -> (host, port); a ValueError for anything else."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"not a CONNECT request: {line[:100]!r}")
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"no host:port in {parts[1][:100]!r}")
    return host.strip("[]"), int(port)


def allowed(host: str, cidrs: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    """Whether ``host`` is an address inside one of ``cidrs`` (names are refused: nothing is resolved here)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in cidr for cidr in cidrs)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def relay(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy what end a sends to end b and back until both have finished sending (an end's EOF is passed on as a
    half-close, so a request ended by EOF still gets its answer), then close both. The egress proxy's tunnel and
    the IPv6 API forwarder (ipfamily.py) both relay with this."""
    try:
        await asyncio.gather(_pipe(a_reader, b_writer), _pipe(b_reader, a_writer))
    finally:
        for writer in (a_writer, b_writer):
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()


async def _handle(
    cidrs: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network],
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
) -> None:
    upstream_w: asyncio.StreamWriter | None = None
    try:
        try:
            head = await asyncio.wait_for(client_r.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
            host, port = parse_connect(head[:MAX_HEAD])
        except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as exc:
            client_w.write(f"HTTP/1.1 400 Bad Request\r\n\r\n{exc}\n".encode())
            return
        if not allowed(host, cidrs):
            client_w.write(f"HTTP/1.1 403 {host} is outside the cluster's address ranges\r\n\r\n".encode())
            return
        try:
            upstream_r, upstream = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            # The reason goes in the status line: the API server's error quotes that line, not the body.
            why = os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__  # "Connection refused"
            reason = " ".join(f"dial tcp {host}:{port}: {why}".split())
            client_w.write(f"HTTP/1.1 502 {reason}\r\n\r\n".encode())
            return
        upstream_w = upstream
        client_w.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await client_w.drain()
        await relay(client_r, client_w, upstream_r, upstream)
    except (ConnectionError, OSError):
        pass
    finally:
        for writer in (client_w, upstream_w):
            if writer is not None:
                with contextlib.suppress(OSError, RuntimeError):
                    writer.close()


async def serve(socket_path: str, cidrs: Sequence[str]) -> None:
    """Serve CONNECT requests on ``socket_path`` (mode 0600) until cancelled."""
    networks = [ipaddress.ip_network(c) for c in cidrs]
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)
    server = await asyncio.start_unix_server(lambda r, w: _handle(networks, r, w), path=socket_path)
    os.chmod(socket_path, 0o600)
    async with server:
        await server.serve_forever()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: python3 -m wincon.localcluster.egress SOCKET CIDR [CIDR...]", file=sys.stderr)
        return 2
    asyncio.run(serve(args[0], args[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
