"""No green on a lie (issue 31 item 6): a run records, per Windows node, how many Windows checks executed there
and with which isolation they observed; `wincon gate` fails a run in which none executed on a real Windows node;
`wincon run` exits 1 where the cluster has real Windows nodes and none of its Windows checks executed on one, or
where a check that asked for Hyper-V observed process isolation; a simulated-only cluster keeps its exit code and
says no Windows node was real."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.clusterinfo import nodes
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts, dashboard, execution, runner
from wincon.results.gate import judge, load_required
from wincon.results.model import Verdict
from wincon.session.verdicts import ISOLATION, ISOLATION_OBSERVED

P, F, S, E, X = Verdict.PASSED, Verdict.FAILED, Verdict.SKIPPED, Verdict.ERROR, Verdict.XFAILED
A = "00000000-0000-4000-8000-00000000000a"


def simulated_profile() -> dict[str, Any]:
    """The local cluster's shape: its Windows nodes are kwok's (simulated), its Linux workers real."""
    profile = synthetic.profile()
    for node in profile["nodes"]:
        if node["os"] == "windows":
            node["simulated"] = True
    return profile


def hyperv_case(observed: str, verdict: Verdict = P) -> Any:
    case = synthetic.case("suites/s.py::test_hyperv", verdict, test_id=A, area="scheduling")
    case.properties += [(ISOLATION, "hyperv"), (ISOLATION_OBSERVED, f"win-0={observed}")]
    return case


def test_the_record_counts_checks_that_reached_a_verdict_on_each_node():
    cases = [
        synthetic.case("t.py::a", P),  # on win-0 (synthetic's default for a Windows verdict)
        synthetic.case("t.py::b", F, node="win-1"),
        synthetic.case("t.py::c", X, node="win-1"),
        synthetic.case("t.py::d", S),  # skipped: executed nowhere
        synthetic.case("t.py::e", E, node="win-0"),  # errored after placement: it proved nothing
        synthetic.case("t.py::f[linux]", P, target_os="linux", node="linux-0"),  # a control: not a Windows check
        synthetic.case("t.py::g", P, node="linux-0"),  # a helper pod on a Linux node: no Windows node
        hyperv_case("hyperv"),
    ]
    found = execution.record(cases, synthetic.profile())
    assert found.windows_checks == 7 and found.executed_on_real == 4
    assert {n: (r.executed, r.isolation) for n, r in found.nodes.items()} == {
        "win-0": (2, {"process": 0, "hyperv": 1, "not observed": 1}),
        "win-1": (2, {"process": 0, "hyperv": 0, "not observed": 2}),
    }
    assert found.problems() == []
    assert found.summary() == (
        "Windows checks executed on real Windows nodes: win-0 2 (hyperv 1, not observed 1); win-1 2 (not observed 2)"
    )
    meta = found.to_metadata()
    assert meta["executed-on-real-windows-nodes"] == "4" and meta["node/win-1"].startswith("real; executed 2;")
    assert all(isinstance(v, str) for v in meta.values())  # TestGrid's metadata: strings


def test_hyperv_asked_and_process_observed_is_a_problem():
    found = execution.record([hyperv_case("process")], synthetic.profile())
    assert found.problems() == [
        "suites/s.py::test_hyperv on win-0 asked for Hyper-V isolation but observed process isolation"
    ]


def test_a_real_cluster_where_nothing_executed_and_a_simulated_one():
    skipped = [synthetic.case("t.py::a", S), synthetic.case("t.py::b", E)]
    real = execution.record(skipped, synthetic.profile())
    assert real.executed_on_real == 0 and real.problems()[0].startswith("no Windows check executed on a real")
    local = execution.record([synthetic.case("t.py::a", S, node="win-0")], simulated_profile())
    assert local.problems() == []  # nothing real to execute on: not a lie, and the summary says so
    assert local.summary().startswith("no Windows node was real (2 simulated)")
    assert execution.record(skipped, None).summary().startswith("Windows checks executed: unknown")


def fake_run(monkeypatch: pytest.MonkeyPatch, cases: list[Any], profile: dict[str, Any], code: int = 0) -> None:
    """`wincon run`'s pytest, faked: both phases write the same results (the serial one none)."""

    def fake_pytest(command: list[str]) -> int:
        directory = Path(command[command.index("--results-dir") + 1])
        if "not" in command[-1]:  # the parallel phase
            result = "SUCCESS" if code == 0 else "FAILURE"
            artifacts.write_run(directory, cases, start=1_000, result=result, profile=profile)
            return code
        return int(ExitCode.NO_TESTS)

    monkeypatch.setattr(runner, "_run_pytest", fake_pytest)


def finished(path: Path) -> dict[str, Any]:
    return json.loads((path / "finished.json").read_text())


def test_wincon_run_exits_1_where_real_windows_nodes_ran_no_windows_check(tmp_path, monkeypatch, capsys):
    fake_run(monkeypatch, [synthetic.case("t.py::a", S), synthetic.case("t.py::b", S)], synthetic.profile())
    out = tmp_path / "results" / "r1"
    assert runner.run(out, ["--", "suites"], reports=False) == ExitCode.TESTS_FAILED
    captured = capsys.readouterr()
    assert "wincon run: error: no Windows check executed on a real Windows node (win-0, win-1)" in captured.err
    assert (
        captured.out.strip()
        .splitlines()[-1]
        .endswith("no Windows check executed on a real Windows node (win-0, win-1); exit 1")
    )
    done = finished(out)
    assert done["result"] == "FAILURE" and not done["passed"]
    assert done["metadata"]["windows-execution"]["executed-on-real-windows-nodes"] == "0"
    artifacts.load_run(out)  # finished.json stays TestGrid's shape


