"""The local cluster's IP families (wincon/localcluster/ipfamily.py): flags, configurations, objects, detection."""

from __future__ import annotations

import argparse
import ipaddress
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from wincon.clusterinfo.profile import node_pod_cidrs, service_families
from wincon.commandline.errors import UsageError
from wincon.localcluster import cli, cluster, cni, dataplane, ipfamily, netns, paths
from wincon.localcluster.topology import Topology

ULA = ipaddress.ip_network("fd00::/8")


def _plan(family: str) -> dataplane.Plan:
    nodes = [dataplane.RealNode(f"worker-{i}", i, f"172.30.9.{2 + i}", f"10.244.{2 + i}.0/24") for i in range(2)]
    return dataplane.Plan("wincon-h5", "172.30.9.0/24", "172.30.9.1", "172.30.9.254", nodes, ip_family=family)


def _kwokctl(plan: dataplane.Plan, tmp_path: Path) -> dict:
    with mock.patch.object(paths, "kwok_cluster_dir", lambda name: Path("/k")):
        doc = next(
            yaml.safe_load_all(cluster._kwokctl_config(tmp_path, plan, Topology(ip_family=plan.ip_family)).read_text())
        )
    flags = {p["name"]: {a["key"]: a["value"] for a in p["extraArgs"]} for p in doc["componentsPatches"]}
    return {"options": doc["options"], "flags": flags}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["cluster", "up", *argv])


def test_the_flag_defaults_to_ipv4_and_names_the_families():
    assert cli.topology_from_args(_args()).ip_family == "ipv4"
    assert cli.topology_from_args(_args("--ip-family", "dual")).ip_family == "dual"
    with pytest.raises(SystemExit):
        _args("--ip-family", "ipv5")


def test_a_family_other_than_ipv4_needs_the_real_data_plane():
    with pytest.raises(UsageError, match="needs the real Linux data plane"):
        Topology(dataplane="none", ip_family="dual")
    with pytest.raises(UsageError, match="unknown IP family"):
        Topology(ip_family="both")


def test_the_ipv4_record_is_as_before_and_other_families_are_recorded():
    assert "ip_family" not in Topology().to_dict()
    assert "ip_family" not in _plan("ipv4").to_dict()
    dual = Topology(ip_family="dual")
    assert dual.to_dict()["ip_family"] == "dual"
    assert Topology.from_dict(dual.to_dict()) == dual
    assert dataplane.Plan.from_dict(_plan("ipv6").to_dict()).ip_family == "ipv6"


def test_ipv4_changes_no_flag_and_no_configuration(tmp_path):
    plan = _plan("ipv4")
    config = _kwokctl(plan, tmp_path)
    assert "service-cluster-ip-range" not in config["flags"]["kube-apiserver"]
    assert config["flags"]["kube-controller-manager"] == {"leader-elect": "false"}  # no family flag beside it
    assert config["options"]["kubeApiserverCertSANs"] == ["172.30.9.1", "10.0.0.1"]
    node = plan.nodes[0]
    ipam = json.loads(dataplane._cni_config(plan, node, tmp_path))["plugins"][0]["ipam"]
    assert ipam["ranges"] == [[{"subnet": "10.244.2.0/24"}]] and ipam["routes"] == [{"dst": "0.0.0.0/0"}]
    assert ipfamily.node_ips(plan, node) == "172.30.9.2"
    assert yaml.safe_load(dataplane._proxy_config(node, tmp_path, plan))["clusterCIDR"] == "10.244.0.0/16"
    assert dataplane.egress_ranges(plan) == ["10.244.0.0/16", "10.0.0.0/24", "172.30.9.0/24", "10.224.0.0/16"]
    objects = cni.objects("flannel-vxlan", "v1.34.4")
    assert ipfamily.adjust_objects(json.loads(json.dumps(objects)), "ipv4") == objects
    assert Topology().nodes("v1.34.4")[0]["spec"]["podCIDRs"] == ["10.244.0.0/24"]


def test_dual_gives_the_control_plane_both_ranges_ipv4_first(tmp_path):
    config = _kwokctl(_plan("dual"), tmp_path)
    assert config["flags"]["kube-apiserver"]["service-cluster-ip-range"] == "10.0.0.0/24,fd00:10:96::/112"
    assert config["flags"]["kube-apiserver"]["advertise-address"] == "172.30.9.1"  # IPv4 stays primary
    manager = config["flags"]["kube-controller-manager"]
    assert manager["cluster-cidr"] == "10.244.0.0/16,fd00:10:244::/56"
    assert manager["node-cidr-mask-size-ipv4"] == "24" and manager["node-cidr-mask-size-ipv6"] == "64"
    assert "fd00:10:96::1" in config["options"]["kubeApiserverCertSANs"]


