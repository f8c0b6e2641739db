"""Pod Overhead (KEP-688) in the checks that fill a node's memory, as upstream does from Kubernetes 1.37.

Upstream (k8s.io/kubernetes v1.37.2, test/e2e/windows/utils.go:108-249) reads the per-pod memory overhead the
cluster's admission chain injects with one DryRun pod create (``computePodOverheadMemory``, :154-183: the
mutated answer's ``spec.overhead.memory``, 0 where there is none), keeps a fixed 256 MiB safety buffer
(``windowsTestMemorySafetyBuffer``, :119) and subtracts the node's existing reservation: the memory requests
plus overhead of its non-terminal pods (``sumExistingPodMemoryReservation``, :224-249). Two checks use them:

- kubelet_stats.go:57-86 ("when running up to 10 pods"): with overhead, as many pods as
  ``(allocatable - existing - 256 MiB) / overhead`` allows, at most 10; below 3 the test Failf's, naming the
  cluster as misconfigured ("Right-size the test cluster ...");
- memory_limits.go:109-126 (the filler pod): a memory limit of ``allocatable - existing - overhead - 256 MiB``.

Ours reads the overhead with a DryRun create of the check's own pod (its spec and runtimeClassName: a
RuntimeClass's overhead is only injected for pods that name it), where upstream's probe is a bare pause pod.
The existing reservation is ``wincon.checks.scheduling.requested``: requests and overhead of the non-terminal
pods, init containers counted as the scheduler counts them (upstream sums the app containers only).
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from kubernetes import client
from kubernetes.utils import parse_quantity

from wincon.checks.api_rules import submit_pod
from wincon.checks.scheduling import allocatable, requested, unrequested_once_settled
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError
from wincon.documents import releases

MIB = 1024 * 1024
SAFETY_BUFFER = 256 * MIB  # upstream utils.go:119 (v1.37.2), windowsTestMemorySafetyBuffer
STATS_BASELINE_PODS = 10  # kubelet_stats.go:59
STATS_MINIMUM_PODS = 3  # kubelet_stats.go:60
# The local cluster's RuntimeClass of handler runc with Pod Overhead (wincon/localcluster/overhead.py): the Linux
# controls of the overhead-aware checks name it where the cluster's profile lists it, so their overhead path runs.
OVERHEAD_RUNTIME_CLASS = "wincon-runc-overhead"
OVERHEAD_HANDLER = "runc"
RESIZE_HINT = "right-size the test cluster, lower the per-pod overhead, or reduce the node's existing reservation"


def overhead_spec(profile: ClusterProfile, target_os: str) -> dict[str, str]:
    """The pod spec fields that give a check's pods a RuntimeClass with overhead: ``runtimeClassName`` of
    OVERHEAD_RUNTIME_CLASS for a Linux control where the profile lists it (handler runc); else none, as upstream's
    pods have none (a cluster then injects overhead, if at all, by a webhook or its default)."""
    listed = profile.runtime_classes or []
    if target_os == "linux" and (OVERHEAD_RUNTIME_CLASS, OVERHEAD_HANDLER) in listed:
        return {"runtimeClassName": OVERHEAD_RUNTIME_CLASS}
    return {}


def overhead_memory(pod: dict[str, Any]) -> int:
    """Bytes of ``spec.overhead.memory`` of a pod as the API answered it (a dict); 0 where it has none."""
    overhead = (pod.get("spec") or {}).get("overhead") or {}
    return int(parse_quantity(overhead["memory"])) if "memory" in overhead else 0


def detect_overhead(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> int:
    """The memory overhead the admission chain gives ``body`` (the check's own pod): a DryRun create of a copy,
    named ``overhead-probe``, read as the API server returns it after admission. A refusal is an infrastructure
    error: the check cannot size its pods (upstream: ExpectNoError "detecting pod overhead memory")."""
    probe = copy.deepcopy(body)
    probe["metadata"] = {**probe.get("metadata", {}), "name": "overhead-probe"}
    created, rejection = submit_pod(api_client, namespace, probe, dry_run=True)
    if created is None:
        why = f"{rejection.status} {rejection.reason}: {rejection.message}" if rejection else "no answer"
        raise InfrastructureError(
            f"the DryRun create of the check's pod that reads its Pod Overhead was refused: {why}",
            "the namespace must admit the check's own pod",
        )
    return overhead_memory(created)


def node_memory_reservation(api_client: client.ApiClient, node: str, timeout: float) -> tuple[int, int]:
    """(allocatable memory, existing reservation) of ``node`` in bytes, read once no pod there that requests
    memory is being deleted (upstream waitForNodeMemoryToSettle, utils.go:195, which polls 90 s)."""
    unrequested_once_settled(api_client, node, "memory", timeout)
    return int(allocatable(api_client, node, "memory")), int(requested(api_client, node, "memory"))


def stats_pod_count(node: str, allocatable_bytes: int, existing: int, overhead: int) -> int:
    """How many pods the 10-pod stats check starts (kubelet_stats.go:61-83 at v1.37.2): 10 without overhead;
    with it, as many as fit in ``allocatable - existing - 256 MiB`` at ``overhead`` each, at most 10. Fewer than 3:
    an infrastructure error (the cluster cannot run the check: upstream's Failf names a misconfigured cluster)."""
    if overhead <= 0:
        return STATS_BASELINE_PODS
    room = allocatable_bytes - existing - SAFETY_BUFFER
    fit = room // overhead if room > 0 else 0
    count = min(STATS_BASELINE_PODS, fit)
    if count < STATS_MINIMUM_PODS:
        raise InfrastructureError(
            f"node {node} has memory for {fit} pods, fewer than the {STATS_MINIMUM_PODS} the check needs: "
            f"allocatable {_mib(allocatable_bytes)}, existing reservation {_mib(existing)}, "
            f"per-pod overhead {_mib(overhead)}, safety buffer {_mib(SAFETY_BUFFER)}",
            RESIZE_HINT,
        )
    return count


def require_room(node: str, allocatable_bytes: int, existing: int, overhead: int, pods: int) -> None:
    """The 3-pod stats check's guard (kubelet_stats.go:180-196 at v1.37.2): with overhead, the node's
    ``allocatable - existing - 256 MiB`` must hold ``pods`` overheads, else an infrastructure error (upstream's
    Failf on a misconfigured cluster); nothing to check without overhead."""
    free = allocatable_bytes - existing - SAFETY_BUFFER
    if overhead > 0 and free < pods * overhead:
        raise InfrastructureError(
            f"node {node} has {_mib(free)} memory free for pods, less than {pods} pods' overhead "
            f"({pods} x {_mib(overhead)}): allocatable {_mib(allocatable_bytes)}, existing reservation "
            f"{_mib(existing)}, safety buffer {_mib(SAFETY_BUFFER)}",
            RESIZE_HINT,
        )


def filler_limit(allocatable_bytes: int, existing: int, overhead: int) -> int:
    """The memory limit of the pod that fills a node (memory_limits.go:119-123 at v1.37.2): allocatable less the
    node's existing reservation, the filler's own overhead and the 256 MiB buffer."""
    return allocatable_bytes - existing - overhead - SAFETY_BUFFER


def _mib(value: int | Decimal) -> str:
    return f"{int(value) / MIB:.0f} MiB ({int(value)} bytes)"


def sized_as_upstream_since(
    request: Any, profile: ClusterProfile, fact: str, prop: str, newer: str, older: str
) -> bool:
    """Whether the cluster's API server runs the release from which ``fact`` of wincon.documents.releases.MINORS holds, or a
    later one, where upstream's e2e sizes a check's pods the newer way (the e2e suite of the cluster's release is
    the one run against it); an unparseable version is unknown and gets the newest release's sizing. The decision
    is recorded as the test's ``prop`` property, the sizing (``newer`` or ``older``) with the version it was
    decided by."""
    version, minor = profile.server_version, releases.since(fact)
    reached = releases.at_least(version, minor)
    if reached is None:
        why = f"{newer}: the API server's version {version!r} is unknown"
    elif reached:
        why = f"{newer}, as upstream from {minor} (the API server runs {version})"
    else:
        why = f"{older}, as upstream before {minor} (the API server runs {version})"
    request.node.user_properties.append((prop, why))
    return reached is not False
