"""The kubelet of a Windows node, through the API server's node proxy: /stats/summary answers fast and covers
every running pod, the node reports its boot id, /metrics/resource has node and container series, and
NodeAllocatable is capacity minus what /configz says the kubelet reserves.

Every check has a Linux control (``target_os``): the same questions to a Linux worker's kubelet, about Linux
pods started there, through the same node proxy (``target_node``).

Upstream: test/e2e/windows/kubelet_stats.go, metrics.go and memory_limits.go ("Allocatable node memory").
The pods are created and scheduled for real everywhere; the kubelet's answers need a real kubelet, so each
check passes the ``data_plane`` gate first (simulated nodes have none).
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from kubernetes.utils import parse_quantity

from wincon.checks.node import (
    STATS_COLLECTION_SECONDS,
    STATS_SCRAPE_LIMIT_SECONDS,
    nothing_reserved,
    parse_metrics,
    reservations,
    resource_metrics_problems,
    summary_problems,
)
from wincon.checks.overhead import (
    STATS_BASELINE_PODS,
    STATS_MINIMUM_PODS,
    detect_overhead,
    node_memory_reservation,
    overhead_spec,
    require_room,
    sized_as_upstream_since,
    stats_pod_count,
)
from wincon.checks.pods import create_or_reject, eventually, os_pod
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.kubelet import kubelet_config, kubelet_get, kubelet_json
from wincon.clusterinfo.nodes import pick_node
from wincon.commandline.errors import SuiteError
from wincon.workloads.pinning import WINDOWS_TOLERATIONS

pytestmark = [pytest.mark.scheduling]

SCRAPE_INTERVAL_SECONDS = 5.0  # upstream kubelet_stats.go:104


def proxy_command(node: str, path: str) -> str:
    return f"GET /api/v1/nodes/{node}/proxy/{path}"


def await_stats(check, node: str, what: str) -> list[str]:
    """Poll ``check()`` (the problems of one fresh answer) until it has none, at most STATS_COLLECTION_SECONDS:
    a kubelet may sample a new pod's stats only on its next housekeeping round. Returns the last problems."""
    last: list[str] = []

    def clean() -> bool:
        last[:] = check()
        return not last

    eventually(
        clean, STATS_COLLECTION_SECONDS, f"{what} of {node}", interval=2, behaviour=True, seen=lambda: "; ".join(last)
    )
    return last


def check_summary(wincon, namespace, node: str, expected: set[str], rounds: int, target_os: str) -> float:
    """Upstream's sequence (kubelet_stats.go:66-104 at v1.34.4): right after the pods are Running and Ready, scrape
    /stats/summary ``rounds`` times, 5 s apart; every scrape is timed and must list each pod of ``expected``
    with live stats. No warm-up on Windows, as upstream. The Linux control alone first waits (untimed, at most
    STATS_COLLECTION_SECONDS) for its kubelet to sample the new pods: cAdvisor samples a new container on its
    next housekeeping round, and the first scrape right after Ready showed zero CPU and working set for every
    pod on the local cluster's Linux workers. Returns the mean seconds per timed scrape."""
    if target_os == "linux":

        def problems() -> list[str]:
            return summary_problems(kubelet_json(wincon.api_client, node, "stats/summary")[0], namespace, expected)

        await_stats(problems, node, "/stats/summary listing every pod with live stats (cAdvisor housekeeping)")
    seconds = []
    for index in range(rounds):
        if index:
            time.sleep(SCRAPE_INTERVAL_SECONDS)
        summary, took = kubelet_json(wincon.api_client, node, "stats/summary")
        seconds.append(took)
        found = summary_problems(summary, namespace, expected)
        assert not found, f"/stats/summary of {node}, scrape {index + 1} of {rounds}: {'; '.join(found)}"
    return sum(seconds) / len(seconds)


