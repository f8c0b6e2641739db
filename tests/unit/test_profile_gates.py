"""The profile's kubelet feature gates per kubelet version: stages by minor, and gates that no longer exist."""

import pytest

from wincon import profile
from wincon.profile import gate_stage, kubelet_feature_gates

GATE = "PodAndContainerStatsFromCRI"


def test_the_stage_follows_the_kubelet_minor():
    assert gate_stage(GATE, "v1.36.3") == (False, "alpha")
    assert gate_stage(GATE, "v1.37.2") == (False, "beta")
    assert gate_stage(GATE, "1.38.0-beta.0") == (False, "beta")
    assert gate_stage(GATE, "v1.22.0") is None  # older than the gate
    assert gate_stage(GATE, "") is None  # unknown


def gates(config, version):
    return dict(kubelet_feature_gates(config, version))


def test_a_listed_gate_decides_and_an_unlisted_one_is_at_its_default():
    assert gates({"featureGates": {GATE: True}}, "v1.37.2")[GATE] is True
    assert gates({}, "v1.37.2")[GATE] is False  # beta, off by default
    assert gates({}, "")[GATE] is False  # unknown version: off at every stage


CTB, PCR = "ClusterTrustBundleProjection", "PodCertificateRequest"


@pytest.mark.parametrize(
    ("gate", "before"),
    [(CTB, "v1.28.9"), (PCR, "v1.33.1")],
)
def test_the_projection_gates_stages_are_kube_features_gos(gate, before):
    """k8s.io/kubernetes@v1.37.2 pkg/features/kube_features.go:1423-1426 and :1945-1948 (the same rows at
    @v1.38.0-beta.0 :1307-1310 and :1789-1792, not locked there), and @v1.34.4 / @v1.36.3 before GA."""
    alpha = {CTB: "v1.29.0", PCR: "v1.34.4"}[gate]
    beta = {CTB: "v1.33.1", PCR: "v1.35.4"}[gate]
    versions = (before, alpha, beta, "v1.36.3", "v1.37.2", "1.38.0-beta.0")
    assert [gate_stage(gate, v) for v in versions] == [
        None,
        (False, "alpha"),
        (False, "beta"),
        (False, "beta"),
        (True, "GA"),
        (True, "GA"),
    ]


def test_a_kubelet_may_turn_the_ga_projection_gates_off_and_an_older_one_runs_them_off():
    assert (gates({}, "v1.37.2")[CTB], gates({}, "v1.37.2")[PCR]) == (True, True)  # GA: on by default
    assert (gates({}, "1.38.0-beta.0")[CTB], gates({}, "1.38.0-beta.0")[PCR]) == (True, True)
    off = {"featureGates": {CTB: False, PCR: False}}
    assert (gates(off, "v1.37.2")[CTB], gates(off, "v1.37.2")[PCR]) == (False, False)  # not locked: off decides
    assert (gates({}, "v1.36.3")[CTB], gates({}, "v1.36.3")[PCR]) == (False, False)  # beta: off by default
    on = {"featureGates": {CTB: True, PCR: True}}
    assert (gates(on, "v1.36.3")[CTB], gates(on, "v1.36.3")[PCR]) == (True, True)  # beta turned on


def test_a_locked_gate_is_at_its_default_whatever_configz_lists(monkeypatch):
    stages = {"Locked": ((1, 30, False, "beta"), (1, 37, True, "GA"), (1, 39, True, "locked"))}
    monkeypatch.setattr(profile, "KUBELET_GATE_STAGES", stages)
    monkeypatch.setattr(profile, "KUBELET_GATES", tuple(stages))
    assert gates({"featureGates": {"Locked": False}}, "v1.39.0") == {"Locked": True}
    assert gates({"featureGates": {"Locked": False}}, "v1.38.1") == {"Locked": False}


def test_a_removed_gate_is_at_its_fixed_value_whatever_configz_lists(monkeypatch):
    stages = {"Gone": ((1, 14, False, "alpha"), (1, 34, True, "GA"), (1, 38, True, "removed"))}
    monkeypatch.setattr(profile, "KUBELET_GATE_STAGES", stages)
    monkeypatch.setattr(profile, "KUBELET_GATES", tuple(stages))
    assert kubelet_feature_gates({"featureGates": {"Gone": False}}, "v1.38.0-beta.0") == (("Gone", True),)
    assert kubelet_feature_gates({"featureGates": {"Gone": False}}, "v1.37.2") == (("Gone", False),)
    assert kubelet_feature_gates({}, "v1.37.2") == (("Gone", True),)  # GA: on by default
