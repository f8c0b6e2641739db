"""wincon.documents.releases, the one owner of release knowledge (issue 43): its version parser, its per-minor facts table,
the command line's request, and the completeness guard: every minor versions.toml builds has its entry in every
per-minor table (docs/releases.md says what adding one means), and a missing one fails naming the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from wincon.commandline.errors import UsageError
from wincon.documents import releases

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
    # the per-release facts the checks followed with constants of their own before (issue 43's leftovers):
    # OVERHEAD_SIZING_SINCE (suites/node/test_kubelet.py), BUFFER_SINCE (suites/scheduling/test_memory_limits.py)
    # and wincon.network.services' Version("1.21")
    assert releases.since("stats-sized-by-overhead") == releases.since("memory-filler-buffer") == "1.37"
    assert releases.since("endpoint-slices-v1") == "1.21"
    with pytest.raises(KeyError, match="wincon.documents.releases.MINORS"):
        releases.since("no-such-fact")


def test_the_readers_take_their_minors_from_the_facts_table():
    from wincon.clusterinfo.capabilities import CAPABILITIES
    from wincon.clusterinfo.profile import KUBELET_GATE_STAGES, ClusterProfile
    from wincon.localcluster import cni, dataplane

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


@pytest.mark.parametrize(
    ("server_version", "waits"),
    [("v1.20.15", ["Endpoints"]), ("v1.21.0", ["Endpoints", "EndpointSlices"]), ("", ["Endpoints", "EndpointSlices"])],
)
def test_the_service_checks_wait_for_endpoint_slices_from_the_minor_the_table_names(server_version, waits):
    """wincon.network.services waits for the EndpointSlices too from "endpoint-slices-v1" (1.21), as its
    Version("1.21") did; an unknown version (which Version("") refused) is taken as a newer release."""
    from types import SimpleNamespace as NS

    from wincon.network import services

    waited: list[str] = []
    kube = NS(
        profile=NS(server_version=server_version),
        namespace="ns",
        core=NS(list_namespaced_endpoints=None),
        discovery=NS(list_namespaced_endpoint_slice=lambda *a, **k: None),
        wait_for=lambda *a, describe, **k: waited.append(describe.split()[0]),
    )
    services.wait_for_endpoints(kube, "svc", ["10.0.0.1"])
    assert waited == waits


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
    wincon.documents.releases is the one module that opens versions.toml."""
    for path in sorted((ROOT / "wincon").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "wincon/documents/releases.py":
            continue
        names = _code_names(path)
        if rel not in COMMAND_LINES:
            assert not names & {"releases.requested", "VERSION_ENV", "WINCON_KUBERNETES_VERSION"}, rel
        assert "VERSIONS_FILE" not in names or rel == "wincon/localcluster/paths.py", rel
        assert "tomllib" not in names or rel != "wincon/documents/upstream.py", rel


# Kubernetes minors written in code elsewhere that are not a per-minor fact, with why.
NOT_KUBERNETES_MINORS = {("wincon/localcluster/addons.py", "GO_DIRECTIVE")}  # a go.mod's Go version
_MINOR_TEXT = re.compile(r"^v?1\.\d+(\.\d+)?$")
_MINOR_READERS = {"at_least", "minor_at_least", "Version"}  # take a minor to compare with
_FACT_READERS = {"since": 0, "what_changed": 0, "_from_release": 0, "sized_as_upstream_since": 2}  # fact's argument


def _a_minor(node: ast.AST) -> bool:
    """A literal Kubernetes minor or version: ``"1.37"``, ``"v1.21.0"``, ``(1, 37)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_MINOR_TEXT.match(node.value))
    return (
        isinstance(node, ast.Tuple)
        and len(node.elts) in (2, 3)
        and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)
        and node.elts[0].value == 1  # type: ignore[attr-defined]
    )


def _minors_in_code_and_facts_read(path: Path, rel: str) -> tuple[list[str], list[tuple[str, int]]]:
    """The minors ``path`` states in code (a ``*_SINCE`` constant or one assigned a minor, a minor compared with or
    passed to at_least/Version), and the facts it reads from the table by name, with their lines."""
    minors, facts = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _MINOR_READERS and any(_a_minor(arg) for arg in node.args):
                minors.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            where = _FACT_READERS.get(name)
            if where is not None and len(node.args) > where:
                arg = node.args[where]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    facts.append((arg.value, node.lineno))
        elif isinstance(node, ast.Compare) and any(_a_minor(side) for side in (node.left, *node.comparators)):
            minors.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if not isinstance(target, ast.Name) or (rel, target.id) in NOT_KUBERNETES_MINORS:
                    continue
                if target.id.endswith("_SINCE") or _a_minor(node.value):
                    minors.append(f"{rel}:{node.lineno}: {target.id} = {ast.unparse(node.value)}")
    return minors, facts


def test_what_changed_at_a_minor_is_stated_in_the_facts_table_alone():
    """No module of wincon or suites but wincon.documents.releases writes a Kubernetes minor in its code to decide by (a
    ``*_SINCE`` constant, ``at_least(v, "1.37")``, ``Version(v) >= Version("1.21")``): the fact goes into
    releases.MINORS and is read by name, and every name read is one of the table's facts."""
    known = {fact for facts in releases.MINORS.values() for fact in facts.since}
    stated, unknown = [], []
    paths = [*sorted((ROOT / "wincon").rglob("*.py")), *sorted((ROOT / "suites").rglob("*.py")), ROOT / "conftest.py"]
    for path in paths:
        rel = str(path.relative_to(ROOT))
        if rel == "wincon/documents/releases.py":
            continue
        minors, facts = _minors_in_code_and_facts_read(path, rel)
        stated += minors
        unknown += [f"{rel}:{line}: {fact!r}" for fact, line in facts if fact not in known]
    assert not stated, "a minor decided by outside wincon.documents.releases.MINORS:\n" + "\n".join(stated)
    assert not unknown, "a fact wincon.documents.releases.MINORS does not have:\n" + "\n".join(unknown)


def test_the_guard_sees_a_minor_written_in_code(tmp_path):
    module = tmp_path / "check.py"
    module.write_text(
        "from packaging.version import Version\nfrom wincon import releases\nSIZING_SINCE = (1, 37)\n"
        "NEWER = releases.at_least(v, '1.36')\nOLD = Version(v) >= Version('1.21')\nX = releases.since('nope')\n"
        "GATED = releases.minor_of(v) < (1, 35)\nGO = '1.24.0'\n"
    )
    minors, facts = _minors_in_code_and_facts_read(module, "check.py")
    assert sorted(minors) == [
        "check.py:3: SIZING_SINCE = (1, 37)",
        "check.py:4: releases.at_least(v, '1.36')",
        "check.py:5: Version('1.21')",
        "check.py:7: releases.minor_of(v) < (1, 35)",
        "check.py:8: GO = '1.24.0'",
    ], minors
    assert facts == [("nope", 6)]


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
                f"wincon.documents.releases.MINORS has no {minor!r} entry: add what {minor} changed that the suite depends on "
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
    assert f"wincon.documents.releases.MINORS has no '{minor}' entry" in problems[1]
    assert f'gating/required.yaml kubernetes has no "{minor}" list' in problems[2]
    assert f"docs/coverage.md has no parity table '### Kubernetes v{minor}.0-alpha.1'" in problems[3]


def test_releases_are_package_data():
    """versions.toml ships in the wheel (pyproject's package-data) at the path wincon.documents.releases reads."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"localcluster/*.toml"' in pyproject
    assert releases.VERSIONS_FILE == ROOT / "wincon" / "localcluster" / "versions.toml"
    assert releases.VERSIONS_FILE.is_file()
