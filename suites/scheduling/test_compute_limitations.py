"""Compute resources on Windows nodes: limits, metrics, memory pressure and node allocatable.

Tests whose check would exhaust a node's memory carry ``disruptive``, ``serial`` and ``slow``; their
limitations are ``mode: skip`` in limitations.yaml, so they run only where the entry no longer applies.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes.utils import parse_quantity

from wincon.checks.cpu import (
    LOAD_SHOWN_CORES,
    RATE_WINDOW_SECONDS,
    TWIN_SHOWN_CORES,
    Sample,
    cpu_seconds,
    judges_the_cap,
    window_cores,
)
from wincon.checks.memory import MIB, Peak, working_set
from wincon.checks.node import MAX_CORES_UNDER_500M, kubelet_config, kubelet_json
from wincon.checks.pods import (
    eventually,
    nodes_for,
    os_pod,
    run_os_pod,
    run_os_pods,
    windows_nodes_of_build,
    windows_pod,
)
from wincon.checks.scheduling import CRI_STATS_GATE, cadvisor_placement, least_requested
from wincon.cluster.client import call
from wincon.cluster.kube import ApiException
from wincon.cluster.waits import BehaviourNotObserved, pod_scheduled
from wincon.clusterinfo.profile import kubelet_feature_gates
from wincon.commandline.errors import InfrastructureError, expect_deviation
from wincon.windows import forms
from wincon.workloads.deploy import apply

pytestmark = [pytest.mark.scheduling]

CPU_BURN = (
    "foreach ($loopnumber in 1..2) { Start-Job -ScriptBlock { $result = 1; foreach($mm in 1..2147483647)"
    "{$res1=1;foreach($num in 1..2147483647){$res1=$mm*$num*1340371};$res1} } } ; get-job | wait-job"
)


COMMIT_MIB = "wincon.io/commit-mib"  # the MiB a memory pod commits: its outcome reads it back from the pod
HOLD_SECONDS = 300
LOAD_WAIT_SECONDS = 150.0  # how long the CPU-limit check reads /stats/summary for a window that can judge the limit
LOAD_POLL_SECONDS = 5.0
LOAD_SETTLE_SECONDS = 30.0  # readings count once both containers ran this long
CPU_LIMITED, CPU_TWIN = "busy", "busy-twin"  # the CPU-limit check's pods: limited to 500m, and its unlimited twin


def consume_memory(mib: int, hold: int = HOLD_SECONDS) -> list[str]:
    """Sysinternals testlimit in upstream's resource-consumer image commits and touches ``mib`` MB in one chunk
    and holds it: the form resource-consumer itself runs for ConsumeMem on Windows (k8s.io/kubernetes@v1.34.4
    test/images/resource-consumer/utils_windows.go:40) and upstream's Windows eviction test runs in Windows pods
    (test/e2e/windows/eviction.go:123). Its output is never read: what it committed is read from the kubelet's
    stats/summary, as for the Linux control (agnhost stress cannot run on Windows: it opens /dev/zero first,
    third_party/forked/vishhstress/stress.go:75)."""
    return ["/bin/testlimit.exe", "-accepteula", "-d", str(mib), "-e", "0", str(hold), "-c", "1"]


def memory_pod(wincon, name, build, node, mib, limit=None, request=None, **spec):
    resources = {}
    if limit:
        resources["limits"] = {"memory": limit}
    if request:
        resources["requests"] = {"memory": request}
    body = windows_pod(
        wincon,
        name,
        build,
        image_key="resource-consumer",
        command=consume_memory(mib),
        node=node,
        restartPolicy="Never",
        container_extra={"resources": resources} if resources else None,
        **spec,
    )
    body["metadata"].setdefault("annotations", {})[COMMIT_MIB] = str(mib)
    return body


def linux_memory_pod(wincon, name, node, mib, limit, request):
    """A Linux control's ``memory_pod``: agnhost stress commits ``mib`` MiB; what it committed is read from the
    kubelet's stats/summary, the same reading as the Windows check's."""
    stress = ["stress", f"--mem-total={mib}Mi", "--mem-alloc-size=10Mi", "--mem-alloc-sleep=20ms"]
    resources = {"limits": {"memory": limit}, "requests": {"memory": request}}
    body = os_pod(
        wincon,
        name,
        "linux",
        None,
        args=stress,
        node=node,
        restartPolicy="Never",
        container_extra={"resources": resources},
    )
    body["metadata"].setdefault("annotations", {})[COMMIT_MIB] = str(mib)
    return body


def outcome(kube, name, peak: Peak | None = None):
    """'terminated: <reason> (exit N)' once the pod's container ended (or the pod was evicted); 'allocated' once
    the kubelet's stats/summary shows the pod's working set at 95 % of what it commits (its ``COMMIT_MIB``
    annotation); else None. The same reading on both OSes; ``peak``, where given, counts that reading."""
    pod = call(kube.core.read_namespaced_pod, name, kube.namespace)
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.state and status.state.terminated:
            return f"terminated: {status.state.terminated.reason} (exit {status.state.terminated.exit_code})"
    if pod.status and pod.status.reason == "Evicted":
        return "terminated: Evicted"
    mib = int((pod.metadata.annotations or {}).get(COMMIT_MIB, "0"))
    if mib and pod.spec.node_name and pod.status and pod.status.phase == "Running":
        used = working_set(kube.api_client, pod.spec.node_name, name, kube.namespace)
        if peak is not None:
            peak.record(used)
        if used is not None and used >= 0.95 * mib * MIB:
            return "allocated"
    return None


def target_nodes(profile, build, target_os="windows") -> list[str]:
    nodes = windows_nodes_of_build(profile, build) if target_os == "windows" else nodes_for(profile, "linux", None)
    if not nodes:
        pytest.skip(f"no Ready {target_os} node")
    return [n.name for n in nodes]


def target_node(profile, build, target_os="windows"):
    return target_nodes(profile, build, target_os)[0]


def node_memory(kube, node: str, field: str) -> int:
    status = call(kube.core.read_node, node).status
    return int(parse_quantity(getattr(status, field)["memory"]))


@pytest.mark.test_id("7dca91f9-118c-44eb-9a3e-29872845dc0e")
@pytest.mark.dataplane
@pytest.mark.limitation("resource-limits-pre-1-10")
@pytest.mark.documents("k8s-handbook-windows", "Setting CPU and Memory")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.STATS_WORKING_SET)
def test_container_cannot_commit_more_than_its_memory_limit(kube, wincon, namespace, build, data_plane, target_os):
    """ "Starting from v1.10, Kubernetes supports setting CPU and memory for Windows containers" (001_feb1108140134f87.txt, Setting CPU and Memory): a 200Mi container cannot commit 400 MiB."""
    node = target_node(wincon.profile, build, target_os)
    if target_os == "windows":
        body = memory_pod(wincon, "over-limit", build, node, 400, limit="200Mi", request="200Mi")
    else:
        body = linux_memory_pod(wincon, "over-limit", node, 400, limit="200Mi", request="200Mi")
    apply(wincon.api_client, namespace, body)
    data_plane("allocate 400 MiB in a container limited to 200Mi; expect the allocation to fail", where=node)
    result = eventually(lambda: outcome(kube, "over-limit"), wincon.pod_start_timeout, "the allocation's outcome")
    # No accepts=: the one assertion fails only on "allocated", the kubelet's stats/summary reading the container's
    # working set at 95 % of the 400 MiB it commits under its 200Mi limit: that reading is the deviation itself.
    with expect_deviation("resource-limits-pre-1-10"):
        assert result != "allocated", "a container limited to 200Mi committed 400 MiB"
    # Positive evidence that the limit stopped it: the container ended with a failure, not by itself.
    assert result.startswith("terminated:") and "(exit 0)" not in result, f"the allocation ended as {result!r}"


def windowed(history: list[dict[str, Sample]]) -> tuple[float, float] | None:
    """(the limited pod's cores, its twin's) over the same window of at least RATE_WINDOW_SECONDS
    (wincon.checks.cpu.window_cores); None while there is none such."""
    cores = window_cores(history, (CPU_LIMITED, CPU_TWIN))
    return None if cores is None else (cores[CPU_LIMITED], cores[CPU_TWIN])


@pytest.mark.test_id("8427af37-a459-4c09-b48e-f45b0cb569fb")
@pytest.mark.dataplane
# Serial, as upstream's CPU check is (cpu_limits.go:39 at v1.37.2): its unlimited twin must be given more than the
# limit (TWIN_SHOWN_CORES) to show that the limit matters, which a node shared with the parallel phase's pods may
# not give it within the wait (then an error, never a pass): the load gets the node's CPU to itself.
@pytest.mark.serial
# Last of the serial phase with test_cpu_limits.py's check, for the same reason: its pods request CPU, and a Windows
# node deletes them slowly, which the checks that fill a node's CPU would wait for.
@pytest.mark.order("last")
@pytest.mark.limitation("cpu-limits-not-hard")
@pytest.mark.documents("k8s-windows-intro", "V1.Container")
@pytest.mark.windows_form(forms.POWERSHELL_BUSYBOX)
def test_cpu_limit_caps_a_busy_container(kube, wincon, namespace, build, data_plane, target_os):
    """ "Windows doesn't use hard limits for CPU allocations. Instead, a share system is used" (000_4130a90def37a825.txt, V1.Container): two busy threads under limits.cpu 500m should use at most 0.54 core (the limit plus upstream's 8 %, as test_cpu_limits.py), while the same load without the limit beside it uses more."""
    node = least_requested(wincon.api_client, target_nodes(wincon.profile, build, target_os), "cpu")
    # The twin has the same load and the same request (an equal share of the node), and no limit: read in the same
    # /stats/summary, it shows what the node gives that load at that moment. Only the limit tells them apart.
    request = {"requests": {"cpu": "500m"}}
    resources = {CPU_LIMITED: {"resources": {"limits": {"cpu": "500m"}, **request}}, CPU_TWIN: {"resources": request}}
    if target_os == "windows":
        # Upstream's CPU burn in a Windows pod of the busybox image (test/e2e/windows/cpu_limits.go:44, 143-145),
        # two jobs instead of eight; its output is never read (usage comes from stats/summary, as the control's).
        bodies = [
            windows_pod(
                wincon,
                name,
                build,
                image_key="busybox",
                command=["powershell.exe", "-Command", CPU_BURN],
                node=node,
                container_extra=extra,
            )
            for name, extra in resources.items()
        ]
    else:  # the Linux control: agnhost stress keeps two CPUs busy in each
        bodies = [
            os_pod(wincon, name, target_os, None, args=["stress", "--cpus=2"], node=node, container_extra=extra)
            for name, extra in resources.items()
        ]
    pods = run_os_pods(wincon, namespace, bodies)
    data_plane(f"read nodes/{node}/proxy/stats/summary for pods {CPU_LIMITED} and {CPU_TWIN} under load", where=node)
    started = max(pod.status.container_statuses[0].state.running.started_at for pod in pods)

    history: list[dict[str, Sample]] = []  # each summary's (sample time, CPU seconds) of both pods
    readings: list[tuple[float, float]] = []  # each window's (limited, twin) cores

    def judging_reading():
        # After LOAD_SETTLE_SECONDS of both loads, each summary gives both pods' rates over the same window of at least
        # RATE_WINDOW_SECONDS ending now; every one is kept for the message, the first that can judge the limit
        # (judges_the_cap) is the verdict's. A node whose CPU is taken by other work gives both less for a while:
        # the readings go on for up to LOAD_WAIT_SECONDS.
        if (datetime.now(UTC) - started).total_seconds() < LOAD_SETTLE_SECONDS:
            return None
        # The client's str answer is a repr, not JSON (found by the Linux control): read the raw body.
        summary, _ = kubelet_json(wincon.api_client, node, "stats/summary")
        sampled = {name: cpu_seconds(summary, namespace, name) for name in (CPU_LIMITED, CPU_TWIN)}
        if any(v is None for v in sampled.values()):
            return None
        history.append({name: v for name, v in sampled.items() if v is not None})
        reading = windowed(history)
        if reading is not None:
            readings.append(reading)
        return reading if reading is not None and judges_the_cap(reading) else None

    try:
        limited, twin = eventually(
            judging_reading, LOAD_WAIT_SECONDS, "a CPU reading that can judge the 500m limit", LOAD_POLL_SECONDS
        )
    except InfrastructureError as exc:
        seen = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in readings) or (
            f"none ({len(history)} summaries with samples of both pods, none {RATE_WINDOW_SECONDS:.0f} s apart)"
        )
        raise InfrastructureError(
            f"the node could not show the limit matters: in {LOAD_WAIT_SECONDS:.0f} s of /stats/summary readings on "
            f"{node} the unlimited twin {CPU_TWIN} never used {TWIN_SHOWN_CORES} cores over a {RATE_WINDOW_SECONDS:.0f} s"
            f" window while {CPU_LIMITED} showed its load ({LOAD_SHOWN_CORES} cores) and stayed under "
            f"{MAX_CORES_UNDER_500M} (cores per window, {CPU_LIMITED}/{CPU_TWIN}: {seen}): nothing to judge the limit by",
            "run the check on a node with idle CPU",
        ) from exc
    # No accepts=: one assertion, on the reading just shown able to judge (over the ceiling, or the twin beside it
    # over 1.5 times the limit): more than the ceiling is the deviation itself.
    with expect_deviation("cpu-limits-not-hard"):
        assert limited <= MAX_CORES_UNDER_500M, (
            f"the container used {limited:.3f} cores under a 500m limit (at most {MAX_CORES_UNDER_500M}: the limit "
            f"plus 8 %) over a {RATE_WINDOW_SECONDS:.0f} s window; its unlimited twin {twin:.3f} over the same window"
        )


