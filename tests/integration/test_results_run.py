"""`wincon run` end to end: pytest's exit code, results, dashboard, Allure report, interrupted runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results.artifacts import load_run
from wincon.results.model import Verdict
from wincon.results.report import REPO

SUITE = '''
import os, signal, time
import pytest

pytestmark = pytest.mark.networking


@pytest.fixture(autouse=True)
def ran_on_a_windows_node(request):
    """As the placement check records a pod's node: the profile's win-0 is a real Windows node."""
    from wincon.clusterinfo import nodes

    if os.environ.get("NO_NODE") != "1":
        nodes.record_node(request.node, "win-0")


@pytest.mark.test_id("00000000-0000-4000-8000-000000000001")
def test_pod_to_pod():
    """Pod to pod works. 002_8a7e76f95009f44f.txt"""


@pytest.mark.test_id("00000000-0000-4000-8000-000000000002")
@pytest.mark.limitation("icmp-egress-through-vfp")
def test_icmp_egress_gets_a_reply():
    from wincon.commandline.errors import DeviationObserved

    raise DeviationObserved("no ICMP reply")


@pytest.mark.test_id("00000000-0000-4000-8000-000000000003")
def test_maybe_broken():
    assert os.environ.get("BREAK_IT") != "1", "the documented behaviour did not hold"


@pytest.mark.test_id("00000000-0000-4000-8000-000000000004")
def test_zz_maybe_killed():
    if os.environ.get("KILL_IT") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("HANG_IT") == "1":
        time.sleep(60)
'''

NEEDS_ALLURE = pytest.mark.skipif(
    not (REPO / "node_modules" / ".bin" / "allure").exists(), reason="allure-commandline not installed: run `npm ci`"
)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    synthetic.workspace(tmp_path, SUITE)
    monkeypatch.chdir(tmp_path)
    for name in ("BREAK_IT", "KILL_IT", "HANG_IT", "NO_NODE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


PYTEST_ARGS = ["--", "suites", *synthetic.WORKSPACE_ARGS]


def wincon_run(*args):
    return main(["run", *args, *PYTEST_ARGS])


@NEEDS_ALLURE
def test_a_passing_run_ends_with_the_dashboard_and_the_allure_report(workspace, capsys):
    results = workspace / "results" / "r1"
    assert wincon_run("--results-dir", str(results)) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"dashboard (1 runs): {results / 'dashboard' / 'index.html'}" in out
    assert f"allure report: {results / 'allure-report' / 'index.html'}" in out
    run = load_run(results)
    assert run.result == "SUCCESS"
    assert {c.verdict for c in run.cases} == {Verdict.PASSED, Verdict.XFAILED}
    assert len(list((results / "allure-results").glob("*-result.json"))) == 4
    assert (results / "allure-report" / "index.html").stat().st_size > 10_000
    data = (results / "dashboard" / "data.js").read_text()
    assert '"build":"' + run.build_id + '"' in data


def test_pytest_exit_codes_pass_through(workspace, monkeypatch, capsys):
    monkeypatch.setenv("BREAK_IT", "1")
    assert wincon_run("--results-dir", str(workspace / "results" / "fail"), "--no-report") == ExitCode.TESTS_FAILED
    assert load_run(workspace / "results" / "fail").result == "FAILURE"
    nothing = workspace / "results" / "none"
    assert main(["run", "--results-dir", str(nothing), "--no-report", *PYTEST_ARGS, "-k", "no_such_test"]) == 5
    assert "collected no tests: a selection that matches nothing is an error" in capsys.readouterr().err


def test_a_run_whose_windows_checks_reached_no_real_windows_node_exits_1(workspace, monkeypatch, capsys):
    """No green on a lie (issue 31 item 6): every check passes, but none ran on the profile's real Windows nodes."""
    monkeypatch.setenv("NO_NODE", "1")
    results = workspace / "results" / "nowhere"
    assert wincon_run("--results-dir", str(results), "-n", "0", "--no-report") == ExitCode.TESTS_FAILED
    captured = capsys.readouterr()
    assert "wincon run: error: no Windows check executed on a real Windows node (win-0, win-1)" in captured.err
    assert load_run(results).result == "FAILURE"
    assert load_run(results).metadata["windows-execution"]["executed-on-real-windows-nodes"] == "0"


def test_default_results_dir_is_results_run_id_and_history_builds_up(workspace, capsys):
    assert wincon_run("-n", "0") == ExitCode.OK
    assert wincon_run("-n", "0") == ExitCode.OK
    runs = sorted(p for p in (workspace / "results").iterdir() if p.is_dir())
    assert len(runs) == 2
    first, second = (load_run(p) for p in runs)
    assert int(second.build_id) > int(first.build_id)
    assert first.metadata["run-id"] == runs[0].name  # results/<run-id>
    assert "dashboard (2 runs)" in capsys.readouterr().out


def test_a_killed_pytest_leaves_an_aborted_run_not_a_half_written_one(workspace, monkeypatch, capsys):
    monkeypatch.setenv("KILL_IT", "1")
    results = workspace / "results" / "killed"
    assert wincon_run("--results-dir", str(results), "-n", "0", "--no-report") == ExitCode.INTERRUPTED
    assert "marked ABORTED" in capsys.readouterr().err
    run = load_run(results)
    assert run.result == "ABORTED"
    assert run.finished["metadata"]["pytest-exit-code"] == "signal SIGKILL"
    assert {c.name.rsplit("::", 1)[1] for c in run.cases} >= {"test_pod_to_pod", "test_maybe_broken"}


def test_sigterm_to_wincon_run_stops_pytest_in_order(workspace):
    results = workspace / "results" / "term"
    env = {**os.environ, "HANG_IT": "1"}
    command = [sys.executable, "-m", "wincon", "run", "--results-dir", str(results), "--no-report", *PYTEST_ARGS]
    proc = subprocess.Popen(command, cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _running_last_test(results):
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == ExitCode.INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
    run = load_run(results)
    assert run.result == "ABORTED"
    assert run.finished["metadata"]["pytest-exit-code"] == "2"  # pytest finished it itself


def _running_last_test(results: Path) -> bool:
    """The JUnit file is rewritten before each test starts: three cases in it means the hang began."""
    junit = list((results / "artifacts").glob("junit*.xml")) if (results / "artifacts").is_dir() else []
    return bool(junit) and junit[0].read_text().count("<testcase ") >= 3


def test_local_starts_the_cluster_and_runs_against_its_kubeconfig(workspace, monkeypatch, capsys):
    import wincon.localcluster.cluster as cluster

    started = []
    kubeconfig = workspace / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")

    def fake_up(name=None, **kwargs):
        started.append(name)
        return kubeconfig

    monkeypatch.setattr(cluster, "up", fake_up)
    results = workspace / "results" / "local"
    assert wincon_run("--local", "--results-dir", str(results), "-n", "0", "--no-report") == ExitCode.OK
    assert started == ["wincon"]
    assert f"--kubeconfig {kubeconfig}" in capsys.readouterr().err  # the command line it ran


def test_a_results_dir_that_holds_a_run_is_refused_before_anything_runs(workspace, capsys):
    results = workspace / "results" / "r1"
    assert wincon_run("--results-dir", str(results), "-n", "0", "--no-report") == ExitCode.OK
    assert wincon_run("--results-dir", str(results), "-n", "0", "--no-report") == ExitCode.USAGE
    assert "already holds a run" in capsys.readouterr().err
