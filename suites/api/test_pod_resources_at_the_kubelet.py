"""Pod-level resources that reach the node: a pod without ``spec.os`` (placed by its nodeSelector) and with
``spec.resources`` passes the API server's Windows rule (it reads spec.os only), so admission is the kubelet's. A
Linux kubelet admits and runs it; the Windows kubelet rejects it.

Upstream (k8s.io/kubernetes, kubernetes#133046): the Windows kubelet's pod-features admit handler answers reason
PodLevelResourcesNotSupported, "pod-level resources are not supported on Windows" (v1.34.4 and v1.35.4
pkg/kubelet/lifecycle/features_windows.go:27-36, registered at v1.35.4 pkg/kubelet/kubelet.go:1070; the same text at
v1.36.3, v1.37.2 and v1.38.0-beta.0 :26-35), and the kubelet's rejectPod sets the pod Failed with that reason and
the message "Pod was rejected: " + that text (v1.35.4 pkg/kubelet/kubelet.go:2470-2477). No upstream e2e test checks
it: the pod-level resources tests skip Windows.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from wincon.checks.pods import create_or_reject, eventually, os_pod, without_os
from wincon.cluster import waves
from wincon.cluster.waits import pod_scheduled
from wincon.clusterinfo.capabilities import POD_LEVEL_RESOURCES_DROPPED
from wincon.workloads.pinning import assert_ran_on

pytestmark = [pytest.mark.api]

POD_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
REJECTED_REASON = "PodLevelResourcesNotSupported"
REJECTED_MESSAGE = "Pod was rejected: pod-level resources are not supported on Windows"
# What each kubelet does with the pod: the one assertion both OSes run.
EXPECTED = {"linux": ("running", ""), "windows": ("rejected", f"{REJECTED_REASON}: {REJECTED_MESSAGE}")}


def admission_outcome(pod: Any) -> tuple[str, str] | None:
    """('rejected', 'reason: message') once the pod failed with a reason (the kubelet's admission refusal),
    ('running', '') once it runs, None meanwhile."""
    status = pod.status
    if status is None:
        return None
    if status.phase == "Failed" and status.reason:
        return "rejected", f"{status.reason}: {status.message or ''}"
    if status.phase == "Running":
        return "running", ""
    return None


def pod_resources_pod(wincon, target_os: str, build: int | None) -> dict[str, Any]:
    """The check's pod: no spec.os, pod-level resources (made ahead: ``waves.ahead``)."""
    return without_os(
        os_pod(wincon, "pod-resources-at-kubelet", target_os, build, resources=copy.deepcopy(POD_RESOURCES))
    )


@pytest.mark.test_id("82229b90-3e72-4156-849f-f2b0f5ea05bb")
@pytest.mark.dataplane
@pytest.mark.requires("pod-level-resources")  # from 1.34, and the API server keeping spec.resources (a dry run)
@pytest.mark.documents("k8s-windows-intro", "Compute")
@pytest.mark.windows_form(no_command="creates the pod and reads its status through the API")
# Safe ahead: the skip is decided by create's answer (what was stored), and the kubelet's outcome is a phase that
# stays (Failed with its reason, or Running); nothing is timed from the pod's start.
@waves.ahead(pod_resources_pod)
def test_pod_level_resources_at_the_kubelet(kube, wincon, namespace, build, target_os):
    """Windows "Resource management" is per container (000_4130a90def37a825.txt, Compute): a pod without spec.os and with pod-level resources, placed on a Windows node, is rejected by its kubelet: Failed, reason PodLevelResourcesNotSupported, "Pod was rejected: pod-level resources are not supported on Windows" (v1.35.4 pkg/kubelet/lifecycle/features_windows.go:27-36, kubelet.go:2470-2477); its Linux control: a Linux kubelet admits and runs the same pod."""
    body = pod_resources_pod(wincon, target_os, build)
    name = body["metadata"]["name"]
    created = create_or_reject(wincon.api_client, namespace, body)
    if not (created.get("spec") or {}).get("resources"):
        pytest.skip(POD_LEVEL_RESOURCES_DROPPED)  # requires("pod-level-resources") decides it at collection too
    pod = kube.wait_pod(name, done=pod_scheduled, timeout=wincon.pod_start_timeout, failure=None)
    assert_ran_on(pod, wincon.profile, os_name=target_os, build=build if target_os == "windows" else None)
    kube.gate(f"read the phase of pod {name} as its kubelet admits or rejects it", pod_node=pod.spec.node_name)
    outcome = eventually(
        lambda: admission_outcome(kube.read_pod(name)),
        wincon.pod_start_timeout,
        f"the kubelet admitting or rejecting pod {name}",
        interval=2,
        behaviour=True,
        seen=lambda: kube.read_pod(name).status,
    )
    assert outcome == EXPECTED[target_os], f"{target_os} kubelet: pod {name} with spec.resources ended {outcome}"
