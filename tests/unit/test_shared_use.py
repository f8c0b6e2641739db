"""The shared test cluster's use lock: tests share it, a test that stops one of the cluster's processes waits
until it is alone, and keeps the others out meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.shared_use import CPU_LOCK, holding, measuring_cpu

REPO = Path(__file__).resolve().parents[2]


def test_shares_coexist(tmp_path: Path) -> None:
    lock = tmp_path / "use.lock"
    with holding(lock, exclusive=False, wait=0.5), holding(lock, exclusive=False, wait=0.5):
        assert lock.is_file()


def test_exclusive_use_waits_for_every_share_and_keeps_shares_out(tmp_path: Path) -> None:
    lock = tmp_path / "use.lock"
    with holding(lock, exclusive=False, wait=0.5):
        with pytest.raises(TimeoutError, match="no exclusive use of the shared test cluster within 0 s"):
            with holding(lock, exclusive=True, wait=0.3):
                pass
    with holding(lock, exclusive=True, wait=0.5):
        with pytest.raises(TimeoutError, match="no shared use"):
            with holding(lock, exclusive=False, wait=0.3):
                pass
    with holding(lock, exclusive=True, wait=0.5):  # released by both blocks above
        pass


def test_one_cpu_measuring_run_at_a_time_across_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU-measuring slot is one per machine (under the wincon cache), held across processes: a second taker
    (another xdist worker, another test run) waits, and names the slot when it gives up; it is free afterwards."""
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    taker = (
        "import sys\n"
        "from tests.support.shared_use import measuring_cpu\n"
        "try:\n"
        "    with measuring_cpu(wait=0.3):\n"
        "        print('held')\n"
        "except TimeoutError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def other_process() -> str:
        done = subprocess.run([sys.executable, "-c", taker], env=env, capture_output=True, text=True, timeout=60)
        return done.stdout.strip()

    with measuring_cpu(wait=0.5):
        assert (tmp_path / "locks" / CPU_LOCK).is_file()
        assert other_process().startswith("no exclusive use of the machine's CPU-measuring slot within 0 s")
    assert other_process() == "held"
