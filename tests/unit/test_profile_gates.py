"""The profile's kubelet feature gates per kubelet version: stages by minor, and gates that no longer exist."""

import re

import pytest

from wincon.clusterinfo import profile
from wincon.clusterinfo.profile import gate_stage, kubelet_feature_gates
from wincon.documents import upstream

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


# ----------------------------------------------------------------------------- the stages, from kube_features.go

KUBE_FEATURES = "pkg/features/kube_features.go"
_ROW = re.compile(r"\{([^{}]*Version: version\.MustParse\(\"\d+\.\d+\"\)[^{}]*)\}")
_STAGE = {"Alpha": "alpha", "Beta": "beta", "GA": "GA", "Deprecated": "deprecated"}


def upstream_stages(source: str, gate: str) -> list[tuple[int, int, bool, str]] | None:
    """The gate's versioned spec in kube_features.go (``Gate: {{Version: ..., Default: ..., PreRelease: ...}, ...}``
    in defaultVersionedKubernetesFeatureGates) as (major, minor, default, stage) rows, the stage named as
    profile.KUBELET_GATE_STAGES names it ("locked" where LockToDefault is true); None where the file has no spec."""
    block = re.search(rf"^\t{gate}: \{{\n(.*?)^\t\}},", source, re.MULTILINE | re.DOTALL)
    if block is None:
        return None
    rows = []
    for row in _ROW.findall(block.group(1)):
        version = re.search(r"MustParse\(\"(\d+)\.(\d+)\"\)", row)
        default = re.search(r"Default: (true|false)", row)
        stage = re.search(r"PreRelease: featuregate\.(\w+)", row)
        assert version and default and stage, f"{gate}: a row of kube_features.go not read: {row}"
        locked = re.search(r"LockToDefault: true", row) is not None
        name = "locked" if locked else _STAGE[stage.group(1)]
        rows.append((int(version.group(1)), int(version.group(2)), default.group(1) == "true", name))
    assert rows, f"{gate}: no row read in {block.group(0)[:300]}"
    return rows


def stage_at(rows: list[tuple[int, int, bool, str]], version: str) -> tuple[bool, str] | None:
    found = re.match(r"v?(\d+)\.(\d+)", version)
    assert found, version
    minor = (int(found.group(1)), int(found.group(2)))
    stage = None
    for major, since, default, name in rows:
        if minor >= (major, since):
            stage = (default, name)
    return stage


@pytest.fixture(scope="module")
def kube_features() -> dict[str, str]:
    """kube_features.go of every release versions.toml pins, from the Go module cache (downloaded where it lacks
    one, by the project's own path: wincon.documents.upstream.ensure_module)."""
    return {v: (upstream.ensure_module(v) / KUBE_FEATURES).read_text() for v in upstream.release_versions()}


@pytest.mark.parametrize("gate", profile.KUBELET_GATES)
def test_the_gates_stages_are_kube_features_gos(kube_features, gate):
    """Every pinned release's kube_features.go: the gate's stage at that release (its last row not newer than the
    release's minor) is gate_stage's, and every row of its spec (the gate's history, older releases included) is
    gate_stage's at that row's version. A gate the file no longer lists must be "removed" in the table there."""
    for version, source in kube_features.items():
        rows = upstream_stages(source, gate)
        if rows is None:
            assert (gate_stage(gate, version) or (None, ""))[1] == "removed", f"{gate} is not in {version}'s file"
            continue
        assert gate_stage(gate, version) == stage_at(rows, version), f"{gate} at {version}"
        for major, minor, default, name in rows:
            assert gate_stage(gate, f"v{major}.{minor}.0") == stage_at(rows, f"v{major}.{minor}"), (
                f"{gate} at {major}.{minor} by {version}'s kube_features.go: {(default, name)}"
            )
        first = rows[0]
        assert gate_stage(gate, f"v{first[0]}.{first[1] - 1}.0") is None, f"{gate} before {first[0]}.{first[1]}"


def test_a_table_that_disagrees_with_kube_features_go_fails_the_comparison(kube_features, monkeypatch):
    """The counter-case: a table that says beta where kube_features.go says GA fails the comparison; a locked row
    reads as "locked"."""
    stages = dict(profile.KUBELET_GATE_STAGES)
    stages[CTB] = ((1, 29, False, "alpha"), (1, 33, False, "beta"))  # GA at 1.37 left out
    monkeypatch.setattr(profile, "KUBELET_GATE_STAGES", stages)
    with pytest.raises(AssertionError, match="ClusterTrustBundleProjection at v1.37.2"):
        test_the_gates_stages_are_kube_features_gos(kube_features, CTB)
    rows = upstream_stages(
        '\tX: {\n\t\t{Version: version.MustParse("1.2"), Default: true, PreRelease: featuregate.GA, '
        "LockToDefault: true},\n\t},\n",
        "X",
    )
    assert rows == [(1, 2, True, "locked")]


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
