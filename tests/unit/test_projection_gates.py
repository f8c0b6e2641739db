"""The projected certificate checks go to a node whose kubelet projects their volume source: the kubelet gates
ClusterTrustBundleProjection and PodCertificateRequest (GA and on by default from 1.37, not locked at 1.37.2 nor at
1.38.0-beta.0: a kubelet may run either off, and then its no-op manager fails the volume's setup,
k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet.go:1008-1040). The rule (wincon.checks.scheduling.gate_on_placement,
named by each check's ``avoids`` marker) decides per OS and build from the profile's per-node gates (/configz read
in discovery), reading at run time what the profile lacks. Here `wincon plan` runs on profile files and the checks
on constructed /configz answers; plan and run agree item by item. Each rule can fail: with the checks' call of it
removed (the pod created unpinned) 5 of these tests go red, with their avoids markers removed 6 (the plan says
run), and test_profile_gates.py's stage tests with the gates' rows removed."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.checks import certificates as certs
from wincon.checks import node as node_checks
from wincon.checks.scheduling import (
    AVOIDS,
    PROJECTION_GATES,
    gate_on_placement,
    placement_nodes,
)
from wincon.clusterinfo import profile as profile_mod
from wincon.clusterinfo.profile import ClusterProfile, configz_nodes
from wincon.commandline.commands import collect
from wincon.session.collection import SIMULATED_REASON

FILE = "suites/storage/test_projected_certificates.py"
SUITE = suites.load(FILE)
CTB_CHECK = "test_cluster_trust_bundles_are_projected_into_the_pod"
PCR_CHECK = "test_pod_certificate_is_issued_and_projected_into_the_pod"
CTB, PCR = "ClusterTrustBundleProjection", "PodCertificateRequest"
SERVED = {"clustertrustbundles", "podcertificaterequests", "podcertificaterequests/status"}


def gates(ctb: bool | None, pcr: bool | None) -> dict[str, bool] | None:
    """A node's kubelet_feature_gates as a profile file holds them; None for both: its /configz unread."""
    if ctb is None and pcr is None:
        return None
    return {gate: on for gate, on in ((CTB, ctb), (PCR, pcr)) if on is not None}


def win(name: str, ctb: bool | None = True, pcr: bool | None = True, version: str = "v1.37.2", **facts: Any):
    return fakes.profile_windows_node(
        name, 17763, kubelet_version=version, kubelet_feature_gates=gates(ctb, pcr), **facts
    )


def linux(name: str, ctb: bool | None = True, pcr: bool | None = True, taints: tuple[str, ...] = ()):
    node = fakes.profile_linux_node(name)
    return node | {"kubelet_version": "v1.37.2", "kubelet_feature_gates": gates(ctb, pcr), "taints": list(taints)}


def profile_json(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"server_version": "v1.37.2", "cni": "flannel", "cloud": "azure", "nodes": list(nodes)}


def plan(data: dict[str, Any], tmp_path) -> dict[str, dict[str, Any]]:
    """`wincon plan --profile-file` of the suite file: each row by ``function[os]``."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    dump, output = collect([FILE], ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    return {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}


class Created(Exception):
    """The fake's end of a check: its pod was created (the run went past every skip)."""


def run(
    data: dict[str, Any], check: str, target_os: str, configz: dict[str, dict[str, Any]] | None = None, monkeypatch=None
) -> tuple[str, str | None, list[str]]:
    """The check on the profile ``data`` up to its pod: ("skip", reason) or ("created", the node it is pinned to),
    and the nodes whose /configz it read (answered from ``configz``: node -> its KubeletConfiguration)."""
    reads: list[str] = []

    def kubelet_json(api_client, node, path, timeout=60.0):
        assert path == "configz"
        reads.append(node)
        return {"kubeletconfig": (configz or {})[node]}, 0.01

    def run_os_pod(wincon, namespace, body):
        raise Created(body["node"])

    monkeypatch.setattr(node_checks, "kubelet_json", kubelet_json)
    monkeypatch.setattr(certs, "served_resources", lambda api_client: set(SERVED))
    monkeypatch.setattr(SUITE, "os_pod", lambda wincon, name, os, build, node=None, **kw: {"node": node})
    monkeypatch.setattr(SUITE, "run_os_pod", run_os_pod)
    kube = NS(api_client=None, certificates=NS(), cleanup=lambda *a, **k: None)
    kube.certificates.create_cluster_trust_bundle = lambda body: None
    kube.certificates.delete_cluster_trust_bundle = lambda name: None
    wincon = NS(profile=ClusterProfile.from_dict(data))
    build = 17763 if target_os == "windows" else None
    try:
        getattr(SUITE, check)(wincon, "ns", build, kube, target_os)
    except pytest.skip.Exception as exc:
        return "skip", str(exc.msg), reads
    except Created as exc:
        return "created", exc.args[0], reads
    raise AssertionError("the fake's run_os_pod always ends the check")


