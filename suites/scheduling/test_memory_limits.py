"""Memory limits count against a Windows node's allocatable memory: once every Windows node is filled, a pod
asking for 1 GiB more is not scheduled, for want of memory (upstream test/e2e/windows/memory_limits.go:61 at
v1.34.4, "should fail deployments of pods once there isn't enough memory").

The API server and the scheduler decide all of it: the check runs for real on simulated nodes too.
"""

from __future__ import annotations

import pytest

from wincon.checks.pods import schedulable_windows_nodes, windows_pod
from wincon.checks.scheduling import unrequested_once_settled
from wincon.cluster.waits import pod_failure, pod_scheduled
from wincon.workloads.pinning import assert_ran_on

pytestmark = [pytest.mark.scheduling]

MI = 1024 * 1024
HEADROOM = 100 * MI  # upstream: each node's pod limits its allocatable memory less 100 MiB
FAILURE_LIMIT = 1024 * MI  # upstream: the pod that must not fit asks for 1 GiB


def with_memory_limit(body: dict, limit: int) -> dict:
    """A memory limit only, as upstream sets it: the API server defaults the request to the limit."""
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": str(limit)}}
    return body


@pytest.mark.test_id("6915894a-800e-48d7-8f9b-315e2a3eb7aa")
@pytest.mark.decided_at_run_time("the run skips where the node has too little memory unrequested to fill")
# serial: fills every Windows node's allocatable memory: no other test's Windows pod could be scheduled meanwhile
# (upstream memory_limits.go:44, [Serial]).
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-intro", "V1.Container.ResourceRequirements.requests")
def test_pod_past_allocatable_memory_fails_scheduling_for_insufficient_memory(kube, wincon, namespace):
    """ "Requests are subtracted from node available resources, so they can be used to avoid overprovisioning a node" (000_4130a90def37a825.txt, V1.Container.ResourceRequirements.requests): with every Windows node's allocatable memory taken but 100 MiB, a Windows pod with a 1 GiB memory limit gets FailedScheduling naming "Insufficient memory" (upstream memory_limits.go:61, which accepts any FailedScheduling); freeing one node lets it schedule there (a control upstream lacks)."""
    nodes = schedulable_windows_nodes(wincon.profile)
    if not nodes:
        pytest.skip("no Ready Windows node that Windows pods may be scheduled on")
    fillers = {}
    for index, node in enumerate(nodes):
        # Read once the pods being deleted there have gone (as the CPU checks do): they count until then, and their
        # going mid-check would free memory the filler did not take, so the 1 GiB pod could fit after all.
        free = unrequested_once_settled(wincon.api_client, node, "memory", wincon.pod_start_timeout)
        limit = int(free) - HEADROOM
        if limit <= 0:
            pytest.skip(f"node {node} has {int(free) // MI} MiB memory unrequested: not enough to fill as upstream")
        name = f"mem-test-{index}"
        # Bound by name, as upstream's are: the scheduler is asked only about the pod that must not fit.
        body = with_memory_limit(windows_pod(wincon, name, None, node=node), limit)
        body["spec"]["nodeName"] = node
        kube.create(body)
        fillers[node] = name
    for name in fillers.values():
        kube.wait_pod(name, done=pod_scheduled, timeout=60, failure=pod_failure)

    kube.create(with_memory_limit(windows_pod(wincon, "mem-failure-pod", None), FAILURE_LIMIT))
    message = kube.wait_event("mem-failure-pod", "FailedScheduling", timeout=120, behaviour=True)[-1].message or ""
    assert "Insufficient memory" in message, f"FailedScheduling does not name memory: {message}"
    pending = kube.read_pod("mem-failure-pod")
    assert not pending.spec.node_name, f"mem-failure-pod was bound to {pending.spec.node_name}"

    # The control: one node's memory freed, the same pod is scheduled there.
    node = next(iter(fillers))
    kube.delete_pod(fillers[node], grace=0)
    placed = kube.wait_pod(
        "mem-failure-pod",
        done=pod_scheduled,
        timeout=120,
        failure=None,
        behaviour=True,
        describe=f"scheduled once {fillers[node]} freed {node}'s memory",
    )
    assert placed.spec.node_name == node, f"mem-failure-pod went to {placed.spec.node_name}, not the freed {node}"
    assert_ran_on(placed, wincon.profile, os_name="windows")
