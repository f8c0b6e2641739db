"""The profile's kubelet feature gates per kubelet version: stages by minor, and gates that no longer exist."""

from wincon import profile
from wincon.profile import gate_stage, kubelet_feature_gates

GATE = "PodAndContainerStatsFromCRI"


def test_the_stage_follows_the_kubelet_minor():
    assert gate_stage(GATE, "v1.36.3") == (False, "alpha")
    assert gate_stage(GATE, "v1.37.2") == (False, "beta")
    assert gate_stage(GATE, "1.38.0-beta.0") == (False, "beta")
    assert gate_stage(GATE, "v1.22.0") is None  # older than the gate
    assert gate_stage(GATE, "") is None  # unknown


def test_a_listed_gate_decides_and_an_unlisted_one_is_at_its_default():
    assert kubelet_feature_gates({"featureGates": {GATE: True}}, "v1.37.2") == ((GATE, True),)
    assert kubelet_feature_gates({}, "v1.37.2") == ((GATE, False),)  # beta, off by default
    assert kubelet_feature_gates({}, "") == ((GATE, False),)  # unknown version: off at every stage


def test_a_removed_gate_is_at_its_fixed_value_whatever_configz_lists(monkeypatch):
    stages = {"Gone": ((1, 14, False, "alpha"), (1, 34, True, "GA"), (1, 38, True, "removed"))}
    monkeypatch.setattr(profile, "KUBELET_GATE_STAGES", stages)
    monkeypatch.setattr(profile, "KUBELET_GATES", tuple(stages))
    assert kubelet_feature_gates({"featureGates": {"Gone": False}}, "v1.38.0-beta.0") == (("Gone", True),)
    assert kubelet_feature_gates({"featureGates": {"Gone": False}}, "v1.37.2") == (("Gone", False),)
    assert kubelet_feature_gates({}, "v1.37.2") == (("Gone", True),)  # GA: on by default
