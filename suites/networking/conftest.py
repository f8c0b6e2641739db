"""Shared setup of the networking and DNS suites.

Everything here runs for real on any cluster, simulated or not: pods are created, pinned to the intended
node and operating system, and waited for; Services get their addresses; Endpoints and EndpointSlices are
checked to list the pods. Only the traffic checks themselves pass through the ``data_plane`` gate, which
the ``Checks`` helper calls before it runs any command in a pod.

Fixtures are module-scoped: each test module gets its own namespace, netserver pods and Services, as
upstream's networking tests do (k/k test/e2e/framework/network/utils.go): one ``netserver-N`` pod running
``agnhost netexec --http-port=8083 --udp-port=8081`` per Windows node (at least two), and a ``client`` pod
running ``netexec --http-port=9080`` that is asked to dial the targets.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from packaging.version import Version

from wincon import connectivity as conn
from wincon.cluster.client import call
from wincon.cluster.exec import ExecResult, exec_in_pod
from wincon.cluster.waits import WaitTimeout, WorkloadFailed, pod_failure, pod_running_ready, wait_for, wait_for_pod
from wincon.errors import InfrastructureError
from wincon.fixtures import make_namespace, module_prefix
from wincon.profile import WINDOWS_BUILD_LABEL, NodeProfile, parse_build
from wincon.workloads.deploy import apply, container, pod_manifest
from wincon.workloads.pinning import WrongNode, assert_ran_on
from wincon.workloads.render import render

NETSERVER_LABEL = "wincon.io/netserver"  # each netserver pod's own name, to select exactly one
APP_LABEL = "app"
WINDOWS_NETSERVERS = "netserver"  # app label of the Windows netserver pods
LINUX_NETSERVERS = "lin-netserver"  # app label of the Linux netserver pods (hybrid checks)
SUBDOMAIN = "netservers"  # headless Service whose name is the netserver pods' subdomain
MAX_WINDOWS_NODES = 4  # netservers on at most this many Windows nodes: enough for every flow, bounded cost
ENDPOINTS_TIMEOUT = 120.0
LOADBALANCER_WAIT = {"azure": 300.0, "gce": 300.0, "aws": 300.0}  # a cloud provider provisions in minutes
LOADBALANCER_WAIT_DEFAULT = 30.0  # elsewhere a provider (MetalLB, kube-vip) answers within seconds, or none exists
HOSTPROCESS_USER = "NT AUTHORITY\\Local service"
IDLE_WINDOWS = ["powershell.exe", "-NoLogo", "-NoProfile", "-Command", "while ($true) { Start-Sleep -Seconds 3600 }"]


@pytest.fixture(scope="module")
def namespace(request: pytest.FixtureRequest, wincon: Any) -> Iterator[str]:
    """One namespace per test module (not per test, as in the other suites): the module's netservers,
    clients and Services live there for all its tests, as upstream's networking tests share them."""
    yield from make_namespace(request, wincon, module_prefix(request))


# ----------------------------------------------------------------------------- what the checks talk to


@dataclass(frozen=True)
class PodRef:
    """A pod a check runs in or talks to, after it ran where intended."""

    name: str
    ip: str
    ips: tuple[str, ...]
    node: str
    host_ip: str
    os: str
    container: str  # the container checks exec into by default
    tools: str | None = None  # the container with the Windows tools (curl.exe, ping, Resolve-DnsName), if any

    @property
    def tool_container(self) -> str:
        return self.tools or self.container

    @property
    def dns_tool(self) -> str:
        return conn.default_dns_tool(self.os, powershell=self.tools is not None)


def pod_ref(pod: Any, os_name: str, container_name: str, tools: str | None = None) -> PodRef:
    status = pod.status
    ips = tuple(p.ip for p in (status.pod_ips or []) if p.ip) or ((status.pod_ip,) if status.pod_ip else ())
    if not status.pod_ip:
        raise InfrastructureError(f"pod {pod.metadata.name} is running but has no IP", "see the pod's events")
    return PodRef(
        name=pod.metadata.name,
        ip=status.pod_ip,
        ips=ips,
        node=pod.spec.node_name,
        host_ip=status.host_ip or "",
        os=os_name,
        container=container_name,
        tools=tools,
    )


