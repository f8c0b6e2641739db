"""Scheduling checks' verdict edge cases (issue 22 follow-up, h5): a fresh heartbeat (age exactly 0.0) is a reading,
not "not yet"; the Hyper-V CPU-count check skips where the node's count and the limit's count print the same; the
cAdvisor check skips where the kubelet serves /metrics/cadvisor from the CRI runtime (PodAndContainerStatsFromCRI)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.clusterinfo.profile import NodeProfile
from wincon.commandline.errors import DeviationObserved, InfrastructureError

COMPUTE = suites.load("suites/scheduling/test_compute_limitations.py")
IMAGES = suites.load("suites/scheduling/test_image_os_version.py")

NOW = datetime(2026, 11, 24, 18, 0, 0, tzinfo=UTC)


class FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
        return NOW


def node_with(heartbeat: datetime | None, capacity: dict[str, str] | None = None) -> Any:
    conditions = [NS(type="Ready", status="True", last_heartbeat_time=heartbeat)]
    return NS(status=NS(conditions=conditions, capacity=capacity or {"memory": "8Gi", "cpu": "4"}))


def windows_node(name: str, simulated: bool = False, **facts: Any) -> NodeProfile:
    return NodeProfile(name, "windows", "amd64", True, simulated, windows_build=17763, **facts)


class Kube:
    def __init__(self, node: Any) -> None:
        self.namespace, self.pod_start_timeout, self.api_client = "ns", 300, None
        self.core = NS(read_node=lambda name: node)
        self.created: list[Any] = []

    def create(self, body: Any) -> None:
        self.created.append(body)

    def wait_pod(self, name, **kwargs):
        return NS(spec=NS(node_name="win-0"))


# --------------------------------------------------------------------------- kubelet-host-memory-unrestricted


def host_hog(heartbeat: datetime | None, monkeypatch) -> None:
    monkeypatch.setattr(COMPUTE, "datetime", FrozenDatetime)
    monkeypatch.setattr(COMPUTE, "target_node", lambda profile, build: "win-0")
    monkeypatch.setattr(
        COMPUTE, "memory_pod", lambda *a, **k: {"spec": {"containers": [{"command": ["testlimit", "-d"]}]}}
    )
    monkeypatch.setattr(COMPUTE, "outcome", lambda kube, name: "allocated")
    COMPUTE.test_kubelet_stays_responsive_when_host_processes_exhaust_memory(
        Kube(node_with(heartbeat)), NS(profile=None), 17763, lambda what, where=None: None, []
    )


def test_a_heartbeat_of_this_very_second_is_a_reading(monkeypatch, clock):
    """Before: the age 0.0 was falsy, so eventually polled it as "not yet" for 30 s and the check ended as the
    cluster's error (InfrastructureError: the node's Ready heartbeat not observed)."""
    host_hog(NOW, monkeypatch)


def test_a_stale_heartbeat_is_still_the_deviation_and_none_at_all_is_the_clusters_error(monkeypatch, clock):
    with pytest.raises(DeviationObserved, match="kubelet-host-memory-unrestricted"):
        host_hog(NOW - timedelta(seconds=120), monkeypatch)
    with pytest.raises(InfrastructureError, match="Ready heartbeat"):
        host_hog(None, monkeypatch)


def test_heartbeat_ages_returns_zero_ages_as_they_are(monkeypatch, clock):
    monkeypatch.setattr(COMPUTE, "datetime", FrozenDatetime)
    assert COMPUTE.heartbeat_ages(Kube(node_with(NOW)), "win-0", 3) == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- hyperv-cpu-count-limit


class HyperVKube:
    """Nodes by name with their capacity cpu; records what was created and run."""

    def __init__(self, cpus: dict[str, str], stdout: str) -> None:
        self.namespace, self.pod_start_timeout, self.api_client = "ns", 300, None
        self.created: list[Any] = []
        self.ran: list[str] = []
        self.stdout = stdout
        self.core = NS(read_node=lambda name: NS(status=NS(capacity={"cpu": cpus[name], "memory": "8Gi"})))

    def exec(self, pod, command, container=None, where=None):
        self.ran.append(" ".join(command))
        return ExecResult(0, self.stdout, "")


def hyperv_cpus(cpus: dict[str, str], stdout: str, monkeypatch, kube: HyperVKube | None = None) -> HyperVKube:
    kube = kube or HyperVKube(cpus, stdout)
    # no capacity: read from the Node
    profile = NS(ready_windows_nodes=[windows_node(name) for name in cpus], runtime_classes=[("hv", "hyperv")])

    def start_and_wait(kube, profile, data_plane, body, *rest):
        kube.created.append(body)
        return NS(spec=NS(node_name=(body["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname", "win-0")))

    monkeypatch.setattr(IMAGES, "live_runtime_classes", lambda kube: [("hyperv", "runhcs-wcow-hypervisor")])
    monkeypatch.setattr(
        IMAGES,
        "windows_pod",
        lambda wincon, name, build, node=None, **k: {
            "metadata": {"name": name},
            "spec": {"containers": [{}], "nodeSelector": {"kubernetes.io/hostname": node} if node else {}},
        },
    )
    monkeypatch.setattr(IMAGES, "start_and_wait", start_and_wait)
    monkeypatch.setattr(IMAGES, "call", lambda fn, name: fn(name))
    IMAGES.test_hyperv_isolated_container_sees_the_nodes_processors(
        kube, NS(), profile, 17763, lambda what, where=None: None
    )
    return kube


def test_a_node_of_two_cpus_skips_before_creating_anything(monkeypatch):
    """Before: the pod ran and the node's 2 read as the behaviour holding (or 2 as the deviation): neither can be told."""
    kube = HyperVKube({"win-0": "2"}, "2\r\n")
    with pytest.raises(pytest.skip.Exception, match=r"capacity cpu 2 \(win-0\).*could tell neither"):
        hyperv_cpus({"win-0": "2"}, "2\r\n", monkeypatch, kube)
    assert not kube.created and not kube.ran


