"""Pod Overhead in the checks that fill a node's memory (issue 30; upstream v1.37.2 test/e2e/windows/utils.go,
kubelet_stats.go:57-86 and :180-196, memory_limits.go:109-126), on constructed API answers: the overhead read from
a DryRun create's answer, the "up to 10 pods" count with its floor of 3, the 3-pod guard, and the stats checks
themselves starting as many pods as that count says."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest
from kubernetes.client.exceptions import ApiException

from tests.support import suites
from tests.unit import fakes
from wincon.checks import overhead
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError

MI = 1024 * 1024
GI = 1024 * MI
KUBELET = suites.load("suites/node/test_kubelet.py")


def profile(runtime_classes: list | None) -> ClusterProfile:
    return ClusterProfile(server_version="v1.37.2", runtime_classes=runtime_classes)


def answered(spec_overhead: dict | None) -> dict:
    """A pod as the API server returns it after admission (a DryRun create's answer)."""
    spec = {"containers": [{"name": "main", "image": "agnhost"}]}
    if spec_overhead is not None:
        spec["overhead"] = spec_overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "overhead-probe"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec_overhead", "expected"),
    [
        ({"memory": "3Gi", "cpu": "10m"}, 3 * GI),
        ({"memory": "120Mi"}, 120 * MI),
        ({"memory": "1G"}, 10**9),  # decimal suffix: bytes as the API means them
        ({"cpu": "250m"}, 0),  # CPU overhead only: no memory to take
        ({}, 0),
        (None, 0),  # no overhead injected
    ],
)
def test_the_memory_overhead_is_read_from_the_answered_spec(spec_overhead, expected):
    assert overhead.overhead_memory(answered(spec_overhead)) == expected


def test_the_probe_is_a_dry_run_of_the_checks_own_pod(monkeypatch):
    api = fakes.NodePodsApi(monkeypatch, [], allocatable={"memory": "8Gi"}, overhead={"memory": "300Mi"})
    body = {"metadata": {"name": "stats10-0"}, "spec": {"runtimeClassName": "rc", "containers": [{"name": "main"}]}}
    assert overhead.detect_overhead(None, "ns", body) == 300 * MI
    assert api.probes[0]["spec"]["runtimeClassName"] == "rc"
    assert api.probes[0]["metadata"]["name"] == "overhead-probe"
    assert body["metadata"]["name"] == "stats10-0"  # the check's body is left as it was


def test_a_refused_probe_is_the_clusters_error(monkeypatch):
    refusal = ApiException(status=403, reason="Forbidden")
    refusal.body = json.dumps({"reason": "Forbidden", "message": 'pod rejected: RuntimeClass "rc" not found'})

    class Api:
        def create_namespaced_pod(self, namespace, body, **kwargs):
            raise refusal

    monkeypatch.setattr(overhead.client, "CoreV1Api", lambda api_client: Api())
    with pytest.raises(InfrastructureError, match='refused: 403 Forbidden: pod rejected: RuntimeClass "rc" not found'):
        overhead.detect_overhead(None, "ns", {"metadata": {"name": "p"}, "spec": {}})


def test_without_overhead_the_check_starts_10_pods_whatever_the_node_has():
    assert overhead.stats_pod_count("n", 1 * GI, 900 * MI, 0) == 10


@pytest.mark.parametrize(
    ("allocatable", "existing", "per_pod", "expected"),
    [
        (23 * GI, 512 * MI, 3 * GI, 7),  # (23 GiB - 512 MiB - 256 MiB) / 3 GiB = 7.25
        (23 * GI, 0, 2 * GI, 10),  # 11 fit: at most 10
        (4 * GI, 256 * MI, 1 * GI, 3),  # (4 GiB - 512 MiB) / 1 GiB = 3.5: exactly the floor
    ],
)
def test_up_to_10_pods_as_many_as_fit_past_the_reservation_and_256_mib(allocatable, existing, per_pod, expected):
    assert overhead.stats_pod_count("n", allocatable, existing, per_pod) == expected


def test_fewer_than_3_pods_is_the_clusters_error_with_its_figures():
    # (4 GiB - 1.5 GiB - 256 MiB) / 1 GiB = 2.25: 2 pods, below upstream's minimum of 3.
    with pytest.raises(InfrastructureError, match="node n has memory for 2 pods, fewer than the 3") as raised:
        overhead.stats_pod_count("n", 4 * GI, 1536 * MI, 1 * GI)
    assert "existing reservation 1536 MiB" in raised.value.message and "right-size" in raised.value.fix


def test_a_node_already_full_has_room_for_none():
    with pytest.raises(InfrastructureError, match="memory for 0 pods"):
        overhead.stats_pod_count("n", 1 * GI, 2 * GI, 100 * MI)