@dataclass(frozen=True)
class ServiceRef:
    name: str
    namespace: str
    type: str
    cluster_ip: str | None
    node_ports: dict[str, int]
    raw: Any
    domain: str = "cluster.local"

    @property
    def fqdn(self) -> str:
        return conn.service_fqdn(self.name, self.namespace, self.domain)


# ----------------------------------------------------------------------------- nodes


def _schedulable(node: NodeProfile) -> bool:
    """A Ready Linux node that ordinary pods may land on (control-plane nodes carry a NoSchedule taint)."""
    return node.ready and not any(t.endswith((":NoSchedule", ":NoExecute")) for t in node.taints)


@pytest.fixture(scope="session")
def windows_nodes(profile: Any) -> list[NodeProfile]:
    """The Ready Windows nodes the checks use (at most MAX_WINDOWS_NODES), in name order."""
    nodes = sorted(profile.ready_windows_nodes, key=lambda n: n.name)[:MAX_WINDOWS_NODES]
    if not nodes:
        raise InfrastructureError(
            "no Windows node is Ready", "wait for the Windows nodes to become Ready (`kubectl get nodes`)"
        )
    return nodes


@pytest.fixture(scope="session")
def linux_node(profile: Any) -> NodeProfile:
    """A Ready, schedulable Linux worker; skips where the cluster has none."""
    nodes = sorted((n for n in profile.linux_nodes if _schedulable(n)), key=lambda n: n.name)
    if not nodes:
        pytest.skip("the check needs a Ready, schedulable Linux worker node; the cluster has none")
    return nodes[0]


def second_windows_node(windows_nodes: list[NodeProfile]) -> NodeProfile:
    if len(windows_nodes) < 2:
        pytest.skip("the check needs two Ready Windows nodes; the cluster has one")
    return windows_nodes[1]


# ----------------------------------------------------------------------------- pods


def nettools_image(wincon: Any, build: int | None) -> str | None:
    """The Windows tools image for ``build``, or None where the catalog has no variant for it."""
    if "nettools" not in wincon.catalog.images:
        return None
    try:
        return wincon.catalog.image("nettools", "windows", build)
    except InfrastructureError:
        return None


def check_placement(pod: Any, manifest: dict[str, Any], profile: Any) -> None:
    """The pod ran on the OS, build and node its manifest pins: otherwise nothing it reports is trusted."""
    spec = manifest["spec"]
    selector = spec.get("nodeSelector") or {}
    assert_ran_on(
        pod,
        profile,
        os_name=(spec.get("os") or {}).get("name", "linux"),
        build=parse_build(selector.get(WINDOWS_BUILD_LABEL)),
    )
    wanted = selector.get("kubernetes.io/hostname")
    if wanted and pod.spec.node_name != wanted:
        raise WrongNode(f"pod {pod.metadata.name} ran on {pod.spec.node_name}, not on {wanted}: result discarded")


def start_pods(
    wincon: Any,
    namespace: str,
    manifests: list[dict[str, Any]],
    done: Callable[[Any], bool] = pod_running_ready,
) -> dict[str, Any]:
    """Create every pod first (so they start in parallel), then wait for each and check where it ran."""
    core = client.CoreV1Api(wincon.api_client)
    for manifest in manifests:
        call(core.create_namespaced_pod, namespace, manifest)
    pods = {}
    for manifest in manifests:
        name = manifest["metadata"]["name"]
        pod = wait_for_pod(
            wincon.api_client, namespace, name, done=done, timeout=wincon.pod_start_timeout, failure=pod_failure
        )
        check_placement(pod, manifest, wincon.profile)
        pods[name] = pod
    return pods


