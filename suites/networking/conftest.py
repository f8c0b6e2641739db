"""Fixtures of the networking and DNS suites; the framework they wire is ``wincon.network``.

Everything set up here runs for real on any cluster, simulated or not: pods are created, pinned to the
intended node and operating system, and waited for; Services get their addresses; Endpoints and
EndpointSlices are checked to list the pods. Only the traffic checks themselves (``checks``, a
``wincon.network.flows.FlowChecks``) pass through the data-plane gate.

Fixtures are module-scoped: each test module gets its own namespace, netserver pods and Services, as
upstream's networking tests do (k/k test/e2e/framework/network/utils.go): one ``netserver-N`` pod per
Windows node (at least two), and a ``client`` pod that is asked to dial the targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from wincon import connectivity as conn
from wincon.fixtures import make_namespace, module_prefix
from wincon.kube import Kube
from wincon.network import pods, services
from wincon.network.flows import FlowChecks
from wincon.network.objects import NetworkObjects
from wincon.network.pods import APP_LABEL, SUBDOMAIN, PodRef, pod_ref
from wincon.network.services import ClusterDns, ServiceRef
from wincon.profile import NodeProfile


@pytest.fixture(scope="module")
def namespace(request: pytest.FixtureRequest, wincon: Any) -> Iterator[str]:
    """One namespace per test module (not per test, as in the other suites): the module's netservers,
    clients and Services live there for all its tests, as upstream's networking tests share them."""
    yield from make_namespace(request, wincon, module_prefix(request))


@pytest.fixture(scope="module")
def setup_kube(wincon: Any, namespace: str) -> Iterator[Kube]:
    """The module's client for setup: creates and waits, never runs commands in pods (it has no gate)."""
    kube = Kube(wincon, namespace)
    try:
        yield kube
    finally:
        kube.close()


@pytest.fixture(scope="module")
def net(setup_kube: Kube, cluster_dns: ClusterDns) -> NetworkObjects:
    """Pods and Services of the module's own, with the module setup's placement and endpoint checks."""
    return NetworkObjects(setup_kube, cluster_dns.domain)


@pytest.fixture
def checks(kube: Kube) -> FlowChecks:
    """The traffic checks, each through the data-plane gate."""
    return FlowChecks(kube)


# ----------------------------------------------------------------------------- nodes


@pytest.fixture(scope="session")
def windows_nodes(profile: Any) -> list[NodeProfile]:
    """The Ready Windows nodes the checks use (at most MAX_WINDOWS_NODES), in name order."""
    return pods.check_windows_nodes(profile)


@pytest.fixture(scope="session")
def linux_node(profile: Any) -> NodeProfile:
    """A Ready, schedulable Linux worker; skips where the cluster has none."""
    return pods.schedulable_linux_node(profile)


# ----------------------------------------------------------------------------- pods


@pytest.fixture(scope="module")
def netservers(net: NetworkObjects, windows_nodes: list[NodeProfile]) -> list[PodRef]:
    """``netserver-N`` on every Windows node in turn, at least two: the endpoints of every check."""
    count = max(2, len(windows_nodes))
    manifests = [
        net.windows_netexec_manifest(
            f"netserver-{i}", windows_nodes[i % len(windows_nodes)], hostname=f"netserver-{i}", subdomain=SUBDOMAIN
        )
        for i in range(count)
    ]
    started = net.start(manifests)
    return [pod_ref(started[m["metadata"]["name"]], "windows", "netexec") for m in manifests]


@pytest.fixture(scope="module")
def windows_client(net: NetworkObjects, windows_nodes: list[NodeProfile]) -> PodRef:
    """The client pod, on the first Windows node (where netserver-0 runs too)."""
    return net.windows_client("client", windows_nodes[0])


@pytest.fixture(scope="module")
def local_netserver(netservers: list[PodRef], windows_client: PodRef) -> PodRef:
    """The netserver on the client's node."""
    return next(p for p in netservers if p.node == windows_client.node)


@pytest.fixture(scope="module")
def remote_netserver(netservers: list[PodRef], windows_client: PodRef) -> PodRef:
    """A netserver on another Windows node than the client's; skips where the cluster has one Windows node."""
    other = next((p for p in netservers if p.node != windows_client.node), None)
    if other is None:
        pytest.skip("the check needs two Ready Windows nodes; the cluster has one")
    return other


