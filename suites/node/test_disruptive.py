"""Disruptive: a Windows node rebooted through a HostProcess pod comes back Ready and runs its pods again
(upstream test/e2e/windows/reboot_node.go), and a graceful node shutdown gives pods their grace periods
(upstream node_shutdown.go). Both harm the node: marked ``disruptive`` and ``serial``, never in the parallel
phase. The witness pods are created and scheduled for real everywhere; the reboot or shutdown itself is only
ever started after the ``data_plane`` gate, on a real node.
"""

from __future__ import annotations

import pytest

from wincon.checks import hostprocess
from wincon.checks.node import consistently
from wincon.checks.pods import eventually, os_pod, windows_pod
from wincon.cluster.client import call
from wincon.cluster.kubelet import kubelet_config, kubelet_json
from wincon.cluster.waits import pod_running_ready
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [
    pytest.mark.lifecycle,
    pytest.mark.disruptive,
    pytest.mark.serial,  # reboots or shuts down a Windows node (reboot_node.go:47, node_shutdown.go:47: [Serial])
    pytest.mark.slow,
    pytest.mark.dataplane,
]

NODE_RETURN_SECONDS = 900.0


def host_process_pod(wincon, name: str, node, command: list[str]) -> dict:
    """A HostProcess pod (SYSTEM, host network, never restarted) on ``node`` running ``command``."""
    return hostprocess.host_process_pod(wincon, name, node.windows_build, command, node=node.name)


def boot_id(kube, node_name: str) -> str:
    node = call(kube.core.read_node, node_name)
    return node.status.node_info.boot_id if node.status and node.status.node_info else ""