def windows_netserver_manifest(
    wincon: Any,
    name: str,
    node: NodeProfile,
    http_port: int = conn.NETSERVER_HTTP_PORT,
    udp_port: int | None = conn.NETSERVER_UDP_PORT,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    image = wincon.catalog.image("agnhost", "windows", node.windows_build)
    return pod_manifest(
        name,
        [conn.netexec_container("netexec", image, http_port=http_port, udp_port=udp_port)],
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels=labels or {APP_LABEL: WINDOWS_NETSERVERS, NETSERVER_LABEL: name},
        **spec,
    )


def windows_client_manifest(wincon: Any, name: str, node: NodeProfile, **spec: Any) -> tuple[dict[str, Any], bool]:
    """A client pod: netexec on 9080 for the dial check, plus the nettools container where the catalog has it."""
    agnhost = wincon.catalog.image("agnhost", "windows", node.windows_build)
    containers = [conn.netexec_container("netexec", agnhost, http_port=conn.CLIENT_HTTP_PORT, udp_port=None)]
    tools = nettools_image(wincon, node.windows_build)
    if tools:
        containers.append(container("tools", tools))
    manifest = pod_manifest(
        name,
        containers,
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels={APP_LABEL: f"client-{name}"},
        **spec,
    )
    return manifest, tools is not None


@pytest.fixture(scope="module")
def netservers(wincon: Any, namespace: str, windows_nodes: list[NodeProfile]) -> list[PodRef]:
    """``netserver-N`` on every Windows node in turn, at least two: the endpoints of every check."""
    count = max(2, len(windows_nodes))
    manifests = [
        windows_netserver_manifest(
            wincon,
            f"netserver-{i}",
            windows_nodes[i % len(windows_nodes)],
            hostname=f"netserver-{i}",
            subdomain=SUBDOMAIN,
        )
        for i in range(count)
    ]
    pods = start_pods(wincon, namespace, manifests)
    return [pod_ref(pods[m["metadata"]["name"]], "windows", "netexec") for m in manifests]


@pytest.fixture(scope="module")
def windows_client(wincon: Any, namespace: str, windows_nodes: list[NodeProfile]) -> PodRef:
    """The client pod, on the first Windows node (where netserver-0 runs too)."""
    manifest, has_tools = windows_client_manifest(wincon, "client", windows_nodes[0])
    pod = start_pods(wincon, namespace, [manifest])["client"]
    return pod_ref(pod, "windows", "netexec", tools="tools" if has_tools else None)


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


def hostprocess_manifest(wincon: Any, name: str, node: NodeProfile, **spec: Any) -> dict[str, Any]:
    """A HostProcess pod: its commands run on the Windows node itself, in the host's network."""
    image = wincon.catalog.image("agnhost", "windows", node.windows_build)
    manifest = pod_manifest(
        name,
        [container("host", image, command=IDLE_WINDOWS)],
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels={APP_LABEL: f"host-{name}"},
        hostNetwork=True,
        securityContext={"windowsOptions": {"hostProcess": True, "runAsUserName": HOSTPROCESS_USER}},
        **spec,
    )
    return manifest


def start_hostprocess(wincon: Any, namespace: str, manifest: dict[str, Any]) -> PodRef:
    """Run a HostProcess pod; skip with the reason where the cluster does not allow or support it."""
    core = client.CoreV1Api(wincon.api_client)
    name = manifest["metadata"]["name"]
    try:
        created = call(core.create_namespaced_pod, namespace, manifest)
    except ApiException as exc:
        if exc.status in (400, 403, 422):
            pytest.skip(f"HostProcess pods are not allowed here (API answered {exc.status}: {_api_message(exc)})")
        raise
    options = created.spec.security_context.windows_options if created.spec.security_context else None
    if not (options and options.host_process):
        pytest.skip(
            "HostProcess pods are not enabled on this cluster (the API server dropped windowsOptions.hostProcess)"
        )
    try:
        pod = wait_for_pod(wincon.api_client, namespace, name, timeout=wincon.pod_start_timeout, failure=pod_failure)
    except WorkloadFailed as exc:
        pytest.skip(f"HostProcess containers do not start on this cluster: {exc}")
    check_placement(pod, manifest, wincon.profile)
    return pod_ref(pod, "windows", "host", tools="host")


def _api_message(exc: ApiException) -> str:
    import json

    try:
        return json.loads(exc.body).get("message", exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason)


@pytest.fixture(scope="module")
def windows_host(wincon: Any, namespace: str, windows_nodes: list[NodeProfile]) -> PodRef:
    """The first Windows node itself, through a HostProcess pod (skips where HostProcess is not allowed)."""
    return start_hostprocess(wincon, namespace, hostprocess_manifest(wincon, "node-0", windows_nodes[0]))


def linux_agnhost_manifest(wincon: Any, name: str, node: NodeProfile, args: list[str], **spec: Any) -> dict[str, Any]:
    image = wincon.catalog.image("agnhost", "linux")
    return pod_manifest(
        name,
        [container("agnhost", image, args=args)],
        os_name="linux",
        node=node.name,
        labels={APP_LABEL: f"linux-{name}"},
        **spec,
    )


@pytest.fixture(scope="module")
def linux_host(wincon: Any, namespace: str, linux_node: NodeProfile) -> PodRef:
    """A Linux node itself, through a hostNetwork pod (node-side checks from Linux)."""
    manifest = linux_agnhost_manifest(
        wincon, "lin-node", linux_node, ["pause"], hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"
    )
    pod = start_pods(wincon, namespace, [manifest])["lin-node"]
    return pod_ref(pod, "linux", "agnhost")


@pytest.fixture(scope="module")
def remote_node(request: pytest.FixtureRequest, windows_nodes: list[NodeProfile], profile: Any) -> PodRef:
    """A node other than the first Windows node, seen from itself: a Linux node, else a second Windows node."""
    if any(_schedulable(n) for n in profile.linux_nodes):
        return request.getfixturevalue("linux_host")
    node = second_windows_node(windows_nodes)
    wincon = request.getfixturevalue("wincon")
    namespace = request.getfixturevalue("namespace")
    return start_hostprocess(wincon, namespace, hostprocess_manifest(wincon, "node-1", node))


# ----------------------------------------------------------------------------- Services


def endpoints_ips(endpoints: Any) -> set[str]:
    return {a.ip for s in endpoints.subsets or [] for a in s.addresses or []}


def endpoint_slice_ips(endpoint_slice: Any) -> set[str]:
    return {
        address
        for ep in endpoint_slice.endpoints or []
        if ep.conditions is None or ep.conditions.ready is not False
        for address in ep.addresses or []
    }


def _slices_lister(discovery: client.DiscoveryV1Api, service: str) -> Callable[..., Any]:
    """list_namespaced_endpoint_slice narrowed to one Service's slices (their names are generated)."""

    @functools.wraps(discovery.list_namespaced_endpoint_slice)
    def list_slices(namespace: str, **kwargs: Any) -> Any:
        kwargs.pop("field_selector", None)
        return discovery.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}", **kwargs
        )

    return list_slices


