"""tests/support/ordering.py: the heaviest tests first (marker weight), stable otherwise; the marker measures_cpu,
which make test runs alone after every other test, carried by every test that takes the CPU-measuring slot."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

MODULE = """
import pytest

pytestmark = pytest.mark.weight(5)

def test_a(): pass

@pytest.mark.weight(50)
def test_b(): pass

def test_c(): pass

@pytest.mark.weight(0)
def test_d(): pass
"""
OTHER = """
def test_e(): pass

import pytest

@pytest.mark.weight(20)
def test_f(): pass

def test_g(): pass
"""


@pytest.fixture(autouse=True)
def _project_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytester subprocesses import tests.support from the project (as tests/unit/test_xdist_groups.py's do)."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def _order(pytester: pytest.Pytester, *plugin: str) -> list[str]:
    pytester.makepyfile(test_one=MODULE, test_two=OTHER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", *plugin, "--collect-only", "-q")
    return [line.split("::")[1] for line in result.outlines if "::" in line]


def test_the_heaviest_start_first_and_equal_weights_keep_the_collection_order(pytester):
    # b (its own 50) > f (20) > a, c (their module's 5, in order) > d (its own 0), e, g (unmarked, in order).
    assert _order(pytester, "-p", "tests.support.ordering") == [
        "test_b",
        "test_f",
        "test_a",
        "test_c",
        "test_d",
        "test_e",
        "test_g",
    ]


def test_without_the_plugin_the_order_is_the_collection_s(pytester):
    """The counter-case: the order above is the plugin's doing."""
    assert _order(pytester) == ["test_a", "test_b", "test_c", "test_d", "test_e", "test_f", "test_g"]


def test_a_weight_that_is_not_seconds_is_a_usage_error(pytester):
    pytester.makepyfile(test_bad="import pytest\n\n@pytest.mark.weight('heavy')\ndef test_x(): pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "tests.support.ordering", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_bad.py::test_x: weight takes the test's seconds (a number >= 0), not 'heavy'*"])


def test_both_markers_are_registered(pytester):
    pytester.makepyfile(test_m="import pytest\n\n@pytest.mark.measures_cpu\ndef test_x(): pass\n\ndef test_y(): pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "tests.support.ordering", "--strict-markers", "-m", "measures_cpu", "-q"
    )
    result.assert_outcomes(passed=1, deselected=1)


def _marked(decorators: list[ast.expr], name: str) -> bool:
    return any(name in ast.unparse(d) for d in decorators)


def slot_takers(path: Path) -> dict[str, bool]:
    """Each test function of ``path`` that calls ``measuring_cpu`` (itself, or through a module-level helper it
    calls), with whether it carries ``measures_cpu`` (its own decorator or the module's ``pytestmark``)."""
    tree = ast.parse(path.read_text())
    module_marked = any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "measures_cpu" in ast.unparse(node.value)
        for node in tree.body
    )
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}

    def calls(node: ast.AST) -> set[str]:
        return {
            n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute | ast.Name)
        }

    def takes_slot(name: str, seen: frozenset[str] = frozenset()) -> bool:
        called = calls(functions[name])
        if "measuring_cpu" in called:
            return True
        return any(takes_slot(c, seen | {name}) for c in called & set(functions) - seen - {name})

    return {
        name: module_marked or _marked(node.decorator_list, "measures_cpu")
        for name, node in functions.items()
        if name.startswith("test_") and takes_slot(name)
    }


def test_every_test_that_takes_the_cpu_slot_is_marked_measures_cpu():
    """Such a test left unmarked would run in make test's first run, beside three workers' load, and its CPU-limit
    checks would err (their unlimited twins starved). tests/unit is left out: its tests take the slot for a
    moment, to test the slot itself, and measure nothing."""
    found: dict[str, bool] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if "unit" not in path.relative_to(REPO / "tests").parts[:1]:
            found |= {f"{path.relative_to(REPO)}::{k}": v for k, v in slot_takers(path).items()}
    assert len(found) == 2, f"expected the two CPU fault tests, found {sorted(found)}"
    assert all(found.values()), (
        f"take the CPU-measuring slot but lack the measures_cpu marker: {sorted(k for k, v in found.items() if not v)}"
    )


def test_the_guard_finds_an_unmarked_test_that_takes_the_slot(tmp_path):
    """The counter-case of the guard above: a test calling measuring_cpu through a helper, unmarked."""
    path = tmp_path / "test_x.py"
    path.write_text(
        "from tests.support.shared_use import measuring_cpu\n\n"
        "def helper():\n    with measuring_cpu():\n        pass\n\n"
        "def test_x():\n    helper()\n\n"
        "def test_y():\n    pass\n"
    )
    assert slot_takers(path) == {"test_x": False}


def test_make_test_runs_the_cpu_measuring_tests_apart_and_every_run_always():
    recipe = re.search(r"^test: .*?\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no test target"
    lines = recipe.group(1)
    assert '-m "not measures_cpu" -n $(TEST_WORKERS)' in lines and "--no-loadscope-reorder" in lines
    assert "-m measures_cpu -q" in lines and "|| cpu=$$?" in lines and "|| status=$$?" in lines
    # lint runs beside the first run, not beside the CPU-measuring one: it has ended (waited for) before that starts
    assert "( $(LINT) )" in lines and lines.index("( $(LINT) )") < lines.index("wait $$pid || lint=$$?")
    assert lines.index("wait $$pid || lint=$$?") < lines.index("-m measures_cpu -q")
    assert "status=$$lint" in lines
