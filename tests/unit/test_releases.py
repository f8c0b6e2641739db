"""wincon.releases, the one owner of release knowledge (issue 43): its version parser, its per-minor facts table,
the command line's request, and the completeness guard: every minor versions.toml builds has its entry in every
per-minor table (docs/releases.md says what adding one means), and a missing one fails naming the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from wincon import releases
from wincon.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = ROOT / "gating" / "required.yaml"
COVERAGE = ROOT / "docs" / "coverage.md"
RELEASE_KEYS = ("version", "staging_version", "etcd", "coredns", "agnhost_version")


# ------------------------------------------------------------------------------------------------ the parser


@pytest.mark.parametrize(
    ("text", "numbers", "minor"),
    [
        ("v1.34.4", (1, 34, 4), "1.34"),
        ("v1.34.4-gke.100", (1, 34, 4), "1.34"),
        ("1.38.0-beta.0", (1, 38, 0), "1.38"),
        ("1.34", (1, 34, 0), "1.34"),
        (" v1.37.2 ", (1, 37, 2), "1.37"),
        ("latest", None, ""),
        ("", None, ""),
        (None, None, ""),
    ],
)
def test_one_parser_reads_every_form_of_version(text, numbers, minor):
    assert releases.numbers(text) == numbers
    assert releases.minor_name(text) == minor
    assert releases.minor_of(text) == (numbers[:2] if numbers else None)


def test_at_least_compares_minors_numerically_and_an_unknown_version_is_unknown():
    assert releases.at_least("v1.100.0", "1.38") is True  # not a string comparison
    assert releases.at_least("v1.9.0", "1.38") is False
    assert releases.at_least("1.38.0-beta.0", (1, 38)) is True
    assert releases.at_least("v1.37.2", "1.38") is False
    assert releases.at_least("unknown", "1.38") is None
    with pytest.raises(ValueError, match="not a Kubernetes minor"):
        releases.at_least("v1.37.2", "latest")


# ---------------------------------------------------------------------------------------- the facts table


def test_the_facts_table_gives_the_since_minors_and_the_kubelet_gate_stages_the_suite_had():
    """The rows profile.KUBELET_GATE_STAGES and capabilities.CAPABILITIES held before the table moved here."""
    assert releases.kubelet_gate_stages() == {
        "PodAndContainerStatsFromCRI": ((1, 23, False, "alpha"), (1, 37, False, "beta")),
        "ClusterTrustBundleProjection": ((1, 29, False, "alpha"), (1, 33, False, "beta"), (1, 37, True, "GA")),
        "PodCertificateRequest": ((1, 34, False, "alpha"), (1, 35, False, "beta"), (1, 37, True, "GA")),
    }
    assert {fact: releases.since(fact) for fact in ("pod-level-resources", "in-place-resize", "node-log-query")} == {
        "pod-level-resources": "1.34",
        "in-place-resize": "1.35",
        "node-log-query": "1.36",
    }
    assert releases.since("cluster-trust-bundles") == releases.since("pod-certificates") == "1.37"
    assert releases.since("win-overlay-removed") == "1.38"
    with pytest.raises(KeyError, match="wincon.releases.MINORS"):
        releases.since("no-such-fact")


def test_the_readers_take_their_minors_from_the_facts_table():
    from wincon.capabilities import CAPABILITIES
    from wincon.localcluster import cni, dataplane
    from wincon.profile import KUBELET_GATE_STAGES, ClusterProfile

    assert KUBELET_GATE_STAGES == releases.kubelet_gate_stages()
    assert cni.WIN_OVERLAY_REMOVED == "1.38"
    assert "NodeLogQuery" in dataplane.kubelet_feature_gates("1.35")
    assert "NodeLogQuery" not in dataplane.kubelet_feature_gates("1.36")
    have, why = CAPABILITIES["node-log-query"]
    old = ClusterProfile(server_version="v1.35.4")
    assert have(old) is False and have(ClusterProfile(server_version="v1.36.3")) is True
    assert why(old) == (
        "the cluster runs Kubernetes v1.35.4, older than 1.36, the release where node log query went GA "
        "(NodeLogQuery locked on)"
    )


# ------------------------------------------------------------------------------------- the command line's ask


def test_the_command_line_s_request_and_its_error():
    assert releases.requested("v1.36.3", {}) == "1.36"
    assert releases.requested(None, {releases.VERSION_ENV: "1.35"}) == "1.35"
    assert releases.requested(None, {}) is None
    with pytest.raises(UsageError) as err:
        releases.requested(None, {releases.VERSION_ENV: "1.30"})
    assert "'1.30' (from $WINCON_KUBERNETES_VERSION)" in str(err.value)
    assert "1.37 (v1.37.2)" in err.value.fix


def _code_names(path: Path) -> set[str]:
    """Identifiers and string constants used as code (docstrings and comments left out) in ``path``."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
            if isinstance(node.value, ast.Name) and node.value.id in ("releases", "kube_releases"):
                names.add(f"releases.{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            names.update(re.findall(r"WINCON_KUBERNETES_VERSION|versions\.toml", node.value))
    return names


COMMAND_LINES = {"wincon/localcluster/cli.py", "wincon/results/cli.py"}


def test_only_the_command_line_asks_for_the_release_from_the_environment_and_only_releases_reads_versions_toml():
    """No module below the command line reads WINCON_KUBERNETES_VERSION (it is passed down as a Release), and
    wincon.releases is the one module that opens versions.toml."""
    for path in sorted((ROOT / "wincon").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "wincon/releases.py":
            continue
        names = _code_names(path)
        if rel not in COMMAND_LINES:
            assert not names & {"releases.requested", "VERSION_ENV", "WINCON_KUBERNETES_VERSION"}, rel
        assert "VERSIONS_FILE" not in names or rel == "wincon/localcluster/paths.py", rel
        assert "tomllib" not in names or rel != "wincon/upstream.py", rel


# ----------------------------------------------------------------------------------- a new minor is one entry


def missing_entries(versions: Path | None = None) -> list[str]:
    """Each per-minor table that lacks a minor (or its version) of versions.toml, named, with what to add."""
    raw = releases.read(versions)
    required = (yaml.safe_load(REQUIRED.read_text()) or {}).get("kubernetes") or {}
    coverage = COVERAGE.read_text()
    problems = []
    for minor in releases.releases(versions):
        table = raw["releases"][minor]
        lacking = [key for key in RELEASE_KEYS if not table.get(key)]
        if lacking:
            problems.append(
                f'wincon/localcluster/versions.toml [releases."{minor}"] lacks {", ".join(lacking)} '
                "(from the release's build/dependencies.yaml and test/utils/image/manifest.go)"
            )
        if minor not in releases.MINORS:
            problems.append(
                f"wincon.releases.MINORS has no {minor!r} entry: add what {minor} changed that the suite depends on "
                "(its kube_features.go gates, the behaviour the capabilities name), MinorFacts() if nothing"
            )
        if minor not in required:
            problems.append(
                f'gating/required.yaml kubernetes has no "{minor}" list: add one (include: ["<previous minor>"])'
            )
        version = table.get("version", "?")
        if f"### Kubernetes {version}\n" not in coverage:
            problems.append(
                f"docs/coverage.md has no parity table '### Kubernetes {version}': run `wincon coverage --write` "
                "(and describe each changed upstream test in docs/upstream-parity.yaml)"
            )
    return problems


def test_every_minor_versions_toml_builds_has_an_entry_in_every_per_minor_table():
    problems = missing_entries()
    assert not problems, "a minor of versions.toml lacks its entries (docs/releases.md):\n" + "\n".join(problems)


def test_the_guard_names_each_table_a_new_minor_lacks(tmp_path):
    major, newest = releases.minor_of(releases.releases()[-1]) or (1, 0)
    minor = f"{major}.{newest + 1}"  # the minor after the newest versions.toml names (1.39 today)
    toml = tmp_path / "versions.toml"
    toml.write_text(
        releases.VERSIONS_FILE.read_text()
        + f'\n[releases."{minor}"]\nversion = "v{minor}.0-alpha.1"\nstaging_version = "v0.{newest + 1}.0-alpha.1"\n'
        + 'etcd = "v3.7.1"\ncoredns = "v1.15.0"\n'
    )
    problems = [problem for problem in missing_entries(toml) if f"{minor}" in problem]
    assert len(problems) == 4, problems
    assert f'versions.toml [releases."{minor}"] lacks agnhost_version' in problems[0]
    assert f"wincon.releases.MINORS has no '{minor}' entry" in problems[1]
    assert f'gating/required.yaml kubernetes has no "{minor}" list' in problems[2]
    assert f"docs/coverage.md has no parity table '### Kubernetes v{minor}.0-alpha.1'" in problems[3]


def test_releases_are_package_data():
    """versions.toml ships in the wheel (pyproject's package-data) at the path wincon.releases reads."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"localcluster/*.toml"' in pyproject
    assert releases.VERSIONS_FILE == ROOT / "wincon" / "localcluster" / "versions.toml"
    assert releases.VERSIONS_FILE.is_file()
