"""A Windows image built for another Windows Server version than the node's."""

from __future__ import annotations

import pytest

from wincon.checks.workloads import assert_all_ran_on, windows_nodes_of_build, windows_pod
from wincon.cluster.waits import IMAGE_REASONS, pod_scheduled, wait_for_pod
from wincon.errors import InfrastructureError
from wincon.workloads.catalog import Catalog, ImageSpec, build_compatible
from wincon.workloads.deploy import apply

pytestmark = [pytest.mark.scheduling]

START_FAILURES = IMAGE_REASONS | {"CreateContainerError", "RunContainerError"}


def incompatible_version(catalog: Catalog, host_build: int) -> tuple[str, int] | None:
    """A Windows version of the catalog whose images cannot run on ``host_build`` (the older one first)."""
    for name, build in sorted(catalog.windows_builds.items(), key=lambda item: item[1]):
        if not build_compatible(host_build, build):
            return name, build
    return None


@pytest.mark.test_id("b57ba0f9-1cdc-45ee-8869-18f87e7d18ec")
def test_image_for_another_windows_version_is_refused_before_deploying(wincon, profile):
    """ "The OS version of the Windows container needs to match the Host OS version; otherwise, the container will not be able to start" (001_feb1108140134f87.txt, Other Known Issues): the suite refuses such a pairing up front."""
    if not profile.windows_builds:
        pytest.skip("no Windows node reports its build")
    catalog = wincon.catalog
    checked = 0
    for host in profile.windows_builds:
        other = incompatible_version(catalog, host)
        if other is None:
            continue
        version, image_build = other
        single = ImageSpec(
            "only-" + version, "microsoftRegistry", "windows/nanoserver", version, ("windows",), (version,)
        )
        narrow = Catalog({single.key: single}, catalog.registries, catalog.windows_builds)
        with pytest.raises(InfrastructureError) as refused:
            narrow.image(single.key, "windows", host)
        assert f"Windows build {host}" in str(refused.value)
        assert narrow.image(single.key, "windows", image_build).endswith(f"windows/nanoserver:{version}")
        checked += 1
    if not checked:
        pytest.skip(f"every Windows version of the catalog runs on this cluster's builds {profile.windows_builds}")


def not_started(pod) -> bool:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        waiting = status.state.waiting if status.state else None
        if waiting and waiting.reason in START_FAILURES:
            return True
    return False


def started(pod) -> str | None:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.state and status.state.running:
            return f"container {status.name} started from an image of another Windows version"
    return None


@pytest.mark.test_id("94b88095-9c7c-4b1a-95c5-ac32534cfa1b")
@pytest.mark.dataplane
def test_container_from_another_windows_version_does_not_start(wincon, namespace, profile, data_plane):
    """ "Windows containers with process isolation have strict compatibility rules, where the host OS version must match the container base image OS version" (000_4130a90def37a825.txt): e.g. an ltsc2019 image on an ltsc2022 host does not start."""
    pairing = next(
        (
            (host, other)
            for host in reversed(profile.windows_builds)
            if (other := incompatible_version(wincon.catalog, host))
        ),
        None,
    )
    if pairing is None or not windows_nodes_of_build(profile, pairing[0]):
        pytest.skip("every Windows version of the catalog runs on this cluster's Windows builds")
    host, (version, _) = pairing
    image = f"{wincon.catalog.registries['microsoftRegistry'].rstrip('/')}/windows/nanoserver:{version}"
    body = windows_pod(wincon, "mismatch", host, command=["cmd", "/c", "ping -t 127.0.0.1"])
    body["spec"]["containers"][0]["image"] = image
    apply(wincon.api_client, namespace, body)
    pod = wait_for_pod(
        wincon.api_client, namespace, "mismatch", done=pod_scheduled, timeout=wincon.pod_start_timeout, failure=None
    )
    assert_all_ran_on([pod], profile, "windows", host)
    data_plane(
        f"wait for {image} on build {host} to fail with one of {sorted(START_FAILURES)}", where=pod.spec.node_name
    )
    pod = wait_for_pod(
        wincon.api_client, namespace, "mismatch", done=not_started, timeout=wincon.pod_start_timeout, failure=started
    )
    assert not_started(pod)