def test_the_3_pod_guard_needs_3_overheads_past_the_reservation_and_buffer():
    overhead.require_room("n", 4 * GI, 256 * MI, 1 * GI, 3)  # 3.5 GiB free: room for 3
    overhead.require_room("n", 1 * GI, 1 * GI, 0, 3)  # no overhead: nothing to check
    with pytest.raises(InfrastructureError, match="less than 3 pods' overhead"):
        overhead.require_room("n", 4 * GI, 257 * MI, 1256 * MI, 3)


def test_the_filler_limit_takes_reservation_overhead_and_buffer():
    assert overhead.filler_limit(8 * GI, 1 * GI, 300 * MI) == 8 * GI - 1 * GI - 300 * MI - 256 * MI


def test_only_a_linux_control_names_the_listed_overhead_runtime_class():
    listed = profile([("wincon-runc-overhead", "runc")])
    assert overhead.overhead_spec(listed, "linux") == {"runtimeClassName": "wincon-runc-overhead"}
    assert overhead.overhead_spec(listed, "windows") == {}
    assert overhead.overhead_spec(profile([("wincon-runc-overhead", "kata")]), "linux") == {}
    assert overhead.overhead_spec(profile(None), "linux") == {}


# ----------------------------------------------------------------- the stats checks on a fake API


def run_stats(monkeypatch, check, pods_on_node: list, allocatable: str, spec_overhead: dict | None):
    """Run a stats check against node win-0 whose pods, allocatable and DryRun answer are given; returns the pods it
    started (prefix, count, spec) and its properties."""
    api = fakes.NodePodsApi(monkeypatch, pods_on_node, allocatable={"memory": allocatable}, overhead=spec_overhead)
    monkeypatch.setattr(KUBELET, "check_summary", lambda *a: 0.25)
    monkeypatch.setattr(
        KUBELET,
        "os_pod",
        lambda wincon, name, os_name, build, node=None, labels=None, **spec: {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "main"}], "nodeName": node, **spec},
        },
    )
    started = []

    def start_pods(prefix, count, node, os_name="windows", **spec):
        started.append((prefix, count, spec))
        return [NS(metadata=NS(name=f"{prefix}-{i}")) for i in range(count)]

    request = NS(node=NS(user_properties=[]))
    wincon = NS(profile=profile([("wincon-runc-overhead", "runc")]), api_client=None, pod_start_timeout=60)
    check(request, wincon, "ns", NS(name="win-0"), start_pods, lambda *a, **k: None, "linux", None)
    return started, dict(request.node.user_properties), api


TEN = KUBELET.test_stats_summary_answers_within_10_seconds_with_10_pods
THREE = KUBELET.test_stats_summary_answers_within_10_seconds_with_3_pods


def test_the_10_pod_check_starts_as_many_as_fit_with_overhead(monkeypatch):
    # A 3 GiB overhead (what the local cluster first tried) on a node of 23 GiB with 512 MiB requested: 7 pods.
    daemon = fakes.requesting_pod("coredns", "memory", "512Mi", namespace="kube-system")
    started, props, api = run_stats(monkeypatch, TEN, [daemon], "23Gi", {"memory": "3Gi", "cpu": "10m"})
    assert started == [("stats10", 7, {"runtimeClassName": "wincon-runc-overhead"})]
    assert props["stats_pods"] == "7" and props["pod_overhead_memory"] == str(3 * GI)
    assert api.probes[0]["spec"]["runtimeClassName"] == "wincon-runc-overhead"


def test_the_10_pod_check_counts_the_overhead_of_the_pods_already_there(monkeypatch):
    # 20 GiB: 6 pods fit past a 1 GiB request; past its 1 GiB overhead too, 5.
    daemon = fakes.requesting_pod("daemon", "memory", "1Gi", namespace="kube-system", overhead="1Gi")
    started, _, _ = run_stats(monkeypatch, TEN, [daemon], "20Gi", {"memory": "3Gi"})
    assert started[0][1] == 5


def test_the_10_pod_check_without_overhead_starts_10(monkeypatch):
    started, props, _ = run_stats(monkeypatch, TEN, [], "2Gi", None)
    assert started[0][1] == 10 and props["pod_overhead_memory"] == "0"


def test_the_10_pod_check_errs_below_3_pods_and_starts_none(monkeypatch):
    with pytest.raises(InfrastructureError, match="memory for 2 pods"):
        run_stats(monkeypatch, TEN, [], "7Gi", {"memory": "3Gi"})


def test_the_3_pod_check_errs_where_3_overheads_do_not_fit(monkeypatch):
    started, _, _ = run_stats(monkeypatch, THREE, [], "10Gi", {"memory": "3Gi"})
    assert started == [("stats3", 3, {"runtimeClassName": "wincon-runc-overhead"})]
    with pytest.raises(InfrastructureError, match="less than 3 pods' overhead"):
        run_stats(monkeypatch, THREE, [], "9Gi", {"memory": "3Gi"})