def wait_for_endpoints(wincon: Any, namespace: str, service: str, ips: Iterable[str]) -> None:
    """Wait until the Service's Endpoints and EndpointSlices list exactly ``ips`` as ready addresses."""
    expected = set(ips)
    core = client.CoreV1Api(wincon.api_client)
    wait_for(
        core.list_namespaced_endpoints,
        service,
        done=lambda ep: endpoints_ips(ep) == expected,
        timeout=ENDPOINTS_TIMEOUT,
        describe=f"Endpoints {namespace}/{service} listing {sorted(expected)}",
        namespace=namespace,
    )
    if Version(wincon.profile.k8s_version) >= Version("1.21"):  # discovery.k8s.io/v1
        wait_for(
            _slices_lister(client.DiscoveryV1Api(wincon.api_client), service),
            service,
            done=lambda s: endpoint_slice_ips(s) == expected,
            timeout=ENDPOINTS_TIMEOUT,
            describe=f"EndpointSlices of {namespace}/{service} listing {sorted(expected)}",
            namespace=namespace,
        )


def _valid_ip(text: str | None) -> bool:
    try:
        ipaddress.ip_address(text or "")
        return True
    except ValueError:
        return False


def create_service(
    wincon: Any,
    namespace: str,
    template: str,
    endpoints: Iterable[PodRef] | None = None,
    domain: str = "cluster.local",
    **params: Any,
) -> ServiceRef:
    """Create a Service from a manifests/networking template; check its addresses and endpoints."""
    (manifest,) = render(f"networking/{template}", **params)
    apply(wincon.api_client, namespace, manifest)
    core = client.CoreV1Api(wincon.api_client)
    svc = call(core.read_namespaced_service, manifest["metadata"]["name"], namespace)
    kind = svc.spec.type
    headless = svc.spec.cluster_ip == "None"
    if kind == "ExternalName":
        assert not svc.spec.cluster_ip, f"ExternalName Service {svc.metadata.name} got a cluster IP"
    elif not headless:
        assert _valid_ip(svc.spec.cluster_ip), f"Service {svc.metadata.name} got no cluster IP: {svc.spec.cluster_ip}"
    node_ports = {p.name: p.node_port for p in svc.spec.ports or [] if p.node_port}
    if kind in ("NodePort", "LoadBalancer"):
        missing = [p.name for p in svc.spec.ports if not p.node_port]
        assert not missing, f"{kind} Service {svc.metadata.name} got no node port for {missing}"
    if endpoints is not None:
        wait_for_endpoints(wincon, namespace, svc.metadata.name, [p.ip for p in endpoints])
    return ServiceRef(
        name=svc.metadata.name,
        namespace=namespace,
        type="headless" if headless else kind,
        cluster_ip=None if headless or kind == "ExternalName" else svc.spec.cluster_ip,
        node_ports=node_ports,
        raw=svc,
        domain=domain,
    )