def cadvisor_serves_no_containers(text: str) -> bool:
    """The kubelet's /metrics/cadvisor as a Windows node serves it: cAdvisor's container collector ran without error
    (its ``container_scrape_error 0`` line, github.com/google/cadvisor@v0.52.1 metrics/prometheus.go:121-125,
    collected on every scrape, :1829-1834) and gave no container series at all, since the Windows kubelet's cAdvisor
    answers every container request with nothing (k8s.io/kubernetes@v1.34.4 pkg/kubelet/cadvisor/cadvisor_windows.go:57-58;
    server.go:467 registers that collector unless the PodAndContainerStatsFromCRI gate is on: alpha to 1.36, beta from 1.37, off by default in both). A scrape error,
    or series of other containers but not the pod's (a collector that has not seen it yet), is not that deviation."""
    lines = text.splitlines()
    collected = any(line.split() == ["container_scrape_error", "0"] for line in lines)
    return collected and not any(line.startswith("container_cpu_usage_seconds_total") for line in lines)


CADVISOR_COMMAND = "GET /api/v1/nodes/{node}/proxy/metrics/cadvisor"


def cri_stats_gate_on(kube, node: str) -> bool:
    """Whether the node's kubelet runs with the PodAndContainerStatsFromCRI gate on (off by default through 1.38), read from its /configz now
    (by the rule discovery reads it with: wincon.clusterinfo.profile.kubelet_feature_gates)."""
    configz, _ = kubelet_json(kube.api_client, node, "configz")
    return dict(kubelet_feature_gates(kubelet_config(configz)))[CRI_STATS_GATE]