def test_ipv6_advertises_the_bridge_s_ipv6_gateway(tmp_path):
    config = _kwokctl(_plan("ipv6"), tmp_path)
    assert config["flags"]["kube-apiserver"]["service-cluster-ip-range"] == "fd00:10:96::/112"
    # The API server refuses a primary Service range of another family than its advertised address.
    assert config["flags"]["kube-apiserver"]["advertise-address"] == "fd00:172:30:9::1"
    assert config["flags"]["kube-controller-manager"]["cluster-cidr"] == "fd00:10:244::/56"
    assert "node-cidr-mask-size-ipv4" not in config["flags"]["kube-controller-manager"]


def test_dual_nodes_get_an_address_a_pod_subnet_and_a_default_route_of_each_family(tmp_path):
    plan = _plan("dual")
    node = plan.nodes[1]
    ipam = json.loads(dataplane._cni_config(plan, node, tmp_path))["plugins"][0]["ipam"]
    assert ipam["ranges"] == [[{"subnet": "10.244.3.0/24"}], [{"subnet": "fd00:10:244:3::/64"}]]
    assert ipam["routes"] == [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
    assert ipfamily.node_ips(plan, node) == "172.30.9.3,fd00:172:30:9::3"
    proxy = yaml.safe_load(dataplane._proxy_config(node, tmp_path, plan))
    assert proxy["clusterCIDR"] == "10.244.0.0/16,fd00:10:244::/56"
    kubelet = yaml.safe_load(dataplane._kubelet_config(plan, node, tmp_path, "/x"))
    assert kubelet["clusterDNS"] == ["10.0.0.10"] and kubelet["address"] == "172.30.9.3"
    ranges = dataplane.egress_ranges(plan)
    assert {"fd00:10:244::/56", "fd00:10:96::/112", "fd00:172:30:9::/64"} <= set(ranges)


def test_ipv6_nodes_serve_and_resolve_over_ipv6(tmp_path):
    plan = _plan("ipv6")
    node = plan.nodes[0]
    ipam = json.loads(dataplane._cni_config(plan, node, tmp_path))["plugins"][0]["ipam"]
    assert ipam["ranges"] == [[{"subnet": "fd00:10:244:2::/64"}]] and ipam["routes"] == [{"dst": "::/0"}]
    kubelet = yaml.safe_load(dataplane._kubelet_config(plan, node, tmp_path, "/x"))
    assert kubelet["clusterDNS"] == ["fd00:10:96::a"] and kubelet["address"] == "fd00:172:30:9::2"
    assert ipfamily.node_ips(plan, node) == "fd00:172:30:9::2"
    objects = ipfamily.adjust_objects(cni.objects("flannel-vxlan", "v1.34.4"), "ipv6")
    dns = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "kube-dns")
    assert dns["spec"]["clusterIP"] == "fd00:10:96::a" and dns["spec"]["ipFamilies"] == ["IPv6"]


def test_kube_proxy_s_configmap_names_both_cluster_cidrs_on_dual():
    objects = ipfamily.adjust_objects(cni.objects("flannel-vxlan", "v1.34.4"), "dual")
    conf = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kube-proxy")
    assert "clusterCIDR: 10.244.0.0/16,fd00:10:244::/56\n" in conf["data"]["config.conf"]


def test_simulated_nodes_carry_a_pod_cidr_of_each_family():
    nodes = Topology(ip_family="dual").nodes("v1.34.4")
    assert [n["spec"]["podCIDRs"] for n in nodes] == [
        ["10.244.0.0/24", "fd00:10:244::/64"],
        ["10.244.1.0/24", "fd00:10:244:1::/64"],
    ]
    v6 = Topology(ip_family="ipv6").nodes("v1.34.4")[0]
    assert v6["spec"]["podCIDRs"] == ["fd00:10:244::/64"] and v6["spec"]["podCIDR"] == "fd00:10:244::/64"


def test_every_ipv6_range_is_unique_local_and_the_host_prohibits_them():
    plan = _plan("dual")
    ranges = [*ipfamily.PROHIBITED6, ipfamily.POD_RANGE6, str(ipfamily.node_subnet6(plan.subnet))]
    assert all(ipaddress.ip_network(r).subnet_of(ULA) for r in ranges)
    assert set(ipfamily.PROHIBITED6) == {"fd00:10:244::/56", "fd00:10:96::/112", "fd00:10:224::/64"}
    # The node /64 and the pod /64s are distinct per cluster subnet and per node.
    assert ipfamily.node_subnet6("172.30.9.0/24") != ipfamily.node_subnet6("172.30.10.0/24")
    assert ipfamily.pod_cidr6("10.244.2.0/24") != ipfamily.pod_cidr6("10.244.3.0/24")
    assert all(ipaddress.ip_network(ipfamily.pod_cidr6(f"10.244.{n}.0/24")).subnet_of(
        ipaddress.ip_network(ipfamily.POD_RANGE6)) for n in (0, 255))  # fmt: skip