# Upstream sizes the stats checks' pods by Pod Overhead from v1.37 (test/e2e/windows/kubelet_stats.go:48-90 and
# :171-198 at v1.37.2; 10 pods and 3 pods whatever the overhead before): the minor is wincon.documents.releases.MINORS'
# "stats-sized-by-overhead". The checks follow the release of the cluster's API server (the e2e suite of that release
# is the one run against it); an unparseable version is unknown and gets the newest release's sizing, said in the
# check's properties.


def sized_by_overhead(request, wincon) -> bool:
    """Whether the cluster's release sizes the stats checks by Pod Overhead (releases.MINORS'
    "stats-sized-by-overhead"); recorded as the ``stats_sizing`` property with the version it was decided by."""
    return sized_as_upstream_since(
        request, wincon.profile, "stats-sized-by-overhead", "stats_sizing", "by Pod Overhead", "fixed"
    )


def sized_pods(wincon, namespace: str, node: str, prefix: str, target_os: str, build: int | None) -> dict:
    """The spec fields of a stats check's pods and the Pod Overhead (bytes) the API gives one of them: a DryRun
    create of the check's own pod (upstream v1.37.2 utils.go:154-183 reads a bare pause pod's). The Linux control
    names the local cluster's RuntimeClass with overhead where the profile lists it (overhead_spec)."""
    spec = overhead_spec(wincon.profile, target_os)
    body = os_pod(wincon, f"{prefix}-0", target_os, build, node=node, labels={"app": prefix}, **spec)
    return {"spec": spec, "overhead": detect_overhead(wincon.api_client, namespace, body)}


@pytest.mark.test_id("e7e41373-d1be-4fe2-9fab-d44b000944e5")
@pytest.mark.dataplane
# serial: times the kubelet's /stats/summary with this test's 10 pods on the node: other tests' pods there (and
# their starts) add to what the kubelet gathers and slow the answer (upstream kubelet_stats.go:41, [Serial]).
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(no_command="times the kubelet's stats/summary through the API server")
def test_stats_summary_answers_within_10_seconds_with_10_pods(
    request, wincon, namespace, target_node, start_pods, data_plane, target_os, build
):
    """ "Pod and container metrics" are supported for Windows containers (002_8a7e76f95009f44f.txt, Supported Functionality): /stats/summary of a Windows node running up to 10 pods (from Kubernetes 1.37, as many as fit once Pod Overhead and 256 MiB are taken from its free memory, at least 3; before, 10) answers within 10 s (upstream kubelet_stats.go:48-146 at v1.37.2, :48-124 at v1.36.3, [Serial])."""
    gate = proxy_command(target_node.name, "stats/summary")
    data_plane(gate, where="the API server's node proxy, 5 rounds", pod_node=target_node.name)
    sized = sized_pods(wincon, namespace, target_node.name, "stats10", target_os, build)
    count = STATS_BASELINE_PODS
    if sized["overhead"] and sized_by_overhead(request, wincon):
        memory, existing = node_memory_reservation(wincon.api_client, target_node.name, wincon.pod_start_timeout)
        count = stats_pod_count(target_node.name, memory, existing, sized["overhead"])
    request.node.user_properties.append(("stats_pods", str(count)))
    request.node.user_properties.append(("pod_overhead_memory", str(sized["overhead"])))
    pods = start_pods("stats10", count, target_node.name, os_name=target_os, **sized["spec"])
    mean = check_summary(wincon, namespace, target_node.name, {p.metadata.name for p in pods}, 5, target_os)
    request.node.user_properties.append(("stats_summary_seconds_10_pods", f"{mean:.3f}"))
    assert mean <= STATS_SCRAPE_LIMIT_SECONDS, f"/stats/summary took {mean:.1f}s on average, more than 10 s"