@pytest.fixture(scope="module")
def netserver_service(workloads: Workloads, netservers: list[PodRef]) -> ServiceRef:
    """ClusterIP Service ``netserver`` over every Windows netserver: TCP 80 and UDP 90."""
    return workloads.service("service.yaml", netservers, name="netserver", type="ClusterIP")


@pytest.fixture(scope="module")
def headless_service(workloads: Workloads, netservers: list[PodRef]) -> ServiceRef:
    """Headless Service ``netservers``: the subdomain of the netserver pods' own DNS names."""
    return workloads.service("service-headless.yaml", netservers, name=SUBDOMAIN)


@pytest.fixture(scope="module")
def nodeport_service(workloads: Workloads, netservers: list[PodRef]) -> ServiceRef:
    """NodePort Service ``netserver-np`` over every Windows netserver: TCP and UDP node ports."""
    return workloads.service("service.yaml", netservers, name="netserver-np", type="NodePort")


@pytest.fixture(scope="module")
def alias_service(workloads: Workloads, netserver_service: ServiceRef) -> ServiceRef:
    """ExternalName ``netserver-alias`` naming the ClusterIP Service's FQDN: a CNAME that needs no outside DNS."""
    return workloads.service(
        "service-externalname.yaml", None, name="netserver-alias", external_name=netserver_service.fqdn
    )


def wait_for_load_balancer(wincon: Any, namespace: str, name: str) -> str:
    """The LoadBalancer's ingress IP or host name; skips where the cluster provisions none in time."""
    timeout = LOADBALANCER_WAIT.get(wincon.profile.cloud, LOADBALANCER_WAIT_DEFAULT)
    core = client.CoreV1Api(wincon.api_client)
    try:
        svc = wait_for(
            core.list_namespaced_service,
            name,
            done=lambda s: bool(s.status and s.status.load_balancer and s.status.load_balancer.ingress),
            timeout=timeout,
            describe=f"LoadBalancer {namespace}/{name}",
            namespace=namespace,
        )
    except WaitTimeout:
        pytest.skip(
            f"the cluster has no LoadBalancer provider: Service {name} got no ingress address within {timeout:.0f}s"
        )
    ingress = svc.status.load_balancer.ingress[0]
    return ingress.ip or ingress.hostname


