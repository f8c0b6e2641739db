"""docs/coverage.md "Upstream parity" stays in step with upstream and with the suites.

Upstream: every test (``It``, table ``Entry``) of kubernetes/kubernetes test/e2e/windows at the version
wincon/localcluster/versions.toml pins, read from the Go module cache (``make binaries`` downloads the module
there before ``make test``), has a row (``file.go:line``, its Ginkgo name exactly) naming a wincon test whose id
exists; a row naming a file:line that is no test at that version is stale. Without the module the guard skips
with that reason, except in CI (``CI=true``), where it fails.

Suites: every test id in the section exists and belongs to the function named beside it; every
operational-readiness category is listed; a row without a test says why; a row with a test says how it
differs (``same``, ``stricter: ...``, ``weaker: ...``); a suite test whose docstring cites an upstream file
(``upstream <file>.go``) is in that file's rows. Read with ``ast``: no collection, no cluster.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from wincon.coverage import UPSTREAM_DIR, UpstreamTest, module_dir, upstream_tests

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "coverage.md"
SUITES = ROOT / "suites"
VERSIONS = ROOT / "wincon" / "localcluster" / "versions.toml"
HEADING = "## Upstream parity"

# kubernetes-sigs/windows-operational-readiness specifications/*/spec.yaml categories.
READINESS_CATEGORIES = (
    "Core.Network",
    "Core.Scheduling",
    "Core.Storage",
    "Core.Concurrent",
    "Extend.ActiveDirectory",
    "Extend.HostProcess",
    "Extend.NetworkPolicy",
    "Extend.Network",
    "Extend.Worker",
)

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PAIR = re.compile(rf"`({UUID})`\s+`([^`:]+)::(test_\w+)`")
CITATION = re.compile(r"upstream\s+([a-z_]+\.go)")
LOCATION = re.compile(r"^([a-z_]+\.go):(\d+)$")
DIFFERENCE = re.compile(r"^(same\b|stricter: \S|weaker: \S)")


@dataclass(frozen=True)
class SuiteTest:
    test_id: str
    path: str  # relative to suites/
    function: str
    doc: str


def suite_tests(suites: Path = SUITES) -> dict[str, SuiteTest]:
    """Every test function of the suites with a test_id marker, by id."""
    found: dict[str, SuiteTest] = {}
    for path in sorted(suites.rglob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "test_id":
                    test_id = decorator.args[0].value
                    rel = path.relative_to(suites).as_posix()
                    found[test_id] = SuiteTest(test_id, rel, node.name, ast.get_docstring(node) or "")
    return found


def parity_rows(markdown: str) -> list[list[str]]:
    """The table rows of the "Upstream parity" section (header and separator rows left out)."""
    if HEADING not in markdown.splitlines():
        return []
    section = markdown.split(HEADING + "\n", 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.MULTILINE)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith(("upstream file", "category")):
            continue
        rows.append(cells)
    return rows


def source_file(cell: str) -> str:
    """``security_context.go:204`` -> ``security_context.go``; a category or a bare file name as it is."""
    return cell.split(":", 1)[0] if LOCATION.match(cell) else cell


def parity_problems(markdown: str, tests: dict[str, SuiteTest]) -> list[str]:
    rows = parity_rows(markdown)
    if not rows:
        return [f"no {HEADING!r} section with table rows"]
    problems = []
    cited_in: dict[str, set[str]] = {}
    for cells in rows:
        if len(cells) != 4:
            problems.append(f"row {cells[:2]}: {len(cells)} cells, expected 4")
            continue
        source, _, wincon, note = cells
        pairs = PAIR.findall(wincon)
        if wincon == "none":
            if not note:
                problems.append(f"row {source} {cells[1][:40]!r}: no test and no reason")
            continue
        if not pairs:
            problems.append(f"row {source} {cells[1][:40]!r}: neither `id` `path::function` nor 'none'")
        if not DIFFERENCE.match(note):
            problems.append(
                f"row {source} {cells[1][:40]!r}: difference {note[:30]!r} is not 'same', 'stricter: ...' "
                "or 'weaker: ...'"
            )
        for test_id, path, function in pairs:
            test = tests.get(test_id)
            if test is None:
                problems.append(f"row {source}: test id {test_id} is in no suite")
            elif (test.path, test.function) != (path, function):
                problems.append(
                    f"row {source}: test id {test_id} is {test.path}::{test.function}, not {path}::{function}"
                )
            cited_in.setdefault(source_file(source), set()).add(test_id)
    sources = {cells[0] for cells in rows}
    for name in READINESS_CATEGORIES:
        if name not in sources:
            problems.append(f"{name} has no row")
    for test in tests.values():
        for cited in sorted(set(CITATION.findall(test.doc))):
            if test.test_id not in cited_in.get(cited, set()):
                problems.append(f"{test.path}::{test.function} cites upstream {cited} but is in none of its rows")
    return problems


def upstream_problems(markdown: str, upstream: list[UpstreamTest], tests: dict[str, SuiteTest]) -> list[str]:
    """Every upstream test without a row naming an existing wincon test; every file:line row that is no
    upstream test (or names it by another title)."""
    problems = []
    rows = [cells for cells in parity_rows(markdown) if len(cells) == 4]
    by_location: dict[str, list[list[str]]] = {}
    for cells in rows:
        if LOCATION.match(cells[0]):
            by_location.setdefault(cells[0], []).append(cells)
    known = {f"{u.file}:{u.line}": u for u in upstream}
    for test in upstream:
        location = f"{test.file}:{test.line}"
        candidates = [cells for cells in by_location.get(location, []) if test.matches(cells[1])]
        if not any(tid in tests for cells in candidates for tid, _, _ in PAIR.findall(cells[2])):
            problems.append(f"{location} {test.title!r} has no row naming an existing wincon test")
    for location, cells_list in sorted(by_location.items()):
        test = known.get(location)
        for cells in cells_list:
            if test is None:
                problems.append(f"row {location} {cells[1][:60]!r} is no upstream test at the pinned version")
            elif not test.matches(cells[1]):
                problems.append(f"row {location}: title {cells[1]!r} is not upstream's {test.title!r}")
    return problems


def pinned_version() -> str:
    return str(tomllib.loads(VERSIONS.read_text())["kubernetes"]["version"])


def go_modcache() -> Path:
    """The Go module cache: $GOMODCACHE, else ``go env GOMODCACHE``, else GOPATH's (or ~/go's) pkg/mod."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = shutil.which("go")
    if go:
        answer = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60)
        if answer.returncode == 0 and answer.stdout.strip():
            return Path(answer.stdout.strip())
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    return Path(gopath.split(os.pathsep)[0]) / "pkg" / "mod"


