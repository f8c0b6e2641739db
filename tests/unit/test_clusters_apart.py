"""Two local clusters whose names share a prefix stay apart (issue 35): `make main`'s cluster ``wincon`` and
`make test`'s ``wincon-test`` (or a test's ``wincon-results-<hex>``) run on one host, and the ``up`` or ``down`` of
one must not take the other's namespaces, cgroups or processes for its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wincon.localcluster import dataplane, netns

NAMES = ["wincon", "wincon-test", "wincon-ipf", "wincon-results-0a1b2c", "x", "x-worker-1", "x-ext", "x-worker-1-ext"]
NODES = [*(f"worker-{i}" for i in range(12)), "ext"]


@pytest.mark.parametrize(
    "entry, name, ours",
    [
        ("wincon-wincon-worker-0", "wincon", True),
        ("wincon-wincon-ext", "wincon", True),
        ("wincon-wincon-test-worker-0", "wincon", False),  # make test's, under make main's prefix
        ("wincon-wincon-test-worker-0", "wincon-test", True),
        ("wincon-wincon-ipf-ext", "wincon", False),
        ("wincon-x-worker-1-worker-0", "x", False),
        ("wincon-x-worker-1-worker-0", "x-worker-1", True),
        ("wincon-x-worker-12", "x", True),
        ("wincon-x-worker-", "x", False),
        ("wincon-x-other", "x", False),
    ],
)
def test_an_entry_is_the_clusters_whose_name_and_node_name_make_it(entry, name, ours):
    assert netns.is_ours(entry, name) is ours


def test_every_namespace_and_cgroup_name_belongs_to_exactly_one_cluster():
    for cluster in NAMES:
        for node in NODES:
            for entry in (netns.netns_name(cluster, node), netns.cgroup_name(cluster, node)):
                owners = [n for n in NAMES if netns.is_ours(entry, n)]
                assert owners == [cluster], entry


@pytest.fixture
def two_clusters(tmp_path, monkeypatch):
    """A fake cgroup v2 root and /run/netns holding the namespaces and cgroups of clusters wincon and wincon-test."""
    cgroups, netns_dir = tmp_path / "cgroup", tmp_path / "netns"
    cgroups.mkdir()
    (cgroups / "cgroup.controllers").write_text("cpu memory\n")
    netns_dir.mkdir()
    for cluster in ("wincon", "wincon-test"):
        for node in ("worker-0", "worker-1", "ext"):
            (netns_dir / netns.netns_name(cluster, node)).write_text("")
        for node in ("worker-0", "worker-1"):
            (cgroups / netns.cgroup_name(cluster, node) / "kubepods").mkdir(parents=True)
    monkeypatch.setattr(netns, "CGROUP_ROOT", cgroups)
    monkeypatch.setattr(netns, "NETNS_DIR", netns_dir)
    return cgroups, netns_dir


def test_the_namespaces_and_cgroups_of_wincon_leave_out_wincon_tests(two_clusters):
    cgroups, _ = two_clusters
    assert netns.our_netns("wincon") == ["wincon-wincon-ext", "wincon-wincon-worker-0", "wincon-wincon-worker-1"]
    assert [p.name for p in netns.our_cgroups("wincon")] == ["wincon-wincon-worker-0", "wincon-wincon-worker-1"]
    assert netns.our_netns("wincon-test") == [
        "wincon-wincon-test-ext",
        "wincon-wincon-test-worker-0",
        "wincon-wincon-test-worker-1",
    ]


def test_removing_the_cgroups_of_wincon_leaves_wincon_tests(two_clusters):
    cgroups, _ = two_clusters
    assert netns.remove_cgroups("wincon") == []
    assert sorted(p.name for p in cgroups.iterdir() if p.is_dir()) == [
        "wincon-wincon-test-worker-0",
        "wincon-wincon-test-worker-1",
    ]
    assert (cgroups / "wincon-wincon-test-worker-0" / "kubepods").is_dir()


def test_a_process_in_wincon_tests_cgroup_is_not_a_process_of_wincon(two_clusters, monkeypatch, tmp_path):
    """`up` of wincon treats any process dataplane.pids finds as stale state of its own and kills it."""
    cgroups, _ = two_clusters
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path / "cache"))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (cgroups / "wincon-wincon-test-worker-0" / "kubepods" / "cgroup.procs").write_text(f"{other.pid}\n")
        assert netns.cgroup_pids("wincon-test") == {other.pid}
        assert other.pid in dataplane.pids("wincon-test")
        assert netns.cgroup_pids("wincon") == set()
        assert other.pid not in dataplane.pids("wincon")
    finally:
        other.kill()
        other.wait()


def test_leftovers_of_wincon_do_not_list_wincon_tests_cgroups(two_clusters, monkeypatch):
    monkeypatch.setattr(netns, "run", lambda *a, **k: "")  # no ip/iptables output: only the cgroups and namespaces
    monkeypatch.setattr(netns.ipfamily, "host_routes6", lambda run, metric: [])
    monkeypatch.setattr(netns.ipfamily, "host_ip6tables_rules", lambda run, tag: [])
    found = netns.leftovers("wincon", Path("/nonexistent/wincon-state"))
    assert [Path(p).name for p in found["cgroups"]] == ["wincon-wincon-worker-0", "wincon-wincon-worker-1"]
    assert found["netns"] == ["wincon-wincon-ext", "wincon-wincon-worker-0", "wincon-wincon-worker-1"]
