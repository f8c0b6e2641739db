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

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from wincon.cluster import waves
from wincon.cluster.kube import Kube
from wincon.clusterinfo.nodes import target_os as target_os_of
from wincon.clusterinfo.profile import NodeProfile
from wincon.commandline.errors import SuiteError
from wincon.network import modulepods, pods, services
from wincon.network.flows import FlowChecks
from wincon.network.modulepods import ModulePods, Plan
from wincon.network.objects import NetworkObjects
from wincon.network.pods import APP_LABEL, LINUX_SUBDOMAIN, SUBDOMAIN, PodRef, pod_ref
from wincon.network.services import ClusterDns, ServiceRef
from wincon.session.fixtures import make_namespace, module_prefix
from wincon.windows import connectivity as conn


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


@pytest.fixture(scope="session")
def linux_workers(profile: Any, linux_node: NodeProfile) -> list[NodeProfile]:
    """The Ready, schedulable Linux workers (at most MAX_WINDOWS_NODES), ``linux_node`` first."""
    others = sorted(
        (n for n in profile.linux_nodes if pods.schedulable(n) and n.name != linux_node.name), key=lambda n: n.name
    )
    return [linux_node, *others][: pods.MAX_WINDOWS_NODES]


# ----------------------------------------------------------------------------- pods


@pytest.fixture(scope="module")
def module_pods(request: pytest.FixtureRequest, net: NetworkObjects, pod_wave: waves.Wave) -> ModulePods:
    """The module's netservers, client and host pod of each OS, each started once, together with what else the
    check that first needs it needs of them (wincon.network.modulepods): created before any is awaited."""

    def nodes(os_name: str) -> list[NodeProfile]:
        return request.getfixturevalue("windows_nodes" if os_name == "windows" else "linux_workers")

    def servers(os_name: str) -> Plan:
        placed = modulepods.nodes_for_servers(nodes(os_name))
        if os_name == "windows":
            manifests = [
                net.windows_netexec_manifest(f"netserver-{i}", node, hostname=f"netserver-{i}", subdomain=SUBDOMAIN)
                for i, node in enumerate(placed)
            ]
        else:
            manifests = [
                net.linux_netexec(f"lin-netserver-{i}", node, hostname=f"lin-netserver-{i}", subdomain=LINUX_SUBDOMAIN)
                for i, node in enumerate(placed)
            ]
        names = [m["metadata"]["name"] for m in manifests]
        return Plan(manifests, lambda started: [pod_ref(started[n], os_name, "netexec") for n in names])

    def client(os_name: str) -> Plan:
        node = nodes(os_name)[0]
        if os_name == "windows":
            manifest, has_tools = pods.windows_client_manifest(net.kube.catalog, "client", node)
            tools = "tools" if has_tools else None
            return Plan([manifest], lambda started: pod_ref(started["client"], "windows", "netexec", tools=tools))
        manifest = net.linux_netexec(
            "lin-client", node, http_port=conn.CLIENT_HTTP_PORT, udp_port=None, labels={APP_LABEL: "lin-client"}
        )
        return Plan([manifest], lambda started: pod_ref(started["lin-client"], "linux", "netexec"))

    def host(os_name: str) -> Plan:
        """The first Windows node itself (a HostProcess pod ``node-0``; its create skips where HostProcess is not
        allowed), or ``linux_node`` itself (a hostNetwork pod ``lin-node``, see start_linux_host)."""
        if os_name == "windows":
            manifest = pods.hostprocess_manifest(net.kube.catalog, "node-0", nodes("windows")[0])
            return Plan(
                [manifest],
                lambda started: pod_ref(started["node-0"], "windows", "host", tools="host"),
                create=lambda m: pods.create_hostprocess(net.kube, m),
            )
        manifest = linux_host_manifest(net, "lin-node", request.getfixturevalue("linux_node"))
        return Plan([manifest], lambda started: pod_ref(started["lin-node"], "linux", "agnhost"))

    def wanted(item: Any) -> set[tuple[str, str]]:
        """What the asking check needs, and of its OS what the module's checks after it on this worker need: the
        module's pods of that OS start in one wave (each still waited for and raising only its own error)."""
        own = target_os_of(item)
        found = set(modulepods.needs(item))
        for later in waves.items_from(item):
            if target_os_of(later) == own:
                found |= {key for key in modulepods.needs(later) if key[1] == own}
        return found

    def later(item: Any) -> set[tuple[str, str]]:
        """What the module's checks of the other OS after the asking one on this worker need: created while the
        asking check (a Linux control, before its Windows twins) runs, awaited by the first that needs each."""
        own = target_os_of(item)
        return {key for i in waves.items_from(item) for key in modulepods.needs(i) if key[1] != own}

    plans = {"servers": servers, "client": client, "host": host}
    return ModulePods(net.kube.create_pod, net.await_each, wanted, plans, later=later)