def test_the_host_s_ipv6_routes_and_rules_are_made_and_removed_by_the_cluster_s_commands():
    calls: list[list[str]] = []

    def run(args: list[str], **kw: object) -> str:
        calls.append(args)
        return ""

    bridge, metric = netns.bridge_name("wincon-h5"), netns.route_metric("wincon-h5")
    ipfamily.prepare_host(_plan("ipv4"), run, bridge, metric)
    assert calls == []  # nothing for ipv4
    ipfamily.prepare_host(_plan("dual"), run, bridge, metric)
    ipfamily.delete_host(run, metric)
    added = [c for c in calls if c[:4] == ["ip", "-6", "route", "add"]]
    deleted = [c for c in calls if c[:4] == ["ip", "-6", "route", "delete"]]
    assert sorted(c[5] for c in added) == sorted(ipfamily.PROHIBITED6) == sorted(c[5] for c in deleted)
    assert all(c[4] == "prohibit" and "metric" in c for c in added + deleted)
    assert ["ip", "-6", "addr", "add", "fd00:172:30:9::1/64", "dev", "wc" + calls[0][6][2:8] + "br", "nodad"] == calls[
        0
    ]


def test_the_leftover_check_reads_ipv6_routes_and_ip6tables_rules():
    metric = netns.route_metric("wincon-h5")
    outputs = {
        (
            "ip",
            "-6",
            "route",
            "show",
            "type",
            "prohibit",
        ): f"prohibit fd00:10:244::/56 dev lo metric {metric} pref medium\n"
        "prohibit fd00:10:244::/56 dev lo metric 1 pref medium\n",
        ("ip6tables", "-w", "-t", "nat", "-S"): '-A PREROUTING -m comment --comment "wincon:wincon-h5" -j ACCEPT\n',
        (
            "ip6tables",
            "-w",
            "-t",
            "filter",
            "-S",
        ): "-P INPUT ACCEPT\n-A FORWARD -m comment --comment wincon:wincon-h5 -j DROP\n",
    }

    def run(args: list[str], **kw: object) -> str:
        return outputs.get(tuple(args), "")

    assert ipfamily.host_routes6(run, metric) == [f"prohibit fd00:10:244::/56 dev lo metric {metric} pref medium"]
    assert ipfamily.host_ip6tables_rules(run, netns.comment("wincon-h5")) == [
        "filter -A FORWARD -m comment --comment wincon:wincon-h5 -j DROP",  # quoted or not, as iptables -S prints
        'nat -A PREROUTING -m comment --comment "wincon:wincon-h5" -j ACCEPT',
    ]
    assert ipfamily.host_ip6tables_rules(run, netns.comment("wincon-h")) == []  # another cluster's name


def test_node_namespace_gets_ipv6_routes_forwarding_and_masquerade():
    calls: list[tuple[list[str], str | None]] = []
    plan = _plan("dual")

    def run(args: list[str], netns: str | None = None, **kw: object) -> str:
        calls.append((args, netns))
        return ""

    ipfamily.prepare_node(_plan("ipv4"), plan.nodes[0], "ns0", run)
    assert calls == []
    ipfamily.prepare_node(plan, plan.nodes[0], "ns0", run)
    text = [" ".join(a) for a, ns in calls]
    assert all(ns == "ns0" for _, ns in calls)
    assert "ip -6 addr add fd00:172:30:9::2/64 dev eth0 nodad" in text
    assert "ip -6 route add fd00:10:244:3::/64 via fd00:172:30:9::3" in text
    assert "ip -6 route add fd00:10:96::/112 via fd00:172:30:9::1" in text
    assert any(t.startswith("ip6tables -w -t nat -A POSTROUTING -s fd00:10:244::/56") for t in text)
    assert any("net/ipv6/conf/all/forwarding" in t for t in text)


@pytest.mark.parametrize(
    ("primary", "cidrs", "expected"),
    [
        (["IPv4"], ["10.0.0.0/24", "fd00:10:96::/112"], ["IPv4", "IPv6"]),  # dual: the Service is single-stack
        (["IPv6"], ["fd00:10:96::/112"], ["IPv6"]),
        (["IPv4"], [], ["IPv4"]),  # no ServiceCIDR readable: the Service's family alone
        ([], [], []),
    ],
)
def test_the_profile_reads_the_families_of_the_service_ranges(primary, cidrs, expected):
    assert service_families(primary, cidrs) == expected


