"""`wincon plan` and the run decide the Hyper-V CPU-count and cAdvisor checks' skips by one rule each, from the profile.

The profile holds each Windows node's capacity cpu (from the Node object) and, for Ready real ones, the kubelet
feature gates checks decide by (PodAndContainerStatsFromCRI, from /configz, read in discovery; unreadable is
unknown, never off). The rules (wincon.checks.scheduling.AVOIDS, named by ``@pytest.mark.avoids``) give the plan
(the real suite files collected by `wincon plan`'s own collection, on a profile file) and the checks (run on fakes
of the same facts) the same skip with the same reason; where the profile lacks a fact the plan says the run
decides, and the check reads it as before. Before this change the plan said "run" where the run skipped."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.checks.scheduling import AVOIDS, Placement, cadvisor_placement, hyperv_cpu_placement
from wincon.cluster.exec import ExecResult
from wincon.clusterinfo import nodes
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile, kubelet_feature_gates, node_profile
from wincon.commandline.commands import collect
from wincon.commandline.errors import InfrastructureError
from wincon.session.fixtures import data_plane_gate
from wincon.session.verdicts import SIMULATED_REASON

IMAGES_FILE = "suites/scheduling/test_image_os_version.py"
COMPUTE_FILE = "suites/scheduling/test_compute_limitations.py"
HYPERV = "test_hyperv_isolated_container_sees_the_nodes_processors"
CADVISOR = "test_cadvisor_metrics_cover_windows_containers"
IMAGES = suites.load(IMAGES_FILE)
COMPUTE = suites.load(COMPUTE_FILE)
GATE = "PodAndContainerStatsFromCRI"


def win(name: str, cpu: str = "4", gate: bool | None = False, simulated: bool = False) -> dict[str, Any]:
    """A Ready Windows node of build 17763 as a profile file holds it (``gate`` None: its /configz unread)."""
    gates = None if gate is None else {GATE: gate}
    return fakes.profile_windows_node(
        name, 17763, simulated, os_version="ltsc2019", cpu_capacity=cpu, kubelet_feature_gates=gates
    )


def profile_json(*nodes: dict[str, Any]) -> dict[str, Any]:
    linux = fakes.profile_linux_node("l1")
    return {"server_version": "v1.34.4", "cni": "flannel", "cloud": "azure", "nodes": [*nodes, linux]}


def plan(data: dict[str, Any], tmp_path) -> dict[str, dict[str, Any]]:
    """`wincon plan --profile-file` of the two suite files: the row of each test, by function name."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    dump, output = collect([IMAGES_FILE, COMPUTE_FILE], ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    return {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}


# --------------------------------------------------------------------------- the checks, on fakes of the same facts


class Cluster:
    """What the checks read at run time, answered from ``cpus`` (Node capacity) and ``gates`` (/configz)."""

    def __init__(self, cpus: dict[str, str], gates: dict[str, bool]) -> None:
        self.cpus, self.gates = cpus, gates
        self.reads: list[str] = []  # what was read before anything was created: "node NAME", "configz NAME"
        self.created: list[dict[str, Any]] = []
        self.ran: list[str] = []
        self.namespace, self.pod_start_timeout, self.api_client = "ns", 300, None
        self.core = NS(read_node=self.read_node, connect_get_node_proxy_with_path=None)

    def read(self, what: str) -> None:
        if not self.created:
            self.reads.append(what)

    def read_node(self, name: str) -> Any:
        self.read(f"node {name}")
        return NS(status=NS(capacity={"cpu": self.cpus[name], "memory": "8Gi"}))

    def configz(self, api: Any, node: str, path: str) -> tuple[dict[str, Any], float]:
        self.read(f"configz {node}")
        return {"kubeletconfig": {"featureGates": {GATE: self.gates[node]}}}, 0.01

    def exec(self, pod, command, container=None, where=None):
        self.ran.append(" ".join(command))
        pinned = (self.created[-1]["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname", "win-0")
        return ExecResult(0, self.cpus[pinned] + "\r\n", "")


def pod_body(wincon, name, build, node=None, **kwargs) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{}], "nodeSelector": {"kubernetes.io/hostname": node} if node else {}, **kwargs},
    }


