"""A RuntimeClass with Pod Overhead on the local cluster, so the overhead-aware checks run their overhead path
for real on the real Linux nodes (issue 30).

RuntimeClass ``wincon-runc-overhead``: handler ``runc`` (the runtime the real nodes' containerd serves,
dataplane.py's ``default_runtime_name``), ``overhead.podFixed`` of 512 MiB memory and 10m CPU, scheduled on
Linux nodes. The API server's RuntimeClass admission copies podFixed into ``spec.overhead`` of every pod naming
it; the scheduler and the kubelet count it with the pod's requests. No process: ``start`` only says what it sets
up.

Why 512 MiB and not an overhead that brings the stats check's "up to 10 pods" below 10: at v1.37.2 the scheduler
counts the overhead of a pod twice once its kubelet has reported it (kubernetes#139627, open: the kubelet's
pod-level ``status.allocatedResources`` and ``status.resources.requests`` already hold the overhead, and
component-helpers' PodRequests takes their max with the spec and adds ``spec.overhead`` again). Seen here with
3 GiB: upstream's count was 7 pods on worker-0 (23.2 GiB allocatable, 100 MiB requested), the scheduler placed
4 or 5 and refused the rest for "Insufficient memory"; its cache dump (SIGUSR2) gave worker-0 Requested Memory
25874661376 for 4 such pods and CoreDNS's 100 MiB, i.e. 6 GiB a pod; each pod's ``status.allocatedResources``
read ``{cpu: 10m, memory: 3Gi}``. Any overhead that lowers upstream's count below 10 is past what the scheduler
then admits (n pods of 2 x overhead do not fit where n = room / overhead), so the count's reduction and its floor
of 3 are shown by unit tests (tests/unit/test_pod_overhead.py); here 10 pods of 512 MiB (10 GiB as the scheduler
counts them) fit a node of 11 GiB or more, and the overhead path (DryRun read, reservation, count) runs for real.

The suite's Linux controls use it where the cluster's profile lists it (wincon.checks.overhead
``OVERHEAD_RUNTIME_CLASS``); nothing else names it, so other checks' pods get no overhead.
"""

from __future__ import annotations

from typing import Any, TextIO

from wincon.checks.overhead import OVERHEAD_RUNTIME_CLASS
from wincon.localcluster import dataplane

NAME = "runtimeclass-overhead"
IP_FAMILIES = ("ipv4", "dual", "ipv6")  # an API object only: no address of any family
WAITS_FOR = f"RuntimeClass {OVERHEAD_RUNTIME_CLASS}"
HANDLER = "runc"
POD_FIXED = {"memory": "512Mi", "cpu": "10m"}


def start(plan: dataplane.Plan, out: TextIO) -> bool:
    """Nothing to start; False where there is no real node to run its pods."""
    if not plan.nodes:
        print(f"{NAME}: no real node; RuntimeClass {OVERHEAD_RUNTIME_CLASS} not created", file=out, flush=True)
        return False
    print(f"RuntimeClass {OVERHEAD_RUNTIME_CLASS}: handler {HANDLER}, Pod Overhead {POD_FIXED}", file=out, flush=True)
    return True


def objects(plan: dataplane.Plan) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": OVERHEAD_RUNTIME_CLASS, "labels": {"app.kubernetes.io/managed-by": "wincon.local"}},
            "handler": HANDLER,
            "overhead": {"podFixed": dict(POD_FIXED)},
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "linux"}},
        }
    ]


def available(api: Any) -> bool | None:
    """True once the RuntimeClass reads back with its overhead."""
    from kubernetes import client

    rc = client.NodeV1Api(api).read_runtime_class(OVERHEAD_RUNTIME_CLASS, _request_timeout=5)
    return True if rc.overhead and rc.overhead.pod_fixed == POD_FIXED else None


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """``cluster status --json``'s ``addons["runtimeclass-overhead"]``."""
    return {"runtime_class": OVERHEAD_RUNTIME_CLASS, "handler": HANDLER, "pod_fixed": dict(POD_FIXED)}