def cadvisor_serving_node(kube, profile, build, data_plane) -> str | None:
    """The node the cAdvisor check's pod must run on, decided before anything is created by the rule `wincon plan`
    applies too (wincon.checks.scheduling.cadvisor_placement): where no node of the build has a data plane, the
    data-plane gate skips the check now, with its own reason (no pod is created to be skipped after); where every
    real one serves /metrics/cadvisor from the CRI runtime (PodAndContainerStatsFromCRI), it skips naming them;
    else the pod is pinned to the first real node serving cAdvisor's. A gate the profile lacks (its /configz
    unread in discovery) is read now."""
    placement = cadvisor_placement(
        windows_nodes_of_build(profile, build), read_gate=lambda name: cri_stats_gate_on(kube, name)
    )
    if placement.simulated:
        data_plane(CADVISOR_COMMAND.format(node="<node>"))
    return placement.pin()


@pytest.mark.test_id("bbf66b83-925c-4d8f-962d-2f3db0a7fdb0")
@pytest.mark.dataplane
@pytest.mark.limitation("cadvisor-unsupported")
@pytest.mark.avoids("cri-stats")
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.documents("kep-windows-node-support", "Windows specific tests")
@pytest.mark.windows_form(no_command="reads the kubelet's /metrics/cadvisor through the API server")
def test_cadvisor_metrics_cover_windows_containers(kube, wincon, namespace, build, data_plane):
    """ "Pod and container metrics" are supported (002_8a7e76f95009f44f.txt, Supported Functionality), but "System, pod & network stats are implemented in kubelet, not cadvisor" (003_414b2f1c5dd978a2.txt)."""
    node_name = cadvisor_serving_node(kube, wincon.profile, build, data_plane)
    pod = run_os_pod(wincon, namespace, windows_pod(wincon, "metered", build, node=node_name))
    node = pod.spec.node_name
    data_plane(CADVISOR_COMMAND.format(node=node), where=node)
    text = call(kube.core.connect_get_node_proxy_with_path, node, "metrics/cadvisor")
    lines = [line for line in text.splitlines() if line.startswith("container_cpu_usage_seconds_total")]
    with expect_deviation(
        "cadvisor-unsupported",
        accepts=lambda: cadvisor_serves_no_containers(text),
        deviation="cAdvisor's collector answered without error and with no container series at all",
    ):
        assert any('pod="metered"' in line for line in lines), (
            f"no cadvisor CPU series for pod metered ({len(lines)} series)"
        )


