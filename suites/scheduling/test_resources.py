"""Resource requests of Windows pods are subtracted from the node's allocatable."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wincon.checks.pods import (
    admitted_and_scheduled,
    pod_running_failure,
    pod_unschedulable,
    windows_nodes_of_build,
    windows_pod,
)
from wincon.checks.scheduling import millicores, unrequested_once_settled
from wincon.cluster.client import call
from wincon.cluster.waits import pod_running_ready
from wincon.commandline.errors import DeviationObserved, InfrastructureError, SuiteError, expect_deviation
from wincon.windows import forms

pytestmark = [pytest.mark.scheduling]

SMALL = Decimal("0.3")  # cores: what the second pod asks for


def with_cpu(body, cores: Decimal):
    quantity = millicores(cores)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": quantity}, "limits": {"cpu": quantity}}
    return body


@pytest.mark.test_id("d4007b5e-e560-4901-8e0a-0a5044c45e60")
@pytest.mark.decided_at_run_time("the run skips where the node has too little CPU unrequested to fill and overflow")
# serial: fills a node's unrequested CPU: other tests' pods bound for that node meanwhile would be refused, and
# their requests would change what is left between the reading and the filler.
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-intro", "V1.Container.ResourceRequirements.requests")
def test_requests_are_subtracted_from_allocatable_until_failed_scheduling(kube, wincon, namespace, build):
    """ "Requests are subtracted from node available resources, so they can be used to avoid overprovisioning a node" (000_4130a90def37a825.txt, V1.Container.ResourceRequirements.requests)."""
    nodes = windows_nodes_of_build(wincon.profile, build)
    if not nodes:
        pytest.skip("no Ready Windows node")
    node = nodes[0].name
    # Read once the pods of earlier tests being deleted there have gone: they count until then, and their going
    # mid-check would free what the check has just filled (under the pod-latency model, the check run right after
    # itself errored once, and skipped once for too little CPU left).
    free = unrequested_once_settled(wincon.api_client, node, "cpu", wincon.pod_start_timeout)
    if free < SMALL * 2:
        pytest.skip(f"node {node} has only {millicores(free)} CPU unrequested: too little to fill and overflow")
    big = free - SMALL / 2  # leaves less than SMALL free
    # The filler's request counts from the moment it is bound to the node (the scheduler sums the requests of the
    # pods bound there), so it is not waited for to run: that would put a whole pod start (a Windows pod's: p50
    # 30 s) before the overflow is even created. The overflow is still waited for to run once room is made.
    filler = admitted_and_scheduled(wincon, namespace, with_cpu(windows_pod(wincon, "filler", build, node=node), big))
    assert filler.spec.node_name == node

    kube.create(with_cpu(windows_pod(wincon, "overflow", build, node=node), SMALL))
    pending = kube.wait_pod("overflow", done=pod_unschedulable, timeout=60, failure=None)
    assert pending.spec.node_name is None
    message = kube.wait_event("overflow", "FailedScheduling")[-1].message
    assert "Insufficient cpu" in message, message

    # Releasing the filler's request makes room: the pending pod is scheduled onto the node.
    core = kube.core
    call(core.delete_namespaced_pod, "filler", namespace, grace_period_seconds=0)
    placed = kube.wait_pod(
        "overflow",
        done=pod_running_ready,
        timeout=wincon.pod_start_timeout,
        failure=pod_running_failure,
    )
    assert placed.spec.node_name == node


def scheduled_or_refused(pod) -> bool:
    return bool(pod.spec.node_name) or pod_unschedulable(pod)


@pytest.mark.test_id("6c63212c-8051-4e9a-9c9a-0e0005a4e793")
@pytest.mark.dataplane
@pytest.mark.limitation("hugepages-unsupported")
@pytest.mark.documents("k8s-windows-intro", "V1.Container")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE, forms.CMD_DIR)
def test_pod_requesting_hugepages_is_scheduled_on_windows_and_mounts_them(kube, wincon, build):
    """ "Huge pages are not implemented in the Windows container runtime, and are not available" (000_4130a90def37a825.txt, V1.Container): a Windows pod asking for hugepages-2Mi should be placed and get them."""
    body = windows_pod(wincon, "hugepages", build)
    main = body["spec"]["containers"][0]
    main["resources"] = {
        "requests": {"hugepages-2Mi": "2Mi", "memory": "64Mi", "cpu": "100m"},
        "limits": {"hugepages-2Mi": "2Mi", "memory": "64Mi", "cpu": "100m"},
    }
    main["volumeMounts"] = [{"name": "huge", "mountPath": "C:\\hugepages"}]
    body["spec"]["volumes"] = [{"name": "huge", "emptyDir": {"medium": "HugePages"}}]
    kube.create(body)
    pod = kube.wait_pod("hugepages", done=scheduled_or_refused, timeout=60, failure=None)
    command = ["cmd", "/c", "dir C:\\hugepages"]
    # Simulated nodes advertise no hugepages either: the gate comes before any conclusion about them.
    where = f"pod hugepages on {pod.spec.node_name or 'no node (the scheduler refused it)'}"
    kube.gate(command, where=where)
    if not pod.spec.node_name:
        message = kube.wait_event("hugepages", "FailedScheduling")[-1].message
        if "hugepages" not in message:
            raise InfrastructureError(
                f"pod hugepages is unschedulable for another reason than hugepages: {message}",
                "make a Windows node of the build schedulable for the suite's pods",
            )
        raise DeviationObserved(f"hugepages-unsupported: no Windows node can take hugepages-2Mi: {message}")
    kube.wait_pod(
        "hugepages",
        done=pod_running_ready,
        timeout=wincon.pod_start_timeout,
        failure=pod_running_failure,
    )
    # The tool is shown to work first, on the container's own C:\ (upstream runs cmd.exe /c dir in Windows pods,
    # host_process.go:360): a dir that fails there is the suite's gap, not the volume's.
    probe = kube.exec("hugepages", ["cmd", "/c", "dir C:\\"], where=where)
    if not probe.ok:
        raise SuiteError(
            "`dir C:\\` failed in the pod, so a failed dir of the volume says nothing",
            image=main["image"],
            tool="cmd /c dir",
            output=f"exit {probe.exit_code}: {probe.stdout} {probe.stderr}",
        )
    result = kube.exec("hugepages", command, where=where)
    # No accepts=: one assertion, after dir was shown to work in this very pod (no Windows output of dir is recorded
    # for a volume without huge pages to recognise it by): a volume it cannot list is the deviation.
    with expect_deviation("hugepages-unsupported"):
        assert result.ok, f"`dir C:\\hugepages` in the pod failed: {result.stdout} {result.stderr}"