# ----------------------------------------------------------------------------- a factory for tests' own objects


class Workloads:
    """Creates pods and Services in the module's namespace for tests that need objects of their own.

    Everything it creates runs for real, with the same placement and endpoint checks as the shared setup.
    """

    def __init__(self, wincon: Any, namespace: str, domain: str = "cluster.local") -> None:
        self.wincon = wincon
        self.namespace = namespace
        self.domain = domain

    windows_netservers = {APP_LABEL: WINDOWS_NETSERVERS}
    linux_netservers = {APP_LABEL: LINUX_NETSERVERS}

    @staticmethod
    def only(pod: PodRef) -> dict[str, str]:
        """The selector of exactly one Windows netserver pod."""
        return {NETSERVER_LABEL: pod.name}

    def service(
        self,
        template: str,
        endpoints: Iterable[PodRef] | None,
        name: str,
        select: dict[str, str] | None = None,
        **params: Any,
    ) -> ServiceRef:
        ((key, value),) = (select or self.windows_netservers).items()
        return create_service(
            self.wincon,
            self.namespace,
            template,
            endpoints,
            name=name,
            selector_key=key,
            selector_value=value,
            **params,
        )

    def wait_endpoints(self, service: ServiceRef, pods: Iterable[PodRef]) -> None:
        wait_for_endpoints(self.wincon, self.namespace, service.name, [p.ip for p in pods])

    def load_balancer_address(self, name: str) -> str:
        return wait_for_load_balancer(self.wincon, self.namespace, name)

    def start(self, manifests: list[dict[str, Any]], done: Callable[[Any], bool] = pod_running_ready) -> dict[str, Any]:
        return start_pods(self.wincon, self.namespace, manifests, done)

    def windows_client(self, name: str, node: NodeProfile, **spec: Any) -> PodRef:
        manifest, has_tools = windows_client_manifest(self.wincon, name, node, **spec)
        pod = self.start([manifest])[name]
        return pod_ref(pod, "windows", "netexec", tools="tools" if has_tools else None)

    def windows_netexec_manifest(self, name: str, node: NodeProfile, **kwargs: Any) -> dict[str, Any]:
        return windows_netserver_manifest(self.wincon, name, node, **kwargs)

    def hostprocess(self, name: str, node: NodeProfile, **spec: Any) -> PodRef:
        return start_hostprocess(self.wincon, self.namespace, hostprocess_manifest(self.wincon, name, node, **spec))

    def linux_netexec(
        self,
        name: str,
        node: NodeProfile,
        http_port: int = conn.NETSERVER_HTTP_PORT,
        udp_port: int | None = conn.NETSERVER_UDP_PORT,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        image = self.wincon.catalog.image("agnhost", "linux")
        return pod_manifest(
            name,
            [conn.netexec_container("netexec", image, http_port=http_port, udp_port=udp_port)],
            os_name="linux",
            node=node.name,
            labels=labels or {APP_LABEL: LINUX_NETSERVERS, NETSERVER_LABEL: name},
        )


@pytest.fixture(scope="module")
def workloads(wincon: Any, namespace: str, cluster_dns: ClusterDns) -> Workloads:
    return Workloads(wincon, namespace, cluster_dns.domain)


@pytest.fixture(scope="module")
def linux_netservers(workloads: Workloads, linux_node: NodeProfile) -> list[PodRef]:
    """``lin-netserver-0`` and ``-1`` on a Linux worker: the Linux endpoints of the hybrid checks."""
    manifests = [workloads.linux_netexec(f"lin-netserver-{i}", linux_node) for i in range(2)]
    pods = workloads.start(manifests)
    return [pod_ref(pods[m["metadata"]["name"]], "linux", "netexec") for m in manifests]


@pytest.fixture(scope="module")
def linux_client(workloads: Workloads, linux_node: NodeProfile) -> PodRef:
    """A Linux client pod running netexec on 9080, for dials from Linux."""
    manifest = workloads.linux_netexec(
        "lin-client", linux_node, http_port=conn.CLIENT_HTTP_PORT, udp_port=None, labels={APP_LABEL: "lin-client"}
    )
    return pod_ref(workloads.start([manifest])["lin-client"], "linux", "netexec")


@pytest.fixture(scope="module")
def linux_service(workloads: Workloads, linux_netservers: list[PodRef]) -> ServiceRef:
    """ClusterIP Service ``lin-netserver`` over the Linux netservers."""
    return workloads.service(
        "service.yaml", linux_netservers, name="lin-netserver", type="ClusterIP", select=workloads.linux_netservers
    )


# ----------------------------------------------------------------------------- cluster DNS


@dataclass(frozen=True)
class ClusterDns:
    ip: str | None
    domain: str


@pytest.fixture(scope="session")
def cluster_dns(wincon: Any) -> ClusterDns:
    """The cluster DNS Service IP (kube-system/kube-dns) and the cluster domain CoreDNS serves."""
    core = client.CoreV1Api(wincon.api_client)
    ip = None
    try:
        ip = call(core.read_namespaced_service, "kube-dns", "kube-system").spec.cluster_ip
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
    domain = "cluster.local"
    try:
        corefile = (call(core.read_namespaced_config_map, "coredns", "kube-system").data or {}).get("Corefile", "")
        domain = conn.cluster_domain_from_corefile(corefile) or domain
    except ApiException as exc:
        if exc.status not in (403, 404):
            raise
    return ClusterDns(ip if _valid_ip(ip) else None, domain)


@pytest.fixture(scope="session")
def kubernetes_service(wincon: Any) -> ServiceRef:
    """default/kubernetes, the Service every cluster has (the documentation's own example name)."""
    core = client.CoreV1Api(wincon.api_client)
    svc = call(core.read_namespaced_service, "kubernetes", "default")
    return ServiceRef("kubernetes", "default", svc.spec.type, svc.spec.cluster_ip, {}, svc)


# ----------------------------------------------------------------------------- the checks


class Checks:
    """Runs a test's checks in pods. Every check first records its command through the data-plane gate,
    which skips on simulated nodes, so nothing runs where nothing could answer."""

    def __init__(self, wincon: Any, namespace: str, gate: Callable[..., None]) -> None:
        self.api_client = wincon.api_client
        self.namespace = namespace
        self.gate = gate

    def _where(self, pod: PodRef) -> str:
        return f"{pod.os} pod {pod.name} on {pod.node}"

    def exec(self, pod: PodRef, command: list[str], container: str | None = None, timeout: float = 90.0) -> ExecResult:
        return exec_in_pod(self.api_client, self.namespace, pod.name, command, container or pod.container, timeout)

    def run(self, pod: PodRef, command: list[str], container: str | None = None) -> ExecResult:
        """Gate, then run ``command`` once."""
        self.gate(command, where=self._where(pod))
        return self.exec(pod, command, container)

    def dial(
        self,
        client_pod: PodRef,
        target: str,
        port: int,
        protocol: str,
        expected: Iterable[str],
        max_tries: int | None = None,
        min_tries: int = 1,
    ) -> conn.DialOutcome:
        """Upstream's dial check: ask the client's netexec to dial ``target:port`` until ``expected`` answered."""
        expected = set(expected)
        command = conn.dial_command(client_pod.os, client_pod.ip, target, port, protocol)
        self.gate(command, where=self._where(client_pod))

        def once() -> str:
            try:
                result = self.exec(client_pod, command)
            except InfrastructureError as exc:  # an exec that fails counts as a try, as upstream counts it
                return f"exec failed: {exc}"
            return result.stdout if result.ok else f"exit {result.exit_code}: {result.stderr or result.stdout}"

        return conn.collect_dial(once, expected, max_tries or conn.dial_tries(len(expected)), min_tries)

    def until(
        self,
        pod: PodRef,
        command: list[str],
        ok: Callable[[ExecResult], bool],
        tries: int = 5,
        container: str | None = None,
    ) -> tuple[bool, ExecResult]:
        """Gate, then run ``command`` until ``ok(result)`` or ``tries`` runs: (succeeded, last result)."""
        self.gate(command, where=self._where(pod))
        last: list[ExecResult] = []

        def once() -> bool:
            result = self.exec(pod, command, container)
            last[:] = [result]
            return ok(result)

        succeeded, _ = conn.attempts(once, tries)
        return succeeded, last[0]

    def http_get(self, pod: PodRef, url: str, accept: Iterable[str], tries: int = 5) -> tuple[bool, ExecResult]:
        """GET ``url`` from ``pod`` (curl.exe/curl) until the body is one of ``accept``."""
        wanted = {a.lower() for a in accept}
        return self.until(
            pod,
            conn.http_get_command(pod.os, url),
            lambda r: r.ok and r.stdout.strip().lower() in wanted,
            tries,
            container=pod.tool_container,
        )

    def lookup(self, pod: PodRef, name: str, tries: int = 3, tool: str | None = None) -> conn.Lookup:
        """Resolve ``name`` in ``pod`` (default: the OS's recommended resolver); the last answer."""
        tool = tool or pod.dns_tool
        command = conn.dns_lookup_command(pod.os, name, tool)
        _, result = self.until(
            pod,
            command,
            lambda r: conn.parse_lookup(tool, r.stdout, r.exit_code, r.stderr).ok,
            tries,
            container=pod.tool_container,
        )
        return conn.parse_lookup(tool, result.stdout, result.exit_code, result.stderr)

    def ping(self, pod: PodRef, target: str, tries: int = 3) -> tuple[bool, ExecResult]:
        """One echo request per try, until a real echo reply comes back."""
        return self.until(
            pod,
            conn.ping_command(pod.os, target),
            lambda r: conn.ping_succeeded(pod.os, r.exit_code, r.stdout),
            tries,
            container=pod.tool_container,
        )

    def dial_each(self, client_pod: PodRef, target: str, port: int, protocol: str, times: int) -> list[str]:
        """``times`` single dials in a row: the endpoint that answered each ('' where none did)."""
        command = conn.dial_command(client_pod.os, client_pod.ip, target, port, protocol)
        self.gate(command, where=self._where(client_pod))
        return [self.dial_once(client_pod, command) for _ in range(times)]

    def dial_once(self, client_pod: PodRef, command: list[str]) -> str:
        result = self.exec(client_pod, command)
        try:
            responses = conn.parse_dial(result.stdout).responses
        except ValueError:
            return ""
        return responses[0] if responses else ""

    def port_forward_get(self, pod: PodRef, port: int, path: str) -> str:
        """GET ``path`` from ``pod``'s ``port`` through the API server's port-forward (kubectl port-forward)."""
        from kubernetes.stream import portforward

        self.gate(f"kubectl port-forward pod/{pod.name} {port} && GET http://localhost:{port}{path}", self._where(pod))
        core = client.CoreV1Api(self.api_client)
        forward = portforward(core.connect_get_namespaced_pod_portforward, pod.name, self.namespace, ports=str(port))
        sock = forward.socket(port)
        sock.settimeout(30)
        try:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            chunks: list[bytes] = []
            while sum(map(len, chunks)) < 65536:  # bounded: the server closes after a short body
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError as exc:
            return f"port-forward error: {exc}; {forward.error(port) or ''}"
        finally:
            sock.close()
            forward.close()
        _, _, body = b"".join(chunks).decode(errors="replace").partition("\r\n\r\n")
        return body.strip() or f"no data; {forward.error(port) or ''}"


@pytest.fixture
def checks(wincon: Any, namespace: str, data_plane: Any) -> Checks:
    return Checks(wincon, namespace, data_plane)