def placed(body: dict[str, Any]) -> Any:
    return NS(spec=NS(node_name=(body["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname", "win-0")))


def run_hyperv(profile: ClusterProfile, cluster: Any, monkeypatch, runtime_classes: Any = None) -> str | None:
    """The Hyper-V CPU-count check; its skip reason, or None where it ran to its end. ``runtime_classes``: the
    cluster's live RuntimeClass read (default: one class with upstream's Hyper-V handler)."""

    def start_and_wait(kube, profile, data_plane, body, *rest):
        kube.created.append(body)
        return placed(body)

    monkeypatch.setattr(
        IMAGES, "live_runtime_classes", runtime_classes or (lambda kube: [("hyperv", "runhcs-wcow-hypervisor")])
    )
    monkeypatch.setattr(IMAGES, "windows_pod", pod_body)
    monkeypatch.setattr(IMAGES, "start_and_wait", start_and_wait)
    monkeypatch.setattr(IMAGES, "call", lambda fn, name: fn(name))
    try:
        IMAGES.test_hyperv_isolated_container_sees_the_nodes_processors(
            cluster, NS(), profile, 17763, lambda what, where=None: None
        )
    except pytest.skip.Exception as exc:
        return str(exc.msg)
    return None


def run_cadvisor(profile: ClusterProfile, cluster: Cluster, monkeypatch) -> str | None:
    """The cAdvisor check, its data-plane gate the real one (on an item of this nodeid); its skip reason or None."""
    item = NS(
        nodeid=f"{COMPUTE_FILE}::{CADVISOR}",
        fixturenames=["kube", "wincon", "namespace", "build", "data_plane"],
        user_properties=[],
        stash={},
        funcargs={},
    )
    series = 'container_cpu_usage_seconds_total{container="main",namespace="ns",pod="metered"} 1.5\n'

    def run_os_pod(wincon, namespace, body):
        cluster.created.append(body)
        pod = placed(body)
        nodes.record_node(item, pod.spec.node_name)  # as its placement check records it (wincon.workloads.pinning)
        return pod

    monkeypatch.setattr(COMPUTE, "windows_pod", pod_body)
    monkeypatch.setattr(COMPUTE, "run_os_pod", run_os_pod)
    monkeypatch.setattr(COMPUTE, "kubelet_json", cluster.configz)
    monkeypatch.setattr(COMPUTE, "call", lambda fn, node, path: "container_scrape_error 0\n" + series)
    try:
        COMPUTE.test_cadvisor_metrics_cover_windows_containers(
            cluster, NS(profile=profile), "ns", 17763, data_plane_gate(item, profile)
        )
    except pytest.skip.Exception as exc:
        return str(exc.msg)
    return None


def agree(row: dict[str, Any], skipped: str | None) -> None:
    """The plan's row and the run's outcome: a skip with the very reason, or a run (the plan's xfail included)."""
    if row["outcome"] == "skip":
        assert skipped is not None and skipped.startswith(row["reason"]), (row, skipped)
    else:
        assert skipped is None, (row, skipped)


# --------------------------------------------------------------------------- the plan and the run agree


def test_two_cpu_nodes_skip_the_hyperv_check_in_the_plan_as_in_the_run(tmp_path, monkeypatch):
    """Before: the plan said run (it had no capacity), the run skipped on the capacity it read."""
    data = profile_json(win("win-0", cpu="2"), win("win-1", cpu="2"))
    row = plan(data, tmp_path)[HYPERV]
    assert row["outcome"] == "skip", row
    assert "every Windows node of the build has capacity cpu 2 (win-0, win-1)" in row["reason"]
    cluster = Cluster({"win-0": "2", "win-1": "2"}, {})
    skipped = run_hyperv(ClusterProfile.from_dict(data), cluster, monkeypatch)
    agree(row, skipped)
    assert not cluster.created and not cluster.reads, "decided from the profile: nothing created, nothing read"


def test_the_cri_stats_gate_on_every_real_node_skips_the_cadvisor_check_in_the_plan_as_in_the_run(
    tmp_path, monkeypatch
):
    """Before: the plan said run (it had no feature gates), the run skipped on the /configz it read."""
    data = profile_json(win("win-0", gate=True), win("win-1", gate=True))
    row = plan(data, tmp_path)[CADVISOR]
    assert row["outcome"] == "skip", row
    assert f"feature gate {GATE} on (win-0, win-1, from /configz)" in row["reason"]
    cluster = Cluster({}, {"win-0": True, "win-1": True})
    skipped = run_cadvisor(ClusterProfile.from_dict(data), cluster, monkeypatch)
    agree(row, skipped)
    assert not cluster.created and not cluster.reads


def test_facts_the_profile_lacks_are_left_to_the_run_and_the_plan_says_so(tmp_path, monkeypatch):
    """An old profile file (no capacity, no gates): the plan says run and that the run decides; the checks read
    what they need, as before (here 4 CPUs and the gate off: they run)."""
    data = profile_json(win("win-0", cpu="", gate=None))
    for old in data["nodes"]:  # as a profile file written before the fields existed
        old.pop("cpu_capacity", None)
        old.pop("kubelet_feature_gates", None)
    rows = plan(data, tmp_path)
    for name, fact in ((HYPERV, "capacity cpu"), (CADVISOR, f"kubelet feature gate {GATE}")):
        assert rows[name]["outcome"] in ("run", "xfail"), rows[name]
        assert f"decided at run time: the profile lacks the {fact}" in rows[name]["reason"]
    profile = ClusterProfile.from_dict(data)
    cluster = Cluster({"win-0": "4"}, {"win-0": False})
    agree(rows[HYPERV], run_hyperv(profile, cluster, monkeypatch))
    agree(rows[CADVISOR], run_cadvisor(profile, cluster, monkeypatch))
    assert cluster.reads == ["node win-0"] and len(cluster.created) == 2  # the Hyper-V check's read, then created
    cluster = Cluster({"win-0": "4"}, {"win-0": False})
    agree(rows[CADVISOR], run_cadvisor(profile, cluster, monkeypatch))
    assert cluster.reads == ["configz win-0"] and len(cluster.created) == 1


def test_a_node_that_can_tell_is_where_the_pod_is_pinned_in_the_plan_and_the_run(tmp_path, monkeypatch):
    data = profile_json(win("win-0", cpu="2", gate=True), win("win-1", cpu="4", gate=False))
    rows = plan(data, tmp_path)
    for name in (HYPERV, CADVISOR):
        assert rows[name]["outcome"] in ("run", "xfail"), rows[name]
        assert "its pod is pinned to win-1" in rows[name]["reason"]
    profile = ClusterProfile.from_dict(data)
    cluster = Cluster({"win-0": "2", "win-1": "4"}, {"win-0": True, "win-1": False})
    agree(rows[HYPERV], run_hyperv(profile, cluster, monkeypatch))
    agree(rows[CADVISOR], run_cadvisor(profile, cluster, monkeypatch))
    pins = [body["spec"]["nodeSelector"] for body in cluster.created]
    assert pins == [{"kubernetes.io/hostname": "win-1"}] * 2 and not cluster.reads


def test_the_cadvisor_check_skips_before_creating_its_pod_where_the_build_is_simulated(tmp_path, monkeypatch):
    """Before: its pod was created and waited for (about 30 s under the Windows pod-latency model), then the
    data-plane gate skipped it."""
    data = profile_json(win("kwok-0", gate=None, simulated=True))
    row = plan(data, tmp_path)[CADVISOR]
    assert row["outcome"] == "skip" and row["reason"].startswith(SIMULATED_REASON), row
    cluster = Cluster({}, {})
    skipped = run_cadvisor(ClusterProfile.from_dict(data), cluster, monkeypatch)
    assert skipped is not None and skipped.startswith(SIMULATED_REASON), skipped  # the gate's own reason
    assert "would run: GET /api/v1/nodes/<node>/proxy/metrics/cadvisor" in skipped
    assert not cluster.created and not cluster.reads


def test_beside_a_simulated_node_the_cadvisor_pod_is_pinned_to_the_real_one(tmp_path, monkeypatch):
    """Before: unpinned, the plan said "depends on the node"; a pod landing on the simulated node was skipped."""
    data = profile_json(win("kwok-0", gate=None, simulated=True), win("win-1", gate=False))
    row = plan(data, tmp_path)[CADVISOR]
    assert row["outcome"] in ("run", "xfail") and "its pod is pinned to win-1" in row["reason"], row
    assert "depends on the node" not in row["reason"]
    cluster = Cluster({}, {"win-1": False})
    agree(row, run_cadvisor(ClusterProfile.from_dict(data), cluster, monkeypatch))
    assert cluster.created[0]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "win-1"}


