"""dataplane.restart_process returns only once the process runs its own program and stays up; one that exits
as it starts raises with its log, instead of a caller finding no process a moment later."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from wincon.errors import LocalClusterError
from wincon.localcluster import dataplane, netns, procs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="nsenter into a network namespace needs root")


@pytest.fixture
def cluster_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(dataplane, "root", lambda cluster: tmp_path / cluster)
    monkeypatch.setattr(netns, "NETNS_DIR", Path("/proc/self/ns"))  # nsenter --net=/proc/self/ns/net: this one
    return tmp_path


def recorded(root: Path, name: str, args: list[str]) -> Path:
    pids = root / "c" / "pids"
    pids.mkdir(parents=True)
    log = root / f"{name}.log"
    (pids / f"{name}.cmd").write_text(json.dumps({"ns": "net", "args": args, "log": str(log)}))
    return log


def test_a_restarted_process_is_returned_running_its_own_program(cluster_root: Path) -> None:
    marker = str(cluster_root / "c") + "/"
    recorded(cluster_root, "sleeper", [sys.executable, "-c", "import time; time.sleep(60)", marker])
    pid = dataplane.restart_process("c", "sleeper", settle=0.3)
    try:
        line = procs.cmdline(pid)
        assert line is not None and line.split(" ", 1)[0] == sys.executable, line
        assert marker in line
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_process_that_exits_as_it_starts_raises_with_its_log(cluster_root: Path) -> None:
    log = recorded(
        cluster_root, "crasher", [sys.executable, "-c", "print('cannot reach the API'); raise SystemExit(1)"]
    )
    with pytest.raises(LocalClusterError) as raised:
        dataplane.restart_process("c", "crasher", settle=5.0)
    assert "crasher of cluster c exited as it was started again" in raised.value.message
    assert "cannot reach the API" in raised.value.message
    assert str(log) in raised.value.message
