"""`wincon run` phases: parallel tests first, then serial and disruptive ones alone, into one results directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wincon.commandline.errors import ExitCode
from wincon.results import runner
from wincon.results.runner import combine_exit_codes, merge_phase, phase_args, pytest_command


@pytest.mark.parametrize(
    ("args", "parallel", "serial"),
    [
        ([], ["-m", "not (serial or disruptive)"], ["-n", "0", "-m", "(serial or disruptive)"]),
        (
            ["-m", "networking", "-x"],
            ["-x", "-m", "(networking) and not (serial or disruptive)"],
            ["-x", "-n", "0", "-m", "(networking) and (serial or disruptive)"],
        ),
        (
            ["-mapi", "-n", "4"],
            ["-n", "4", "-m", "(api) and not (serial or disruptive)"],
            ["-n", "0", "-m", "(api) and (serial or disruptive)"],
        ),
        (
            ["--markexpr=dns", "--numprocesses=3"],
            ["--numprocesses=3", "-m", "(dns) and not (serial or disruptive)"],
            ["-n", "0", "-m", "(dns) and (serial or disruptive)"],
        ),
    ],
)
def test_each_phase_combines_the_users_selection_with_its_own(args, parallel, serial):
    assert phase_args(args, serial=False) == parallel
    assert phase_args(args, serial=True) == serial


def test_the_serial_phase_gets_no_workers(tmp_path):
    command = pytest_command(tmp_path, "r", phase_args([], serial=True), workers=2)
    assert command.count("-n") == 1 and command[command.index("-n") + 1] == "0"
    parallel = pytest_command(tmp_path, "r", phase_args([], serial=False), workers=2)
    assert parallel[parallel.index("-n") + 1] == "2"
    assert parallel[parallel.index("--dist") + 1] == "worksteal" and "--dist" not in command
    mine = pytest_command(tmp_path, "r", phase_args(["--dist=loadscope"], serial=False), workers=2)
    assert mine.count("--dist") == 0 and "--dist=loadscope" in mine  # the user's choice stands


@pytest.mark.parametrize(
    ("first", "second", "combined"),
    [
        (0, 0, 0),
        (0, 5, 0),
        (5, 0, 0),
        (5, 5, 5),
        (0, 1, 1),
        (3, 1, 1),
        (3, 0, 3),
        (1, 2, 2),
        (0, -9, -9),
    ],
)
def test_exit_codes_of_two_phases(first, second, combined):
    assert combine_exit_codes(first, second) == combined


def run_dir(path: Path, result: str, verdicts: dict[str, int], junit: str) -> Path:
    (path / "artifacts").mkdir(parents=True)
    (path / "started.json").write_text(json.dumps({"timestamp": 1, "metadata": {}}))
    finished = {"timestamp": 2, "passed": result == "SUCCESS", "result": result}
    finished["metadata"] = {"verdicts": {k: str(v) for k, v in verdicts.items()}, "run-id": "r"}
    (path / "finished.json").write_text(json.dumps(finished))
    (path / "artifacts" / "junit_wincon_20261123-0100_01.xml").write_text(junit)
    (path / "build-log.txt").write_text(f"{result} log\n")
    return path


def test_the_serial_phase_joins_the_runs_results(tmp_path):
    main = run_dir(tmp_path / "r1", "SUCCESS", {"passed": 3}, "<testsuites name='parallel'/>")
    scratch = run_dir(tmp_path / ".r1-serial", "FAILURE", {"failed": 1}, "<testsuites name='serial'/>")
    merge_phase(main, scratch, ExitCode.OK, ExitCode.TESTS_FAILED)
    names = sorted(p.name for p in (main / "artifacts").glob("junit*.xml"))
    assert names == ["junit_wincon_20261123-0100_01.xml", "junit_wincon_20261123-0100_02.xml"]
    assert "serial" in (main / "artifacts" / names[1]).read_text()
    finished = json.loads((main / "finished.json").read_text())
    assert finished["result"] == "FAILURE" and finished["passed"] is False
    assert finished["metadata"]["verdicts"] == {"passed": "3", "failed": "1"}
    assert finished["metadata"]["pytest-exit-code"] == "parallel phase 0, serial phase 1"
    assert "serial phase" in (main / "build-log.txt").read_text()


def test_a_serial_phase_that_selected_nothing_leaves_the_run_as_it_was(tmp_path):
    main = run_dir(tmp_path / "r1", "SUCCESS", {"passed": 3}, "<testsuites/>")
    scratch = run_dir(tmp_path / ".r1-serial", "FAILURE", {}, "<testsuites/>")
    before = (main / "finished.json").read_text()
    merge_phase(main, scratch, ExitCode.OK, ExitCode.NO_TESTS)
    assert (main / "finished.json").read_text() == before
    assert len(list((main / "artifacts").glob("junit*.xml"))) == 1


def test_run_runs_the_serial_phase_after_the_parallel_one(tmp_path, monkeypatch):
    commands: list[list[str]] = []

    def fake_pytest(command):
        commands.append(command)
        results = Path(command[command.index("--results-dir") + 1])
        serial = "(serial or disruptive)" in command[-1] and "not" not in command[-1]
        run_dir(results, "SUCCESS", {"passed": 1}, f"<testsuites name='{'serial' if serial else 'parallel'}'/>")
        return 0

    monkeypatch.setattr(runner, "_run_pytest", fake_pytest)
    results = tmp_path / "results" / "r1"
    assert runner.run(results, ["--", "suites"], reports=False) == ExitCode.OK
    assert [c[-1] for c in commands] == ["not (serial or disruptive)", "(serial or disruptive)"]
    assert commands[1][commands[1].index("--alluredir") + 1] == str(results.resolve() / "allure-results")
    assert len(list((results / "artifacts").glob("junit*.xml"))) == 2
    assert not (tmp_path / "results" / ".r1-serial").exists()