def test_the_rules_the_checks_call_are_the_ones_their_markers_name():
    marks = {
        name: [m.args[0] for m in getattr(module, name).pytestmark if m.name == "avoids"]
        for module, name in ((IMAGES, HYPERV), (COMPUTE, CADVISOR))
    }
    assert marks == {HYPERV: ["hyperv-cpu-count"], CADVISOR: ["cri-stats"]}
    assert {k: v for k, v in AVOIDS.items() if k in ("hyperv-cpu-count", "cri-stats")} == {
        "hyperv-cpu-count": hyperv_cpu_placement,
        "cri-stats": cadvisor_placement,
    }  # the projection rules' own markers: tests/unit/test_projection_gates.py


# --------------------------------------------------------------------------- the rules


def node(name: str, **facts: Any) -> NodeProfile:
    return NodeProfile(name, "windows", "amd64", True, facts.pop("simulated", False), windows_build=17763, **facts)


def test_the_rules_decide_from_the_profile_and_read_only_what_it_lacks():
    asked: list[str] = []

    def read_cpu(name: str) -> str:
        asked.append(name)
        return "2"

    known = [node("a", cpu_capacity="2"), node("b", cpu_capacity="3500m")]
    assert hyperv_cpu_placement(known, read_cpu) == Placement(node="b") and not asked
    assert hyperv_cpu_placement([node("a"), node("b", cpu_capacity="2")]) == Placement(
        unknown=("a",), fact="capacity cpu"
    )
    assert hyperv_cpu_placement([node("a"), node("b", cpu_capacity="2")], read_cpu).skip and asked == ["a"]
    gated = (("PodAndContainerStatsFromCRI", True),)
    assert cadvisor_placement([node("a", kubelet_feature_gates=gated), node("b", simulated=True)]).skip
    assert cadvisor_placement([node("s", simulated=True)]) == Placement(simulated=True)
    assert cadvisor_placement([node("a")], lambda name: False) == Placement()