def load_upstream(modcache: Path, version: str, ci: bool) -> list[UpstreamTest]:
    """Upstream's tests at ``version`` from ``modcache``; without the module: skip, or fail in CI."""
    root = module_dir(version, modcache)
    if not (root / UPSTREAM_DIR).is_dir():
        reason = f"k8s.io/kubernetes@{version} (versions.toml) is not in the Go module cache ({root}): `make binaries` downloads it"
        if ci:
            pytest.fail(reason + "; in CI it must be there")
        pytest.skip(reason)
    found = upstream_tests(root)
    assert found, f"no test read from {root / UPSTREAM_DIR}"
    return found


@pytest.fixture(scope="module")
def upstream() -> list[UpstreamTest]:
    return load_upstream(go_modcache(), pinned_version(), os.environ.get("CI") == "true")


def test_the_parity_table_matches_the_suites():
    problems = parity_problems(DOC.read_text(), suite_tests())
    assert not problems, "docs/coverage.md Upstream parity is out of step:\n" + "\n".join(problems)


def test_every_upstream_windows_test_has_a_row_with_a_wincon_test(upstream):
    problems = upstream_problems(DOC.read_text(), upstream, suite_tests())
    assert not problems, f"docs/coverage.md against k8s.io/kubernetes@{pinned_version()} {UPSTREAM_DIR}:\n" + "\n".join(
        problems
    )