@pytest.fixture
def cleanup_pods(kube, wincon, namespace, request):
    """Names registered here are deleted right after the test, to give the node its memory back at once."""
    names: list[str] = []

    def delete_all():
        core = kube.core
        for name in names:
            try:
                call(core.delete_namespaced_pod, name, namespace, grace_period_seconds=0)
            except ApiException:
                continue

    request.addfinalizer(delete_all)
    return names


def node_condition(kube, node: str, kind: str):
    conditions = call(kube.core.read_node, node).status.conditions or []
    return next((c for c in conditions if c.type == kind), None)


def heartbeat_age(kube, node: str) -> float | None:
    """Seconds since the node's Ready condition was last heartbeated; None while it has no Ready heartbeat."""
    ready = node_condition(kube, node, "Ready")
    if ready is None or ready.last_heartbeat_time is None:
        return None
    return (datetime.now(UTC) - ready.last_heartbeat_time).total_seconds()


def heartbeat_ages(kube, node: str, count: int) -> list[float]:
    """``count`` readings of the node's Ready heartbeat age, each awaited (setup) until the node has one.

    The age goes to ``eventually`` inside a tuple: a heartbeat of this very second is an age of 0.0, a falsy float
    that ``eventually`` would take for "not yet" (it polls until a truthy result)."""

    def reading() -> tuple[float] | None:
        age = heartbeat_age(kube, node)
        return None if age is None else (age,)

    return [eventually(reading, 30, "the node's Ready heartbeat")[0] for _ in range(count)]


