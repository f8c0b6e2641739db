"""A DaemonSet pinned to Windows runs one pod on every Windows node and none elsewhere."""

from __future__ import annotations

from collections import Counter

import pytest

from wincon.checks.controllers import daemonset_rolled_out
from wincon.checks.pods import assert_all_ran_on, schedulable_windows_nodes
from wincon.cluster.waits import wait_for

pytestmark = [pytest.mark.controllers]


@pytest.mark.test_id("08ec511b-0051-4004-a7ee-b42ce1f286af")
@pytest.mark.documents("k8s-handbook-windows", "Running Windows Containers")
def test_windows_daemonset_lands_on_every_windows_node_and_no_other(kube, wincon, namespace, pinned, profile):
    """ "Running a DaemonSet: ... nodeSelector: beta.kubernetes.io/os: windows" (001_feb1108140134f87.txt, Running Windows Containers): one pod per Windows node, none on Linux."""
    cluster = profile.whole_cluster()  # --windows-build narrows where the suite's pods go, not the cluster
    expected = schedulable_windows_nodes(cluster)
    if not expected:
        pytest.skip("no Ready Windows node without an untolerated taint: the DaemonSet has nowhere to run")
    # One image for every Windows build the DaemonSet will meet: check the catalog has a variant for each.
    image = wincon.catalog.image("pause", "windows")
    for build in cluster.windows_builds:
        assert wincon.catalog.image("pause", "windows", build) == image
    (manifest,) = pinned("daemonset", pin_build=False, name="win-ds", image=image)
    kube.create(manifest)
    apps = kube.apps
    ds = wait_for(
        apps.list_namespaced_daemon_set,
        "win-ds",
        daemonset_rolled_out,
        None,
        wincon.pod_start_timeout,
        describe=f"daemonset {namespace}/win-ds",
        namespace=namespace,
    )
    assert ds.status.desired_number_scheduled == len(expected), (
        f"the DaemonSet wants {ds.status.desired_number_scheduled} pods; Windows nodes: {expected}"
    )
    pods = kube.pods({"app": "win-ds"})
    nodes = assert_all_ran_on(pods, cluster, "windows")
    per_node = Counter(n.name for n in nodes)
    assert sorted(per_node) == expected, f"pods on {sorted(per_node)}, Windows nodes {expected}"
    assert set(per_node.values()) == {1}, f"more than one pod on a node: {dict(per_node)}"