def node_ready(kube, node_name: str) -> bool:
    node = call(kube.core.read_node, node_name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def started_at(pod) -> object:
    state = pod.status.container_statuses[0].state if pod.status.container_statuses else None
    return state.running.started_at if state and state.running else None


# Upstream's HostProcess commands (reboot_node.go:176-184 and :262-276 at v1.34.4): before the reboot, keep the
# node's LastBootUpTime and InstallDate in machine environment variables and reboot in 30 s; after it, the boot
# time must be later and the install date the same (the same machine booted again, not a replacement).
REBOOT_SCRIPT = [
    "powershell.exe",
    "-Command",
    "$os = Get-WmiObject -Class win32_operatingsystem;",
    '[Environment]::SetEnvironmentVariable("TMP_BOOT_DATE", $os.LastBootUpTime, "Machine");',
    '[Environment]::SetEnvironmentVariable("TMP_INSTALL_DATE", $os.InstallDate, "Machine");',
    "shutdown.exe -r -t 30",
]
REBOOT_CHECK_SCRIPT = [
    "powershell.exe",
    "-Command",
    "$os = Get-WmiObject -Class win32_operatingsystem;",
    '$lastBootTime = [Environment]::GetEnvironmentVariable("TMP_BOOT_DATE", "Machine");',
    '$lastInstallTime = [Environment]::GetEnvironmentVariable("TMP_INSTALL_DATE", "Machine");',
    "$timeInterval = $os.ConvertToDateTime($os.LastBootUpTime) -  $os.ConvertToDateTime($lastBootTime);",
    "$installInterval = $os.ConvertToDateTime($os.InstallDate) -  $os.ConvertToDateTime($lastInstallTime);",
    "if ( $timeInterval.TotalSeconds -le 0 ) {exit -1};",
    "if ( $installInterval.TotalSeconds -ne 0 ) {exit -1};",
    '[Environment]::SetEnvironmentVariable("TMP_BOOT_DATE", $null, "Machine");',
    '[Environment]::SetEnvironmentVariable("TMP_INSTALL_DATE", $null, "Machine");',
]
WEB_PORT = 80  # agnhost test-webserver


def restart_count(pod) -> int:
    return sum(s.restart_count for s in pod.status.container_statuses or []) if pod.status else 0


def linux_reaches(kube, linux_pod: str, ip: str, port: int = WEB_PORT) -> str | None:
    """Upstream's Linux-side check, held for its 10 s window (``agnhost connect`` in place of nc)."""
    command = ["/agnhost", "connect", "--timeout=10s", conn.host_port(ip, port)]

    def poll() -> str | None:
        for _ in range(3):  # internalMaxTries
            result = kube.exec(linux_pod, command)
            if result.ok:
                return None
        return f"exit {result.exit_code}: {result.stdout} {result.stderr}".strip()

    return consistently(poll)


def finished_pod(kube, name: str, timeout: float = 180.0):
    return kube.wait_pod(name, done=lambda p: p.status.phase in ("Succeeded", "Failed"), failure=None, timeout=timeout)


@pytest.mark.test_id("8e52f520-d7ea-4287-9ab1-7d7f2bb34ccc")
@pytest.mark.windows_only(
    "disruptive: a reboot through a HostProcess pod; a Linux control would reboot a real Linux node (locally: this machine)"
)
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
@pytest.mark.windows_form(forms.REBOOT_SCRIPT, forms.CURL_EXE)
def test_rebooted_windows_node_comes_back_ready_and_restarts_its_pods(kube, wincon, windows_node, data_plane):
    """ "Ability for nodes to continue participating in a K8s cluster after rebooting (requires hostProcess pods for testing)" (windows-operational-readiness Extend.HostProcess; upstream reboot_node.go:55): after a reboot started by a HostProcess pod the node's boot id moves on by one, its web server pod restarted exactly once and is reachable from a Linux pod again, and the node's LastBootUpTime is later with the same InstallDate."""
    linux = [n for n in wincon.profile.linux_nodes if n.ready and n.data_plane]
    if not linux:
        pytest.skip("no Ready Linux worker with a data plane: upstream checks the rebooted node's pod from a Linux pod")
    node = windows_node.name
    kube.create(windows_pod(wincon, "witness", windows_node.windows_build, args=["test-webserver"], node=node))
    kube.create(os_pod(wincon, "linux-probe", "linux", None, node=linux[0].name))
    data_plane(REBOOT_SCRIPT, where=f"a HostProcess pod on {node}")
    before = kube.wait_pod("witness", timeout=wincon.pod_start_timeout)
    kube.wait_pod("linux-probe", timeout=wincon.pod_start_timeout)
    # Upstream first checks both pods reach outside the cluster (reboot_node.go:146-150); here the external
    # target (--external-ip / --external-host: never an outside address on the local cluster).
    unreachable = linux_reaches(kube, "linux-probe", wincon.external_ip, port=80)
    assert unreachable is None, f"linux-probe -> {wincon.external_ip}:80 before the reboot: {unreachable}"
    outside = conn.tcp_reach_command("windows", f"http://{conn.host_port(conn.check_host(wincon.external_host), 80)}/")
    unreachable = consistently(lambda: None if kube.exec("witness", outside).ok else f"{' '.join(outside)} failed")
    assert unreachable is None, f"witness -> {wincon.external_host} before the reboot: {unreachable}"
    unreachable = linux_reaches(kube, "linux-probe", before.status.pod_ip)
    assert unreachable is None, f"linux-probe -> witness before the reboot: {unreachable}"
    first_boot, first_restarts = boot_id(kube, node), restart_count(before)

    kube.create(host_process_pod(wincon, "reboot", windows_node, REBOOT_SCRIPT))
    rebooter = finished_pod(kube, "reboot")
    assert rebooter.status.phase == "Succeeded", f"the reboot pod ended {rebooter.status.phase}"
    after = kube.wait_pod(
        "witness",
        done=lambda p: pod_running_ready(p) and restart_count(p) > first_restarts,
        timeout=NODE_RETURN_SECONDS,
        failure=None,
        behaviour=True,
        describe="the witness restarted by the reboot and Ready again",
    )
    new_boot = boot_id(kube, node)
    if first_boot.isdigit() and new_boot.isdigit():  # Windows reports its boot count
        assert int(new_boot) == int(first_boot) + 1, f"boot id {first_boot} -> {new_boot}, not incremented by 1"
    assert new_boot != first_boot, f"boot id still {first_boot}: the node did not reboot"
    assert restart_count(after) - first_restarts == 1, (
        f"witness restarted {restart_count(after) - first_restarts} times"
    )
    assert node_ready(kube, node), f"node {node} is not Ready after the reboot"
    unreachable = linux_reaches(kube, "linux-probe", after.status.pod_ip)
    assert unreachable is None, f"linux-probe -> witness after the reboot: {unreachable}"
    kube.create(host_process_pod(wincon, "check-reboot", windows_node, REBOOT_CHECK_SCRIPT))
    checked = finished_pod(kube, "check-reboot")
    assert checked.status.phase == "Succeeded", "LastBootUpTime is not later, or InstallDate changed, after the reboot"


def shutdown_grace(wincon, node_name: str) -> tuple[int, int]:
    configz, _ = kubelet_json(wincon.api_client, node_name, "configz")
    config = kubelet_config(configz)

    def seconds(text) -> int:
        text = str(text or "0s")
        return int(float(text[:-1])) if text.endswith("s") and text[:-1].replace(".", "").isdigit() else 0

    return seconds(config.get("shutdownGracePeriod")), seconds(config.get("shutdownGracePeriodCriticalPods"))


# Upstream's shutdown (node_shutdown.go:279-331 at v1.34.4): a HostProcess pod reboots the node in 60 s, and the
# kubelet's graceful node shutdown must terminate the pods, the critical ones last.
SHUTDOWN_SCRIPT = REBOOT_SCRIPT[:-1] + ["shutdown.exe -r -t 60"]
DELAY_SHUTDOWN = ["/agnhost", "netexec", "--delay-shutdown", "9999"]  # upstream node_shutdown.go:261
SHUTDOWN_REASON = "Terminated"  # upstream node_shutdown.go:335-336 (the kubelet's nodeshutdown manager)
SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."
STATUS_UPDATE_SECONDS = 90.0  # upstream podStatusUpdateTimeout
GRACE_PODS = {
    "period-20": (20, False),
    "period-25": (25, False),
    "period-critical-5": (5, True),
    "period-critical-10": (10, True),
}


def grace_pod(wincon, name: str, node, grace: int, critical: bool) -> dict:
    """Upstream's getGracePeriodOverrideTestPod: netexec delaying its shutdown, bound to the node; a critical pod
    is system-node-critical and marked as a static (file) pod."""
    body = windows_pod(wincon, name, node.windows_build, command=DELAY_SHUTDOWN, node=node.name)
    body["spec"]["nodeName"] = node.name
    body["spec"]["terminationGracePeriodSeconds"] = grace
    if critical:
        body["spec"]["priorityClassName"] = "system-node-critical"
        body["metadata"].setdefault("annotations", {})["kubernetes.io/config.source"] = "file"
    return body


def is_shut_down(pod) -> bool:
    """Upstream's isPodShutdown: Failed, reason Terminated, the exact message, ContainersReady False."""
    status = pod.status
    containers_not_ready = any(c.type == "ContainersReady" and c.status == "False" for c in status.conditions or [])
    return (
        status.phase == "Failed"
        and status.reason == SHUTDOWN_REASON
        and status.message == SHUTDOWN_MESSAGE
        and containers_not_ready
    )


def finished_at(pod):
    states = [s.state.terminated for s in pod.status.container_statuses or [] if s.state and s.state.terminated]
    return max((t.finished_at for t in states if t.finished_at), default=None)


@pytest.mark.test_id("7823a548-ac0c-4471-be75-24b0b34bc0a3")
@pytest.mark.windows_only(
    "disruptive: a reboot through a HostProcess pod; a Linux control would reboot a real Linux node (locally: this machine)"
)
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.DELAY_SHUTDOWN)
def test_graceful_node_shutdown_gives_pods_their_grace_periods(kube, wincon, namespace, windows_node, data_plane):
    """ "postStart & preStop container lifecycle events" hold on Windows (002_8a7e76f95009f44f.txt, Pods); with graceful node shutdown the kubelet terminates ordinary pods first and critical pods after them, each marked Failed, reason Terminated, "Pod was terminated in response to imminent node shutdown.", never Failed and Ready at once (upstream node_shutdown.go:51, its four pods of grace 20, 25, critical 5 and critical 10 s)."""
    node = windows_node.name
    for name, (grace, critical) in GRACE_PODS.items():
        kube.create(grace_pod(wincon, name, windows_node, grace, critical))
    kube.create(grace_pod(wincon, "delay-shutdown-20", windows_node, 20, True))
    data_plane(f"GET /api/v1/nodes/{node}/proxy/configz; {' '.join(SHUTDOWN_SCRIPT)}", where=node, pod_node=node)
    for name in [*GRACE_PODS, "delay-shutdown-20"]:
        kube.wait_pod(name, timeout=wincon.pod_start_timeout)
    total, critical = shutdown_grace(wincon, node)
    if total <= critical:
        pytest.skip(f"graceful node shutdown is off on {node} (shutdownGracePeriod {total}s)")
    kube.create(host_process_pod(wincon, "reboot-host-test-pod", windows_node, SHUTDOWN_SCRIPT))
    rebooter = kube.wait_pod(
        "reboot-host-test-pod", done=lambda p: p.status.phase in ("Succeeded", "Failed"), failure=None, timeout=180
    )
    assert rebooter.status.phase == "Succeeded", f"the shutdown pod ended {rebooter.status.phase}"
    core = kube.core
    seen: list[str] = []

    def pods() -> dict:
        found = {n: call(core.read_namespaced_pod, n, namespace) for n in GRACE_PODS}
        bad = [n for n, p in found.items() if p.status.phase == "Failed" and pod_running_ready(p)]
        assert not bad, f"pods Failed and Ready at once: {bad}"
        seen[:] = [f"{n}: {p.status.phase} {p.status.reason} {p.status.message!r}" for n, p in found.items()]
        return found

    def ordinary_first():
        found = pods()
        done = {n: is_shut_down(p) for n, p in found.items()}
        early = [n for n, (_, crit) in GRACE_PODS.items() if crit and done[n]]
        assert not early, f"critical pods shut down with the ordinary ones: {early}"
        return found if all(done[n] for n, (_, crit) in GRACE_PODS.items() if not crit) else None

    eventually(
        ordinary_first, STATUS_UPDATE_SECONDS, "ordinary pods shut down, critical ones not yet", 1, True, lambda: seen
    )
    found = eventually(
        lambda: (f := pods()) and all(is_shut_down(p) for p in f.values()) and f,
        STATUS_UPDATE_SECONDS + (total - critical),
        "every pod shut down for the node shutdown",
        1,
        True,
        lambda: seen,
    )
    ordinary = [finished_at(p) for n, p in found.items() if not GRACE_PODS[n][1]]
    last_ordinary = max((t for t in ordinary if t), default=None)
    for name, pod in found.items():
        assert any(c.status == "False" for c in pod.status.conditions or []), f"{name}: no condition False"
        if GRACE_PODS[name][1] and last_ordinary and finished_at(pod):
            assert finished_at(pod) >= last_ordinary, f"critical pod {name} ended before an ordinary pod"