@pytest.fixture
def signer_stopped(monkeypatch):
    """The pod-certificate check starts its signer before its pod: stopped at once here (nothing to sign)."""
    monkeypatch.setattr(certs.PodCertificateSigner, "start", lambda self: None)


def agree(row: dict[str, Any], outcome: tuple[str, str | None, list[str]]) -> None:
    kind, value, _ = outcome
    if row["outcome"] == "skip":
        assert kind == "skip" and value == row["reason"], (row["reason"], outcome)
    else:
        assert kind == "created", (row, outcome)


# --------------------------------------------------------------------------- plan and run, item by item


def test_the_gate_off_on_every_node_skips_naming_them_in_the_plan_as_in_the_run(tmp_path, monkeypatch, signer_stopped):
    data = profile_json(
        win("win-0", ctb=False), win("win-1", ctb=False), linux("l1", pcr=False), linux("l2", pcr=False)
    )
    rows = plan(data, tmp_path)
    row = rows[f"{CTB_CHECK}[windows]"]
    assert row["outcome"] == "skip"
    assert row["reason"].startswith(
        "the kubelets of win-0, win-1 run with ClusterTrustBundleProjection off (their /configz; every real Windows "
        "node of the build): the kubelet does not project clusterTrustBundle volume sources"
    ), row["reason"]
    outcome = run(data, CTB_CHECK, "windows", monkeypatch=monkeypatch)
    agree(row, outcome)
    assert outcome[2] == [], "the profile knew every gate: nothing read"
    row = rows[f"{PCR_CHECK}[linux]"]
    assert row["outcome"] == "skip" and row["reason"].startswith(
        "the kubelets of l1, l2 run with PodCertificateRequest off (their /configz; every real schedulable Linux node)"
    ), row["reason"]
    agree(row, run(data, PCR_CHECK, "linux", monkeypatch=monkeypatch))
    # The other gate is on there: those two run, unpinned (every node can project them).
    assert rows[f"{PCR_CHECK}[windows]"]["outcome"] == rows[f"{CTB_CHECK}[linux]"]["outcome"] == "run"
    assert run(data, PCR_CHECK, "windows", monkeypatch=monkeypatch)[:2] == ("created", None)
    assert run(data, CTB_CHECK, "linux", monkeypatch=monkeypatch)[:2] == ("created", None)


def test_the_gate_off_on_one_node_pins_the_pod_to_the_other(tmp_path, monkeypatch, signer_stopped):
    data = profile_json(win("win-0", ctb=False), win("win-1"), linux("l1"), linux("l2", pcr=False))
    rows = plan(data, tmp_path)
    for check, os_name, node in ((CTB_CHECK, "windows", "win-1"), (PCR_CHECK, "linux", "l1")):
        row = rows[f"{check}[{os_name}]"]
        assert row["outcome"] == "run" and f"its pod is pinned to {node}" in row["reason"], row
        others = "the other nodes of its build" if os_name == "windows" else "the other Linux nodes"
        assert f"{others} cannot tell its result" in row["reason"], row
        outcome = run(data, check, os_name, monkeypatch=monkeypatch)
        assert outcome == ("created", node, []), outcome
    # The first node that can is where the pod goes, whatever order the off ones come in.
    data = profile_json(win("win-0"), win("win-1", ctb=False), linux("l1"))
    assert run(data, CTB_CHECK, "windows", monkeypatch=monkeypatch)[:2] == ("created", "win-0")