def asking_item(request: pytest.FixtureRequest) -> Any:
    """The check whose setup asks for a module fixture (pytest's FixtureRequest keeps it as ``_pyfuncitem``)."""
    return getattr(request, "_pyfuncitem", None)


@pytest.fixture(scope="module")
def netservers(request: pytest.FixtureRequest, module_pods: ModulePods) -> list[PodRef]:
    """``netserver-N`` on every Windows node in turn, at least two: the endpoints of every check."""
    return list(module_pods.get("servers", "windows", asking_item(request)))


@pytest.fixture(scope="module")
def windows_client(request: pytest.FixtureRequest, module_pods: ModulePods) -> PodRef:
    """The client pod, on the first Windows node (where netserver-0 runs too)."""
    return module_pods.get("client", "windows", asking_item(request))  # type: ignore[no-any-return]


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
def windows_host(request: pytest.FixtureRequest, module_pods: ModulePods) -> PodRef:
    """The first Windows node itself, through a HostProcess pod (skips where HostProcess is not allowed)."""
    return module_pods.get("host", "windows", asking_item(request))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def linux_host(request: pytest.FixtureRequest, module_pods: ModulePods) -> PodRef:
    """A Linux node itself, through a hostNetwork pod (node-side checks from Linux; see start_linux_host)."""
    return module_pods.get("host", "linux", asking_item(request))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def remote_node(request: pytest.FixtureRequest, windows_nodes: list[NodeProfile], profile: Any) -> PodRef:
    """A node other than the first Windows node, seen from itself: a Linux node, else a second Windows node."""
    if any(pods.schedulable(n) for n in profile.linux_nodes):
        return request.getfixturevalue("linux_host")
    node = pods.second_windows_node(windows_nodes)
    return request.getfixturevalue("net").hostprocess("node-1", node)


@pytest.fixture(scope="module")
def linux_netservers(request: pytest.FixtureRequest, module_pods: ModulePods) -> list[PodRef]:
    """``lin-netserver-N`` on every Linux worker in turn, at least two: the Linux endpoints of the hybrid
    checks and of the Linux controls (hostname and subdomain set, as the Windows netservers')."""
    return list(module_pods.get("servers", "linux", asking_item(request)))


@pytest.fixture(scope="module")
def linux_client(request: pytest.FixtureRequest, module_pods: ModulePods) -> PodRef:
    """A Linux client pod running netexec on 9080, for dials from Linux (on ``linux_node``)."""
    return module_pods.get("client", "linux", asking_item(request))  # type: ignore[no-any-return]


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


# ----------------------------------------------------------------------------- per OS: the Linux controls
#
# A check that takes ``target_os`` runs twice (wincon.session.controls): first as its Linux control between Linux pods
# on the Linux workers, then on Windows. The fixtures below give it the pods, nodes and Services of the OS it
# checks; on Windows they are the very fixtures above (shared with the module's Windows-only checks).


@pytest.fixture(scope="module")
def os_nodes(request: pytest.FixtureRequest, target_os: str) -> list[NodeProfile]:
    """The nodes the item's pods run on: the Windows nodes, or the Linux workers for a control."""
    return request.getfixturevalue("windows_nodes" if target_os == "windows" else "linux_workers")


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest, target_os: str) -> list[PodRef]:
    """The netservers of the item's OS, at least two, spread over its nodes."""
    return request.getfixturevalue("netservers" if target_os == "windows" else "linux_netservers")


@pytest.fixture(scope="module")
def client(request: pytest.FixtureRequest, target_os: str) -> PodRef:
    """The client pod of the item's OS, on the first of its nodes (where ``servers[0]`` runs too)."""
    return request.getfixturevalue("windows_client" if target_os == "windows" else "linux_client")


@pytest.fixture(scope="module")
def local_server(servers: list[PodRef], client: PodRef) -> PodRef:
    """The netserver on the client's node."""
    return next(p for p in servers if p.node == client.node)


@pytest.fixture(scope="module")
def remote_server(servers: list[PodRef], client: PodRef, target_os: str) -> PodRef:
    """A netserver on another node of the item's OS than the client's; skips where there is one such node."""
    other = next((p for p in servers if p.node != client.node), None)
    if other is None:
        pytest.skip(f"the check needs two Ready {target_os.capitalize()} nodes; the cluster has one")
    return other


