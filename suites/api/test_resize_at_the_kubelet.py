"""An in-place resize that reaches the node: a pod without ``spec.os`` (placed by its nodeSelector, as upstream's
pods are) passes the API server's Windows rule (it reads spec.os only), so the resize is the kubelet's to decide.
A Linux kubelet applies it; the Windows kubelet marks it Infeasible and keeps the allocated resources.

Upstream (k8s.io/kubernetes): the Windows kubelet's IsInPlacePodVerticalScalingAllowed answers "In-place pod
resize is not supported on Windows" (v1.35.4 pkg/kubelet/allocation/features_windows.go:24-26, the same at
v1.34.4 :25, v1.36.3, v1.37.2 and v1.38.0-beta.0 :24) and the kubelet sets the pod's PodResizePending condition,
reason Infeasible, with that message (v1.35.4 pkg/kubelet/allocation/allocation_manager.go:570-573; v1.37.2
through the resize admit handler, pkg/kubelet/allocation/handlers.go:64-67, and allocation_manager.go:630-631).
In-place resize is GA and locked on from 1.35 (v1.35.4 pkg/features/kube_features.go:1379). KEP-6303 (provisional)
would lift this; it is not in v1.38.0-beta.0. No upstream e2e test checks it: the resize tests skip Windows.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from wincon.checks.api_rules import resize_pod
from wincon.checks.pods import create_or_reject, eventually, os_pod, without_os
from wincon.cluster import waves
from wincon.cluster.waits import pod_failure, pod_running, pod_scheduled
from wincon.workloads.pinning import assert_ran_on

pytestmark = [pytest.mark.api]

CONTAINER_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
RESIZED_CPU = "150m"
RESIZE = [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": RESIZED_CPU}]
WINDOWS_KUBELET_REFUSAL = "In-place pod resize is not supported on Windows"
# What each kubelet does with the resize: the one assertion both OSes run.
EXPECTED = {"linux": ("applied", RESIZED_CPU), "windows": ("infeasible", WINDOWS_KUBELET_REFUSAL)}


def resize_outcome(pod: Any) -> tuple[str, str] | None:
    """What the kubelet made of the resize so far: ('infeasible', its message) once the PodResizePending condition
    says Infeasible; ('applied', the CPU request the container runs with) once the container status reports the
    new request and no resize condition is left; None meanwhile (a Deferred or in-progress resize included)."""
    conditions = {c.type: c for c in (pod.status.conditions if pod.status else None) or []}
    pending = conditions.get("PodResizePending")
    if pending is not None and pending.reason == "Infeasible":
        return "infeasible", pending.message or ""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    resources = statuses[0].resources if statuses else None
    cpu = ((resources.requests if resources else None) or {}).get("cpu")
    if cpu == RESIZED_CPU and pending is None and "PodResizeInProgress" not in conditions:
        return "applied", cpu
    return None


def resize_pod_body(wincon, target_os: str, build: int | None) -> dict[str, Any]:
    """The check's pod: no spec.os, container requests 100m (made ahead: ``waves.ahead``)."""
    return without_os(
        os_pod(wincon, "resize-at-kubelet", target_os, build, container_extra={"resources": CONTAINER_RESOURCES})
    )


@pytest.mark.test_id("d152251c-9c17-43fb-ad3d-6dd30b0a771a")
@pytest.mark.dataplane
@pytest.mark.requires("in-place-resize")
@pytest.mark.documents("k8s-windows-intro", "Compute")
@pytest.mark.windows_form(no_command="resizes the pod and reads its conditions through the API")
# Safe ahead: the check resizes the pod once it runs, whenever it started; the kubelet's answer to that resize is
# what is read, and nothing is timed from the pod's start.
@waves.ahead(resize_pod_body)
def test_resize_that_reaches_the_kubelet(kube, wincon, namespace, build, target_os):
    """Windows containers get their CPU and memory controls from a job object (000_4130a90def37a825.txt, Compute): a running pod without spec.os, resized in place (requests.cpu 100m to 150m through the resize subresource, which the API server accepts), is marked PodResizePending/Infeasible by the Windows kubelet with "In-place pod resize is not supported on Windows" (v1.35.4 pkg/kubelet/allocation/features_windows.go:24-26, allocation_manager.go:570-573); its Linux control: a Linux kubelet applies the resize (the container status reports 150m)."""
    body = resize_pod_body(wincon, target_os, build)
    name = body["metadata"]["name"]
    create_or_reject(wincon.api_client, namespace, copy.deepcopy(body))
    pod = kube.wait_pod(name, done=pod_scheduled, timeout=wincon.pod_start_timeout, failure=pod_failure)
    assert_ran_on(pod, wincon.profile, os_name=target_os, build=build if target_os == "windows" else None)
    kube.gate(f"resize pod {name} and read its PodResizePending condition", pod_node=pod.spec.node_name)
    kube.wait_pod(name, done=pod_running, timeout=wincon.pod_start_timeout, failure=pod_failure)
    _, rejection = resize_pod(wincon.api_client, namespace, name, RESIZE)
    assert rejection is None, f"the API server refused the resize of pod {name} (no spec.os): {rejection.describe()}"
    outcome = eventually(
        lambda: resize_outcome(kube.read_pod(name)),
        wincon.pod_start_timeout,
        f"the kubelet applying or refusing the resize of pod {name}",
        interval=2,
        behaviour=True,
        seen=lambda: kube.read_pod(name).status.conditions,
    )
    assert outcome == EXPECTED[target_os], f"{target_os} kubelet: resize of pod {name} ended {outcome}"