def test_a_gate_the_profile_lacks_is_read_at_run_time_and_the_plan_says_so(tmp_path, monkeypatch, signer_stopped):
    """A profile file older than the gates (or /configz refused in discovery): the plan runs the check with a
    note; the run reads /configz node by node until a kubelet runs the gate on, and pins the pod there."""
    data = profile_json(win("win-0", ctb=None, pcr=None), win("win-1", ctb=None, pcr=None), linux("l1"))
    rows = plan(data, tmp_path)
    row = rows[f"{CTB_CHECK}[windows]"]
    assert row["outcome"] == "run"
    assert (
        "the profile lacks the kubelet feature gate ClusterTrustBundleProjection (/configz) of win-0, win-1"
        in (row["reason"])
    )
    answers = {"win-0": {"featureGates": {CTB: False}}, "win-1": {}}  # win-1: not listed, GA at 1.37: on
    outcome = run(data, CTB_CHECK, "windows", answers, monkeypatch)
    assert outcome == ("created", "win-1", ["win-0", "win-1"]), outcome
    outcome = run(data, PCR_CHECK, "windows", answers, monkeypatch)
    assert outcome == ("created", "win-0", ["win-0"]), "read until the first node that runs it on, no further"
    both_off = {"win-0": {"featureGates": {CTB: False}}, "win-1": {"featureGates": {CTB: False, PCR: True}}}
    kind, reason, reads = run(data, CTB_CHECK, "windows", both_off, monkeypatch)
    assert (kind, reads) == ("skip", ["win-0", "win-1"])
    assert reason is not None and reason.startswith(
        "the kubelets of win-0, win-1 run with ClusterTrustBundleProjection"
    )


def test_a_1_36_kubelet_not_listing_the_gate_runs_it_off(tmp_path, monkeypatch, signer_stopped):
    """Beta at 1.36 (off by default, kube_features.go of @v1.36.3): a Windows kubelet one minor behind a 1.37 API
    server projects neither source, although its /configz lists nothing."""
    old = profile_json(win("win-0", ctb=None, pcr=None, version="v1.36.3"), linux("l1"))
    kind, reason, reads = run(old, CTB_CHECK, "windows", {"win-0": {}}, monkeypatch)
    assert kind == "skip" and reads == ["win-0"]
    assert reason is not None and "the kubelets of win-0 run with ClusterTrustBundleProjection off" in reason
    kind, reason, _ = run(old, PCR_CHECK, "windows", {"win-0": {}}, monkeypatch)
    assert kind == "skip" and reason is not None and "PodCertificateRequest off" in reason
    # The same /configz of a 1.37.2 kubelet: GA, on.
    new = profile_json(win("win-0", ctb=None, pcr=None, version="v1.37.2"), linux("l1"))
    assert run(new, CTB_CHECK, "windows", {"win-0": {}}, monkeypatch)[:2] == ("created", "win-0")
    # Discovery reads it by the same rule: the profile of that 1.36 node says off, and the plan skips.
    config = {"featureGates": {}}
    read = dict(profile_mod.kubelet_feature_gates(config, "v1.36.3"))
    assert (read[CTB], read[PCR]) == (False, False)
    rows = plan(profile_json(win("win-0", ctb=False, pcr=False, version="v1.36.3"), linux("l1")), tmp_path)
    assert rows[f"{CTB_CHECK}[windows]"]["outcome"] == "skip"


def test_simulated_windows_nodes_are_left_to_the_data_plane_gate_as_before(tmp_path, monkeypatch, signer_stopped):
    """The local cluster: its Windows nodes are simulated (no /configz), its Linux ones real with the gates on."""
    data = profile_json(
        fakes.profile_windows_node("kwok-0", 17763, simulated=True, kubelet_version="v1.37.2"), linux("worker-0")
    )
    rows = plan(data, tmp_path)
    assert rows[f"{CTB_CHECK}[windows]"]["outcome"] == "skip"
    assert rows[f"{CTB_CHECK}[windows]"]["reason"].startswith(SIMULATED_REASON)
    assert run(data, CTB_CHECK, "windows", monkeypatch=monkeypatch) == ("created", None, [])  # the gate then skips
    assert rows[f"{CTB_CHECK}[linux]"]["outcome"] == rows[f"{PCR_CHECK}[linux]"]["outcome"] == "run"
    assert "pinned" not in rows[f"{CTB_CHECK}[linux]"]["reason"]


