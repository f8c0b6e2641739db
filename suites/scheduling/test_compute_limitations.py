"""Compute resources on Windows nodes: limits, metrics, memory pressure and node allocatable.

Tests whose check would exhaust a node's memory carry ``disruptive``, ``serial`` and ``slow``; their
limitations are ``mode: skip`` in limitations.yaml, so they run only where the entry no longer applies.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes.utils import parse_quantity

from wincon.checks.node import kubelet_json
from wincon.checks.pods import (
    eventually,
    nodes_for,
    os_pod,
    run_os_pod,
    windows_nodes_of_build,
    windows_pod,
)
from wincon.cluster.client import call
from wincon.cluster.waits import pod_scheduled
from wincon.errors import expect_deviation
from wincon.kube import ApiException
from wincon.workloads.deploy import apply

pytestmark = [pytest.mark.scheduling]

MIB = 1024 * 1024


def allocate(mib: int, hold: int = 300) -> list[str]:
    """PowerShell that commits ``mib`` MiB (touching every page), prints 'allocated', then holds it."""
    script = (
        f"$b = [byte[]]::new({mib}MB); for ($i = 0; $i -lt $b.Length; $i += 4096) {{ $b[$i] = 1 }}; "
        f"'allocated'; Start-Sleep {hold}"
    )
    return ["powershell", "-NoProfile", "-Command", script]


def memory_pod(wincon, name, build, node, mib, limit=None, request=None, **spec):
    resources = {}
    if limit:
        resources["limits"] = {"memory": limit}
    if request:
        resources["requests"] = {"memory": request}
    return windows_pod(
        wincon,
        name,
        build,
        image_key="nettools",
        command=allocate(mib),
        node=node,
        restartPolicy="Never",
        container_extra={"resources": resources} if resources else None,
        **spec,
    )


def linux_memory_pod(wincon, name, node, mib, limit, request):
    """A Linux control's ``memory_pod``: agnhost stress commits ``mib`` MiB (it prints nothing like 'allocated'
    unless it holds all of it, so only an ended container is an outcome under the limit)."""
    stress = ["stress", f"--mem-total={mib}Mi", "--mem-alloc-size=10Mi", "--mem-alloc-sleep=20ms"]
    resources = {"limits": {"memory": limit}, "requests": {"memory": request}}
    return os_pod(
        wincon,
        name,
        "linux",
        None,
        args=stress,
        node=node,
        restartPolicy="Never",
        container_extra={"resources": resources},
    )


def log_of(kube, name) -> str:
    core = kube.core
    try:
        # An empty log comes back as None, not "" (seen on the Linux control: agnhost stress prints nothing).
        return call(core.read_namespaced_pod_log, name, kube.namespace) or ""
    except ApiException:
        return ""


def outcome(kube, name):
    """'allocated' once the pod printed it, 'terminated: <reason>' once its container ended; else None."""
    if "allocated" in log_of(kube, name):
        return "allocated"
    pod = call(kube.core.read_namespaced_pod, name, kube.namespace)
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.state and status.state.terminated:
            return f"terminated: {status.state.terminated.reason} (exit {status.state.terminated.exit_code})"
    if pod.status and pod.status.reason == "Evicted":
        return "terminated: Evicted"
    return None


def target_node(profile, build, target_os="windows"):
    nodes = windows_nodes_of_build(profile, build) if target_os == "windows" else nodes_for(profile, "linux", None)
    if not nodes:
        pytest.skip(f"no Ready {target_os} node")
    return nodes[0].name


def node_memory(kube, node: str, field: str) -> int:
    status = call(kube.core.read_node, node).status
    return int(parse_quantity(getattr(status, field)["memory"]))


@pytest.mark.test_id("7dca91f9-118c-44eb-9a3e-29872845dc0e")
@pytest.mark.dataplane
@pytest.mark.limitation("resource-limits-pre-1-10")
@pytest.mark.documents("k8s-handbook-windows", "Setting CPU and Memory")
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
    with expect_deviation("resource-limits-pre-1-10"):
        assert result != "allocated", "a container limited to 200Mi committed 400 MiB"
    # Positive evidence that the limit stopped it: the container ended with a failure, not by itself.
    assert result.startswith("terminated:") and "(exit 0)" not in result, f"the allocation ended as {result!r}"


@pytest.mark.test_id("8427af37-a459-4c09-b48e-f45b0cb569fb")
@pytest.mark.dataplane
@pytest.mark.limitation("cpu-limits-not-hard")
@pytest.mark.documents("k8s-windows-intro", "V1.Container")
def test_cpu_limit_caps_a_busy_container(kube, wincon, namespace, build, data_plane, target_os):
    """ "Windows doesn't use hard limits for CPU allocations. Instead, a share system is used" (000_4130a90def37a825.txt, V1.Container): two busy threads under limits.cpu 500m should use at most ~0.6 core."""
    node = target_node(wincon.profile, build, target_os)
    limits = {"resources": {"limits": {"cpu": "500m"}, "requests": {"cpu": "500m"}}}
    if target_os == "windows":
        busy = "1..2 | ForEach-Object { Start-Job { while ($true) {} } } | Out-Null; Start-Sleep 600"
        body = windows_pod(
            wincon,
            "busy",
            build,
            image_key="nettools",
            command=["powershell", "-NoProfile", "-Command", busy],
            node=node,
            container_extra=limits,
        )
    else:  # the Linux control: agnhost stress keeps two CPUs busy
        body = os_pod(wincon, "busy", target_os, None, args=["stress", "--cpus=2"], node=node, container_extra=limits)
    pod = run_os_pod(wincon, namespace, body)
    data_plane(f"read nodes/{node}/proxy/stats/summary for pod busy after 30 s of load", where=node)
    started = pod.status.container_statuses[0].state.running.started_at

    def usage_after_warmup():
        if (datetime.now(UTC) - started).total_seconds() < 30:
            return None
        # The client's str answer is a repr, not JSON (found by the Linux control): read the raw body.
        summary, _ = kubelet_json(wincon.api_client, node, "stats/summary")
        entry = next((p for p in summary.get("pods", []) if p["podRef"]["name"] == "busy"), None)
        cores = sum(c.get("cpu", {}).get("usageNanoCores", 0) for c in (entry or {}).get("containers", [])) / 1e9
        return cores if entry else None

    cores = eventually(usage_after_warmup, 120, "CPU usage of pod busy in the node's stats/summary", interval=5)
    # The probe works: two busy threads under a 500m limit use at least a quarter core, else nothing ran.
    assert cores >= 0.25, f"the busy container used only {cores:.2f} cores: its load never ran, nothing to judge"
    with expect_deviation("cpu-limits-not-hard"):
        assert cores <= 0.6, f"the container used {cores:.2f} cores under a 500m limit"


@pytest.mark.test_id("bbf66b83-925c-4d8f-962d-2f3db0a7fdb0")
@pytest.mark.dataplane
@pytest.mark.limitation("cadvisor-unsupported")
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.documents("kep-windows-node-support", "Windows specific tests")
def test_cadvisor_metrics_cover_windows_containers(kube, wincon, namespace, build, data_plane):
    """ "Pod and container metrics" are supported (002_8a7e76f95009f44f.txt, Supported Functionality), but "System, pod & network stats are implemented in kubelet, not cadvisor" (003_414b2f1c5dd978a2.txt)."""
    pod = run_os_pod(wincon, namespace, windows_pod(wincon, "metered", build))
    node = pod.spec.node_name
    data_plane(f"GET /api/v1/nodes/{node}/proxy/metrics/cadvisor", where=node)
    text = call(kube.core.connect_get_node_proxy_with_path, node, "metrics/cadvisor")
    lines = [line for line in text.splitlines() if line.startswith("container_cpu_usage_seconds_total")]
    with expect_deviation("cadvisor-unsupported"):
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


@pytest.mark.test_id("59f98279-7e2e-40a8-9d83-fac1d04c2437")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.limitation("memory-pressure-not-reported")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
def test_node_reports_memory_pressure_when_its_memory_runs_out(kube, wincon, build, data_plane, cleanup_pods):
    """ "MemoryPressure Condition is not implemented ... There are no OOM eviction actions taken by the kubelet" (000_4130a90def37a825.txt, Memory Reservations and Handling)."""
    node = target_node(wincon.profile, build)
    mib = node_memory(kube, node, "allocatable") // MIB
    cleanup_pods.append("pressure")
    kube.create(memory_pod(wincon, "pressure", build, node, mib))
    kube.wait_pod("pressure", done=pod_scheduled, timeout=60, failure=None)
    data_plane(f"commit {mib} MiB on {node} and wait for MemoryPressure=True or an eviction", where=node)

    def pressure():
        condition = node_condition(kube, node, "MemoryPressure")
        if condition is not None and condition.status == "True":
            return "MemoryPressure"
        result = outcome(kube, "pressure")
        return result if result and "Evicted" in result else None

    with expect_deviation("memory-pressure-not-reported"):
        eventually(
            pressure,
            300,
            f"MemoryPressure on {node} or the pod evicted",
            interval=5,
            behaviour=True,
            seen=lambda: f"pod pressure {outcome(kube, 'pressure') or 'still running'}",
        )


@pytest.mark.test_id("5d61de70-2ae3-471d-8a5e-80fa06452eb6")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.limitation("enforce-node-allocatable-not-implemented")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
def test_pods_beyond_allocatable_memory_are_evicted(kube, wincon, build, data_plane, cleanup_pods):
    """ "Eviction by using --enforce-node-allocable is not implemented" (000_4130a90def37a825.txt, Memory Reservations and Handling): limit-less pods exceeding allocatable should be evicted."""
    node = target_node(wincon.profile, build)
    mib = node_memory(kube, node, "allocatable") // MIB + 512
    cleanup_pods.append("beyond")
    kube.create(memory_pod(wincon, "beyond", build, node, mib))
    kube.wait_pod("beyond", done=pod_scheduled, timeout=60, failure=None)
    data_plane(f"commit {mib} MiB (allocatable + 512) on {node}; expect the pod evicted", where=node)
    with expect_deviation("enforce-node-allocatable-not-implemented"):
        result = eventually(
            lambda: (r := outcome(kube, "beyond")) and "terminated" in r and r,
            300,
            "the pod beyond allocatable to be evicted",
            interval=5,
            behaviour=True,
            seen=lambda: f"pod beyond {outcome(kube, 'beyond') or 'still running'}",
        )
        assert "Evicted" in result or "OOMKilled" in result, result


@pytest.mark.test_id("a800bd52-c9c5-48ed-a038-4549f126b47d")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.limitation("kubelet-host-memory-unrestricted")
@pytest.mark.windows_only("the memory is exhausted from a HostProcess pod on the Windows host")
@pytest.mark.documents("k8s-windows-intro", "Memory Reservations and Handling")
def test_kubelet_stays_responsive_when_host_processes_exhaust_memory(kube, wincon, build, data_plane, cleanup_pods):
    """ "--kubelet-reserve and --system-reserve do not set limits on kubelet or processes running on the host" (000_4130a90def37a825.txt, Memory Reservations and Handling)."""
    node = target_node(wincon.profile, build)
    mib = node_memory(kube, node, "capacity") // MIB
    body = memory_pod(wincon, "host-hog", build, node, mib, hostNetwork=True)
    body["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}
    cleanup_pods.append("host-hog")
    kube.create(body)
    kube.wait_pod("host-hog", done=pod_scheduled, timeout=60, failure=None)
    data_plane(
        f"commit {mib} MiB (the node's capacity) from a HostProcess pod; the kubelet must keep reporting", where=node
    )
    eventually(lambda: outcome(kube, "host-hog"), 300, "the host allocation", interval=5)

    def heartbeat_age():
        ready = node_condition(kube, node, "Ready")
        return (datetime.now(UTC) - ready.last_heartbeat_time).total_seconds() if ready else None

    ages = [eventually(heartbeat_age, 30, "the node's Ready heartbeat") for _ in range(3)]
    with expect_deviation("kubelet-host-memory-unrestricted"):
        assert node_condition(kube, node, "Ready").status == "True" and min(ages) < 90, f"heartbeat ages {ages}"


@pytest.mark.test_id("4bcbc723-af4d-4d21-9dcf-dee88abf5cc5")
@pytest.mark.dataplane
@pytest.mark.disruptive
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.limitation("resource-requests-not-guaranteed")
@pytest.mark.documents("k8s-windows-intro", "V1.Container.ResourceRequirements.requests")
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
    with expect_deviation("resource-requests-not-guaranteed"):
        result = eventually(
            lambda: outcome(kube, "entitled"),
            300,
            "the entitled pod's allocation",
            interval=5,
            behaviour=True,
            seen=lambda: "pod entitled still committing its 1 GiB",
        )
        assert result == "allocated", f"the pod that requested 1Gi could not commit it: {result}"
