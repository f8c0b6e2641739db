"""bench/bench_flakes.py's figures (issue 34, item 1): false failures per run and per thousand check executions,
skips not counted as executions, controls and Windows checks apart, checks that failed in every run told apart from
flakes, and each failure's message printed under its check."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.support import suites

BENCH = suites.load("bench/bench_flakes.py")


def run(verdicts: dict[str, str], messages: dict[str, str] | None = None, controls: set[str] | None = None):
    return BENCH.Run(10.0, 0, dict(verdicts), dict(messages or {}), set(verdicts if controls is None else controls))


def test_the_figures_count_failures_per_run_and_per_thousand_executions(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [
        run({"a": "passed", "b": "failed", "c": "skipped"}, {"b": "dial: after 10 tries"}),
        run({"a": "error", "b": "failed", "c": "skipped"}, {"a": "setup timed out", "b": "dial: after 12 tries"}),
    ]
    BENCH.report(runs, None, show_all=True)
    out = capsys.readouterr().out
    # 4 executions (c skipped twice: not executed), 3 failures: 1.5 per run, 750 per 1000
    assert "controls: 4 executions of 3 checks; 3 failures = 1.50 per run, 750.0 per 1000 executions" in out
    assert "of them 1 in checks that also passed (flakes) and 2 in 1 checks that failed in every run" in out
    assert "failed in every run: b" in out
    assert "    2 runs    1 failures  [control] a" in out and "error: setup timed out" in out
    assert "failed: dial: after 10 tries" in out and "failed: dial: after 12 tries" in out
    assert "Windows checks: 0 executions of 0 checks; 0 failures" in out


def test_a_clean_run_shows_zero_and_lists_no_check_without_all(capsys: pytest.CaptureFixture[str]) -> None:
    BENCH.report([run({"a": "passed"}, controls=set()), run({"a": "passed"}, controls=set())], None, show_all=False)
    out = capsys.readouterr().out
    assert "Windows checks: 2 executions of 1 checks; 0 failures = 0.00 per run, 0.0 per 1000 executions" in out
    assert "[windows] a" not in out and "1 checks never failed (--all lists them)" in out


def test_a_failures_message_is_its_first_line_bounded() -> None:
    case = ET.fromstring('<testcase classname="m" name="t"><failure message="first&#10;second">x</failure></testcase>')
    assert BENCH.first_line(case) == "first" and BENCH.nodeid(case) == "m::t"
    long = ET.fromstring(f'<testcase classname="m" name="t"><error message="{"y" * 900}"/></testcase>')
    assert BENCH.first_line(long) == "y" * BENCH.MESSAGE_CHARS


def test_only_the_load_run_leaves_the_cpu_limit_checks_out() -> None:
    """The measured runs keep every check; the load run beside them deselects the two CPU-limit checks, which would
    starve the measured ones' unlimited twins on this machine's shared cores."""
    assert BENCH.load_deselection("run1") == []
    load = BENCH.load_deselection("load")
    assert load[0] == "-k" and load[1].startswith("not (")
    for check in (
        "test_cpu_limit_caps_a_busy_container",
        "test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it",
    ):
        assert check.removeprefix("test_") in load[1]


def test_a_load_runs_failures_are_printed_though_not_counted(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A load run's verdicts are not counted, but each failure's first line is printed beside its run's line."""
    load = BENCH.Load("kubeconfig", None)
    erred = BENCH.Run(400.0, 1, verdicts={"a::t": "error"}, messages={"a::t": "infrastructure error: x"})

    def one_run(*_args):
        load.stopping.set()
        return erred

    monkeypatch.setattr(BENCH, "run_pytest", one_run)
    load.loop()
    out = capsys.readouterr().out
    assert "load run 1" in out and "    a::t: infrastructure error: x" in out
