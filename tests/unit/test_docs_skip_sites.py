"""docs/verdicts.md's table of run-time skip sites names each site as ``area/file.py::function`` (``::other`` for
another function of the same file), never by line: each named function must still skip, and every function of
suites/ that calls pytest.skip must be named (or its file, in a row naming its sites loosely)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"
DOC = REPO / "docs" / "verdicts.md"
HEADER = "| site (suites/...) | skips where | kind | where the plan gets it |"
# Helpers of wincon.clusterinfo.capabilities that call pytest.skip; one counts where its row names it.
HELPERS = ("require", "require_read", "require_live")
SITE = re.compile(r"(?P<file>[\w/]+\.py)?::(?P<name>\w+)|(?P<bare>[\w/]+\.py)(?P<line>:\d+)?")


def table_rows(text: str) -> list[str]:
    """The rows of the skip-site table (header and rule excluded)."""
    lines = text.splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def sites(cell: str) -> list[tuple[str, str | None]]:
    """(file under suites/, function or None for a file named loosely) for each site the first cell names; a file
    without a directory is in the previous one's, ``::name`` in the previous file. A line number stays in the
    name (``x.py:12``), so it resolves to no file."""
    found: list[tuple[str, str | None]] = []
    current = ""
    for m in SITE.finditer(cell):
        path = m["file"] or m["bare"]
        if path:
            if "/" not in path and current:
                path = f"{current.rsplit('/', 1)[0]}/{path}"
            current = path
        found.append((current, m["name"]) if m["name"] else (current + (m["line"] or ""), None))
    return found


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


def skips(function: ast.FunctionDef, helpers: tuple[str, ...] = ()) -> bool:
    """Whether ``function`` calls pytest.skip, or capabilities.<helper> for one of ``helpers``."""
    calls = {ast.unparse(n.func) for n in ast.walk(function) if isinstance(n, ast.Call)}
    return "pytest.skip" in calls or any(f"capabilities.{h}" in calls for h in helpers)


def problems(text: str, suites: Path = SUITES) -> list[str]:
    """What in the table does not hold: a named file that does not exist, a function it does not define, or one
    that does not skip."""
    found = []
    for row in table_rows(text):
        named_helpers = tuple(h for h in HELPERS if re.search(rf"\b{h}\b", row))
        for file, name in sites(row.split("|")[1]):
            path = suites / file
            if not path.is_file():
                found.append(f"{file}: no such file under suites/")
                continue
            defined = functions(path)
            if name is not None and name not in defined:
                found.append(f"{file}::{name}: no such function")
            elif name is not None and not skips(defined[name], named_helpers):
                found.append(f"{file}::{name}: calls neither pytest.skip nor a helper its row names")
    return found


def unnamed(text: str, suites: Path = SUITES) -> list[str]:
    """The module-level functions of suites/ that call pytest.skip and that the table does not name."""
    named = {site for row in table_rows(text) for site in sites(row.split("|")[1])}
    missing = []
    for path in sorted(suites.rglob("*.py")):
        file = path.relative_to(suites).as_posix()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and skips(node) and not {(file, node.name), (file, None)} & named:
                missing.append(f"{file}::{node.name}")
    return missing


def test_every_site_the_table_names_still_skips() -> None:
    assert problems(DOC.read_text()) == []


def test_every_skip_in_suites_is_in_the_table() -> None:
    assert unnamed(DOC.read_text()) == []


def test_a_wrong_anchor_is_reported() -> None:
    rows = [
        "| networking/test_egress.py::test_pod_pings_external_ip, ::no_such_check | x | c | y |",
        "| networking/test_services.py::affinity_service | x | b | y |",  # a fixture that does not skip
        "| node/test_eviction.py:64; node/nowhere.py (loosely) | x | b | y |",
        "| gmsa/conftest.py::gmsa_version | x | a | y |",  # skips through require_live, which the row omits
    ]
    doctored = "\n".join([HEADER, "|---|---|---|---|", *rows, ""])
    assert problems(doctored) == [
        "networking/test_egress.py::no_such_check: no such function",
        "networking/test_services.py::affinity_service: calls neither pytest.skip nor a helper its row names",
        "node/test_eviction.py:64: no such file under suites/",
        "node/nowhere.py: no such file under suites/",
        "gmsa/conftest.py::gmsa_version: calls neither pytest.skip nor a helper its row names",
    ]
    named = doctored.replace("| a | y |", "| a | the fixture's require_live |")
    assert problems(named) == problems(doctored)[:-1]
    assert "networking/test_services.py::test_session_affinity_ends_after_its_timeout" in unnamed(doctored)
