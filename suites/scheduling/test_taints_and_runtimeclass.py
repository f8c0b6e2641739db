"""Keeping workloads on the right OS with taints and tolerations (the KEP's approach), and RuntimeClass scheduling."""

from __future__ import annotations

import pytest

from wincon.checks.pods import (
    admitted_and_scheduled,
    pod_unschedulable,
    run_windows_pod,
    windows_nodes_of_build,
    windows_pod,
)
from wincon.checks.scheduling import (
    TAINT_VALUES,
    node_has_taint,
)

pytestmark = [pytest.mark.scheduling]

TAINT_KEY = "wincon.io/os"
WINDOWS_HANDLER = "runhcs-wcow-process"  # containerd's process-isolated Windows runtime handler


@pytest.mark.test_id("a953a9a7-259d-4c0f-b24d-7f10a965e8ac")
# serial: taints a Windows node NoSchedule: other tests' pods pinned to it would not be scheduled meanwhile.
@pytest.mark.serial
@pytest.mark.disruptive
@pytest.mark.documents("k8s-windows-guide", "Taints and Tolerations")
def test_tainted_windows_node_takes_only_pods_with_the_matching_toleration(kube, wincon, namespace, build, taint_node):
    """ "In order for a Windows Pod to be scheduled on a Windows node, it would need both the nodeSelector to choose Windows, and the appropriate matching toleration" (002_8a7e76f95009f44f.txt, Taints and Tolerations)."""
    nodes = windows_nodes_of_build(wincon.profile, build)
    if not nodes:
        pytest.skip("no Ready Windows node to taint")
    node = nodes[0].name
    taint = {"key": TAINT_KEY, "value": TAINT_VALUES.get(build or 0, f"Win{build}"), "effect": "NoSchedule"}
    taint_node(node, taint)
    assert node_has_taint(wincon.api_client, node, TAINT_KEY)

    untolerated = windows_pod(wincon, "no-toleration", build, node=node)
    tolerant = windows_pod(wincon, "with-toleration", build, node=node)
    tolerant["spec"]["tolerations"].append(
        {"key": TAINT_KEY, "operator": "Equal", "value": taint["value"], "effect": "NoSchedule"}
    )
    # Both created at once, after the taint. The behaviour is the scheduler's: the tolerant pod is bound to the
    # tainted node (a Windows node of the build) and the other is refused; the tolerant pod's start is not waited
    # for (a Windows pod start, p50 30 s under the pod-latency model, that shows nothing about a NoSchedule taint).
    kube.create(untolerated)
    pod = admitted_and_scheduled(wincon, namespace, tolerant)
    pending = kube.wait_pod("no-toleration", done=pod_unschedulable, timeout=60, failure=None)
    assert pending.spec.node_name is None
    message = kube.wait_event("no-toleration", "FailedScheduling")[-1].message
    assert "untolerated taint" in message, message
    assert pod.spec.node_name == node


@pytest.fixture
def runtime_class(build, make_runtime_class):
    """A RuntimeClass for process-isolated Windows containers of the target build, deleted at teardown."""
    selector = {"kubernetes.io/os": "windows"}
    if build:
        selector["node.kubernetes.io/windows-build"] = f"10.0.{build}"
    tolerations = [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]
    name = make_runtime_class(WINDOWS_HANDLER, selector, tolerations)
    return name, selector, tolerations


def unpinned_pod(wincon, name, build, runtime_class_name):
    body = windows_pod(wincon, name, build)
    body["spec"].pop("nodeSelector")
    body["spec"].pop("tolerations")
    body["spec"]["runtimeClassName"] = runtime_class_name
    return body


@pytest.mark.test_id("d2adf8a7-436d-40e9-b1ee-be1a4be450d3")
@pytest.mark.documents("kep-windows-node-support", "Roadmap")
def test_runtime_class_scheduling_places_pods_on_its_windows_nodes(kube, wincon, namespace, build, runtime_class):
    """ "It is unclear if the RuntimeClass proposal from sig-node will simplify scheduled Windows containers" (003_414b2f1c5dd978a2.txt, Roadmap): a RuntimeClass's scheduling section is merged into the pod and places it."""
    name, selector, tolerations = runtime_class
    pod = run_windows_pod(wincon, namespace, unpinned_pod(wincon, "by-runtimeclass", build, name))
    assert pod.spec.runtime_class_name == name
    assert (pod.spec.node_selector or {}) == selector, "the RuntimeClass's nodeSelector must be merged into the pod"
    merged = [kube.api_client.sanitize_for_serialization(t) for t in pod.spec.tolerations or []]
    for toleration in tolerations:
        assert toleration in merged, f"toleration {toleration} not merged: {merged}"


@pytest.mark.test_id("bcf8e032-f3e5-4718-8a4e-ba3744414959")
@pytest.mark.documents("kep-windows-node-support", "Roadmap")
@pytest.mark.documents("k8s-windows-intro", "OS version match")
def test_runtime_class_refuses_a_pod_whose_node_selector_conflicts(kube, wincon, build, runtime_class):
    """A RuntimeClass pins Windows pods to matching hosts (003_414b2f1c5dd978a2.txt, Roadmap; 000_4130a90def37a825.txt, OS version match): a pod selecting another build is refused at admission."""
    name, selector, _ = runtime_class
    if "node.kubernetes.io/windows-build" not in selector:
        pytest.skip("no Windows node reports a build: the RuntimeClass has no build to conflict with")
    body = unpinned_pod(wincon, "conflicting", build, name)
    body["spec"]["nodeSelector"] = {"node.kubernetes.io/windows-build": "10.0.1"}
    created, rejection = kube.submit(body)
    assert rejection is not None, "a pod whose nodeSelector contradicts its RuntimeClass was admitted"
    assert rejection.status in (400, 403, 422) and "conflict" in rejection.message, rejection.describe()
