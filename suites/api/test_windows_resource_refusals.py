"""What the API server refuses of a Windows pod's resources since Kubernetes 1.34/1.35: an in-place resize, and
pod-level resources (``spec.resources``). Both are the documented behaviour on Windows (the resize task page of
kubernetes/website lists "Windows pods cannot be resized" among its limitations; KEP-2837, pod-level resources,
says the API server rejects them for a pod whose spec.os.name is windows), so each check asserts the refusal itself
with the API server's own message, not an expected failure; each has its Linux control (``target_os``): the same request
for the same pod pinned to Linux is accepted (the rule is the pod's OS, not the request).

Upstream (k8s.io/kubernetes, pkg/apis/core/validation/validation.go):
- ValidatePodResize, v1.35.4 :6228-6231 (InPlacePodVerticalScaling GA and locked on from v1.35.4
  pkg/features/kube_features.go:1379): "windows pods cannot be resized", Forbidden at the root path ("[]"), the only
  error returned (kubernetes#128617 added it in 1.32). Same at v1.36.3 :6319, v1.37.2 :6504, v1.38.0-beta.0 :6559.
  Upstream's resize e2e tests skip Windows (test/e2e/common/node/pod_resize.go, test/e2e/node/pod_resize.go);
  none asserts the refusal.
- validatePodResources, v1.34.4 :4619-4625 (kubernetes#133046; PodLevelResources Beta and on from 1.34,
  kube_features.go:1554): "may not be set for a windows pod", Forbidden at spec.resources, the only error.
  Same at v1.35.4 :4745, v1.36.3 :4751, v1.37.2 :4906, v1.38.0-beta.0 :4904.

The pods are created for real (the API server is real on every cluster, simulated Windows nodes included); they
need not run: the rules read the stored pod's spec.os, nothing a node reports.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from wincon.checks.api_rules import (
    POD_RESOURCES_PATH,
    POD_RESOURCES_REFUSED,
    WINDOWS_RESIZE_PATH,
    WINDOWS_RESIZE_REFUSED,
    Rejection,
    only_refusal,
    resize_pod,
)
from wincon.checks.pods import create_or_reject, nodes_for, os_pod
from wincon.cluster.client import call
from wincon.cluster.kube import ApiException
from wincon.clusterinfo.capabilities import POD_LEVEL_RESOURCES_DROPPED

pytestmark = [pytest.mark.api]

# A Burstable container (requests below limits) whose CPU request a resize raises within its limit: a resize the
# API server accepts for a Linux pod (same QoS class, CPU only, nothing removed).
CONTAINER_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
RESIZED_CPU = "150m"
RESIZE = [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": RESIZED_CPU}]
# Pod-level resources as the PodLevelResources examples set them: requests and limits of CPU and memory.
POD_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
POD_RESOURCES_DROPPED = POD_LEVEL_RESOURCES_DROPPED  # the capability's reason: the plan gives the same


def create_and_resize(wincon: Any, namespace: str, body: dict[str, Any]) -> tuple[dict | None, Rejection | None]:
    """Create the pod for real, then ask for the resize through its ``resize`` subresource: the API's answer."""
    create_or_reject(wincon.api_client, namespace, body)
    return resize_pod(wincon.api_client, namespace, body["metadata"]["name"], RESIZE)


def requested_cpu(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])


def stored_pod(kube: Any, name: str) -> dict[str, Any]:
    """The pod as the API server stores it now, as a dict."""
    pod = call(kube.core.read_namespaced_pod, name, kube.namespace)
    return dict(kube.api_client.sanitize_for_serialization(pod))


def not_stored(kube: Any, name: str) -> int:
    """The status of reading pod ``name``: 404 where the API server stored no such pod."""
    try:
        call(kube.core.read_namespaced_pod, name, kube.namespace)
    except ApiException as exc:
        return int(exc.status or 0)
    return 200


# --------------------------------------------------------------------------- in-place resize


def linux_worker(wincon: Any, target_os: str) -> str | None:
    """Where a Linux control's pod goes: the first Ready Linux worker with a data plane, whose real kubelet reports
    the container resources the API server needs before it accepts a resize of a running pod (ValidatePodResize's
    isPodResizeRequestSupported, v1.35.4 validation.go:6238-6240); None for the Windows check (its build pins it)."""
    if target_os != "linux":
        return None
    workers = nodes_for(wincon.profile, "linux", None)
    return min(n.name for n in workers) if workers else None


