"""The stats checks size their pods as upstream does at the cluster's release (issue 40, item 9): by Pod Overhead
from 1.37 (test/e2e/windows/kubelet_stats.go:48-90, :171-198 at v1.37.2 and v1.38.0-beta.0), 10 and 3 pods whatever
the overhead before (kubelet_stats.go:48-59, :140-151 at v1.35.4 and v1.36.3). On constructed API answers, as
tests/unit/test_pod_overhead.py runs the checks."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError

KUBELET = suites.load("suites/node/test_kubelet.py")
TEN = KUBELET.test_stats_summary_answers_within_10_seconds_with_10_pods
THREE = KUBELET.test_stats_summary_answers_within_10_seconds_with_3_pods
OVERHEAD = {"memory": "3Gi", "cpu": "10m"}  # the local cluster's RuntimeClass overhead the issue measured with


def run(monkeypatch, check, server_version: str, allocatable: str, spec_overhead: dict | None = OVERHEAD):
    """Run a stats check (its Linux control, as the local cluster runs it) on node win-0 with no other pod, under a
    cluster whose API server reports ``server_version``; returns the pod counts it started and its properties."""
    fakes.NodePodsApi(monkeypatch, [], allocatable={"memory": allocatable}, overhead=spec_overhead)
    monkeypatch.setattr(KUBELET, "check_summary", lambda *a: 0.25)
    monkeypatch.setattr(
        KUBELET,
        "os_pod",
        lambda wincon, name, os_name, build, node=None, labels=None, **spec: {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main"}], "nodeName": node, **spec},
        },
    )
    started: list[int] = []

    def start_pods(prefix, count, node, os_name="windows", **spec):
        started.append(count)
        return [NS(metadata=NS(name=f"{prefix}-{i}")) for i in range(count)]

    request = NS(node=NS(user_properties=[]))
    cluster = ClusterProfile(server_version=server_version, runtime_classes=[("wincon-runc-overhead", "runc")])
    wincon = NS(profile=cluster, api_client=None, pod_start_timeout=60)
    check(request, wincon, "ns", NS(name="win-0"), start_pods, lambda *a, **k: None, "linux", None)
    return started, dict(request.node.user_properties)


@pytest.mark.parametrize("version", ["v1.35.4", "v1.36.3"])
def test_before_1_37_the_10_pod_check_starts_10_whatever_the_overhead(monkeypatch, version):
    """Failed at c48de23: 23 GiB and a 3 GiB overhead started 7 pods (1.37's sizing) on every release."""
    started, props = run(monkeypatch, TEN, version, "23Gi")
    assert started == [10]
    assert props["stats_pods"] == "10" and props["stats_sizing"].startswith("fixed, as upstream before 1.37")


@pytest.mark.parametrize("version", ["v1.35.4", "v1.36.3"])
def test_before_1_37_the_3_pod_check_has_no_room_guard(monkeypatch, version):
    """Failed at c48de23: 9 GiB and a 3 GiB overhead was an error (1.37's guard) on every release."""
    started, props = run(monkeypatch, THREE, version, "9Gi")
    assert started == [3] and props["stats_sizing"].startswith("fixed")


@pytest.mark.parametrize("version", ["v1.37.2", "v1.38.0-beta.0", "v1.37.2-gke.100"])
def test_from_1_37_both_checks_size_by_overhead(monkeypatch, version):
    started, props = run(monkeypatch, TEN, version, "23Gi")
    assert started == [7] and props["stats_sizing"].startswith("by Pod Overhead, as upstream from 1.37")
    with pytest.raises(InfrastructureError, match="less than 3 pods' overhead"):
        run(monkeypatch, THREE, version, "9Gi")


def test_an_unknown_version_gets_the_newest_releases_sizing_and_says_so(monkeypatch):
    started, props = run(monkeypatch, TEN, "unknown", "23Gi")
    assert started == [7] and "is unknown" in props["stats_sizing"]


def test_without_overhead_every_release_starts_10(monkeypatch):
    for version in ("v1.36.3", "v1.37.2"):
        started, _ = run(monkeypatch, TEN, version, "2Gi", spec_overhead=None)
        assert started == [10], version
