"""Device plugins on Windows nodes: where a plugin advertises an extended resource on a Windows node, a pod
requesting it is scheduled there and sees the device (upstream test/e2e/windows/device_plugin.go, the DirectX
device plugin). Without such a resource the check skips and names what it looked for."""

from __future__ import annotations

import pytest

from wincon.checks.node import extended_resources, video_controller_command
from wincon.checks.pods import eventually, windows_pod
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running_ready, pod_scheduled
from wincon.windows import forms

pytestmark = [pytest.mark.scheduling]

DIRECTX = "microsoft.com/directx"
DXDIAG = ["cmd.exe", "/c", "dxdiag", "/t", "dxdiag_output.txt", "&", "type", "dxdiag_output.txt"]  # upstream :118
GPU_ENV = ["cmd.exe", "/c", "set", "DIRECTX_GPU_Name"]  # upstream device_plugin.go:134


def advertised(kube) -> list[tuple[str, str, int | None]]:
    """(node, resource, build) for every extended resource a Ready Windows node advertises."""
    core = kube.core
    found = []
    for profile_node in kube.profile.ready_windows_nodes:
        node = call(core.read_node, profile_node.name)
        for resource in sorted(extended_resources(node.status.allocatable)):
            found.append((profile_node.name, resource, profile_node.windows_build))
    return found


@pytest.mark.test_id("d2496e1f-2621-4d59-93ca-7afbfba8b837")
@pytest.mark.dataplane
@pytest.mark.windows_only("a device plugin on Windows nodes (DirectX: the adapter seen through Win32_VideoController)")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.DXDIAG)
# Not made ahead (waves.ahead): the node and the resource come from the nodes' allocatable read live, which also
# decides a skip before it creates.
def test_pod_requesting_a_device_plugin_resource_is_placed_and_sees_the_device(kube, wincon, data_plane):
    """ "Resource limits" work for Windows pods (002_8a7e76f95009f44f.txt, Pods), extended resources of a device plugin included: the pod is scheduled onto the advertising node and the device is visible in the container (upstream device_plugin.go)."""
    offers = advertised(kube)
    if not offers:
        pytest.skip("no Ready Windows node advertises an extended resource: no device plugin runs on Windows nodes")
    node, resource, build = next((o for o in offers if o[1] == DIRECTX), offers[0])
    body = windows_pod(wincon, "device", build, node=node)
    body["spec"]["containers"][0]["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    kube.create(body)
    pod = kube.wait_pod("device", done=pod_scheduled, timeout=60, failure=None)
    assert pod.spec.node_name == node, f"pod requesting {resource} went to {pod.spec.node_name}, not {node}"
    command = video_controller_command("windows")
    data_plane(command, where=f"pod device ({resource}) on {node}")
    running = kube.wait_pod(
        "device",
        done=pod_running_ready,
        timeout=wincon.pod_start_timeout,
        failure=pod_failure,
    )
    # The kubelet admits the pod only once the plugin allocated the device: Running is a generic plugin's evidence.
    assert running.status.phase == "Running" and running.spec.node_name == node, running.status
    if resource != DIRECTX:
        return
    result = kube.exec("device", command, where=f"pod device ({resource}) on {node}")
    assert result.ok and result.stdout.strip(), f"no display device visible in the container: {result.stderr}"
    # Upstream's DirectX checks (device_plugin.go:118-136 at v1.34.4), each within a minute as upstream retries.
    for check, expected in (
        (DXDIAG, "DirectX Version: DirectX 12"),
        (DXDIAG, "DDI Version: 12"),
        (DXDIAG, "Vendor ID: 0x"),
        (GPU_ENV, "DIRECTX_GPU_Name="),
    ):
        last: list[str] = []

        def found(check=check, expected=expected, last=last) -> bool:
            answer = kube.exec("device", check, where=f"pod device ({resource}) on {node}")
            last[:] = [f"{answer.stdout[-300:]} {answer.stderr[-200:]}"]
            return answer.ok and expected in answer.stdout

        eventually(found, 60, f"{expected!r} in the output of {' '.join(check)}", 5, True, lambda last=last: last)