@pytest.mark.test_id("a0c8c011-8a0c-4609-8430-acd0f7bc0b1e")
@pytest.mark.requires("in-place-resize")
@pytest.mark.documents("k8s-windows-intro", "Compute")
def test_api_server_answers_an_in_place_resize_by_the_pods_os(kube, wincon, namespace, build, target_os):
    """Windows "Resource management" goes through the container's job object, set when it starts (000_4130a90def37a825.txt, Compute): an in-place resize (requests.cpu 100m to 150m through the resize subresource) of a pod with spec.os.name windows is refused by the API server, 422 Invalid, its only cause "[]: Forbidden: windows pods cannot be resized" (k8s.io/kubernetes v1.35.4 pkg/apis/core/validation/validation.go:6228-6231, GA from 1.35), and the stored pod keeps its CPU request; its Linux control: the same resize of the same pod pinned to Linux is accepted and stored (ValidatePodResize, :6217), so the refusal is the pod's OS, not the request."""
    name = f"resize-{target_os}"
    body = os_pod(
        wincon,
        name,
        target_os,
        build,
        node=linux_worker(wincon, target_os),
        container_extra={"resources": copy.deepcopy(CONTAINER_RESOURCES)},
    )
    patched, rejection = create_and_resize(wincon, namespace, body)
    stored = requested_cpu(stored_pod(kube, name))
    if target_os == "windows":
        problem = only_refusal(rejection, WINDOWS_RESIZE_PATH, WINDOWS_RESIZE_REFUSED)
        assert not problem, f"resize of Windows pod {name} (requests.cpu to {RESIZED_CPU}): {problem}"
        assert stored == CONTAINER_RESOURCES["requests"]["cpu"], (
            f"the refused resize still changed requests.cpu: {stored}"
        )
        return
    assert rejection is None, f"the API server refused the resize of Linux pod {name}: {rejection.describe()}"
    assert patched is not None and requested_cpu(patched) == RESIZED_CPU, (
        f"the resize answer does not carry requests.cpu {RESIZED_CPU}: {patched and requested_cpu(patched)}"
    )
    assert stored == RESIZED_CPU, f"Linux pod {name} is stored with requests.cpu {stored}, not {RESIZED_CPU}"


# --------------------------------------------------------------------------- pod-level resources


@pytest.mark.test_id("967fd8ac-64f4-44eb-94c8-be16ea0f0b43")
@pytest.mark.requires("pod-level-resources")  # from 1.34, and the API server keeping spec.resources (a dry run)
@pytest.mark.documents("k8s-windows-intro", "Compute")
def test_api_server_answers_pod_level_resources_by_the_pods_os(kube, wincon, build, target_os):
    """Windows "Resource management" is per container (000_4130a90def37a825.txt, Compute): pod-level resources (spec.resources) on a pod with spec.os.name windows are refused by a real create, 422 Invalid with the one cause "spec.resources: Forbidden: may not be set for a windows pod" (k8s.io/kubernetes v1.34.4 pkg/apis/core/validation/validation.go:4619-4625, kubernetes#133046), and no pod is stored; its Linux control: the same pod pinned to Linux is accepted and stored with its spec.resources (validatePodResources, :4614). Skips where the API server drops the field (the gate off)."""
    name = f"pod-resources-{target_os}"
    body = os_pod(
        wincon, name, target_os, build, node=linux_worker(wincon, target_os), resources=copy.deepcopy(POD_RESOURCES)
    )
    created, rejection = kube.submit(body, dry_run=False)
    if rejection is None and not (created or {}).get("spec", {}).get("resources"):
        pytest.skip(POD_RESOURCES_DROPPED)
    if target_os == "windows":
        problem = only_refusal(rejection, POD_RESOURCES_PATH, POD_RESOURCES_REFUSED)
        assert not problem, f"Windows pod {name} with spec.resources {POD_RESOURCES}: {problem}"
        status = not_stored(kube, name)
        assert status == 404, f"a refused pod must not be stored: reading {name} answered {status}"
        return
    assert rejection is None, f"the API server refused Linux pod {name}'s spec.resources: {rejection.describe()}"
    stored = stored_pod(kube, name)["spec"].get("resources")
    assert stored == POD_RESOURCES, f"Linux pod {name} is stored with spec.resources {stored}, not {POD_RESOURCES}"
