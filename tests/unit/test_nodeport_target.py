"""The NodePort target as upstream picks it from v1.36.3 (test/e2e/windows/service.go:64-67): another Ready,
untainted node's InternalIP in the Service's first IP family; and suites/networking/test_nodeport_target.py on
constructed answers (the node's addresses, the dial's outcome)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.checks.node import internal_ips_of_family, nodeport_target, untainted

SUITE = suites.load("suites/networking/test_nodeport_target.py")


def node(name: str, ready: bool = True, simulated: bool = False, taints: tuple[str, ...] = ()) -> NS:
    return NS(name=name, ready=ready, data_plane=not simulated, taints=taints)


def test_untainted():
    assert untainted(())
    assert untainted(("spot=true:PreferNoSchedule",))
    assert not untainted(("os=windows:NoSchedule",))
    assert not untainted(("node.kubernetes.io/unschedulable:NoSchedule",))
    assert not untainted(("dedicated=x:NoExecute",))


def test_target_is_the_first_ready_untainted_real_node_other_than_the_clients():
    nodes = [
        node("a-notready", ready=False),
        node("b-simulated", simulated=True),
        node("c-tainted", taints=("os=windows:NoSchedule",)),
        node("e-worker"),
        node("d-client"),
        node("f-worker"),
    ]
    assert nodeport_target(nodes, exclude="d-client").name == "e-worker"
    assert nodeport_target(nodes, exclude="e-worker").name == "d-client"
    assert nodeport_target([node("d-client"), node("b", simulated=True)], exclude="d-client") is None


ADDRESSES = [
    {"type": "Hostname", "address": "worker-1"},
    {"type": "ExternalIP", "address": "203.0.113.7"},
    {"type": "InternalIP", "address": "10.244.0.3"},
    {"type": "InternalIP", "address": "fd00::3"},
]


def test_internal_ips_by_family():
    assert internal_ips_of_family(ADDRESSES, "IPv4") == ["10.244.0.3"]
    assert internal_ips_of_family(ADDRESSES, "IPv6") == ["fd00::3"]
    assert internal_ips_of_family([NS(type="InternalIP", address="10.0.0.1")], "IPv4") == ["10.0.0.1"]
    assert internal_ips_of_family(ADDRESSES[:2], "IPv4") == []  # never the ExternalIP (v1.35.4's PickIP took it)


class Checks:
    def __init__(self, reached_all: bool) -> None:
        self.reached_all, self.dialed = reached_all, []

    def dial(self, client, target, port, protocol, expected):
        self.dialed.append((target, port, protocol, sorted(expected)))
        return NS(reached_all=self.reached_all, describe=lambda: "answered by server-0 only")


def run(checks: Checks, addresses: list, families: list[str] | None, nodes: list | None = None) -> None:
    kube = NS(core=NS(read_node=lambda name: NS(status=NS(addresses=addresses))))
    wincon = NS(profile=NS(nodes=nodes or [node("client-node"), node("other-node")]))
    client = NS(node="client-node")
    service = NS(raw=NS(spec=NS(ip_families=families)), node_ports={"http": 30080, "udp": 30081})
    SUITE.test_pod_reaches_nodeport_on_another_nodes_internal_ip(
        kube, wincon, checks, client, service, [NS(name="server-0"), NS(name="server-1")]
    )


def test_every_endpoint_answering_on_the_other_nodes_ip_passes():
    checks = Checks(reached_all=True)
    run(checks, ADDRESSES, ["IPv6", "IPv4"])
    assert checks.dialed == [("fd00::3", 30080, "http", ["server-0", "server-1"])]


def test_a_missing_endpoint_fails():
    with pytest.raises(AssertionError, match="10.244.0.3:30080 on node other-node: answered by server-0 only"):
        run(Checks(reached_all=False), ADDRESSES, ["IPv4"])


def test_no_internal_ip_of_the_family_fails():
    """Upstream asserts the address list non-empty (service.go:67)."""
    with pytest.raises(AssertionError, match="no InternalIP of the Service's family IPv6"):
        run(Checks(reached_all=True), ADDRESSES[:3], ["IPv6"])


def test_no_other_node_skips():
    with pytest.raises(pytest.skip.Exception, match="other than the client's node client-node"):
        run(Checks(reached_all=True), ADDRESSES, ["IPv4"], nodes=[node("client-node")])
