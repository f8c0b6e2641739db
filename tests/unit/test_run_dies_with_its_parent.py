"""A SIGKILL of `wincon run` (what a CI cancel sends) stops its pytest and that pytest's xdist workers (issue 42).

`wincon run` starts its pytest in a session of its own (setsid), so that a terminal's Ctrl-C reaches pytest once,
through `wincon run`'s forwarding; a signal to `wincon run`'s process group therefore never reached them, and
before this change they ran on detached (measured in the issue: 3 minutes after the kill, still running and
creating namespaces). Now pytest asks Linux to SIGKILL it when `wincon run` dies, and each worker when pytest dies
(wincon.session.context.die_with_parent, prctl PR_SET_PDEATHSIG).

The run here is a real `wincon run -n 2` of two tests that record their process and its parent, then sleep: the
pids are the workers' and pytest's own, read from the processes themselves, not assumed. Ctrl-C/SIGTERM keep
their orderly stop (exit 2, every process gone): the second test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl PR_SET_PDEATHSIG is Linux's")

SLEEPER = """
import os, pathlib, time

def _record(n):
    pathlib.Path(os.environ["WINCON_TEST_PIDS"], f"{n}-{os.getpid()}").write_text(str(os.getppid()))
    time.sleep(300)

def test_one():
    _record(1)

def test_two():
    _record(2)
"""


def running(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie (dead, not yet reaped by whoever adopted it) runs nothing."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def start_run(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int], int]:
    """A `wincon run -n 2` whose two tests sleep: (its process, the workers' pids, pytest's pid)."""
    (tmp_path / "test_sleeper.py").write_text(SLEEPER)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "WINCON_TEST_PIDS": str(pids)}
    env.pop("WINCON_PARENT_PID", None)
    command = [sys.executable, "-m", "wincon", "run", "--results-dir", str(tmp_path / "results"), "--no-report"]
    command += ["-n", "2", "--", str(tmp_path / "test_sleeper.py"), "-p", "no:randomly", "-p", "no:cacheprovider"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while len(list(pids.iterdir())) < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"the run's two tests did not start (wincon run exit {proc.poll()})")
        time.sleep(0.2)
    workers = sorted(int(f.name.split("-")[1]) for f in pids.iterdir())
    controllers = {int(f.read_text()) for f in pids.iterdir()}
    assert len(controllers) == 1 and len(set(workers)) == 2, (controllers, workers)
    return proc, workers, controllers.pop()


def kill_left(pids: list[int]) -> None:
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_sigkill_of_wincon_run_stops_its_pytest_and_workers_within_5_seconds(tmp_path):
    proc, workers, controller = start_run(tmp_path)
    try:
        assert all(running(pid) for pid in [controller, *workers])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed = time.monotonic()
        while time.monotonic() - killed < 5 and any(running(pid) for pid in [controller, *workers]):
            time.sleep(0.1)
        left = [pid for pid in [controller, *workers] if running(pid)]
        assert not left, f"still running 5 s after the SIGKILL of wincon run: {left} (pytest {controller})"
    finally:
        kill_left([controller, *workers])


def test_sigterm_still_stops_the_run_in_order(tmp_path):
    proc, workers, controller = start_run(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 2  # interrupted: pytest got one SIGINT and finished in order
        assert not any(running(pid) for pid in [controller, *workers])
    finally:
        kill_left([controller, *workers])