@pytest.fixture(scope="module")
def host(request: pytest.FixtureRequest, target_os: str) -> PodRef:
    """The client's node itself: a HostProcess pod on Windows, a hostNetwork pod on Linux."""
    return request.getfixturevalue("windows_host" if target_os == "windows" else "linux_host")


@pytest.fixture(scope="module")
def other_host(request: pytest.FixtureRequest, target_os: str, net: NetworkObjects) -> PodRef:
    """A node other than the client's, seen from itself: for Windows ``remote_node``; for a control the
    second Linux worker (skips where there is one)."""
    if target_os == "windows":
        return request.getfixturevalue("remote_node")
    workers: list[NodeProfile] = request.getfixturevalue("linux_workers")
    if len(workers) < 2:
        pytest.skip("the check needs two Ready, schedulable Linux workers; the cluster has one")
    return start_linux_host(net, "lin-node-1", workers[1])


def start_linux_host(net: NetworkObjects, name: str, node: NodeProfile, dial: bool = True, **spec: Any) -> PodRef:
    """A hostNetwork agnhost pod on a Linux node: its commands run in the node's network. With ``dial`` it runs
    netexec (HTTP only) on ``pods.host_dial_port``, whose /dial sends from the node what busybox cannot (UDP)."""
    manifest = linux_host_manifest(net, name, node, dial, **spec)
    return pod_ref(net.start([manifest])[name], "linux", "agnhost")


def linux_host_manifest(
    net: NetworkObjects, name: str, node: NodeProfile, dial: bool = True, **spec: Any
) -> dict[str, Any]:
    """The manifest of ``start_linux_host``'s pod."""
    spec = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", **spec}
    args = (
        ["netexec", f"--http-port={pods.host_dial_port(net.namespace, name)}", "--udp-port=-1"] if dial else ["pause"]
    )
    return pods.linux_agnhost_manifest(net.kube.catalog, name, node, args, **spec)


