"""tests/faults/conftest.py's shared shape: one report for every fault (each affected check's verdict and time
against 60 s, the runs' wall times and ratio) and one ``stopped`` for every process a fault kills."""

from __future__ import annotations

import pytest

from tests.faults import conftest as faults
from tests.faults.conftest import Run


def run(wall: float, **checks: tuple[str, float]) -> Run:
    return Run(
        verdicts={k: v for k, (v, _) in checks.items()},
        durations={k: t for k, (_, t) in checks.items()},
        wall=wall,
        ended=1000.0 + wall,
    )


def test_the_report_gives_each_check_clean_and_faulted_and_the_runs_ratio(capsys):
    before = run(20.0, a=("passed", 5.0), b=("passed", 1.0))
    after = run(50.0, a=("failed", 28.0), b=("error", 61.5))
    faults.report("pods silenced", before, after, injected_at=1040.0)
    out = capsys.readouterr().out.splitlines()
    assert "[pods silenced]   a: clean passed in 5.0 s; with the fault failed in 28.0 s  within 60 s" in out
    assert "[pods silenced]   b: clean passed in 1.0 s; with the fault error in 61.5 s  OVER 60 s" in out
    assert "[pods silenced] 2 failed or errored, slowest 61.5 s, 1 within 60 s, 1 over" in out
    assert out[-1] == (
        "[pods silenced] the run: clean 20.0 s, with the fault 50.0 s; 10.0 s from the fault to its end; "
        "ratio 2.50x (target at most 2x)"
    )


def test_a_check_that_passes_under_the_fault_is_reported_then_fails_the_test(capsys):
    before = run(10.0, a=("passed", 2.0))
    after = run(10.0, a=("passed", 2.0))
    with pytest.raises(AssertionError, match="did not end in \\('failed',\\): \\{'a': 'passed'\\}"):
        faults.assert_broken("nothing", before, after)
    assert "[nothing]   a: clean passed in 2.0 s; with the fault passed in 2.0 s" in capsys.readouterr().out


def test_a_wrong_verdict_is_named_with_its_message(capsys):
    before = run(10.0, a=("passed", 2.0), b=("passed", 1.0))
    after = run(10.0, a=("error", 4.3), b=("failed", 61.0))
    after.messages = {"a": "InfrastructureError: exec ended without an exit status " + "x" * 900, "b": "the policy"}
    with pytest.raises(AssertionError) as wrong:
        faults.assert_broken("engine stopped", before, after)
    message = str(wrong.value)
    assert "did not end in ('failed',): {'a': 'error'}" in message
    assert "a: InfrastructureError: exec ended without an exit status xxx" in message
    assert "x" * 600 not in message and "the policy" not in message  # its first 600 characters, the wrong ones only


def test_stopped_kills_each_process_and_starts_each_again_even_when_the_body_fails(monkeypatch):
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(faults.dataplane, "stop_process", lambda name, proc: calls.append(("stop", proc)))
    monkeypatch.setattr(faults.dataplane, "restart_process", lambda name, proc: calls.append(("start", proc)) or 1)
    with pytest.raises(RuntimeError), faults.stopped("c", "worker-0-kubelet", "worker-1-kubelet") as at:
        assert isinstance(at, float)
        assert calls == [("stop", "worker-0-kubelet"), ("stop", "worker-1-kubelet")]
        raise RuntimeError("the control run broke")
    assert calls[2:] == [("start", "worker-0-kubelet"), ("start", "worker-1-kubelet")]