@pytest.mark.test_id("d945b8d9-66a4-4758-ad3f-420e37432ff9")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(no_command="times the kubelet's stats/summary through the API server")
# Not made ahead (waves.ahead): the gate, the sizing and the room on the node are decided before it creates, its
# pods go to target_node (a fixture) and the scrape is timed right after they are Ready, as upstream's.
def test_stats_summary_answers_within_10_seconds_with_3_pods(
    request, wincon, namespace, target_node, start_pods, data_plane, target_os, build
):
    """ "Pod and container metrics" are supported for Windows containers (002_8a7e76f95009f44f.txt, Supported Functionality): /stats/summary with 3 pods answers within 10 s and includes each (upstream kubelet_stats.go:171-256 at v1.37.2: first, from Kubernetes 1.37 and where the pods get Pod Overhead, the node must have memory for 3 of it and 256 MiB)."""
    gate = proxy_command(target_node.name, "stats/summary")
    data_plane(gate, where="the API server's node proxy", pod_node=target_node.name)
    sized = sized_pods(wincon, namespace, target_node.name, "stats3", target_os, build)
    if sized["overhead"] and sized_by_overhead(request, wincon):
        memory, existing = node_memory_reservation(wincon.api_client, target_node.name, wincon.pod_start_timeout)
        require_room(target_node.name, memory, existing, sized["overhead"], STATS_MINIMUM_PODS)
    request.node.user_properties.append(("pod_overhead_memory", str(sized["overhead"])))
    pods = start_pods("stats3", STATS_MINIMUM_PODS, target_node.name, os_name=target_os, **sized["spec"])
    mean = check_summary(wincon, namespace, target_node.name, {p.metadata.name for p in pods}, 1, target_os)
    request.node.user_properties.append(("stats_summary_seconds_3_pods", f"{mean:.3f}"))
    assert mean <= STATS_SCRAPE_LIMIT_SECONDS, f"/stats/summary took {mean:.1f}s, more than 10 s"


@pytest.mark.test_id("f49ab528-0715-4aaa-8a87-16d3506438ee")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(no_command="reads the node's status and the kubelet's stats/summary through the API server")
@pytest.mark.no_pod("reads the node and the kubelet through the API server")
def test_node_reports_its_boot_id(kube, wincon, target_node, data_plane, target_os):
    """ "Pod status fields" and node status work on Windows (002_8a7e76f95009f44f.txt, Pods): the kubelet reports the node's bootID in nodeInfo, and /stats/summary answers for that node within 10 s (upstream kubelet_stats.go, "when windows is booted")."""
    data_plane(proxy_command(target_node.name, "stats/summary"), where="node status and the node proxy")
    core = kube.core
    node = call(core.read_node, target_node.name)
    boot_id = node.status.node_info.boot_id if node.status and node.status.node_info else ""
    assert boot_id, f"node {target_node.name} reports no status.nodeInfo.bootID"
    summary, took = kubelet_json(wincon.api_client, target_node.name, "stats/summary")
    assert summary.get("node", {}).get("nodeName") == target_node.name, f"summary is not of {target_node.name}"
    assert took <= STATS_SCRAPE_LIMIT_SECONDS, f"/stats/summary took {took:.1f}s, more than 10 s"


def metrics_pods(wincon, target_os: str, build: int | None) -> list[dict]:
    """The metrics check's two agnhost pause pods on target_node (its rule: pick_node), as start_pods makes them
    (made ahead: ``waves.ahead``); none where there is no such node (target_node skips the check)."""
    node = pick_node(wincon.profile, target_os, build, WINDOWS_TOLERATIONS)
    if node is None:
        return []
    return [
        os_pod(wincon, f"metrics-{i}", target_os, build, node=node.name, labels={"app": "metrics"}) for i in range(2)
    ]


