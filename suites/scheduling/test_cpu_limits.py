"""CPU limits in both spellings, as upstream test/e2e/windows/cpu_limits.go:47 (v1.34.4) sets them: one busy pod
limited to "0.5" and one to "500m" (1Gi memory each), eight busy jobs in each; after 2 minutes both still run
and each uses at most 0.54 core: the limit plus 8 %, the margin upstream states (cpu_limits.go:76; its code
fails only at 0.84, ``.8*1.05``, cpu_limits.go:101). Where upstream asks only for a reading above zero, this check
runs an unlimited twin beside each (the same command and CPU request, no limit) and judges only a window in which the
twin used at least 0.75 core (or the limited pod went over the ceiling): a limited pod under the ceiling then shows a
cap, not a node that gave the load no more; a node that never shows it is an error, never a pass. The two spellings
run one after the other, each pair alone on the node (see TWIN): upstream runs its two pods at once, for 2 minutes
each here as there.

Its Linux control (``target_os``) runs the same two pods on a Linux worker, agnhost stress keeping eight CPUs
busy. The Windows pods need a real node: the check passes the ``data_plane`` gate first.

How a pod is read: by the CPU seconds it used over a window of at least RATE_WINDOW_SECONDS (20 s), the same two
/stats/summary answers for every pod (wincon.checks.cpu.window_cores: each pod's cumulative
``usageCoreNanoSeconds`` at its sample times), not by one stats period's ``usageNanoCores``: that rate covers one
stats period (10 s) between two samples whose timestamps drift from the actual reads under load, and read a pod
whose CFS quota was 500m at 0.548 core (CI, make main: 0.048 core over 10 s is 0.48 CPU seconds, about 1 s of a
500m pod's time; over 20 s the same drift is half as much).

When: the window lies inside the load. It opens at a sample taken at least one stats period (10 s: the kubelet's
eviction monitoring period, which it keeps in step with cAdvisor's housekeeping, pkg/kubelet/kubelet.go:186-188
and pkg/kubelet/cadvisor/cadvisor_linux.go:59 at v1.34.4) after the container started, and at least
``LOAD_SECONDS - RATE_WINDOW_SECONDS`` after it, so that it closes after the whole load: upstream's 2 minutes on
Windows (cpu_limits.go:55); on Linux, whose agnhost stress starts its eight burners before anything else
(third_party/forked/vishhstress/stress.go:64-88), one stats period and the window.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from wincon.checks.cpu import (
    LOAD_SHOWN_CORES,
    RATE_WINDOW_SECONDS,
    TWIN_SHOWN_CORES,
    Sample,
    cpu_seconds,
    judges_the_cap,
    window_cores,
)
from wincon.checks.node import MAX_CORES_UNDER_500M, kubelet_json
from wincon.checks.pods import eventually, nodes_for, os_pod, windows_pod
from wincon.checks.scheduling import least_requested
from wincon.cluster.kube import ApiException
from wincon.cluster.waits import pod_failure, pod_running
from wincon.commandline.errors import InfrastructureError, expect_deviation
from wincon.windows import forms

pytestmark = [pytest.mark.scheduling]

LIMITS = ("0.5", "500m")  # upstream cpu_limits.go:49 and :52
# The unlimited twin: the same load and CPU request as a limited pod, on the same node, no limit. A pass needs it
# shown using at least TWIN_SHOWN_CORES over the window that judges the limited pod: the node would have given its load
# more than the limit. Each spelling runs beside a twin of its own, one pair after the other, as the cap check's pair
# (test_compute_limitations.py): a pair needs the node to give it 1.25 cores. Both limited pods at once beside one twin
# needed 1.75 of a 2-CPU node, which a node shared with other work did not give: measured on a 2-CPU machine shared
# with other clusters (2026-11-28), at loads 8-30 the three pods got 1.07-1.57 cores in all and eleven of twelve runs
# erred after their 140 s of readings (twin at most 0.72), one passed (load 12-15: twin 0.752); none passed on weaker
# evidence, none failed.
TWIN = "twin"  # the suffix of each limited pod's twin: cpu-0p5-twin, cpu-500m-twin


def twin_of(name: str) -> str:
    """The name of the unlimited twin that runs beside limited pod ``name``."""
    return f"{name}-{TWIN}"


def gone(kube, names: tuple[str, ...], timeout: float = 120.0) -> None:
    """Wait until the pods ``names`` are deleted (a pair still burning would take the next pair's CPU); a node that
    does not delete them within ``timeout``: the cluster's error."""

    def present(name: str) -> bool:
        try:
            kube.read_pod(name)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def deleted() -> bool:
        return not any(present(n) for n in names)

    eventually(deleted, timeout, f"pods {', '.join(names)} deleted", POLL_SECONDS)


MAX_CORES = MAX_CORES_UNDER_500M  # the limit plus 8 %, as the compute check
STATS_PERIOD_SECONDS = 10.0  # the kubelet's eviction monitoring period, in step with cAdvisor's housekeeping
# Seconds of load before the window closes: upstream's 2 minutes on Windows (cpu_limits.go:55); on Linux one stats
# period, then the window (see the module's docstring).
LOAD_SECONDS = {"windows": 120.0, "linux": STATS_PERIOD_SECONDS + RATE_WINDOW_SECONDS}
# How long after the earliest closing of the window the readings go on for one that judges (the twin shown using more
# than the limit, or a limited pod over it): a node whose CPU other work takes gives the twin less for a while.
WAIT_SECONDS = 12 * STATS_PERIOD_SECONDS
POLL_SECONDS = 2.0
CPU_BURN = [  # upstream cpu_limits.go:143-145, in its busybox image
    "powershell.exe",
    "-Command",
    "foreach ($loopnumber in 1..8) { Start-Job -ScriptBlock { $result = 1; foreach($mm in 1..2147483647){$res1=1;"
    "foreach($num in 1..2147483647){$res1=$mm*$num*1340371};$res1} } } ; get-job | wait-job",
]


def burn_pod(wincon, name: str, target_os: str, build, node: str, cpu: str | None) -> dict:
    """A pod of eight busy jobs limited to ``cpu`` (and 1Gi), as upstream's; None: the unlimited twin, the same
    command with the same requests (500m, 1Gi: what the limits give the limited pods) and no limit."""
    resources = {"limits": {"cpu": cpu, "memory": "1Gi"}} if cpu else {"requests": {"cpu": "500m", "memory": "1Gi"}}
    extra = {"resources": resources}
    if target_os == "windows":
        return windows_pod(wincon, name, build, image_key="busybox", command=CPU_BURN, node=node, container_extra=extra)
    return os_pod(wincon, name, "linux", None, args=["stress", "--cpus=8"], node=node, container_extra=extra)


def judging(limited: tuple[str, ...], twin: str) -> Callable[[dict[str, float]], bool]:
    """Whether a window's cores (pod: cores) can judge the limits: a limited pod over the ceiling (the limit did not
    hold), or every limited pod's reading beside the twin's judges the cap (wincon.checks.cpu.judges_the_cap: its load
    shown while the twin, the same load and request without the limit, used at least TWIN_SHOWN_CORES)."""

    def judges(cores: dict[str, float]) -> bool:
        return any(cores[n] > MAX_CORES for n in limited) or all(
            judges_the_cap((cores[n], cores[twin])) for n in limited
        )

    return judges


@dataclass
class Window:
    """The readings of ``load_window``: every summary's samples that may open a window (inside the load), and each
    window's cores per pod, in order; the last window is the verdict's."""

    history: list[dict[str, Sample]] = field(default_factory=list)
    windows: list[dict[str, float]] = field(default_factory=list)

    def seen(self) -> str:
        """Each window's cores, pod by pod, for a message."""
        return "; ".join(", ".join(f"{n} {c:.3f}" for n, c in w.items()) for w in self.windows) or (
            f"none ({len(self.history)} summaries with samples of every pod inside the load, none "
            f"{RATE_WINDOW_SECONDS:.0f} s apart)"
        )


def load_window(
    kube,
    node: str,
    started: dict[str, datetime],
    load_seconds: float,
    judges: Callable[[dict[str, float]], bool],
    wait_seconds: float,
    what: str = "any window",
) -> Window:
    """The readings of the pods ``started`` (name: when its container started, by the node) up to the first window
    that ``judges``: each pod's cores over the same window of at least RATE_WINDOW_SECONDS, which opens at a sample
    taken at least max(STATS_PERIOD_SECONDS, ``load_seconds`` - RATE_WINDOW_SECONDS) after the pod started (see the
    module's docstring), /stats/summary polled every POLL_SECONDS. None such within ``wait_seconds`` after the load:
    an InfrastructureError naming ``what`` would judge and every window read."""
    opens = {
        n: at + timedelta(seconds=max(STATS_PERIOD_SECONDS, load_seconds - RATE_WINDOW_SECONDS))
        for n, at in started.items()
    }
    found = Window()

    def judging() -> bool:
        summary, _ = kubelet_json(kube.api_client, node, "stats/summary")
        sampled = {n: cpu_seconds(summary, kube.namespace, n) for n in started}
        inside = {n: v for n, v in sampled.items() if v is not None and v[0] >= opens[n]}
        if len(inside) < len(started):
            return False
        found.history.append(inside)
        cores = window_cores(found.history, started)
        if cores is None:
            return False
        found.windows.append(cores)
        return judges(cores)

    time.sleep(max(0.0, max(STATS_PERIOD_SECONDS, load_seconds - RATE_WINDOW_SECONDS) - POLL_SECONDS))
    try:
        eventually(
            judging, RATE_WINDOW_SECONDS + wait_seconds, "a CPU window of every pod inside the load", POLL_SECONDS
        )
    except InfrastructureError as exc:
        raise InfrastructureError(
            f"the node could not show the limit matters: no {RATE_WINDOW_SECONDS:.0f} s window of /stats/summary CPU "
            f"samples of {sorted(started)} on {node} inside the load, read for {RATE_WINDOW_SECONDS + wait_seconds:.0f}"
            f" s, could judge the limit ({what}; cores per window: {found.seen()})",
            "run the check on a node with idle CPU whose kubelet samples its pods' CPU",
        ) from exc
    return found


@pytest.mark.test_id("789f527d-6990-4b5d-9117-16f7fc5a5fae")
@pytest.mark.dataplane
# Serial, as upstream's is (cpu_limits.go:39): it judges the pods' CPU from /stats/summary, and beside the parallel
# phase on a busy node a pod given eight busy jobs read 0.0 cores (bench_run, full suite under the Windows pod-latency
# model, load about 16, when the check still asked for a reading above zero): the load must have the node's CPU to
# itself, its twins included.
@pytest.mark.serial
# Last of the serial phase: its pods request CPU, and a Windows node takes tens of seconds to delete them; the checks
# that fill a node's CPU (preemption, requests against allocatable) wait until no such pod is being deleted there
# (wincon.checks.scheduling.unrequested_once_settled): after this check, preemption waited ~60 s for them (bench_run
# under the Windows pod-latency model, docs/local-cluster.md).
@pytest.mark.order("last")
@pytest.mark.limitation("cpu-limits-not-hard")
@pytest.mark.documents("k8s-windows-intro", "V1.Container")
@pytest.mark.windows_form(forms.POWERSHELL_BUSYBOX)
def test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it(request, kube, wincon, build, data_plane, target_os):
    """ "Windows doesn't use hard limits for CPU allocations. Instead, a share system is used" (000_4130a90def37a825.txt, V1.Container): pods limited to "0.5" and "500m" CPU, each with eight busy jobs, still run after 2 minutes and use at most 0.54 core (upstream cpu_limits.go:47, which allows up to 0.84), while the same load without the limit beside them uses more."""
    nodes = nodes_for(wincon.profile, target_os, build)
    if not nodes:
        pytest.skip(f"no Ready {target_os} node with a data plane")
    node = least_requested(kube.api_client, [n.name for n in nodes], "cpu")  # its pairs' CPU, not another run's
    names = {cpu: f"cpu-{cpu.replace('.', 'p')}" for cpu in LIMITS}
    load = LOAD_SECONDS[target_os]
    data_plane(f"GET /api/v1/nodes/{node}/proxy/stats/summary after {load:.0f} s of load", pod_node=node)
    over = []
    for cpu, name in names.items():  # one spelling at a time, each beside a twin of its own (see TWIN)
        twin = twin_of(name)
        kube.create(burn_pod(wincon, name, target_os, build, node, cpu))
        kube.create(burn_pod(wincon, twin, target_os, build, node, None))
        started = {}
        for pod_name in (name, twin):
            pod = kube.wait_pod(pod_name, done=pod_running, timeout=wincon.pod_start_timeout, failure=pod_failure)
            running = [s.state.running.started_at for s in pod.status.container_statuses or [] if s.state.running]
            assert running, f"{pod_name} is Running without a running container: {pod.status.container_statuses}"
            started[pod_name] = max(running)
        needs = (
            f"{name} over {MAX_CORES}, or at least {LOAD_SHOWN_CORES} while the unlimited twin {twin} used at least "
            f"{TWIN_SHOWN_CORES}"
        )
        try:
            window = load_window(kube, node, started, load, judging((name,), twin), WAIT_SECONDS, needs)
        except InfrastructureError:
            if not over:
                raise
            # The first spelling already went over the ceiling: the behaviour was observed not to hold, and a second
            # pair that the node could not judge takes nothing from that.
            window = None
        pod = kube.read_pod(name)
        assert pod.status.phase == "Running", f"{name} (limit {cpu}) is {pod.status.phase} after the load"
        if window is not None:
            cores = window.windows[-1]
            request.node.user_properties.append((f"cpu_cores_limit_{cpu}", f"{cores[name]:.3f}"))
            request.node.user_properties.append((f"cpu_cores_twin_{cpu}", f"{cores[twin]:.3f}"))
            if cores[name] > MAX_CORES:
                over.append(
                    f"{name} (limit {cpu}) uses {cores[name]:.3f} cores (the unlimited twin {twin}: {cores[twin]:.3f})"
                )
        for pod_name in (name, twin):  # the next spelling's pair gets the node's CPU to itself
            kube.delete_pod(pod_name, grace=0)
        gone(kube, (name, twin))
    # No accepts=: one assertion, on windows just shown able to judge (a pod over the ceiling, or each showing its load
    # while the unlimited twin beside it used 1.5 times the limit): more than the ceiling is the deviation itself.
    with expect_deviation("cpu-limits-not-hard"):
        assert not over, f"over {MAX_CORES} core over a {RATE_WINDOW_SECONDS:.0f} s window: {'; '.join(over)}"
