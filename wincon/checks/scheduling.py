"""Scheduling checks: node taints set and removed by a test, free allocatable, RuntimeClasses.

Everything a test changes outside its namespace (a node's taints, a cluster-scoped RuntimeClass) is
undone by a function the test registers as a finalizer before making the change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from wincon.cluster.client import call
from wincon.cluster.namespaces import MANAGED_BY, MANAGER, RUN_ID
from wincon.clusterinfo.profile import NodeProfile, runtime_class_pairs, schedulable_untolerated
from wincon.commandline.errors import InfrastructureError

# The Windows release names the KEP's taint example uses ("os=Win1809:NoSchedule"), per build.
TAINT_VALUES = {17763: "Win1809", 20348: "Win2022", 26100: "Win2025"}
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def _node_taints(api_client: client.ApiClient, node: str) -> list[dict[str, Any]]:
    core = client.CoreV1Api(api_client)
    current = call(core.read_node, node)
    return [api_client.sanitize_for_serialization(t) for t in current.spec.taints or []]


def add_taint(api_client: client.ApiClient, node: str, taint: dict[str, str]) -> None:
    """Add ``taint`` to the node (replacing one with the same key and effect)."""
    taints = [t for t in _node_taints(api_client, node) if (t["key"], t["effect"]) != (taint["key"], taint["effect"])]
    call(client.CoreV1Api(api_client).patch_node, node, {"spec": {"taints": taints + [taint]}})


def remove_taint(api_client: client.ApiClient, node: str, key: str) -> None:
    """Remove every taint with ``key`` from the node; a node without it is left alone."""
    taints = _node_taints(api_client, node)
    kept = [t for t in taints if t["key"] != key]
    if len(kept) != len(taints):
        call(client.CoreV1Api(api_client).patch_node, node, {"spec": {"taints": kept}})


def node_has_taint(api_client: client.ApiClient, node: str, key: str) -> bool:
    return any(t["key"] == key for t in _node_taints(api_client, node))


def requested(api_client: client.ApiClient, node: str, resource: str) -> Decimal:
    """The sum of ``resource`` requests of the non-terminated pods bound to ``node`` (init containers as the scheduler counts them)."""
    return sum((pod_request(pod, resource) for pod in _bound_pods(api_client, node)), Decimal(0))


def _bound_pods(api_client: client.ApiClient, node: str) -> list[Any]:
    """The non-terminated pods bound to ``node``."""
    core = client.CoreV1Api(api_client)
    pods = call(core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}").items
    return [pod for pod in pods if not (pod.status and pod.status.phase in TERMINAL_PHASES)]


def pod_request(pod: Any, resource: str) -> Decimal:
    """What ``pod`` requests of ``resource`` as the scheduler counts it (init containers, overhead)."""
    containers = sum(
        (parse_quantity(((c.resources.requests if c.resources else None) or {}).get(resource, "0")))
        for c in pod.spec.containers
    )
    inits = [
        parse_quantity(((c.resources.requests if c.resources else None) or {}).get(resource, "0"))
        for c in pod.spec.init_containers or []
    ]
    overhead = parse_quantity((pod.spec.overhead or {}).get(resource, "0"))
    return Decimal(max([containers, *inits]) + overhead)


def terminating_requests(api_client: client.ApiClient, node: str, resource: str) -> list[str]:
    """The pods bound to ``node`` that request ``resource`` and are being deleted (deletionTimestamp set, not yet
    gone): ``requested`` and the scheduler count them until they go, so a check that fills the node from a reading
    taken meanwhile finds room it did not fill once they have gone (a previous test's namespace being deleted)."""
    return [
        f"{pod.metadata.namespace}/{pod.metadata.name}"
        for pod in _bound_pods(api_client, node)
        if pod.metadata.deletion_timestamp is not None and pod_request(pod, resource) > 0
    ]


def unrequested_once_settled(api_client: client.ApiClient, node: str, resource: str, timeout: float) -> Decimal:
    """Allocatable minus requested ``resource`` of ``node``, read once no pod there that requests it is being
    deleted (``terminating_requests``; polled every 2 s). Still some after ``timeout``: an infrastructure error
    naming them."""
    from wincon.checks.pods import eventually

    left: list[str] = []

    def settled() -> bool:
        left[:] = terminating_requests(api_client, node, resource)
        return not left

    try:
        eventually(settled, timeout, f"pods requesting {resource} on {node} gone", interval=2)
    except InfrastructureError as exc:
        raise InfrastructureError(
            f"pods requesting {resource} on {node} still being deleted after {timeout:.0f}s: {', '.join(left)}",
            "the node must let deleted pods go before the check can fill it",
        ) from exc
    return unrequested(api_client, node, resource)


def unrequested(api_client: client.ApiClient, node: str, resource: str) -> Decimal:
    """Allocatable minus requested ``resource`` of ``node``, now."""
    return allocatable(api_client, node, resource) - requested(api_client, node, resource)


def allocatable(api_client: client.ApiClient, node: str, resource: str) -> Decimal:
    core = client.CoreV1Api(api_client)
    return parse_quantity((call(core.read_node, node).status.allocatable or {}).get(resource, "0"))


def least_requested(api_client: client.ApiClient, nodes: Sequence[str], resource: str) -> str:
    """Of ``nodes`` (at least one), the one with the most ``resource`` left unrequested now, the first of them on a
    tie. A check that needs a node's CPU for its own load takes it, so that another run's load on the same cluster
    (a second suite, the flake benchmark's load run) does not hold the node it pins to: with the first node always,
    two runs' CPU pairs met on one node and one stayed Unschedulable for 91 s (an error, bench at 86ee81d)."""
    return max(nodes, key=lambda node: unrequested(api_client, node, resource))  # max keeps the first of equals


def millicores(value: Decimal) -> str:
    return f"{int(value * 1000)}m"


def create_runtime_class(
    api_client: client.ApiClient,
    name: str,
    handler: str,
    node_selector: dict[str, str],
    tolerations: list[dict[str, str]],
    run_id: str,
) -> Any:
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER, RUN_ID: run_id}},
        "handler": handler,
        "scheduling": {"nodeSelector": node_selector, "tolerations": tolerations},
    }
    return call(client.NodeV1Api(api_client).create_runtime_class, body)


