"""Hyper-V isolated Windows pods, as upstream test/e2e/windows/hyperv.go:47 (v1.34.4) checks them: a pod of two
containers under the ``runhcs-wcow-hypervisor`` RuntimeClass runs, and the node then hosts a Hyper-V utility VM
owned by containerd's runhcs shim (seen from a HostProcess pod with Get-ComputeProcess).

The RuntimeClass is the cluster's: without it the check skips, as upstream's does. The pods need a real Windows
node: the check passes the ``data_plane`` gate first.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from wincon.checks.hostprocess import host_process_pod
from wincon.checks.pods import schedulable_windows_nodes, windows_nodes_of_build, windows_pod
from wincon.checks.scheduling import live_runtime_classes
from wincon.cluster.waits import pod_failure, pod_running_ready
from wincon.clusterinfo import capabilities
from wincon.clusterinfo.nodes import observe_isolation
from wincon.windows import forms

pytestmark = [pytest.mark.scheduling]

RUNTIME_CLASS = "runhcs-wcow-hypervisor"  # upstream hyperv.go:36
HELLO = ["powershell.exe", "-Command", "Write-Host 'Hello'; sleep -Seconds 600"]  # upstream hyperv.go:79 and :84
VM_CHECK = [  # upstream hyperv.go:122
    "powershell.exe",
    "-Command",
    "$vms = Get-ComputeProcess | Where-Object { ($_.Type -EQ 'VirtualMachine') -and ($_.Owner -EQ "
    "'containerd-shim-runhcs-v1.exe') } ; if ($vms.Length -le 0) { throw 'error' }",
]


@pytest.mark.test_id("228d025e-e506-4a92-9ce0-bdb3cd92625d")
@pytest.mark.dataplane
@pytest.mark.requires(RUNTIME_CLASS)
@pytest.mark.windows_only("Hyper-V isolation (RuntimeClass runhcs-wcow-hypervisor) exists for Windows containers only")
@pytest.mark.documents("kep-windows-node-support", "Roadmap")
@pytest.mark.windows_form(forms.HYPERV_HELLO, forms.HYPERV_VM_CHECK)
@pytest.mark.isolation("hyperv")
# Not made ahead (waves.ahead): the data-plane gate and the RuntimeClass read live decide a skip before it creates,
# and the validation pod must start after the Hyper-V pod runs.
def test_hyperv_isolated_pod_of_two_containers_runs_in_a_utility_vm(kube, wincon, build, data_plane):
    """The KEP's roadmap names Hyper-V isolation (003_414b2f1c5dd978a2.txt, Roadmap): a pod of two containers under the runhcs-wcow-hypervisor RuntimeClass runs Ready on its Windows node, and a HostProcess pod on that node finds a VirtualMachine compute process owned by containerd-shim-runhcs-v1.exe (upstream hyperv.go:47)."""
    allowed = set(schedulable_windows_nodes(wincon.profile))
    nodes = [n.name for n in windows_nodes_of_build(wincon.profile, build) if n.name in allowed]
    if not nodes:
        pytest.skip(f"no Ready Windows node of build {build} that Windows pods may be scheduled on")
    node = nodes[0]
    data_plane(VM_CHECK, where=f"a HostProcess pod on {node}", pod_node=node)
    # The rule `wincon plan` applies to the profile (requires: capabilities.skip_missing); the RuntimeClasses the
    # profile lacks are read now.
    capabilities.require(
        wincon.profile, RUNTIME_CLASS, lambda p: replace(p, runtime_classes=live_runtime_classes(kube))
    )
    body = windows_pod(wincon, "hyperv-test-pod", build, image_key="busybox", command=HELLO, node=node)
    body["spec"]["containers"].append(dict(body["spec"]["containers"][0], name="busybox-2"))
    body["spec"]["runtimeClassName"] = RUNTIME_CLASS
    body["spec"]["restartPolicy"] = "Never"
    kube.create(body)
    pod = kube.wait_pod(
        "hyperv-test-pod", done=pod_running_ready, timeout=wincon.pod_start_timeout, failure=pod_failure
    )
    assert pod.spec.node_name == node and len(pod.status.container_statuses or []) == 2, pod.status

    check = host_process_pod(wincon, "validation-pod", build, VM_CHECK, image_key="busybox", node=node)
    kube.create(check)
    done = kube.wait_pod(
        "validation-pod",
        done=lambda p: p.status.phase in ("Succeeded", "Failed"),
        timeout=wincon.pod_start_timeout,
        failure=None,
    )
    logs = kube.logs(done)
    # What the run's execution record counts: a Running Hyper-V pod beside no utility VM ran process-isolated.
    observe_isolation(node, "hyperv" if done.status.phase == "Succeeded" else "process")
    assert done.status.phase == "Succeeded", f"no Hyper-V utility VM owned by the runhcs shim on {node}: {logs[-500:]}"