def _through_the_forwarder(backend: Any, request: bytes, *, eof: bool) -> bytes:
    """What a client reads back (to the end) after sending ``request`` (then EOF, with ``eof``) through the
    forwarder to a server running ``backend``."""
    import asyncio

    async def scenario() -> bytes:
        server = await asyncio.start_server(backend, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        # The forwarder listens on another loopback address at the same port, as it does on the IPv6 gateway.
        front = await asyncio.start_server(lambda r, w: ipfamily._forward_one(port, r, w), "127.0.0.2", port)
        reader, writer = await asyncio.open_connection("127.0.0.2", port)
        writer.write(request)
        if eof:
            writer.write_eof()
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        front.close()
        server.close()
        return data

    return asyncio.run(scenario())


def test_the_forwarder_forwards_to_the_loopback_port():
    async def echo_line(reader: Any, writer: Any) -> None:
        writer.write(b"got " + await reader.readline())
        await writer.drain()
        writer.close()

    assert _through_the_forwarder(echo_line, b"hello\n", eof=False) == b"got hello\n"


def test_the_forwarder_passes_the_clients_eof_on_and_still_carries_the_answer():
    """A request ended by the client's EOF (a half-close) still gets its answer: the EOF reaches the backend and
    the connection stays open the other way until the backend has answered and closed."""

    async def answer_after_eof(reader: Any, writer: Any) -> None:
        writer.write(b"read " + await reader.read())  # to EOF
        await writer.drain()
        writer.close()

    got = _through_the_forwarder(answer_after_eof, b"everything", eof=True)
    assert got == b"read everything", got


def test_add_ons_start_on_the_families_they_declare():
    import io
    from types import SimpleNamespace

    out = io.StringIO()
    plain = SimpleNamespace(NAME="metrics-server")
    anywhere = SimpleNamespace(NAME="x", IP_FAMILIES=ipfamily.FAMILIES)
    assert ipfamily.serves(plain, "ipv4", out) and ipfamily.serves(plain, "dual", out)
    assert out.getvalue() == ""
    assert not ipfamily.serves(plain, "ipv6", out)
    assert out.getvalue() == "not starting metrics-server on this ipv6 cluster: it is set up for ipv4, dual only\n"
    assert ipfamily.serves(anywhere, "ipv6", out)


def test_without_service_cidrs_the_nodes_pod_cidrs_stand_in():
    nodes = [
        {"spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24", "fd00:10:244::/64"]}},
        {"spec": {"podCIDR": "10.244.1.0/24"}},
        {"spec": {}},
    ]
    assert node_pod_cidrs(nodes) == ["10.244.0.0/24", "fd00:10:244::/64", "10.244.1.0/24"]
    assert service_families(["IPv4"], node_pod_cidrs(nodes)) == ["IPv4", "IPv6"]
    assert service_families(["IPv4"], node_pod_cidrs(nodes[1:])) == ["IPv4"]
    # The simulated nodes of a dual local cluster carry both, as a dual-stack cluster's node IPAM gives them.
    assert service_families(["IPv4"], node_pod_cidrs(Topology(ip_family="dual").nodes("v1.34.4"))) == ["IPv4", "IPv6"]


def test_the_profile_falls_back_to_node_pod_cidrs_where_service_cidrs_cannot_be_listed():
    from kubernetes.client.rest import ApiException

    from wincon.clusterinfo import profile

    core = mock.Mock()
    core.read_namespaced_service.return_value.spec.ip_families = ["IPv4"]
    nodes = [{"spec": {"podCIDRs": ["10.244.0.0/24", "fd00:10:244::/64"]}}]
    with mock.patch("kubernetes.client.NetworkingV1Api") as networking:
        networking.return_value.list_service_cidr.side_effect = ApiException(status=403)
        assert profile._service_ip_families(core, nodes) == ["IPv4", "IPv6"]
        networking.return_value.list_service_cidr.side_effect = None
        networking.return_value.list_service_cidr.return_value.items = [mock.Mock(spec=["spec"])]
        networking.return_value.list_service_cidr.return_value.items[0].spec.cidrs = ["10.0.0.0/24"]
        assert profile._service_ip_families(core, nodes) == ["IPv4"]  # the Service ranges win where readable


def test_the_single_controller_manager_and_scheduler_elect_no_leader(tmp_path):
    """A missed lease renewal under load ends an electing controller-manager, and kwokctl starts none again; with one
    instance there is nothing to elect. The family flags still reach the controller-manager beside it."""
    for family in ("ipv4", "dual"):
        config = _kwokctl(_plan(family), tmp_path)
        assert config["flags"]["kube-controller-manager"]["leader-elect"] == "false"
        assert config["flags"]["kube-scheduler"]["leader-elect"] == "false"
    assert config["flags"]["kube-controller-manager"]["cluster-cidr"] == "10.244.0.0/16,fd00:10:244::/56"