def test_a_linux_node_a_control_cannot_be_scheduled_to_is_not_chosen(tmp_path, monkeypatch, signer_stopped):
    data = profile_json(
        win("win-0"),
        linux("cp", taints=("node-role.kubernetes.io/control-plane=:NoSchedule",)),
        linux("l1", ctb=False),
        linux("l2"),
    )
    rows = plan(data, tmp_path)
    assert "its pod is pinned to l2" in rows[f"{CTB_CHECK}[linux]"]["reason"]
    assert run(data, CTB_CHECK, "linux", monkeypatch=monkeypatch)[:2] == ("created", "l2")
    only_tainted = profile_json(win("win-0"), linux("cp", taints=("a=b:NoExecute",)), linux("l1", ctb=False))
    kind, reason, _ = run(only_tainted, CTB_CHECK, "linux", monkeypatch=monkeypatch)
    assert kind == "skip" and reason is not None and reason.startswith("the kubelets of l1 run with"), reason


# --------------------------------------------------------------------------- the rule and discovery


def test_each_check_names_the_rule_of_its_own_projection_gate():
    marks = {
        name: [m.args[0] for m in getattr(SUITE, name).pytestmark if m.name == "avoids"]
        for name in (CTB_CHECK, PCR_CHECK)
    }
    assert marks == {CTB_CHECK: ["ctb-projection"], PCR_CHECK: ["pod-certificate-projection"]}
    assert {rule: gate for rule, (gate, _) in PROJECTION_GATES.items()} == {
        "ctb-projection": CTB,
        "pod-certificate-projection": PCR,
    }


@pytest.mark.parametrize(
    "rule, gate, off", [("ctb-projection", CTB, {"ctb": False}), ("pod-certificate-projection", PCR, {"pcr": False})]
)
def test_each_rule_decides_by_its_own_gate_alone(rule: str, gate: str, off: dict[str, bool]):
    other = {"pcr": False} if "ctb" in off else {"ctb": False}
    # The other gate off everywhere does not move the rule: unpinned.
    assert AVOIDS[rule](nodes_of(profile_json(win("a", **other), win("b", **other)))).pin() is None
    # Its own gate off on a: pinned to b; off on both: skipped naming the gate.
    assert AVOIDS[rule](nodes_of(profile_json(win("a", **off), win("b")))).pin() == "b"
    skip = AVOIDS[rule](nodes_of(profile_json(win("a", **off), win("b", **off)))).skip
    assert skip is not None and skip.startswith(f"the kubelets of a, b run with {gate} off"), skip


def nodes_of(data: dict[str, Any], target_os: str = "windows"):
    return placement_nodes(ClusterProfile.from_dict(data), target_os, 17763 if target_os == "windows" else None)


def test_the_rule_reads_only_what_the_profile_lacks_and_a_read_it_cannot_make_leaves_it_unknown():
    nodes = nodes_of(profile_json(win("a", ctb=False), win("b", ctb=None, pcr=None), win("c")))
    asked: list[str] = []
    placement = gate_on_placement(nodes, CTB, "x", lambda name: asked.append(name) or True)
    assert (placement.node, asked) == ("b", ["b"])
    unread = gate_on_placement(nodes, CTB, "x")  # the plan: no read
    assert (unread.node, unread.skip, unread.unknown) == (None, None, ("b",))
    # A node known on after the unknown one does not decide: the unknown one comes first.
    assert "decided at run time" in unread.plan_note()
    assert gate_on_placement([], CTB, "x").node is None and not gate_on_placement([], CTB, "x").simulated


def test_discovery_reads_every_real_windows_kubelet_and_the_first_linux_ones():
    nodes = [
        profile_mod.NodeProfile(name=f"l{i}", os="linux", arch="amd64", ready=True, simulated=False) for i in range(6)
    ]
    nodes += [
        profile_mod.NodeProfile(name="w0", os="windows", arch="amd64", ready=True, simulated=False),
        profile_mod.NodeProfile(name="w1", os="windows", arch="amd64", ready=True, simulated=True),
        profile_mod.NodeProfile(name="l9", os="linux", arch="amd64", ready=False, simulated=False),
    ]
    nodes[0] = profile_mod.NodeProfile(
        name="l0", os="linux", arch="amd64", ready=True, simulated=False, taints=("cp=:NoSchedule",)
    )
    assert configz_nodes(nodes) == ["w0", "l1", "l2", "l3", "l4"]
    assert profile_mod.LINUX_CONFIGZ_NODES == 4