@pytest.mark.test_id("59f98279-7e2e-40a8-9d83-fac1d04c2437")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial  # exhausts a node's memory: no other test's pod may share the node meanwhile
@pytest.mark.slow
@pytest.mark.limitation("memory-pressure-not-reported")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.STATS_WORKING_SET)
def test_node_reports_memory_pressure_when_its_memory_runs_out(kube, wincon, build, data_plane, cleanup_pods):
    """ "MemoryPressure Condition is not implemented ... There are no OOM eviction actions taken by the kubelet" (000_4130a90def37a825.txt, Memory Reservations and Handling)."""
    node = target_node(wincon.profile, build)
    mib = node_memory(kube, node, "allocatable") // MIB
    cleanup_pods.append("pressure")
    kube.create(memory_pod(wincon, "pressure", build, node, mib))
    kube.wait_pod("pressure", done=pod_scheduled, timeout=60, failure=None)
    data_plane(f"commit {mib} MiB on {node} and wait for MemoryPressure=True or an eviction", where=node)

    held: list[str] = []  # "allocated" once stats/summary showed the pod holding 95 % of the node's allocatable

    def pressure():
        condition = node_condition(kube, node, "MemoryPressure")
        if condition is not None and condition.status == "True":
            return "MemoryPressure"
        result = outcome(kube, "pressure")
        if result == "allocated":
            held.append(result)
        elif result and "Evicted" in result:
            return result
        elif result:  # it ended by itself: no load is on the node any more, so neither outcome can follow
            raise InfrastructureError(
                f"the load could not be applied: pod pressure ended ({result}) "
                f"{'after' if held else 'before'} it was shown holding {mib} MiB on {node}",
                "read the pod's logs and events; the check needs testlimit to hold the node's allocatable memory",
            )
        return None

    # The deviation is the wait running out with the load shown held (neither MemoryPressure nor an eviction while the
    # node's allocatable memory was in use); a wait that ran out before the load was ever shown held judged nothing.
    with expect_deviation(
        "memory-pressure-not-reported",
        accepts=lambda: bool(held),
        deviation="neither MemoryPressure nor an eviction while the pod held the node's allocatable memory",
    ):
        try:
            eventually(
                pressure,
                300,
                f"MemoryPressure on {node} or the pod evicted",
                interval=5,
                behaviour=True,
                seen=lambda: f"pod pressure {'held' if held else 'never shown holding'} {mib} MiB",
            )
        except BehaviourNotObserved as exc:
            if not held:
                raise InfrastructureError(
                    f"the load was never shown applied: pod pressure's working set never reached 95 % of {mib} MiB "
                    f"on {node} in 300 s ({exc})",
                    "the node's kubelet must list the pod in stats/summary; read the pod's events",
                ) from exc
            raise


