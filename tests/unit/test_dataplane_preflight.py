"""The real data plane's bad input: not root, a missing Debian package, no overlayfs, no cgroups: one clear
error naming the component and the fix, exit 10, before anything is created."""

from __future__ import annotations

import shutil

import pytest

from wincon.commandline.errors import ExitCode, LocalClusterError
from wincon.localcluster import dataplane, images, netns, paths
from wincon.localcluster.topology import Topology
from wincon.workloads.catalog import Catalog


def test_not_root_names_the_fix_and_exits_10(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(LocalClusterError) as err:
        dataplane.preflight()
    assert err.value.exit_code == ExitCode.LOCAL_CLUSTER
    assert "needs root" in err.value.render() and "--dataplane none" in err.value.render()


def test_a_missing_debian_package_is_named_with_its_install_command(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    real = shutil.which
    monkeypatch.setattr(dataplane.shutil, "which", lambda tool: None if tool in ("containerd", "ctr") else real(tool))
    with pytest.raises(LocalClusterError) as err:
        dataplane.preflight()
    text = err.value.render()
    assert "Debian packages that are not installed: containerd" in text
    assert "apt-get install containerd" in text and err.value.exit_code == ExitCode.LOCAL_CLUSTER


def test_no_cgroups_is_named(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(dataplane.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(dataplane.Path, "is_file", lambda self: True)
    monkeypatch.setattr(netns, "hierarchies", lambda: [])
    with pytest.raises(LocalClusterError, match="no cgroup hierarchy"):
        dataplane.preflight()


def test_topology_defaults_to_two_real_nodes_and_none_keeps_the_simulated_cluster():
    assert Topology().real_nodes == 2 and Topology().linux_nodes == 0
    simulated = Topology(dataplane="none")
    assert simulated.real_nodes == 0 and simulated.linux_nodes == 1
    assert Topology.from_dict(simulated.to_dict()) == simulated
    with pytest.raises(Exception, match="unknown data plane"):
        Topology(dataplane="windows")


def test_image_references_follow_the_catalog_under_the_local_repo_list():
    refs = images.references()
    tag = paths.load_versions()["kubernetes"]["agnhost_version"]  # the release's agnhost, built from its tree
    assert refs["agnhost"] == f"wincon.local/e2e-test-images/agnhost:{tag}"
    assert refs["pause"] == f"wincon.local/k8s/pause:{Catalog.load().images['pause'].tag}"
    assert images.sandbox_image() == refs["pause"]
    assert "promoterE2eRegistry: wincon.local/e2e-test-images" in images.repo_list_text()


def test_names_fit_the_kernel_limits():
    name = "a" * 40  # the longest cluster name
    assert len(netns.bridge_name(name)) <= 15 and len(netns.veth_name(name, "n3")) <= 15
    assert netns.route_metric(name) == netns.route_metric(name)