@pytest.mark.test_id("24373c80-bda0-4f46-b504-2d63f325949f")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(no_command="reads the kubelet's /metrics/resource through the API server")
# Safe ahead: its two pods go to target_node, the profile's first node of the build (pick_node, no live state); what
# is read is /metrics/resource once they run, polled until it has their series; nothing is timed from their start.
@waves.ahead(metrics_pods)
def test_metrics_resource_has_node_and_container_series(
    kube, wincon, namespace, build, target_node, data_plane, target_os
):
    """ "Pod and container metrics" are supported for Windows containers (002_8a7e76f95009f44f.txt, Supported Functionality): /metrics/resource has the node's CPU and memory series and each Windows container's (upstream metrics.go)."""
    bodies = metrics_pods(wincon, target_os, build)  # as start_pods made them, created as run_os_pods creates them
    pinned = [body["spec"]["nodeSelector"].get("kubernetes.io/hostname") for body in bodies]
    if pinned != [target_node.name] * 2:
        raise SuiteError(
            f"metrics_pods pins the pods to {pinned}, not to target_node {target_node.name}",
            "give metrics_pods target_node's rule (suites/node/conftest.py)",
        )
    for body in bodies:
        create_or_reject(wincon.api_client, namespace, body)
    pods = [kube.wait_pod(body["metadata"]["name"], timeout=wincon.pod_start_timeout) for body in bodies]
    data_plane(proxy_command(target_node.name, "metrics/resource"), where="the API server's node proxy")
    names = [p.metadata.name for p in pods]

    def problems() -> list[str]:
        answer = kubelet_get(wincon.api_client, target_node.name, "metrics/resource")
        assert answer.status == 200, f"/metrics/resource answered {answer.status}: {answer.body[:300]}"
        return resource_metrics_problems(parse_metrics(answer.body), namespace, names)

    left = await_stats(problems, target_node.name, "/metrics/resource with node, container and pod series")
    assert not left, f"/metrics/resource of {target_node.name}: {'; '.join(left)}"


def node_figures(kube, node_name: str, resource: str):
    core = kube.core
    node = call(core.read_node, node_name)
    configz, _ = kubelet_json(kube.api_client, node_name, "configz")
    res = reservations(kubelet_config(configz), resource, node.status.capacity[resource])
    return res, Decimal(parse_quantity(node.status.allocatable[resource]))


@pytest.mark.test_id("fed82b24-b001-4f27-8283-a823a04d0d02")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Memory Reservations")
@pytest.mark.windows_form(no_command="reads the kubelet's configz and the node through the API server")
@pytest.mark.no_pod("reads the node and the kubelet through the API server")
def test_allocatable_memory_is_capacity_minus_reservations_from_configz(
    kube, wincon, target_node, data_plane, target_os
):
    """ "--kubelet-reserve, --system-reserve , and --eviction-hard flags update Node Allocatable" (002_8a7e76f95009f44f.txt, Memory Reservations): allocatable memory equals capacity minus kubeReserved, systemReserved and evictionHard memory.available from /configz (upstream memory_limits.go)."""
    data_plane(proxy_command(target_node.name, "configz"), where="the API server's node proxy")
    res, allocatable = node_figures(kube, target_node.name, "memory")
    assert allocatable == res.expected_allocatable, f"allocatable memory is {allocatable}; {res.describe()}"


@pytest.mark.test_id("a4f015b8-9c88-4755-be4b-998c054c0155")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Memory Reservations")
@pytest.mark.windows_form(no_command="reads the kubelet's configz and the node through the API server")
@pytest.mark.no_pod("reads the node and the kubelet through the API server")
@pytest.mark.requires("kubelet-reservations")
def test_kube_and_system_reserved_shrink_allocatable_cpu(kube, wincon, target_node, data_plane, target_os):
    """ "use the kubelet parameters --kubelet-reserve and/or --system-reserve to account for memory usage on the node (outside of containers). This will reduce NodeAllocatable" (002_8a7e76f95009f44f.txt, Memory Reservations): reserved CPU comes off allocatable CPU."""
    data_plane(proxy_command(target_node.name, "configz"), where="the API server's node proxy")
    configz, _ = kubelet_json(kube.api_client, target_node.name, "configz")
    unreserved = nothing_reserved(kubelet_config(configz), target_node.name)
    if unreserved:
        pytest.skip(unreserved)  # requires("kubelet-reservations") decides this at collection too: the plan says skip
    res, allocatable = node_figures(kube, target_node.name, "cpu")
    assert allocatable == res.expected_allocatable, f"allocatable CPU is {allocatable}; {res.describe()}"
    if res.reserved:
        assert allocatable < res.capacity, f"CPU reserved ({res.reserved}) but allocatable {allocatable} = capacity"