def current_test() -> str:
    """The test running now (pytest's own record of it), for a wave's ledger of who took which pod."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


@pytest.fixture(scope="module")
def pod_wave(request: pytest.FixtureRequest, net: NetworkObjects) -> waves.Wave:
    """The module's pod wave (``wincon.cluster.waves``): the pods its checks declared with ``waves.pod`` (kinds
    ``client``: ``make_client``'s, ``host``: ``make_host``'s), for each OS they run as (a control's named with
    ``lin-``), created together when the module's first check that asks for it starts; each check takes its own
    from ``make_client`` / ``make_host``. A module that names it in ``usefixtures`` starts it with the module, before
    its shared pods, so those and the declared ones start together."""
    wave = waves.Wave(create=net.kube.create_pod, wait=waves.one_at_a_time(net.await_each))
    first_nodes: dict[str, NodeProfile | None] = {}
    for item, decl in waves.decls_by_item(waves.module_items(request)):
        os_name = target_os_of(item)
        name = ("" if os_name == "windows" else "lin-") + decl.name
        if os_name not in first_nodes:
            try:
                first_nodes[os_name] = request.getfixturevalue(
                    "windows_nodes" if os_name == "windows" else "linux_workers"
                )[0]
            except pytest.skip.Exception:  # no such node: that OS's checks skip in their own setup, as before
                first_nodes[os_name] = None
        node = first_nodes[os_name]
        if node is None:
            continue
        if decl.kind == "client" and os_name == "windows":
            manifest, has_tools = pods.windows_client_manifest(net.kube.catalog, name, node, **decl.spec_dict)
            tools = "tools" if has_tools else None
            wave.add(name, decl, manifest, lambda pod, tools=tools: pod_ref(pod, "windows", "netexec", tools=tools))
        elif decl.kind == "client":
            manifest = net.linux_netexec(name, node, http_port=conn.CLIENT_HTTP_PORT, udp_port=None,
                                         labels={APP_LABEL: name}, **decl.spec_dict)  # fmt: skip
            wave.add(name, decl, manifest, lambda pod: pod_ref(pod, "linux", "netexec"))
        elif decl.kind == "host" and os_name == "windows":
            manifest = pods.hostprocess_manifest(net.kube.catalog, name, node, **decl.spec_dict)
            wave.add(name, decl, manifest, lambda pod: pod_ref(pod, "windows", "host", tools="host"),
                     create=lambda manifest: pods.create_hostprocess(net.kube, manifest))  # fmt: skip
        elif decl.kind == "host":
            manifest = linux_host_manifest(net, name, node, dial=False, **decl.spec_dict)
            wave.add(name, decl, manifest, lambda pod: pod_ref(pod, "linux", "agnhost"))
        else:
            raise SuiteError(f"{item.nodeid} declares a pod of kind {decl.kind!r}", "the kinds are client and host")
    wave.start()
    return wave


@pytest.fixture(scope="module")
def make_client(
    target_os: str, net: NetworkObjects, os_nodes: list[NodeProfile], pod_wave: waves.Wave
) -> Callable[..., PodRef]:
    """``make_client(name, **spec)``: a client pod of its own on the item's OS's first node, started (taken from
    the module's wave where the check declared it)."""

    def make(name: str, **spec: Any) -> PodRef:
        if pod_wave.holds(name, spec):
            return pod_wave.take(name, current_test())
        if target_os == "windows":
            return net.windows_client(name, os_nodes[0], **spec)
        manifest = net.linux_netexec(
            name, os_nodes[0], http_port=conn.CLIENT_HTTP_PORT, udp_port=None, labels={APP_LABEL: name}, **spec
        )
        return pod_ref(net.start([manifest])[name], "linux", "netexec")

    return make


@pytest.fixture(scope="module")
def make_host(
    target_os: str, net: NetworkObjects, os_nodes: list[NodeProfile], pod_wave: waves.Wave
) -> Callable[..., PodRef]:
    """``make_host(name, **spec)``: a node-side pod of its own (HostProcess / hostNetwork) on the first node
    (taken from the module's wave where the check declared it)."""

    def make(name: str, **spec: Any) -> PodRef:
        if pod_wave.holds(name, spec):
            return pod_wave.take(name, current_test())
        if target_os == "windows":
            return net.hostprocess(name, os_nodes[0], **spec)
        return start_linux_host(net, name, os_nodes[0], dial=False, **spec)

    return make


@pytest.fixture(scope="module")
def server_service(request: pytest.FixtureRequest, target_os: str) -> ServiceRef:
    """The ClusterIP Service over ``servers`` (TCP 80, UDP 90)."""
    return request.getfixturevalue("netserver_service" if target_os == "windows" else "linux_service")


@pytest.fixture(scope="module")
def server_headless(request: pytest.FixtureRequest, target_os: str) -> ServiceRef:
    """The headless Service over ``servers``: the subdomain of their own DNS names."""
    return request.getfixturevalue("headless_service" if target_os == "windows" else "linux_headless_service")


@pytest.fixture(scope="module")
def server_nodeport(request: pytest.FixtureRequest, target_os: str) -> ServiceRef:
    """The NodePort Service over ``servers`` (TCP and UDP node ports)."""
    return request.getfixturevalue("nodeport_service" if target_os == "windows" else "linux_nodeport_service")


@pytest.fixture(scope="module")
def server_alias(request: pytest.FixtureRequest, target_os: str) -> ServiceRef:
    """The ExternalName Service naming ``server_service``'s FQDN."""
    return request.getfixturevalue("alias_service" if target_os == "windows" else "linux_alias_service")


@pytest.fixture(scope="module")
def linux_headless_service(net: NetworkObjects, linux_netservers: list[PodRef]) -> ServiceRef:
    """Headless Service ``lin-netservers``: the subdomain of the Linux netserver pods' own DNS names."""
    return net.service("service-headless.yaml", linux_netservers, name=LINUX_SUBDOMAIN, select=net.linux_netservers)


@pytest.fixture(scope="module")
def linux_nodeport_service(net: NetworkObjects, linux_netservers: list[PodRef]) -> ServiceRef:
    """NodePort Service ``lin-netserver-np`` over the Linux netservers."""
    return net.service(
        "service.yaml", linux_netservers, name="lin-netserver-np", type="NodePort", select=net.linux_netservers
    )


@pytest.fixture(scope="module")
def linux_alias_service(net: NetworkObjects, linux_service: ServiceRef) -> ServiceRef:
    """ExternalName ``lin-netserver-alias`` naming the Linux ClusterIP Service's FQDN."""
    return net.service("service-externalname.yaml", None, name="lin-netserver-alias", external_name=linux_service.fqdn)


@pytest.fixture(scope="module")
def server_selector(target_os: str, net: NetworkObjects) -> dict[str, str]:
    """The label selector of ``servers`` (for a Service of a test's own over them)."""
    return net.windows_netservers if target_os == "windows" else net.linux_netservers


@pytest.fixture(scope="module")
def os_prefix(target_os: str) -> str:
    """A prefix for the names of a control's own objects ('lin-'), which share the module's namespace."""
    return "" if target_os == "windows" else "lin-"
