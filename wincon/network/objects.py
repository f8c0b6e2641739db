"""``NetworkObjects``: creates pods and Services in a module's namespace for tests that need objects of their
own, with the same placement and endpoint checks as the module's shared setup (the ``net`` fixture)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wincon.cluster.waits import pod_running_ready
from wincon.clusterinfo.profile import NodeProfile
from wincon.network import pods
from wincon.network.pods import APP_LABEL, LINUX_NETSERVERS, NETSERVER_LABEL, WINDOWS_NETSERVERS, PodRef, pod_ref
from wincon.network.services import ServiceRef, create_service, wait_for_endpoints, wait_for_load_balancer
from wincon.windows import connectivity as conn
from wincon.workloads.deploy import check_placement


class NetworkObjects:
    """Pods and Services of one namespace, created for real through a ``Kube`` bound to it."""

    windows_netservers = {APP_LABEL: WINDOWS_NETSERVERS}
    linux_netservers = {APP_LABEL: LINUX_NETSERVERS}

    def __init__(self, kube: Any, domain: str = "cluster.local") -> None:
        self.kube = kube
        self.domain = domain

    @property
    def namespace(self) -> str:
        return str(self.kube.namespace)

    @staticmethod
    def only(pod: PodRef) -> dict[str, str]:
        """The selector of exactly one netserver pod."""
        return {NETSERVER_LABEL: pod.name}

    def service(
        self,
        template: str,
        endpoints: Iterable[PodRef] | None,
        name: str,
        select: dict[str, str] | None = None,
        **params: Any,
    ) -> ServiceRef:
        """A Service from ``manifests/networking/<template>`` selecting ``select`` (default: the Windows
        netservers); waits until its endpoints are exactly ``endpoints`` (unless None)."""
        ((key, value),) = (select or self.windows_netservers).items()
        return create_service(
            self.kube, template, endpoints, self.domain, name=name, selector_key=key, selector_value=value, **params
        )

    def wait_endpoints(self, service: ServiceRef, pods: Iterable[PodRef]) -> None:
        wait_for_endpoints(self.kube, service.name, [p.ip for p in pods])

    def load_balancer_address(self, name: str) -> str:
        return wait_for_load_balancer(self.kube, name)

    def start(self, manifests: list[dict[str, Any]], done: Callable[[Any], bool] = pod_running_ready) -> dict[str, Any]:
        """Create the pods, wait for each, check where each ran; name -> pod."""
        return dict(self.kube.start_pods(manifests, done))

    def start_each(
        self, manifests: list[dict[str, Any]], done: Callable[[Any], bool] = pod_running_ready
    ) -> dict[str, Any]:
        """Create every pod first (their starts overlap), then wait for all of them at once and check where each
        ran: name -> pod, or the exception its wait or placement check raised (so each of the pods' users errors
        on its own pod). The waits run side by side, each with its full timeout from about its pod's creation:
        one after another, pods that never start (every kubelet stopped) took one timeout each (3 x 20 s)."""
        for manifest in manifests:
            self.kube.create_pod(manifest)
        return self.await_each(manifests, done)

    def await_each(
        self, manifests: list[dict[str, Any]], done: Callable[[Any], bool] = pod_running_ready
    ) -> dict[str, Any]:
        """``start_each``'s waits, for pods already created: name -> pod, or the exception its wait or placement
        check raised; side by side."""

        def wait(manifest: dict[str, Any]) -> Any:
            try:
                pod = self.kube.wait_pod(manifest["metadata"]["name"], done=done)
                check_placement(pod, manifest, self.kube.profile)
                return pod
            except Exception as exc:  # noqa: BLE001 - handed to the fixture whose pod it is
                return exc

        if not manifests:
            return {}
        with ThreadPoolExecutor(max_workers=len(manifests), thread_name_prefix="pod-wait") as pool:
            found = list(pool.map(wait, manifests))
        return {m["metadata"]["name"]: pod for m, pod in zip(manifests, found, strict=True)}

    def windows_client(self, name: str, node: NodeProfile, **spec: Any) -> PodRef:
        manifest, has_tools = pods.windows_client_manifest(self.kube.catalog, name, node, **spec)
        pod = self.start([manifest])[name]
        return pod_ref(pod, "windows", "netexec", tools="tools" if has_tools else None)

    def windows_netexec_manifest(self, name: str, node: NodeProfile, **kwargs: Any) -> dict[str, Any]:
        return pods.windows_netserver_manifest(self.kube.catalog, name, node, **kwargs)

    def hostprocess(self, name: str, node: NodeProfile, **spec: Any) -> PodRef:
        return pods.start_hostprocess(self.kube, pods.hostprocess_manifest(self.kube.catalog, name, node, **spec))

    def linux_netexec(
        self,
        name: str,
        node: NodeProfile,
        http_port: int = conn.NETSERVER_HTTP_PORT,
        udp_port: int | None = conn.NETSERVER_UDP_PORT,
        labels: dict[str, str] | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        return pods.linux_netexec_manifest(self.kube.catalog, name, node, http_port, udp_port, labels, **spec)