@pytest.mark.test_id("5d61de70-2ae3-471d-8a5e-80fa06452eb6")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial  # exhausts a node's memory: no other test's pod may share the node meanwhile
@pytest.mark.slow
@pytest.mark.limitation("enforce-node-allocatable-not-implemented")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.STATS_WORKING_SET)
def test_pods_beyond_allocatable_memory_are_evicted(kube, wincon, build, data_plane, cleanup_pods):
    """ "Eviction by using --enforce-node-allocable is not implemented" (000_4130a90def37a825.txt, Memory Reservations and Handling): limit-less pods exceeding allocatable should be evicted."""
    node = target_node(wincon.profile, build)
    allocatable = node_memory(kube, node, "allocatable")
    mib = allocatable // MIB + 512
    cleanup_pods.append("beyond")
    kube.create(memory_pod(wincon, "beyond", build, node, mib))
    kube.wait_pod("beyond", done=pod_scheduled, timeout=60, failure=None)
    data_plane(f"commit {mib} MiB (allocatable + 512) on {node}; expect the pod evicted", where=node)
    peak = Peak(kube.api_client, node, "beyond", kube.namespace)
    beyond = f"more than the node's allocatable {allocatable / MIB:.0f} MiB"

    def ended():
        result = outcome(kube, "beyond", peak)  # reads the working set once a poll, into peak, while it runs
        return result if result and "terminated" in result else None

    timed_out: list[BehaviourNotObserved] = []
    # The deviation is the pod left running once it was shown holding more than allocatable (stats/summary); a wait
    # that ran out before that judged nothing (the load was never applied), and a pod that ended otherwise (Error,
    # exit 1) is not it.
    with expect_deviation(
        "enforce-node-allocatable-not-implemented",
        accepts=lambda: bool(timed_out) and peak.reached(allocatable),
        deviation="the pod held more than allocatable and was never evicted",
    ):
        try:
            result = eventually(
                ended,
                300,
                "the pod beyond allocatable to be evicted",
                interval=5,
                behaviour=True,
                seen=lambda: f"pod beyond still running; {peak.describe()}",
            )
        except BehaviourNotObserved as exc:
            if not peak.reached(allocatable):
                raise InfrastructureError(
                    f"the load was never shown applied: pod beyond was never seen holding {beyond} in 300 s "
                    f"({peak.describe()})",
                    "the node's kubelet must list the pod in stats/summary; read the pod's events",
                ) from exc
            timed_out.append(exc)
            raise
        if "Evicted" not in result and "OOMKilled" not in result and not peak.reached(allocatable):
            raise InfrastructureError(
                f"the load could not be applied: pod beyond ended ({result}) before it was seen holding {beyond} "
                f"({peak.describe()})",
                "read the pod's logs and events; the check needs testlimit to hold more than allocatable",
            )
        assert "Evicted" in result or "OOMKilled" in result, result


