"""Placing Windows pods with nodeSelector on kubernetes.io/os and node.kubernetes.io/windows-build."""

from __future__ import annotations

import pytest

from wincon.checks.pods import (
    assert_all_ran_on,
    pin_template,
    pod_unschedulable,
    pods_with,
    windows_pod,
)
from wincon.cluster import waves
from wincon.cluster.waits import pod_failure, wait_for_deployment
from wincon.commandline.errors import InfrastructureError
from wincon.workloads.render import render

pytestmark = [pytest.mark.scheduling]

NO_SUCH_BUILD = 99999


def deployment(wincon, name, build, replicas, image_build) -> dict:
    """A Deployment of ``replicas`` agnhost pause pods pinned to Windows (and ``build``)."""
    image = wincon.catalog.image("agnhost", "windows", image_build)
    (manifest,) = render(
        "controllers/deployment.yaml", name=name, replicas=replicas, container="main", image=image, port=8080
    )
    manifest["spec"]["template"]["spec"]["containers"][0]["args"] = ["pause"]
    return pin_template(manifest, build)


def every_build_has_agnhost(wincon) -> None:
    """The one agnhost image must have a variant for every Windows build it may meet (InfrastructureError)."""
    for build in wincon.profile.windows_builds:
        wincon.catalog.image("agnhost", "windows", build)


def os_only_deployment(wincon) -> list[dict]:
    """The OS selector check's Deployment: two replicas per node of the cluster, pinned to Windows only (made
    ahead: ``waves.ahead``); none where the check errs before creating it (an image variant missing)."""
    try:
        every_build_has_agnhost(wincon)
    except InfrastructureError:
        return []
    return [deployment(wincon, "os-only", None, 2 * max(1, len(wincon.profile.nodes)), None)]


def build_deployments(wincon) -> list[dict]:
    """The build selector check's Deployments, one of 2 replicas per Windows build, in its order (made ahead:
    ``waves.ahead``); none where no node reports a build (the check skips), and only those before a build whose
    image variant is missing (the check errs there, having created those)."""
    manifests = []
    for build in wincon.profile.windows_builds:
        try:
            manifests.append(deployment(wincon, f"build-{build}", build, 2, build))
        except InfrastructureError:
            break
    return manifests


def deployed_pods(kube, name):
    wait_for_deployment(kube.api_client, kube.namespace, name, kube.pod_start_timeout)
    return pods_with(kube.api_client, kube.namespace, {"app": name})


@pytest.mark.test_id("7675e72b-3837-438e-8a27-0f831775c65c")
@pytest.mark.documents("k8s-windows-guide", "Taints and Tolerations")
# Safe ahead: what is read is where the Deployment's replicas were placed (Windows nodes, by its nodeSelector alone)
# once it is available; its size is the profile's, known before the run; nothing is timed from its creation.
@waves.ahead(os_only_deployment)
def test_os_node_selector_places_every_pod_on_a_windows_node(kube, wincon, profile):
    """ "Windows containers have to be scheduled on Windows nodes ... The best practice is to use a nodeSelector" (002_8a7e76f95009f44f.txt, Taints and Tolerations): no replica lands on Linux."""
    every_build_has_agnhost(wincon)
    (manifest,) = os_only_deployment(wincon)
    replicas = manifest["spec"]["replicas"]
    kube.create(manifest)
    pods = deployed_pods(kube, "os-only")
    assert len(pods) == replicas
    assert_all_ran_on(pods, profile, "windows")


@pytest.mark.test_id("7d5f5b2c-7df8-491b-a248-08ebc56eb81d")
@pytest.mark.documents("k8s-windows-intro", "OS version match")
# Safe ahead: the builds are the profile's, known before the run (no build, nothing is made and the check skips);
# what is read is the nodes each Deployment's replicas were placed on once available; nothing is timed.
@waves.ahead(build_deployments)
def test_windows_build_node_selector_places_pods_on_nodes_of_that_build(kube, wincon, profile):
    """ "Windows containers with process isolation have strict compatibility rules, where the host OS version must match the container base image OS version" (000_4130a90def37a825.txt): windows-build pins each pod to its build."""
    if not profile.windows_builds:
        pytest.skip("no Windows node reports node.kubernetes.io/windows-build")
    for manifest in build_deployments(wincon):  # every build's Deployment created before any is waited for
        kube.create(manifest)
    every_build_has_agnhost(wincon)  # a build without its image variant errs here, as it did at its Deployment
    for build in profile.windows_builds:
        pods = deployed_pods(kube, f"build-{build}")
        nodes = assert_all_ran_on(pods, profile, "windows", build)
        assert {n.windows_build for n in nodes} == {build}


@pytest.mark.test_id("b965821d-0785-4346-80ea-3c50259fc19c")
@pytest.mark.documents("k8s-windows-guide", "Operating System Restrictions")
# Not made ahead: no pod start is waited for (it stays Pending), and its evidence is the scheduler's
# FailedScheduling event, one of the pod's early events.
def test_pod_for_a_build_no_node_has_stays_pending_with_failed_scheduling(kube, wincon, profile):
    """Pods must land on a host whose OS version matches (002_8a7e76f95009f44f.txt, Operating System Restrictions): a build no node runs leaves the pod Pending with FailedScheduling."""
    assert NO_SUCH_BUILD not in profile.windows_builds
    body = windows_pod(wincon, "no-such-build", None)
    body["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"] = f"10.0.{NO_SUCH_BUILD}"
    kube.create(body)
    pod = kube.wait_pod("no-such-build", done=pod_unschedulable, timeout=60, failure=None)
    assert pod.spec.node_name is None and pod.status.phase == "Pending"
    events = kube.wait_event("no-such-build", "FailedScheduling")
    message = events[-1].message
    assert "didn't match Pod's node affinity/selector" in message, message
    assert pod_failure(pod) and pod_failure(pod).startswith("Unschedulable")
