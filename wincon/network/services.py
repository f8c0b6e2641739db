"""Services: created from the manifests/networking templates, their addresses checked, their Endpoints and
EndpointSlices waited for; LoadBalancer addresses; the cluster DNS Service and domain."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster.client import call
from wincon.cluster.waits import WaitTimeout
from wincon.commandline.errors import InfrastructureError
from wincon.documents import releases
from wincon.windows import connectivity as conn
from wincon.workloads.render import render

ENDPOINTS_TIMEOUT = 120.0
LOADBALANCER_WAIT = {"azure": 300.0, "gce": 300.0, "aws": 300.0}  # a cloud provider provisions in minutes
LOADBALANCER_WAIT_DEFAULT = 30.0  # elsewhere a provider (MetalLB, kube-vip) answers within seconds, or none exists


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


@dataclass(frozen=True)
class ClusterDns:
    ip: str | None
    domain: str


def valid_ip(text: str | None) -> bool:
    try:
        ipaddress.ip_address(text or "")
        return True
    except ValueError:
        return False


def endpoints_ips(endpoints: Any) -> set[str]:
    """The ready addresses of an Endpoints object."""
    return {a.ip for s in endpoints.subsets or [] for a in s.addresses or []}


def endpoint_slice_ips(endpoint_slice: Any) -> set[str]:
    """The addresses of an EndpointSlice's endpoints that are not known to be unready."""
    return {
        address
        for ep in endpoint_slice.endpoints or []
        if ep.conditions is None or ep.conditions.ready is not False
        for address in ep.addresses or []
    }


def slices_lister(discovery: client.DiscoveryV1Api, service: str) -> Callable[..., Any]:
    """list_namespaced_endpoint_slice narrowed to one Service's slices (their names are generated)."""

    @functools.wraps(discovery.list_namespaced_endpoint_slice)
    def list_slices(namespace: str, **kwargs: Any) -> Any:
        kwargs.pop("field_selector", None)
        return discovery.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}", **kwargs
        )

    return list_slices


def wait_for_endpoints(kube: Any, service: str, ips: Iterable[str]) -> None:
    """Wait until the Service's Endpoints and EndpointSlices list exactly ``ips`` as ready addresses."""
    expected = set(ips)
    kube.wait_for(
        kube.core.list_namespaced_endpoints,
        service,
        done=lambda ep: endpoints_ips(ep) == expected,
        timeout=ENDPOINTS_TIMEOUT,
        describe=f"Endpoints {kube.namespace}/{service} listing {sorted(expected)}",
    )
    # discovery.k8s.io/v1 from the minor wincon.documents.releases.MINORS names; an unknown version is taken as a newer one
    if releases.at_least(kube.profile.server_version, releases.since("endpoint-slices-v1")) is not False:
        kube.wait_for(
            slices_lister(kube.discovery, service),
            service,
            done=lambda s: endpoint_slice_ips(s) == expected,
            timeout=ENDPOINTS_TIMEOUT,
            describe=f"EndpointSlices of {kube.namespace}/{service} listing {sorted(expected)}",
        )


def service_ref(svc: Any, namespace: str, domain: str = "cluster.local") -> ServiceRef:
    """Check the Service got the addresses its type promises; its ServiceRef."""
    kind = svc.spec.type
    headless = svc.spec.cluster_ip == "None"
    if kind == "ExternalName":
        assert not svc.spec.cluster_ip, f"ExternalName Service {svc.metadata.name} got a cluster IP"
    elif not headless:
        assert valid_ip(svc.spec.cluster_ip), f"Service {svc.metadata.name} got no cluster IP: {svc.spec.cluster_ip}"
    node_ports = {p.name: p.node_port for p in svc.spec.ports or [] if p.node_port}
    if kind in ("NodePort", "LoadBalancer"):
        missing = [p.name for p in svc.spec.ports if not p.node_port]
        assert not missing, f"{kind} Service {svc.metadata.name} got no node port for {missing}"
    return ServiceRef(
        name=svc.metadata.name,
        namespace=namespace,
        type="headless" if headless else kind,
        cluster_ip=None if headless or kind == "ExternalName" else svc.spec.cluster_ip,
        node_ports=node_ports,
        raw=svc,
        domain=domain,
    )


