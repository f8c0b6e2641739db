"""Disruptive: a Windows node rebooted through a HostProcess pod comes back Ready and runs its pods again
(upstream test/e2e/windows/reboot_node.go), and a graceful node shutdown gives pods their grace periods
(upstream node_shutdown.go). Both harm the node: marked ``disruptive`` and ``serial``, never in the parallel
phase. The witness pods are created and scheduled for real everywhere; the reboot or shutdown itself is only
ever started after the ``data_plane`` gate, on a real node.
"""

from __future__ import annotations

import pytest

from wincon.checks.node import kubelet_config, kubelet_json, reboot_command, shutdown_command
from wincon.checks.pods import eventually, windows_pod
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running_ready

pytestmark = [
    pytest.mark.lifecycle,
    pytest.mark.disruptive,
    pytest.mark.serial,
    pytest.mark.slow,
    pytest.mark.dataplane,
]

NODE_RETURN_SECONDS = 900.0
SYSTEM = "NT AUTHORITY\\SYSTEM"


def host_process_pod(wincon, name: str, node, command: list[str]) -> dict:
    body = windows_pod(wincon, name, node.windows_build, image_key="agnhost", command=command, node=node.name)
    body["spec"]["hostNetwork"] = True
    body["spec"]["restartPolicy"] = "Never"
    body["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": SYSTEM}}
    return body


def boot_id(kube, node_name: str) -> str:
    node = call(kube.core.read_node, node_name)
    return node.status.node_info.boot_id if node.status and node.status.node_info else ""


def node_ready(kube, node_name: str) -> bool:
    node = call(kube.core.read_node, node_name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def started_at(pod) -> object:
    state = pod.status.container_statuses[0].state if pod.status.container_statuses else None
    return state.running.started_at if state and state.running else None


@pytest.mark.test_id("8e52f520-d7ea-4287-9ab1-7d7f2bb34ccc")
@pytest.mark.windows_only(
    "disruptive: a reboot through a HostProcess pod; a Linux control would reboot a real Linux node (locally: this machine)"
)
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
def test_rebooted_windows_node_comes_back_ready_and_restarts_its_pods(kube, wincon, windows_node, data_plane):
    """ "Ability for nodes to continue participating in a K8s cluster after rebooting (requires hostProcess pods for testing)" (windows-operational-readiness Extend.HostProcess; upstream reboot_node.go): after a reboot started by a HostProcess pod the node is Ready again with a new boot id, and its pod runs again."""
    witness = windows_pod(wincon, "witness", windows_node.windows_build, node=windows_node.name)
    kube.create(witness)
    before = kube.wait_pod("witness", timeout=wincon.pod_start_timeout)
    command = reboot_command("windows")
    data_plane(command, where=f"a HostProcess pod on {windows_node.name}")
    first_boot, first_start = boot_id(kube, windows_node.name), started_at(before)
    kube.create(host_process_pod(wincon, "reboot", windows_node, command))
    new_boot = eventually(
        lambda: (b := boot_id(kube, windows_node.name)) and b != first_boot and b,
        NODE_RETURN_SECONDS,
        f"node {windows_node.name} reporting a new boot id after the reboot",
        interval=10,
    )
    assert new_boot != first_boot
    assert eventually(lambda: node_ready(kube, windows_node.name), NODE_RETURN_SECONDS, "node Ready again", 10)
    after = kube.wait_pod(
        "witness",
        done=lambda p: pod_running_ready(p) and started_at(p) != first_start,
        timeout=NODE_RETURN_SECONDS,
        failure=pod_failure,
    )
    assert after.spec.node_name == windows_node.name
    assert started_at(after) != first_start, "the witness container was not started again after the reboot"


def shutdown_grace(wincon, node_name: str) -> tuple[int, int]:
    configz, _ = kubelet_json(wincon.api_client, node_name, "configz")
    config = kubelet_config(configz)

    def seconds(text) -> int:
        text = str(text or "0s")
        return int(float(text[:-1])) if text.endswith("s") and text[:-1].replace(".", "").isdigit() else 0

    return seconds(config.get("shutdownGracePeriod")), seconds(config.get("shutdownGracePeriodCriticalPods"))


@pytest.mark.test_id("7823a548-ac0c-4471-be75-24b0b34bc0a3")
@pytest.mark.windows_only(
    "disruptive: a shutdown through a HostProcess pod; a Linux control would power off a real Linux node (locally: this machine)"
)
@pytest.mark.documents("k8s-windows-guide", "Pods")
def test_graceful_node_shutdown_gives_pods_their_grace_periods(kube, wincon, namespace, windows_node, data_plane):
    """ "postStart & preStop container lifecycle events" hold on Windows (002_8a7e76f95009f44f.txt, Pods); with graceful node shutdown the kubelet terminates each pod with its grace period and marks it terminated for the node shutdown (upstream node_shutdown.go)."""
    for name, grace in (("grace-short", 5), ("grace-long", 20)):
        body = windows_pod(
            wincon, name, windows_node.windows_build, node=windows_node.name, terminationGracePeriodSeconds=grace
        )
        kube.create(body)
    for name in ("grace-short", "grace-long"):
        kube.wait_pod(name, timeout=wincon.pod_start_timeout)
    command = shutdown_command("windows", delay_seconds=10)
    data_plane(f"GET /api/v1/nodes/{windows_node.name}/proxy/configz; {' '.join(command)}", where=windows_node.name)
    total, critical = shutdown_grace(wincon, windows_node.name)
    if total <= critical:
        pytest.skip(f"graceful node shutdown is off on {windows_node.name} (shutdownGracePeriod {total}s)")
    kube.create(host_process_pod(wincon, "shutdown", windows_node, command))
    core = kube.core

    def terminated_for_shutdown():
        pods = [call(core.read_namespaced_pod, n, namespace) for n in ("grace-short", "grace-long")]
        if all(p.status.phase == "Failed" for p in pods):
            return pods
        return None

    pods = eventually(terminated_for_shutdown, NODE_RETURN_SECONDS, "both pods terminated by the node shutdown", 5)
    for pod in pods:
        text = f"{pod.status.reason} {pod.status.message}"
        assert "shutdown" in text.lower(), f"pod {pod.metadata.name} ended {text!r}, not for the node shutdown"
