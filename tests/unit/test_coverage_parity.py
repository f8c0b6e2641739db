"""docs/coverage.md "Upstream parity" stays in step with the suites.

Every test id in the section exists and belongs to the function named beside it; every upstream Windows e2e
file and every operational-readiness category is listed; a row without a test says why; and a suite test whose
docstring cites an upstream file (``upstream <file>.go``) is in that file's rows. Read with ``ast``: no
collection, no cluster.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "coverage.md"
SUITES = ROOT / "suites"
HEADING = "## Upstream parity"

# kubernetes/kubernetes test/e2e/windows: the files that hold tests (or, dns_common.go, only their helpers).
UPSTREAM_FILES = (
    "container_stop_signals.go",
    "cpu_limits.go",
    "demo.go",
    "density.go",
    "device_plugin.go",
    "dns.go",
    "dns_common.go",
    "eviction.go",
    "gmsa.go",
    "gmsa_full.go",
    "gmsa_kubelet.go",
    "host_process.go",
    "hybrid_network.go",
    "hyperv.go",
    "kubelet_stats.go",
    "memory_limits.go",
    "metrics.go",
    "networking.go",
    "node_shutdown.go",
    "reboot_node.go",
    "security_context.go",
    "service.go",
    "statefulset.go",
    "subpath_cleanup.go",
    "volumes.go",
)
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
        if cells[0] in ("upstream file", "category"):
            continue
        rows.append(cells)
    return rows


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
        for test_id, path, function in pairs:
            test = tests.get(test_id)
            if test is None:
                problems.append(f"row {source}: test id {test_id} is in no suite")
            elif (test.path, test.function) != (path, function):
                problems.append(
                    f"row {source}: test id {test_id} is {test.path}::{test.function}, not {path}::{function}"
                )
            cited_in.setdefault(source, set()).add(test_id)
    sources = {cells[0] for cells in rows}
    for name in UPSTREAM_FILES + READINESS_CATEGORIES:
        if name not in sources:
            problems.append(f"{name} has no row")
    for test in tests.values():
        for cited in sorted(set(CITATION.findall(test.doc))):
            if test.test_id not in cited_in.get(cited, set()):
                problems.append(f"{test.path}::{test.function} cites upstream {cited} but is in none of its rows")
    return problems


def test_the_parity_table_matches_the_suites():
    problems = parity_problems(DOC.read_text(), suite_tests())
    assert not problems, "docs/coverage.md Upstream parity is out of step:\n" + "\n".join(problems)


# ----------------------------------------------------------------------------- the checker itself can fail

TEST = SuiteTest("11111111-2222-4333-8444-555555555555", "node/test_a.py", "test_a", "as upstream density.go does")
HEADER = "| upstream file | upstream test | wincon test (id, path) | difference / why none |\n|---|---|---|---|\n"


def doc_with(*rows: str) -> str:
    listed = "".join(f"| {name} | x | none | not ported |\n" for name in UPSTREAM_FILES + READINESS_CATEGORIES)
    return f"# Coverage\n\n{HEADING}\n\n{HEADER}" + "".join(r + "\n" for r in rows) + listed + "\n## Other\n"


def test_checker_accepts_a_row_naming_the_test_by_id_and_path():
    row = f"| density.go | Density | `{TEST.test_id}` `node/test_a.py::test_a` | |"
    assert parity_problems(doc_with(row), {TEST.test_id: TEST}) == []


def test_checker_reports_an_unknown_id_and_a_renamed_function():
    unknown = "| density.go | Density | `99999999-2222-4333-8444-555555555555` `node/test_a.py::test_a` | |"
    renamed = f"| density.go | Density | `{TEST.test_id}` `node/test_a.py::test_old_name` | |"
    problems = parity_problems(doc_with(unknown, renamed), {TEST.test_id: TEST})
    assert any("is in no suite" in p for p in problems), problems
    assert any("not node/test_a.py::test_old_name" in p for p in problems), problems


def test_checker_reports_a_missing_file_a_bare_none_and_an_uncited_test():
    text = doc_with("| hyperv.go | HyperV | none | |").replace("| reboot_node.go | x | none | not ported |\n", "")
    problems = parity_problems(text, {TEST.test_id: TEST})
    assert "reboot_node.go has no row" in problems, problems
    assert any("no test and no reason" in p for p in problems), problems
    assert any("cites upstream density.go but is in none of its rows" in p for p in problems), problems


def test_checker_reads_only_its_own_section():
    text = doc_with().replace(HEADING, "## Generated") + f"\n{HEADING}\n"
    assert parity_problems(text, {}) == [f"no {HEADING!r} section with table rows"]