def test_a_node_of_four_cpus_runs_the_check(monkeypatch):
    kube = hyperv_cpus({"win-0": "4"}, "4\r\n", monkeypatch)  # the node's 4: the behaviour holding
    assert kube.created and kube.ran == ["cmd /c echo %NUMBER_OF_PROCESSORS%"]
    assert kube.created[0]["spec"]["nodeSelector"] == {}  # no node of 2: left to the scheduler, as before
    with pytest.raises(DeviationObserved, match="hyperv-cpu-count-limit"):
        hyperv_cpus({"win-0": "4"}, "2\r\n", monkeypatch)


def test_beside_a_node_of_two_cpus_the_pod_is_pinned_to_one_of_another_count(monkeypatch):
    kube = hyperv_cpus({"win-0": "2", "win-1": "4"}, "4\r\n", monkeypatch)
    assert kube.created[0]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "win-1"}


# --------------------------------------------------------------------------- cadvisor-unsupported

WINDOWS_CADVISOR = "container_scrape_error 0\nmachine_scrape_error 0\n"  # cAdvisor's collector, no container
SERIES = 'container_cpu_usage_seconds_total{container="main",namespace="ns",pod="metered"} 1.5\n'


def cadvisor(gates: dict[str, dict[str, bool]], text: str, monkeypatch, simulated: tuple[str, ...] = ()) -> list[Any]:
    """The check on real nodes whose /configz featureGates are ``gates`` (and ``simulated`` ones, whose /configz
    cannot be read); returns the pod bodies it created."""
    created: list[Any] = []
    nodes = [windows_node(name) for name in gates]  # no feature gates: read from /configz
    nodes += [windows_node(name, simulated=True) for name in simulated]
    profile = NS(ready_windows_nodes=nodes)

    def run_os_pod(wincon, namespace, body):
        created.append(body)
        return NS(spec=NS(node_name=(body["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname", "win-0")))

    monkeypatch.setattr(
        COMPUTE,
        "windows_pod",
        lambda wincon, name, build, node=None, **k: {
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node} if node else {}}
        },
    )
    monkeypatch.setattr(COMPUTE, "run_os_pod", run_os_pod)
    monkeypatch.setattr(
        COMPUTE, "kubelet_json", lambda api, node, path: ({"kubeletconfig": {"featureGates": gates[node]}}, 0.01)
    )
    monkeypatch.setattr(COMPUTE, "call", lambda fn, node, path: text)
    kube = NS(api_client=None, core=NS(connect_get_node_proxy_with_path=None))
    COMPUTE.test_cadvisor_metrics_cover_windows_containers(
        kube, NS(profile=profile), "ns", 17763, lambda what, where=None: None
    )
    return created


def test_a_kubelet_serving_cri_stats_skips_the_cadvisor_check_before_creating_anything(monkeypatch):
    """Before: the CRI collector's answer has no container_scrape_error, so a pod without series there was a
    failure (NotTheDeviation) though cAdvisor was not what answered."""
    created: list[Any] = []
    with pytest.raises(pytest.skip.Exception, match=r"PodAndContainerStatsFromCRI on \(win-0, from /configz\)"):
        created = cadvisor({"win-0": {"PodAndContainerStatsFromCRI": True}}, "machine_scrape_error 0\n", monkeypatch)
    assert not created


def test_without_the_gate_the_cadvisor_check_runs_as_before(monkeypatch):
    assert cadvisor({"win-0": {}}, WINDOWS_CADVISOR + SERIES, monkeypatch)  # the pod's series: the behaviour holds
    with pytest.raises(DeviationObserved, match="cadvisor-unsupported"):
        cadvisor({"win-0": {"PodAndContainerStatsFromCRI": False}}, WINDOWS_CADVISOR, monkeypatch)


def test_beside_a_node_serving_cri_stats_the_pod_is_pinned_to_one_serving_cadvisor(monkeypatch):
    gates = {"win-0": {"PodAndContainerStatsFromCRI": True}, "win-1": {}}
    created = cadvisor(gates, WINDOWS_CADVISOR + SERIES, monkeypatch)
    assert created[0]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "win-1"}


def test_a_simulated_node_beside_is_not_asked_for_its_configz(monkeypatch):
    with pytest.raises(pytest.skip.Exception, match="every real Windows node"):
        cadvisor({"win-0": {"PodAndContainerStatsFromCRI": True}}, "", monkeypatch, simulated=("kwok-win",))
    assert cadvisor({"win-0": {}}, WINDOWS_CADVISOR + SERIES, monkeypatch, simulated=("kwok-win",))