def test_the_guard_fails_when_one_upstream_row_is_removed(upstream):
    text = DOC.read_text()
    gone = upstream[len(upstream) // 2]
    lines = [line for line in text.splitlines() if not line.startswith(f"| {gone.file}:{gone.line} |")]
    assert len(lines) < len(text.splitlines()), f"no row of {gone.file}:{gone.line} to remove"
    problems = upstream_problems("\n".join(lines), upstream, suite_tests())
    assert problems == [f"{gone.file}:{gone.line} {gone.title!r} has no row naming an existing wincon test"]


# ----------------------------------------------------------------------------- the checkers themselves can fail

TEST = SuiteTest("11111111-2222-4333-8444-555555555555", "node/test_a.py", "test_a", "as upstream density.go does")
HEADER = "| upstream file:line | upstream test | wincon test (id, path) | difference |\n|---|---|---|---|\n"
ROW = f"| density.go:69 | Density | `{TEST.test_id}` `node/test_a.py::test_a` | same |"


def doc_with(*rows: str) -> str:
    listed = "".join(f"| {name} | x | none | not ported |\n" for name in READINESS_CATEGORIES)
    return f"# Coverage\n\n{HEADING}\n\n{HEADER}" + "".join(r + "\n" for r in rows) + listed + "\n## Other\n"


def test_checker_accepts_a_row_naming_the_test_by_id_and_path():
    assert parity_problems(doc_with(ROW), {TEST.test_id: TEST}) == []


def test_checker_reports_an_unknown_id_and_a_renamed_function():
    unknown = "| density.go:69 | Density | `99999999-2222-4333-8444-555555555555` `node/test_a.py::test_a` | same |"
    renamed = f"| density.go:69 | Density | `{TEST.test_id}` `node/test_a.py::test_old_name` | same |"
    problems = parity_problems(doc_with(unknown, renamed), {TEST.test_id: TEST})
    assert any("is in no suite" in p for p in problems), problems
    assert any("not node/test_a.py::test_old_name" in p for p in problems), problems


def test_checker_reports_a_missing_category_a_bare_none_a_blank_difference_and_an_uncited_test():
    text = doc_with("| hyperv.go:47 | HyperV | none | |", ROW.replace("| same |", "|  |"))
    text = text.replace("| Core.Storage | x | none | not ported |\n", "")
    problems = parity_problems(text.replace("density.go:69", "dns.go:43"), {TEST.test_id: TEST})
    assert "Core.Storage has no row" in problems, problems
    assert any("no test and no reason" in p for p in problems), problems
    assert any("difference '' is not" in p for p in problems), problems
    assert any("cites upstream density.go but is in none of its rows" in p for p in problems), problems


def test_checker_reads_only_its_own_section():
    text = doc_with().replace(HEADING, "## Generated") + f"\n{HEADING}\n"
    assert parity_problems(text, {}) == [f"no {HEADING!r} section with table rows"]


def test_upstream_checker_reports_a_missing_a_renamed_and_a_stale_row():
    upstream = [UpstreamTest("density.go", 69, "Density"), UpstreamTest("dns.go", 43, "DNS configurable")]
    tests = {TEST.test_id: TEST}
    assert upstream_problems(doc_with(ROW), upstream[:1], tests) == []
    renamed = ROW.replace("| Density |", "| Density old |")
    stale = ROW.replace("density.go:69", "demo.go:10")
    problems = upstream_problems(doc_with(renamed, stale), upstream, tests)
    assert problems == [
        "density.go:69 'Density' has no row naming an existing wincon test",
        "dns.go:43 'DNS configurable' has no row naming an existing wincon test",
        "row demo.go:10 'Density' is no upstream test at the pinned version",
        "row density.go:69: title 'Density old' is not upstream's 'Density'",
    ]
    no_test = ROW.replace(f"`{TEST.test_id}` `node/test_a.py::test_a`", "none")
    assert upstream_problems(doc_with(no_test), upstream[:1], tests) == [
        "density.go:69 'Density' has no row naming an existing wincon test"
    ]


GO = """package windows

var _ = sigDescribe(feature.Windows, "Density", framework.WithSerial(), skipUnlessWindows(func() {
	ginkgo.Context("create a batch", func() {
		for _, arg := range tests {
			desc := fmt.Sprintf("when create %d pods with %v interval", arg.n, arg.i)
			ginkgo.It(desc, func(ctx context.Context) {
				run(`ginkgo.It("not a test")`) // ginkgo.It("nor this")
			})
		}
	})
	ginkgo.It("outside the context", ginkgo.Label("x"), func(ctx context.Context) {})
	f.It("labelled", feature.NetworkingIPv4, func(ctx context.Context) {})
}))

var _ = sigDescribe("Second", func() {
	ginkgo.DescribeTable("table", func(n int) {},
		ginkgo.Entry("first entry", 1),
	)
})
"""
FEATURE_GO = """package feature

var (
	NetworkingIPv4 = framework.WithFeature(framework.ValidFeatures.Add("Networking-IPv4"))
	Windows = framework.WithFeature(framework.ValidFeatures.Add("Windows"))
)
"""


def test_reader_names_each_test_as_ginkgo_does(tmp_path):
    (tmp_path / UPSTREAM_DIR).mkdir(parents=True)
    (tmp_path / "test/e2e/feature").mkdir(parents=True)
    (tmp_path / UPSTREAM_DIR / "density.go").write_text(GO)
    (tmp_path / "test/e2e/feature/feature.go").write_text(FEATURE_GO)
    found = upstream_tests(tmp_path)
    head = "[sig-windows] [Feature:Windows] Density [Serial]"
    assert found == [
        UpstreamTest("density.go", 7, f"{head} create a batch when create %d pods with %v interval"),
        UpstreamTest("density.go", 12, f"{head} outside the context"),
        UpstreamTest("density.go", 13, f"{head} labelled [Feature:Networking-IPv4]"),
        UpstreamTest("density.go", 18, "[sig-windows] Second table first entry"),
    ]
    assert found[0].matches(f"{head} create a batch when create 10 pods with 0s interval")
    assert not found[0].matches(f"{head} create a batch when create 10 pods")
    assert module_dir("v1.34.4", Path("/m"), "github.com/Microsoft/x") == Path("/m/github.com/!microsoft/x@v1.34.4")


def test_without_the_module_the_guard_skips_locally_and_fails_in_ci(tmp_path):
    with pytest.raises(pytest.skip.Exception, match="not in the Go module cache"):
        load_upstream(tmp_path, "v1.34.4", ci=False)
    with pytest.raises(pytest.fail.Exception, match="in CI it must be there"):
        load_upstream(tmp_path, "v1.34.4", ci=True)
