"""CPU limits in both spellings, as upstream test/e2e/windows/cpu_limits.go:47 (v1.34.4) sets them: one busy pod
limited to "0.5" and one to "500m" (1Gi memory each), eight busy jobs in each; after 2 minutes both still run
and the kubelet's /stats/summary shows each using more than zero and at most 0.525 core: the limit plus 5 %
(upstream fails only at 0.84, ``.8*1.05``, cpu_limits.go:101).

Its Linux control (``target_os``) runs the same two pods on a Linux worker, agnhost stress keeping eight CPUs
busy. The Windows pods need a real node: the check passes the ``data_plane`` gate first.
"""

from __future__ import annotations

import time

import pytest

from wincon import forms
from wincon.checks.node import MAX_CORES_UNDER_500M, kubelet_json, pod_cpu_cores
from wincon.checks.pods import nodes_for, os_pod, windows_pod
from wincon.cluster.waits import pod_failure, pod_running
from wincon.errors import expect_deviation

pytestmark = [pytest.mark.scheduling]

LIMITS = ("0.5", "500m")  # upstream cpu_limits.go:49 and :52
MAX_CORES = MAX_CORES_UNDER_500M  # the limit plus 5 %, as the compute check
LOAD_SECONDS = 120.0  # upstream cpu_limits.go:55
CPU_BURN = [  # upstream cpu_limits.go:143-145, in its busybox image
    "powershell.exe",
    "-Command",
    "foreach ($loopnumber in 1..8) { Start-Job -ScriptBlock { $result = 1; foreach($mm in 1..2147483647){$res1=1;"
    "foreach($num in 1..2147483647){$res1=$mm*$num*1340371};$res1} } } ; get-job | wait-job",
]


def burn_pod(wincon, name: str, target_os: str, build, node: str, cpu: str) -> dict:
    limits = {"resources": {"limits": {"cpu": cpu, "memory": "1Gi"}}}
    if target_os == "windows":
        return windows_pod(
            wincon, name, build, image_key="busybox", command=CPU_BURN, node=node, container_extra=limits
        )
    return os_pod(wincon, name, "linux", None, args=["stress", "--cpus=8"], node=node, container_extra=limits)


@pytest.mark.test_id("789f527d-6990-4b5d-9117-16f7fc5a5fae")
@pytest.mark.dataplane
# Serial, as upstream's is (cpu_limits.go:39): its "more than zero" reads the pods' CPU from /stats/summary, and
# beside the parallel phase on a busy node it read 0.0 cores for a pod given eight busy jobs (bench_run, full suite under
# the Windows pod-latency model, load about 16): the load must have the node's CPU to itself.
@pytest.mark.serial
@pytest.mark.limitation("cpu-limits-not-hard")
@pytest.mark.documents("k8s-windows-intro", "V1.Container")
@pytest.mark.windows_form(forms.POWERSHELL_BUSYBOX)
def test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it(request, kube, wincon, build, data_plane, target_os):
    """ "Windows doesn't use hard limits for CPU allocations. Instead, a share system is used" (000_4130a90def37a825.txt, V1.Container): pods limited to "0.5" and "500m" CPU, each with eight busy jobs, still run after 2 minutes and use more than zero and at most 0.525 core (upstream cpu_limits.go:47, which allows up to 0.84)."""
    nodes = nodes_for(wincon.profile, target_os, build)
    if not nodes:
        pytest.skip(f"no Ready {target_os} node with a data plane")
    node = nodes[0].name
    names = {cpu: f"cpu-{cpu.replace('.', 'p')}" for cpu in LIMITS}
    for cpu, name in names.items():
        kube.create(burn_pod(wincon, name, target_os, build, node, cpu))
    data_plane(f"GET /api/v1/nodes/{node}/proxy/stats/summary after {LOAD_SECONDS:.0f} s of load", pod_node=node)
    for name in names.values():
        kube.wait_pod(name, done=pod_running, timeout=wincon.pod_start_timeout, failure=pod_failure)
    time.sleep(LOAD_SECONDS)
    summary, _ = kubelet_json(kube.api_client, node, "stats/summary")
    over = []
    for cpu, name in names.items():
        pod = kube.read_pod(name)
        assert pod.status.phase == "Running", f"{name} (limit {cpu}) is {pod.status.phase} after the load"
        cores = pod_cpu_cores(summary, kube.namespace, name)
        assert cores is not None, f"/stats/summary of {node} does not list {name}"
        request.node.user_properties.append((f"cpu_cores_limit_{cpu}", f"{cores:.3f}"))
        assert cores > 0, f"{name} (limit {cpu}) reports {cores} cores: the load did not run"
        if cores > MAX_CORES:
            over.append(f"{name} (limit {cpu}) uses {cores:.3f} cores")
    with expect_deviation("cpu-limits-not-hard"):
        assert not over, f"over {MAX_CORES} core: {'; '.join(over)}"