# --------------------------------------------------------------------------- the profile's facts


def raw_node(name: str, simulated: bool = False, ready: bool = True, cpu: str | None = "4") -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if cpu is not None:
        status["capacity"] = {"cpu": cpu, "memory": "8Gi"}
    annotations = {"kwok.x-k8s.io/node": "fake"} if simulated else {}
    labels = {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"}
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}, "status": status}


def test_the_node_object_gives_the_cpu_capacity_and_unknown_without_it():
    assert node_profile(raw_node("w", cpu="8")).cpu_capacity == "8"
    assert node_profile(raw_node("w", cpu=None)).cpu_capacity == ""


def test_feature_gates_from_the_kubelet_configuration():
    assert dict(kubelet_feature_gates({"featureGates": {GATE: True, "Other": True}}))[GATE] is True
    assert "Other" not in dict(kubelet_feature_gates({"featureGates": {"Other": True}}))  # only the checks' gates
    assert dict(kubelet_feature_gates({}))[GATE] is False  # not listed: its default, off (alpha)
    with pytest.raises(ValueError, match="not a map"):
        kubelet_feature_gates({"featureGates": ["x"]})


def test_the_facts_round_trip_and_an_older_profile_file_has_them_unknown():
    profile = ClusterProfile.from_dict(profile_json(win("a", cpu="2", gate=True), win("b", gate=None)))
    again = ClusterProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert again.nodes == profile.nodes
    assert again.to_dict()["nodes"][0]["kubelet_feature_gates"] == {GATE: True}
    assert (again.nodes[0].kubelet_gate(GATE), again.nodes[1].kubelet_gate(GATE)) == (True, None)
    old = ClusterProfile.from_dict({"server_version": "v1.34.4", "nodes": [{"name": "x", "os": "windows"} | NODE]})
    assert (old.nodes[0].cpu_capacity, old.nodes[0].kubelet_feature_gates) == ("", None)