def test_wincon_run_exits_1_where_infrastructure_errors_hid_that_nothing_ran(tmp_path, monkeypatch):
    fake_run(monkeypatch, [synthetic.case("t.py::a", E)], synthetic.profile(), code=int(ExitCode.INFRASTRUCTURE))
    assert runner.run(tmp_path / "r", ["--", "suites"], reports=False) == ExitCode.TESTS_FAILED


def test_wincon_run_exits_1_where_hyperv_ran_in_process_isolation(tmp_path, monkeypatch, capsys):
    fake_run(monkeypatch, [hyperv_case("process")], synthetic.profile())
    assert runner.run(tmp_path / "r", ["--", "suites"], reports=False) == ExitCode.TESTS_FAILED
    assert "asked for Hyper-V isolation but observed process isolation" in capsys.readouterr().err


def test_a_run_that_executed_on_a_real_node_keeps_its_code(tmp_path, monkeypatch):
    fake_run(monkeypatch, [synthetic.case("t.py::a", P), hyperv_case("hyperv")], synthetic.profile())
    out = tmp_path / "r"
    assert runner.run(out, ["--", "suites"], reports=False) == ExitCode.OK
    assert finished(out)["passed"] is True


def test_the_local_cluster_keeps_its_exit_code_and_says_no_windows_node_was_real(tmp_path, monkeypatch, capsys):
    cases = [synthetic.case("t.py::a", S, node="win-0"), synthetic.case("t.py::b", P, node="linux-0")]
    fake_run(monkeypatch, cases, simulated_profile())
    out = tmp_path / "r"
    assert runner.run(out, ["--", "suites"], reports=False) == ExitCode.OK
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "no Windows node was real (2 simulated): no Windows check executed on a real Windows node" in last
    assert last.endswith("; exit 0")
    assert finished(out)["metadata"]["windows-execution"]["real-windows-nodes"] == "0"


REQUIRED = f"""
    version: 1
    kubernetes:
      "1.34":
        tests:
          - {{id: {A}, name: hyperv}}
"""


def test_the_gate_fails_a_run_in_which_no_windows_check_executed_on_a_real_node(tmp_path):
    required = tmp_path / "required.yaml"
    required.write_text(textwrap.dedent(REQUIRED))
    local = artifacts.write_run(
        tmp_path / "results" / "local",
        [synthetic.case("t.py::a", P, test_id=A)],  # passed, say, but its node is kwok's
        start=1_000,
        result="SUCCESS",
        profile=simulated_profile(),
    )
    result = judge(artifacts.load_run(local), load_required(required))
    assert not result.ok and result.passed  # the required test passed; the run still says no
    assert result.blocking == [
        (
            "-",
            "Windows checks on real Windows nodes",
            "none executed: no Windows node was real (2 simulated): no Windows check executed on a real Windows "
            "node; this run says nothing of a Windows data plane",
        )
    ]
    assert main(["gate", str(local), "--required", str(required)]) == ExitCode.GATE
    real = artifacts.write_run(
        tmp_path / "results" / "real",
        [synthetic.case("t.py::a", P, test_id=A)],
        start=1_000,
        result="SUCCESS",
        profile=synthetic.profile(),
    )
    assert main(["gate", str(real), "--required", str(required)]) == ExitCode.OK
    hyperv = artifacts.write_run(
        tmp_path / "results" / "hv",
        [hyperv_case("process")],
        start=1_000,
        result="SUCCESS",
        profile=synthetic.profile(),
    )
    blocking = judge(artifacts.load_run(hyperv), load_required(required)).blocking
    assert [why for *_, why in blocking] == ["asked for Hyper-V isolation but observed process isolation"]


def test_the_dashboard_shows_each_runs_counts(tmp_path):
    path = artifacts.write_run(
        tmp_path / "results" / "r",
        [synthetic.case("t.py::a", P)],
        start=1_000,
        result="SUCCESS",
        profile=synthetic.profile(),
    )
    data = dashboard.build_data([artifacts.load_run(path)])
    shown = data["runs"][0]["execution"]
    assert shown["executed_on_real_windows_nodes"] == 1
    assert shown["nodes"]["win-0"] == {
        "real": True,
        "executed": 1,
        "isolation": {"process": 0, "hyperv": 0, "not observed": 1},
    }
    app = (Path(dashboard.__file__).parent / "static" / "app.js").read_text()
    assert "Windows checks executed on real Windows nodes" in app and "executionCell(run.execution)" in app


def test_a_check_records_the_isolation_it_observed():
    item = SimpleNamespace(user_properties=[])
    nodes.observe_isolation("win-0", "hyperv", item=item)  # type: ignore[arg-type]
    nodes.observe_isolation("win-0", "hyperv", item=item)  # type: ignore[arg-type]
    assert item.user_properties == [(ISOLATION_OBSERVED, "win-0=hyperv")]
    with pytest.raises(ValueError):
        nodes.observe_isolation("win-0", "kata", item=item)  # type: ignore[arg-type]


def test_the_isolation_a_check_asks_for_reaches_its_junit_properties(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.isolation("hyperv")
        def test_hv(record_property):
            pass

        def test_plain():
            pass
        """
    )
    pytester.makeconftest("")
    from wincon.session.collection import record_identity

    items, _ = pytester.inline_genitems()
    for item in items:
        item.config.addinivalue_line("markers", "isolation(kind)")
        record_identity(item)
    props = {item.name: dict(item.user_properties) for item in items}
    assert props["test_hv"].get(ISOLATION) == "hyperv" and ISOLATION not in props["test_plain"]