def create_service(
    kube: Any,
    template: str,
    endpoints: Iterable[Any] | None = None,
    domain: str = "cluster.local",
    **params: Any,
) -> ServiceRef:
    """Create a Service from a manifests/networking template; check its addresses and endpoints."""
    (manifest,) = render(f"networking/{template}", **params)
    kube.create(manifest)
    svc = call(kube.core.read_namespaced_service, manifest["metadata"]["name"], kube.namespace)
    ref = service_ref(svc, kube.namespace, domain)
    if endpoints is not None:
        wait_for_endpoints(kube, svc.metadata.name, [p.ip for p in endpoints])
    return ref


# The service controller's events about a LoadBalancer it works on: present only where a provider exists;
# and MetalLB's controller's when it cannot allocate (its controller/service.go).
LOADBALANCER_EVENTS = frozenset(
    {"EnsuringLoadBalancer", "EnsuredLoadBalancer", "SyncLoadBalancerFailed", "CreatingLoadBalancerFailed"}
    | {"AllocationFailed", "LoadBalancerFailed"}
)


def wait_for_load_balancer(kube: Any, name: str) -> str:
    """The LoadBalancer's ingress IP or host name; skips where the cluster provisions none in time."""
    timeout = LOADBALANCER_WAIT.get(kube.profile.cloud, LOADBALANCER_WAIT_DEFAULT)
    try:
        svc = kube.wait_for(
            kube.core.list_namespaced_service,
            name,
            done=lambda s: bool(s.status and s.status.load_balancer and s.status.load_balancer.ingress),
            timeout=timeout,
            describe=f"LoadBalancer {kube.namespace}/{name}",
        )
    except WaitTimeout as exc:
        # No provider at all leaves no trace on the Service; a provider that tried and failed does (the
        # service controller's events): that is the cluster failing to run the check, not "not applicable".
        events = call(
            kube.core.list_namespaced_event, kube.namespace, field_selector=f"involvedObject.name={name}"
        ).items
        tried = [e for e in events if e.reason in LOADBALANCER_EVENTS]
        if tried:
            raise InfrastructureError(
                f"the LoadBalancer provider did not provision Service {name} within {timeout:.0f}s: "
                f"{tried[-1].reason}: {tried[-1].message}",
                "see the cloud provider's service controller (quota, permissions, subnet)",
            ) from exc
        serving = getattr(kube.profile, "load_balancers", None)
        if serving:
            # The profile saw a provider serve this cluster (another Service's address): it did not serve this one.
            raise InfrastructureError(
                f"the LoadBalancer provider did not provision Service {name} within {timeout:.0f}s, although it "
                f"serves {len(serving)} other Service(s) ({serving[0]}); no event on the Service says why",
                "see the LoadBalancer provider's controller (its log and the Service's events)",
            ) from exc
        pytest.skip(
            f"the cluster has no LoadBalancer provider: Service {name} got no ingress address within {timeout:.0f}s"
            " and no service controller event"
        )
    ingress = svc.status.load_balancer.ingress[0]
    return str(ingress.ip or ingress.hostname)


def cluster_dns(core: client.CoreV1Api) -> ClusterDns:
    """The cluster DNS Service IP (kube-system/kube-dns) and the cluster domain CoreDNS serves."""
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
    return ClusterDns(ip if valid_ip(ip) else None, domain)


def kubernetes_service(core: client.CoreV1Api) -> ServiceRef:
    """default/kubernetes, the Service every cluster has (the documentation's own example name)."""
    svc = call(core.read_namespaced_service, "kubernetes", "default")
    return ServiceRef("kubernetes", "default", svc.spec.type, svc.spec.cluster_ip, {}, svc)
