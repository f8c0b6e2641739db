"""The run says what is true (issue 19, item 5): an unknown marker in -m is a usage error listing the known
markers; a --local run ends by saying the cluster is left running and how to stop it; the header names the
nodes with and without a data plane."""

from __future__ import annotations

import json
import sys

import pytest

from tests.unit.test_plugin import LIMITS
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.results import runner

SUITE = """
import pytest

@pytest.mark.networking
@pytest.mark.test_id("4f3a3c0e-7e1b-4d0e-9a61-0c2b8d1e0b01")
def test_x():
    pass
"""

PROFILE = {
    "server_version": "v1.34.4",
    "cni": "flannel",
    "nodes": [
        {
            "name": "win-kwok",
            "os": "windows",
            "arch": "amd64",
            "ready": True,
            "simulated": True,
            "windows_build": 20348,
        },
        {"name": "lin-real", "os": "linux", "arch": "amd64", "ready": True, "simulated": False},
    ],
}


@pytest.fixture
def suite(pytester):
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(SUITE)
    (pytester.path / "profile.json").write_text(json.dumps(PROFILE))

    def run(*args):
        return pytester.runpytest_subprocess(
            "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", *args
        )

    return run


def test_a_misspelt_marker_is_a_usage_error_listing_the_known_markers(suite):
    """It used to answer 'N deselected', exit 5, with no hint."""
    result = suite("-m", "netwroking and not control")
    assert result.ret == 4, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*-m 'netwroking and not control' names no registered marker 'netwroking'*"])
    result.stderr.fnmatch_lines(["*fix: use one of the suite's markers: *networking*"])


def test_a_known_marker_expression_runs(suite):
    result = suite("-m", "networking and not (serial or control)")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


def test_the_header_names_the_nodes_with_and_without_a_data_plane(suite):
    """It used to say 'data plane: none (simulated nodes)' while a real Linux node ran the controls."""
    result = suite()
    result.stdout.fnmatch_lines(
        [
            "*data plane: real on lin-real; none (simulated nodes) on win-kwok: Windows data-plane checks skip; "
            "Linux controls run"
        ]
    )


def test_the_data_plane_line_of_a_mixed_windows_cluster():
    nodes = [
        NodeProfile("w-real", "windows", "amd64", True, False, windows_build=20348),
        NodeProfile("w-kwok", "windows", "amd64", True, True, windows_build=20348),
    ]
    line = ClusterProfile("v1.34.4", nodes).data_plane_line()
    assert line == (
        "data plane: real on w-real; none (simulated nodes) on w-kwok: "
        "Windows data-plane checks run where their pods land on a real node, skip elsewhere"
    )


def test_a_local_run_ends_by_saying_the_cluster_is_left_running(tmp_path, monkeypatch, capsys):
    """`wincon run --local` (make main) used to leave its cluster running without a word."""
    import wincon.localcluster.cluster as cluster

    monkeypatch.setattr(cluster, "up", lambda name, **options: tmp_path / "kubeconfig")
    monkeypatch.setattr(runner, "_run_pytest", lambda command: 5)
    runner.run(tmp_path / "r1", ["--", "suites"], local=True, cluster_name="wincon-x", reports=False)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        "wincon: the local cluster wincon-x is left running for the next run (it reuses it); "
        f"stop it with: {sys.executable} -m wincon cluster down --cluster-name wincon-x"
    )


def test_the_data_plane_line_stays_one_line_on_a_large_cluster():
    nodes = [NodeProfile(f"w{i}", "windows", "amd64", True, False, windows_build=20348) for i in range(300)]
    line = ClusterProfile("v1.34.4", nodes).data_plane_line()
    assert line == "data plane: real on w0, w1, w2, w3, w4, w5, w6, w7 and 292 more: Windows data-plane checks run"