@pytest.mark.test_id("a800bd52-c9c5-48ed-a038-4549f126b47d")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial  # exhausts a node's memory: no other test's pod may share the node meanwhile
@pytest.mark.slow
@pytest.mark.limitation("kubelet-host-memory-unrestricted")
@pytest.mark.windows_only("the memory is exhausted from a HostProcess pod on the Windows host")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.STATS_WORKING_SET, forms.SANDBOX_MOUNT_POINT)
def test_kubelet_stays_responsive_when_host_processes_exhaust_memory(kube, wincon, build, data_plane, cleanup_pods):
    """ "--kubelet-reserve and --system-reserve do not set limits on kubelet or processes running on the host" (000_4130a90def37a825.txt, Memory Reservations and Handling)."""
    node = target_node(wincon.profile, build)
    mib = node_memory(kube, node, "capacity") // MIB
    body = memory_pod(wincon, "host-hog", build, node, mib, hostNetwork=True)
    # A HostProcess container starts in the host's file system: the image's files are under
    # $env:CONTAINER_SANDBOX_MOUNT_POINT (upstream's own form, test/e2e/windows/host_process.go:306).
    command = body["spec"]["containers"][0]["command"]
    body["spec"]["containers"][0]["command"] = [
        "powershell",
        "$env:CONTAINER_SANDBOX_MOUNT_POINT\\bin\\testlimit.exe",
        *command[1:],
    ]
    body["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}
    cleanup_pods.append("host-hog")
    kube.create(body)
    kube.wait_pod("host-hog", done=pod_scheduled, timeout=60, failure=None)
    data_plane(
        f"commit {mib} MiB (the node's capacity) from a HostProcess pod; the kubelet must keep reporting", where=node
    )
    eventually(lambda: outcome(kube, "host-hog"), 300, "the host allocation", interval=5)

    ages = heartbeat_ages(kube, node, 3)
    # No accepts=: one assertion on the node's own Ready condition, read three times just above: NotReady or a
    # heartbeat 90 s old while a host process holds the node's memory is the starvation documented, by its form.
    with expect_deviation("kubelet-host-memory-unrestricted"):
        assert node_condition(kube, node, "Ready").status == "True" and min(ages) < 90, f"heartbeat ages {ages}"


@pytest.mark.test_id("4bcbc723-af4d-4d21-9dcf-dee88abf5cc5")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial  # exhausts a node's memory: no other test's pod may share the node meanwhile
@pytest.mark.slow
@pytest.mark.limitation("resource-requests-not-guaranteed")
@pytest.mark.documents("k8s-windows-intro", "V1.Container.ResourceRequirements.requests")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.STATS_WORKING_SET)
def test_requested_memory_is_granted_on_an_overprovisioned_node(
    kube, wincon, namespace, build, data_plane, cleanup_pods
):
    """ "Requests ... cannot be used to guarantee resources in an overprovisioned node" (000_4130a90def37a825.txt, V1.Container.ResourceRequirements.requests): a pod should get the 1Gi it requested."""
    node = target_node(wincon.profile, build)
    hog_mib = node_memory(kube, node, "allocatable") // MIB
    cleanup_pods.extend(["hog", "entitled"])
    kube.create(memory_pod(wincon, "hog", build, node, hog_mib))
    kube.wait_pod("hog", done=pod_scheduled, timeout=60, failure=None)
    data_plane(
        f"overprovision {node} with a {hog_mib} MiB hog, then commit 1 GiB in a pod that requested it", where=node
    )
    eventually(lambda: outcome(kube, "hog"), 300, "the hog's allocation", interval=5)
    apply(
        wincon.api_client, namespace, memory_pod(wincon, "entitled", build, node, 1024, request="1Gi", limit="1536Mi")
    )
    # The deviation is the pod never holding the 1 GiB it requested (its working set stays short of it for the wait:
    # BehaviourNotObserved); a pod that ended instead (an error, a start failure) is not it.
    with expect_deviation(
        "resource-requests-not-guaranteed",
        accepts=BehaviourNotObserved,
        deviation="the pod that requested 1Gi never held it within the wait",
    ):
        result = eventually(
            lambda: outcome(kube, "entitled"),
            300,
            "the entitled pod's allocation",
            interval=5,
            behaviour=True,
            seen=lambda: "pod entitled still committing its 1 GiB",
        )
        assert result == "allocated", f"the pod that requested 1Gi could not commit it: {result}"