NODE = {"arch": "amd64", "ready": True, "simulated": False}


def test_discovery_reads_the_gates_of_ready_real_windows_nodes_with_its_other_reads(monkeypatch):
    """Each Ready real Windows node's /configz once, in discovery's pool; a refusal (403 without nodes/proxy) or a
    timeout is unknown, never off; a simulated or NotReady node is not asked."""
    from unittest import mock

    from kubernetes.client.exceptions import ApiException

    from tests.unit.test_profile import _Cluster
    from wincon.clusterinfo.profile import discover

    nodes = [raw_node("on"), raw_node("off"), raw_node("refused"), raw_node("slow")]
    nodes += [raw_node("kwok", simulated=True), raw_node("down", ready=False)]
    cluster = _Cluster(nodes, {}, {})
    asked: list[str] = []

    def configz(name: str, path: str, _preload_content: bool, _request_timeout: float) -> Any:
        assert path == "configz" and _request_timeout == 10.0
        asked.append(name)
        if name == "refused":
            raise ApiException(status=403, reason="Forbidden")
        if name == "slow":
            raise TimeoutError("read timed out")
        gates = {GATE: True} if name == "on" else {}
        return cluster.read(lambda: NS(data=json.dumps({"kubeletconfig": {"featureGates": gates}}).encode()))

    apis = cluster.apis()
    core = apis["CoreV1Api"](None)
    core.connect_get_node_proxy_with_path = configz
    apis["CoreV1Api"] = lambda api: core
    with mock.patch.multiple("kubernetes.client", **apis):
        profile = discover(object())
    assert sorted(asked) == ["off", "on", "refused", "slow"]
    gates = {n.name: n.kubelet_gate(GATE) for n in profile.nodes}
    assert gates == {"on": True, "off": False, "refused": None, "slow": None, "kwok": None, "down": None}
    assert cluster.most > 1, "discovery's reads were made one after another"


def test_a_configz_read_that_fails_is_an_error_of_the_run_not_a_gate_off(monkeypatch):
    """Where the profile lacks the gate, the check reads /configz as before: a refusal is the cluster's error."""

    def refused(api, node, path):
        raise InfrastructureError(f"GET /{path} on the kubelet of {node} answered 403")

    monkeypatch.setattr(COMPUTE, "kubelet_json", refused)
    with pytest.raises(InfrastructureError, match="403"):
        COMPUTE.cadvisor_serving_node(
            NS(api_client=None), ClusterProfile.from_dict(profile_json(win("w", gate=None))), 17763, None
        )
