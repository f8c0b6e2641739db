"""bench/cost_table.py: the cost scheduler's table from the JUnit files of one or several runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cost_table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cost_table", ROOT / "bench" / "cost_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def junit(path: Path, seconds: dict[str, float]) -> Path:
    cases = "".join(
        f'<testcase classname="{name.split("::")[0].removesuffix(".py").replace("/", ".")}" '
        f'name="{name.split("::")[1]}" time="{t}"/>'
        for name, t in seconds.items()
    )
    path.write_text(f'<testsuites><testsuite name="pytest" tests="{len(seconds)}">{cases}</testsuite></testsuites>')
    return path


def test_several_runs_weigh_each_test_by_its_median(tmp_path: Path) -> None:
    a, b = "suites/x/test_a.py::test_one", "suites/x/test_a.py::test_two"
    runs = [
        junit(tmp_path / "r1.xml", {a: 1.0, b: 50.0}),
        junit(tmp_path / "r2.xml", {a: 3.0, b: 2.0}),
        junit(tmp_path / "r3.xml", {a: 2.0}),  # test_two did not run here: the median of the runs that ran it
    ]
    data = cost_table().table(runs, "three runs")
    names = {k.split("::")[-1]: v for k, v in data["seconds"].items()}
    assert data["source"] == "three runs"
    assert names == {"test_one": 2.0, "test_two": 26.0}
    # One run alone: its own times, as before
    one = cost_table().table(runs[:1], "one run")
    assert {k.split("::")[-1]: v for k, v in one["seconds"].items()} == {"test_one": 1.0, "test_two": 50.0}


def test_no_test_case_in_any_file_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    empty = tmp_path / "e.xml"
    empty.write_text("<testsuites/>")
    with pytest.raises(SystemExit, match="nothing to write"):
        cost_table().main([str(empty), "--source", "x", "--out", str(out)])
    assert not out.exists()
    runs = [junit(tmp_path / "r1.xml", {"suites/x/test_a.py::test_one": 4.0})]
    assert cost_table().main([str(runs[0]), "--source", "x", "--out", str(out)]) == 0
    assert list(json.loads(out.read_text())["seconds"].values()) == [4.0]