@pytest.fixture(scope="module")
def windows_host(net: NetworkObjects, windows_nodes: list[NodeProfile]) -> PodRef:
    """The first Windows node itself, through a HostProcess pod (skips where HostProcess is not allowed)."""
    return net.hostprocess("node-0", windows_nodes[0])


@pytest.fixture(scope="module")
def linux_host(net: NetworkObjects, linux_node: NodeProfile) -> PodRef:
    """A Linux node itself, through a hostNetwork pod (node-side checks from Linux)."""
    manifest = pods.linux_agnhost_manifest(
        net.kube.catalog, "lin-node", linux_node, ["pause"], hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"
    )
    return pod_ref(net.start([manifest])["lin-node"], "linux", "agnhost")


@pytest.fixture(scope="module")
def remote_node(request: pytest.FixtureRequest, windows_nodes: list[NodeProfile], profile: Any) -> PodRef:
    """A node other than the first Windows node, seen from itself: a Linux node, else a second Windows node."""
    if any(pods.schedulable(n) for n in profile.linux_nodes):
        return request.getfixturevalue("linux_host")
    node = pods.second_windows_node(windows_nodes)
    return request.getfixturevalue("net").hostprocess("node-1", node)


@pytest.fixture(scope="module")
def linux_netservers(net: NetworkObjects, linux_node: NodeProfile) -> list[PodRef]:
    """``lin-netserver-0`` and ``-1`` on a Linux worker: the Linux endpoints of the hybrid checks."""
    manifests = [net.linux_netexec(f"lin-netserver-{i}", linux_node) for i in range(2)]
    started = net.start(manifests)
    return [pod_ref(started[m["metadata"]["name"]], "linux", "netexec") for m in manifests]


@pytest.fixture(scope="module")
def linux_client(net: NetworkObjects, linux_node: NodeProfile) -> PodRef:
    """A Linux client pod running netexec on 9080, for dials from Linux."""
    manifest = net.linux_netexec(
        "lin-client", linux_node, http_port=conn.CLIENT_HTTP_PORT, udp_port=None, labels={APP_LABEL: "lin-client"}
    )
    return pod_ref(net.start([manifest])["lin-client"], "linux", "netexec")


# ----------------------------------------------------------------------------- Services


@pytest.fixture(scope="module")
def netserver_service(net: NetworkObjects, netservers: list[PodRef]) -> ServiceRef:
    """ClusterIP Service ``netserver`` over every Windows netserver: TCP 80 and UDP 90."""
    return net.service("service.yaml", netservers, name="netserver", type="ClusterIP")


@pytest.fixture(scope="module")
def headless_service(net: NetworkObjects, netservers: list[PodRef]) -> ServiceRef:
    """Headless Service ``netservers``: the subdomain of the netserver pods' own DNS names."""
    return net.service("service-headless.yaml", netservers, name=SUBDOMAIN)


@pytest.fixture(scope="module")
def nodeport_service(net: NetworkObjects, netservers: list[PodRef]) -> ServiceRef:
    """NodePort Service ``netserver-np`` over every Windows netserver: TCP and UDP node ports."""
    return net.service("service.yaml", netservers, name="netserver-np", type="NodePort")


@pytest.fixture(scope="module")
def alias_service(net: NetworkObjects, netserver_service: ServiceRef) -> ServiceRef:
    """ExternalName ``netserver-alias`` naming the ClusterIP Service's FQDN: a CNAME that needs no outside DNS."""
    return net.service("service-externalname.yaml", None, name="netserver-alias", external_name=netserver_service.fqdn)


@pytest.fixture(scope="module")
def linux_service(net: NetworkObjects, linux_netservers: list[PodRef]) -> ServiceRef:
    """ClusterIP Service ``lin-netserver`` over the Linux netservers."""
    return net.service(
        "service.yaml", linux_netservers, name="lin-netserver", type="ClusterIP", select=net.linux_netservers
    )


@pytest.fixture(scope="session")
def cluster_dns(wincon: Any) -> ClusterDns:
    """The cluster DNS Service IP (kube-system/kube-dns) and the cluster domain CoreDNS serves."""
    return services.cluster_dns(Kube(wincon, "kube-system").core)


@pytest.fixture(scope="session")
def kubernetes_service(wincon: Any) -> ServiceRef:
    """default/kubernetes, the Service every cluster has (the documentation's own example name)."""
    return services.kubernetes_service(Kube(wincon, "default").core)
