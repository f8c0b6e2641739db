"""Memory limits count against a Windows node's allocatable memory: once every Windows node is filled, a pod
asking for 1 GiB more is not scheduled, for want of memory (upstream test/e2e/windows/memory_limits.go:61 at
v1.34.4, "should fail deployments of pods once there isn't enough memory"). Each node's filler pod is sized as
upstream sizes it at the release of the cluster's API server (see filler_margin): allocatable less the node's
existing reservation (requests and overhead of its non-terminal pods), the filler's own Pod Overhead (a DryRun
create of it) and a margin, 256 MiB from v1.37 (memory_limits.go:109-126 at v1.37.2) and 100 MiB before
(memory_limits.go:112 at v1.35.4 and v1.36.3).

The API server and the scheduler decide all of it: the check runs for real on simulated nodes too.
"""

from __future__ import annotations

import pytest

from wincon.checks.overhead import (
    MIB,
    SAFETY_BUFFER,
    detect_overhead,
    node_memory_reservation,
    sized_as_upstream_since,
)
from wincon.checks.pods import schedulable_windows_nodes, windows_pod
from wincon.cluster.waits import pod_failure, pod_scheduled
from wincon.workloads.pinning import assert_ran_on

pytestmark = [pytest.mark.scheduling]

FAILURE_LIMIT = 1024 * MIB  # upstream: the pod that must not fit asks for 1 GiB

# Upstream leaves the filler's node 256 MiB (windowsTestMemorySafetyBuffer) past its existing reservation and the
# filler's own Pod Overhead from v1.37 (memory_limits.go:109-126 at v1.37.2, the same at v1.38.0-beta.0; the minor is
# wincon.documents.releases.MINORS' "memory-filler-buffer"); at v1.35.4 and v1.36.3 it takes allocatable less 100 MiB
# (memory_limits.go:112 at both). The check follows the release of the cluster's API server, read as the stats
# checks read it (suites/node/test_kubelet.py, sized_by_overhead); an unparseable version is unknown and gets the
# newest release's margin, said in the check's properties. Only the margin follows the release: the node's existing
# reservation and the filler's own overhead come off on every release (the reservation did before 1.37's sizing came
# here too, 9964efe). The filler is bound by name, and a filler larger than what the node's pods leave unreserved,
# its overhead included, is refused by the node's kubelet: it then takes nothing, and the 1 GiB pod could be
# scheduled beside it, a failure the Windows node did not cause.
HEADROOM_BEFORE = 100 * MIB  # memory_limits.go:112 at v1.35.4 and v1.36.3


def filler_margin(request, wincon) -> int:
    """The memory (bytes) the filler leaves its node past the existing reservation and its own overhead, as
    upstream at the cluster's release (wincon.documents.releases.MINORS' "memory-filler-buffer"); recorded as the
    ``filler_sizing`` property with the version it was decided by."""
    buffered = sized_as_upstream_since(
        request, wincon.profile, "memory-filler-buffer", "filler_sizing", "256 MiB margin", "100 MiB margin"
    )
    return SAFETY_BUFFER if buffered else HEADROOM_BEFORE


def with_memory_limit(body: dict, limit: int) -> dict:
    """A memory limit only, as upstream sets it: the API server defaults the request to the limit."""
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": str(limit)}}
    return body


@pytest.mark.test_id("6915894a-800e-48d7-8f9b-315e2a3eb7aa")
@pytest.mark.decided_at_run_time("the run skips where the node has too little memory unreserved to fill")
# serial: fills every Windows node's allocatable memory: no other test's Windows pod could be scheduled meanwhile
# (upstream memory_limits.go:44, [Serial]).
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-intro", "V1.Container.ResourceRequirements.requests")
def test_pod_past_allocatable_memory_fails_scheduling_for_insufficient_memory(request, kube, wincon, namespace):
    """ "Requests are subtracted from node available resources, so they can be used to avoid overprovisioning a node" (000_4130a90def37a825.txt, V1.Container.ResourceRequirements.requests): with every Windows node's allocatable memory taken but 256 MiB from Kubernetes 1.37, 100 MiB before (its existing reservation and the filler's Pod Overhead counted on every release, as upstream counts them from v1.37), a Windows pod with a 1 GiB memory limit gets FailedScheduling naming "Insufficient memory" (upstream memory_limits.go:61, which accepts any FailedScheduling); freeing one node lets it schedule there (a control upstream lacks)."""
    nodes = schedulable_windows_nodes(wincon.profile)
    if not nodes:
        pytest.skip("no Ready Windows node that Windows pods may be scheduled on")
    margin = filler_margin(request, wincon)
    fillers = {}
    for index, node in enumerate(nodes):
        name = f"mem-test-{index}"
        # Bound by name, as upstream's are: the scheduler is asked only about the pod that must not fit.
        body = windows_pod(wincon, name, None, node=node)
        body["spec"]["nodeName"] = node
        overhead = detect_overhead(wincon.api_client, namespace, body)
        # Read once the pods being deleted there have gone (as the CPU checks do): they count until then, and their
        # going mid-check would free memory the filler did not take, so the 1 GiB pod could fit after all.
        memory, existing = node_memory_reservation(wincon.api_client, node, wincon.pod_start_timeout)
        limit = memory - existing - overhead - margin
        if limit <= 0:
            pytest.skip(
                f"node {node} has {(memory - existing) // MIB} MiB memory unreserved, not more than its filler's "
                f"overhead ({overhead // MIB} MiB) and {margin // MIB} MiB: not enough to fill as upstream"
            )
        kube.create(with_memory_limit(body, limit))
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
