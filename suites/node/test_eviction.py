"""Memory-pressure eviction on a Windows node, as upstream test/e2e/windows/eviction.go:65 (v1.34.4) drives it: a
pod within its 500 MiB request and a greedy pod that takes the rest of the node's memory; the kubelet must
evict the greedy pod (an Evicted event about it), and the node must become schedulable again afterwards.

Disruptive: it pages a Windows node. Marked ``serial`` and ``disruptive``; it only ever starts after the
``data_plane`` gate, on a real node whose kubelet has a hard memory.available threshold (from /configz).
"""

from __future__ import annotations

import pytest

from wincon.checks.node import reservations
from wincon.checks.pods import eventually, windows_pod
from wincon.cluster.client import call
from wincon.cluster.kubelet import kubelet_config, kubelet_json
from wincon.cluster.waits import pod_failure, pod_running
from wincon.windows import forms

# serial: pages a Windows node until its kubelet evicts (upstream eviction.go:52, [Serial] [Disruptive]).
pytestmark = [pytest.mark.scheduling, pytest.mark.disruptive, pytest.mark.serial, pytest.mark.slow]

MI = 1024 * 1024
PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"
NODE_RECOVERY_SECONDS = 600.0  # upstream: 10 minutes for the taint to go, 10 minutes for the eviction


def memory_hog_command(chunk: str, every: str, count: int) -> list[str]:
    """Sysinternals testlimit in upstream's resource-consumer image (eviction.go:124-132 and :163-171)."""
    return ["/bin/testlimit.exe", "-accepteula", "-d", chunk, "-e", every, "20000s", "-c", str(count)]


def schedulable_again(kube, node_name: str) -> str | None:
    """None once the node is Ready, not cordoned and without the memory-pressure NoSchedule taint."""
    node = call(kube.core.read_node, node_name)
    problems = []
    if not any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or []):
        problems.append("not Ready")
    if node.spec.unschedulable:
        problems.append("cordoned")
    if any(t.key == PRESSURE_TAINT and t.effect == "NoSchedule" for t in node.spec.taints or []):
        problems.append(f"taint {PRESSURE_TAINT}")
    return ", ".join(problems) or None


def running_or_evicted(pod) -> bool:
    """The greedy pod's start is over: Running, or already evicted (phase Failed, reason Evicted: the kubelet may
    evict it before a watch sees it Running, and that is the behaviour the check waits for, not the cluster failing
    to run it). The Evicted event is still what the check asserts."""
    status = pod.status
    return pod_running(pod) or bool(status and status.phase == "Failed" and status.reason == "Evicted")


@pytest.mark.test_id("4cc98968-f854-4f21-92e6-07003ad6b237")
@pytest.mark.dataplane
@pytest.mark.windows_only(
    "disruptive: drives a node into memory pressure with testlimit.exe; a Linux control would page a real Linux "
    "node (locally: this machine)"
)
@pytest.mark.limitation("memory-pressure-not-reported")
@pytest.mark.documents("k8s-windows-guide", "Memory Reservations")
@pytest.mark.windows_form(forms.TESTLIMIT)
def test_greedy_pod_is_evicted_under_memory_pressure_and_the_node_recovers(kube, wincon, windows_node, data_plane):
    """ "--kubelet-reserve, --system-reserve , and --eviction-hard flags update Node Allocatable" (002_8a7e76f95009f44f.txt, Memory Reservations): with a hard memory.available threshold, a pod that takes the node's memory beyond it is evicted (an Evicted event about that pod) and the node is schedulable again afterwards (upstream eviction.go:65)."""
    node = windows_node.name
    build = windows_node.windows_build
    data_plane(
        f"GET /api/v1/nodes/{node}/proxy/configz; {' '.join(memory_hog_command('300Mb', '1', 0))}", pod_node=node
    )
    capacity = call(kube.core.read_node, node).status.capacity["memory"]
    res = reservations(kubelet_config(kubelet_json(kube.api_client, node, "configz")[0]), "memory", capacity)
    if res.hard_eviction <= 0:
        pytest.skip(f"no hard memory-pressure eviction threshold (evictionHard memory.available) on {node}")
    eventually(
        lambda: schedulable_again(kube, node) is None, NODE_RECOVERY_SECONDS, f"{node} schedulable before the test"
    )
    image = wincon.catalog.image("resource-consumer", "windows", build)
    within = windows_pod(wincon, "pod1", build, node=node)
    within["spec"]["nodeName"] = node
    within["spec"]["containers"][0].update(
        image=image, command=memory_hog_command("100Mb", "5", 5), resources={"requests": {"memory": str(500 * MI)}}
    )
    kube.create(within)
    kube.wait_pod("pod1", done=pod_running, timeout=wincon.pod_start_timeout, failure=pod_failure)
    chunks = int((res.capacity - res.hard_eviction) / (300 * MI)) + 3  # upstream eviction.go:150
    greedy = windows_pod(wincon, "pod2", build, node=node)
    greedy["spec"]["nodeName"] = node
    greedy["spec"]["containers"][0].update(image=image, command=memory_hog_command("300Mb", "1", chunks))
    kube.create(greedy)
    kube.wait_pod("pod2", done=running_or_evicted, timeout=wincon.pod_start_timeout, failure=pod_failure)
    evicted = kube.wait_event("pod2", "Evicted", timeout=NODE_RECOVERY_SECONDS, behaviour=True)
    assert evicted, "no Evicted event about pod2"
    eventually(
        lambda: schedulable_again(kube, node) is None,
        NODE_RECOVERY_SECONDS,
        f"{node} schedulable again after the eviction",
        interval=10,
        behaviour=True,
        seen=lambda: schedulable_again(kube, node),
    )
    assert schedulable_again(kube, node) is None