# The words a RuntimeClass handler that runs Hyper-V isolated containers carries (containerd's
# runhcs-wcow-hypervisor, a "hyperv" handler of cri-dockerd setups, "vm" in other operators' names).
HYPERV_HINTS = ("hyperv", "hyper-v", "vm")


def hyperv_runtime_class(classes: Iterable[tuple[str, str]]) -> str | None:
    """The name of the first RuntimeClass (``(name, handler)``, the profile's ``runtime_classes``) whose handler
    runs Hyper-V isolated containers; None where there is none."""
    return next((name for name, handler in classes if any(h in handler.lower() for h in HYPERV_HINTS)), None)


def live_runtime_classes(kube: Any) -> list[tuple[str, str]]:
    """The cluster's RuntimeClasses as the profile holds them, read now (for a profile that lacks them)."""
    return runtime_class_pairs(call(kube.node.list_runtime_class).items)


def delete_runtime_class(api_client: client.ApiClient, name: str) -> None:
    try:
        call(client.NodeV1Api(api_client).delete_runtime_class, name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@dataclass(frozen=True)
class Placement:
    """Where a check's pod goes, decided before anything is created: by the check at run time (reading what the
    profile lacks) and by `wincon plan` from the profile alone, through the same rule (``AVOIDS``)."""

    node: str | None = None  # the node the pod is pinned to; None: the pod's placement decides
    skip: str | None = None  # the check skips with this reason, before it creates anything
    unknown: tuple[str, ...] = ()  # nodes whose fact the profile lacks: undecided until the run reads them
    fact: str = ""  # what is read of them
    simulated: bool = False  # no node it may use has a data plane: the data-plane gate decides (it skips)

    def pin(self) -> str | None:
        """For the check: skip with the reason, else the node to pin the pod to (None: unpinned)."""
        if self.skip is not None:
            import pytest

            pytest.skip(self.skip)
        return self.node

    def plan_note(self) -> str:
        """What the plan says where the profile leaves the decision to the run."""
        if not self.unknown:
            return ""
        return (
            f"decided at run time: the profile lacks the {self.fact} of {', '.join(self.unknown)} (a profile file "
            "without it, or unreadable in discovery); the check reads it before creating its pod (a read refused "
            "there is the cluster's error) and skips where no node of the build can tell its result"
        )


def node_avoiding(
    names: list[str], unsuitable: list[str], why: str, unknown: list[str] | tuple[str, ...] = (), fact: str = ""
) -> Placement:
    """The node a check's pod must be pinned to, decided before anything is created: unpinned (None) where none of
    ``names`` is unsuitable (the pod's placement decides, as without this), else the first of the others; where
    every one is unsuitable, the check skips with ``why`` (naming them). Where the ``fact`` of some (``unknown``)
    is not known, nothing is decided: the run reads it, a plan says so."""
    if unknown:
        return Placement(unknown=tuple(unknown), fact=fact)
    if not unsuitable:
        return Placement()
    others = [name for name in names if name not in unsuitable]
    return Placement(node=others[0]) if others else Placement(skip=why)


# ----------------------------------------------------------------------------- the nodes that cannot tell a result


CPU_LIMIT_MILLICORES = 2000  # the Hyper-V container's CPU limit: 2 virtual processors where it is a hard count
LIMIT_COUNT = CPU_LIMIT_MILLICORES // 1000  # the processors the deviation shows: "the millicores ... divided by 1000"
CRI_STATS_GATE = "PodAndContainerStatsFromCRI"


def hyperv_cpu_placement(nodes: Sequence[NodeProfile], read_cpu: Callable[[str], str] | None = None) -> Placement:
    """The Hyper-V CPU-count check's pod: on a node whose capacity is the limit's count (2 CPUs) the behaviour
    (the node's count) and the deviation (the limit's count) print the same number, so such a node can tell
    neither. Every Windows node of the build like that: the check skips, naming them. Some: the pod is pinned to
    the first node of another count. None: unpinned, as before. A node's capacity is the profile's
    (``cpu_capacity``), else ``read_cpu(name)`` (the run); without either it is unknown (a plan)."""
    cpus = {n.name: n.cpu_capacity or (read_cpu(n.name) if read_cpu else "") for n in nodes}
    ambiguous = [name for name, count in cpus.items() if count and parse_quantity(count) == LIMIT_COUNT]
    return node_avoiding(
        list(cpus),
        ambiguous,
        f"every Windows node of the build has capacity cpu {LIMIT_COUNT} ({', '.join(ambiguous)}), the count a "
        f"{CPU_LIMIT_MILLICORES}m limit gives: the node's count and the documented deviation's print the same, "
        "so the check could tell neither",
        unknown=[name for name, count in cpus.items() if not count],
        fact="capacity cpu",
    )


def cadvisor_placement(nodes: Sequence[NodeProfile], read_gate: Callable[[str], bool] | None = None) -> Placement:
    """The cAdvisor check's pod: with PodAndContainerStatsFromCRI on, the kubelet serves /metrics/cadvisor from the
    CRI runtime's ListPodSandboxMetrics instead of cAdvisor (k8s.io/kubernetes@v1.34.4
    pkg/kubelet/server/server.go:459-467), on any OS: cAdvisor's collector, and with it its container_scrape_error
    line, is not there, and a runtime call that failed is only logged and serves nothing
    (pkg/kubelet/metrics/collectors/cri_metrics.go:70-75), so cAdvisor's absence cannot be observed there; a node
    without a data plane (simulated) cannot show it either. No node of the build has a data plane: the
    data-plane gate decides (``simulated``). Every real one has the gate on: the check skips, naming them. Else
    the pod is pinned to the first real node without it, unpinned where every node is such. A real node's gate is
    the profile's (``kubelet_feature_gates``, from /configz), else ``read_gate(name)`` (the run)."""
    real = [n for n in nodes if n.data_plane]
    if not real:
        return Placement(simulated=True)
    on = {n.name: n.kubelet_gate(CRI_STATS_GATE) for n in real}
    on = {name: read_gate(name) if value is None and read_gate else value for name, value in on.items()}
    gated = [name for name, value in on.items() if value]
    return node_avoiding(
        [n.name for n in nodes],
        [n.name for n in nodes if not n.data_plane] + gated,
        f"the kubelet of every real Windows node of the build runs with the feature gate {CRI_STATS_GATE} on "
        f"({', '.join(gated)}, from /configz): /metrics/cadvisor is then served from the CRI runtime's metrics, "
        "not cAdvisor, so cAdvisor's absence cannot be observed there",
        unknown=[name for name, value in on.items() if value is None],
        fact=f"kubelet feature gate {CRI_STATS_GATE} (/configz)",
    )


def placement_nodes(profile: Any, target_os: str, build: int | None) -> list[NodeProfile]:
    """The nodes a rule of AVOIDS decides among for a check on ``target_os``, in the profile's order, at collection
    (wincon.session.collection) and at run time alike: the Ready Windows nodes of the build (their tolerations are the
    suite's, wincon.workloads.pinning), or the Ready Linux nodes with a data plane that a Linux control's pod (no
    tolerations) may be scheduled to (no NoSchedule/NoExecute taint)."""
    from wincon.checks.pods import nodes_for

    nodes = nodes_for(profile, target_os, build)
    return nodes if target_os == "windows" else [n for n in nodes if schedulable_untolerated(n)]


def read_kubelet_gate(api_client: Any, node: NodeProfile, gate: str) -> bool:
    """Whether ``node``'s kubelet runs with ``gate`` on, read from its /configz now by the rule discovery reads it
    with (wincon.clusterinfo.profile.kubelet_feature_gates, at the node's kubelet version: a gate it does not list is at that
    version's default). A read refused or failed raises (the cluster's error, not an answer)."""
    from wincon.checks.node import kubelet_config, kubelet_json
    from wincon.clusterinfo.profile import kubelet_feature_gates

    configz, _ = kubelet_json(api_client, node.name, "configz")
    return dict(kubelet_feature_gates(kubelet_config(configz), node.kubelet_version))[gate]


def gate_on_placement(
    nodes: Sequence[NodeProfile], gate: str, needs: str, read_gate: Callable[[str], bool] | None = None
) -> Placement:
    """A check whose pod only a kubelet with ``gate`` on can run (``needs``: what that kubelet does for it): unpinned
    where every node of ``nodes`` (placement_nodes) is real and known to run it on; else pinned to the first real
    node, in order, whose kubelet runs it on; where every real node runs it off, the check skips naming them. No
    node has a data plane (a Windows build of simulated nodes): the data-plane gate decides (``simulated``); no
    node at all: unpinned (the run's own rules decide, as without this). A node's gate is the profile's
    (``kubelet_feature_gates``, from /configz), else ``read_gate(name)`` (the run: read only until a node with it on
    is found); unread before such a node, the plan leaves it to the run (``unknown``)."""
    real = [n for n in nodes if n.data_plane]
    if not real:
        return Placement(simulated=bool(nodes))
    known = {n.name: n.kubelet_gate(gate) for n in real}
    if len(real) == len(nodes) and all(value is True for value in known.values()):
        return Placement()
    off: list[str] = []
    unknown: list[str] = []
    for node in real:
        value = known[node.name]
        if value is None and read_gate is not None:
            value = read_gate(node.name)
        if value is None:
            unknown.append(node.name)
        elif value:
            if unknown:
                break
            return Placement(node=node.name)
        else:
            off.append(node.name)
    fact = f"kubelet feature gate {gate} (/configz)"
    if unknown:
        return Placement(unknown=tuple(unknown), fact=fact)
    where = "Windows node of the build" if real[0].os == "windows" else "schedulable Linux node"
    return Placement(
        skip=f"the kubelets of {', '.join(off)} run with {gate} off (their /configz; every real {where}): {needs}",
        fact=fact,
    )


# The kubelet feature gate that projects each projected certificate volume source, and what it does: off, the
# kubelet's manager of that source is a no-op that fails the volume's setup (k8s.io/kubernetes@v1.37.2
# pkg/kubelet/kubelet.go:1008-1040, clustertrustbundle_manager.go:343-356), so the pod never starts.
PROJECTION_GATES = {
    "ctb-projection": (
        "ClusterTrustBundleProjection",
        "the kubelet does not project clusterTrustBundle volume sources, so the check's pod could never start",
    ),
    "pod-certificate-projection": (
        "PodCertificateRequest",
        "the kubelet neither requests nor projects podCertificate volume sources, so the check's pod could never start",
    ),
}


def projection_placement(rule: str) -> Callable[..., Placement]:
    """The placement rule of PROJECTION_GATES[rule]: gate_on_placement with that gate and its reason, for AVOIDS
    (the plan: nodes alone) and for the check (with its run-time ``read_gate``)."""
    gate, needs = PROJECTION_GATES[rule]

    def placement(nodes: Sequence[NodeProfile], read_gate: Callable[[str], bool] | None = None) -> Placement:
        return gate_on_placement(nodes, gate, needs, read_gate)

    placement.__name__ = f"{rule.replace('-', '_')}_placement"
    return placement


# The rules a check names with ``@pytest.mark.avoids(rule)``: the same function decides for the check (with its
# run-time reads) and for `wincon plan` (the profile alone; wincon.session.collection), on the nodes placement_nodes gives.
AVOIDS: dict[str, Callable[..., Placement]] = {
    "hyperv-cpu-count": hyperv_cpu_placement,
    "cri-stats": cadvisor_placement,
    **{rule: projection_placement(rule) for rule in PROJECTION_GATES},
}
