"""dataplane.restart_process returns only once the process runs its own program and stays up; one that exits
as it starts raises with its log, instead of a caller finding no process a moment later."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from wincon.commandline.errors import LocalClusterError
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


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A process that serves 200 on /healthz only after `delay` s (as an add-on whose health endpoint comes up late).
LATE_SERVER = """
import http.server, sys, time
time.sleep(float(sys.argv[2]))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def recorded_ready(root: Path, name: str, args: list[str], ready: dict[str, str]) -> Path:
    log = recorded(root, name, args)
    cmd = root / "c" / "pids" / f"{name}.cmd"
    cmd.write_text(json.dumps({**json.loads(cmd.read_text()), "ready": ready}))
    return log


def test_a_restart_waits_for_the_health_endpoint_it_was_started_with(cluster_root: Path) -> None:
    import time
    import urllib.request

    port = free_port()
    url = f"http://127.0.0.1:{port}/healthz"
    recorded_ready(cluster_root, "late", [sys.executable, "-c", LATE_SERVER, str(port), "1.5"], {"url": url})
    start = time.monotonic()
    pid = dataplane.restart_process("c", "late", settle=0.2)
    try:
        assert time.monotonic() - start >= 1.5  # not returned while it ran without serving
        with urllib.request.urlopen(url, timeout=2) as answer:
            assert answer.status == 200
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_restart_waits_for_its_ready_line_printed_after_the_restart_only(cluster_root: Path) -> None:
    import time

    printer = (
        "import time, sys; time.sleep(1.2); print('Starting network policy controller', flush=True); time.sleep(60)"
    )
    log = recorded_ready(cluster_root, "printer", [sys.executable, "-c", printer], {"log": "Starting network policy"})
    log.write_text("Starting network policy controller\n")  # the line of the run before the stop: not this run's
    start = time.monotonic()
    pid = dataplane.restart_process("c", "printer", settle=0.2)
    try:
        assert time.monotonic() - start >= 1.2
        assert log.read_text().count("Starting network policy controller") == 2
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_process_that_runs_but_never_shows_it_is_up_raises_naming_what_it_lacks(cluster_root: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/healthz"
    silent = "print('syncing caches', flush=True); import time; time.sleep(60)"
    recorded_ready(cluster_root, "silent", [sys.executable, "-c", silent], {"url": url, "log": "serving"})
    with pytest.raises(LocalClusterError) as raised:
        dataplane.restart_process("c", "silent", settle=0.2, ready_within=1.0)
    message = raised.value.message
    assert "silent of cluster c" in message and "runs but is not up 1 s after being started again" in message
    assert url in message and "'serving'" in message
    assert "syncing caches" in message  # its log's last lines
    pid = int((cluster_root / "c" / "pids" / "silent.pid").read_text())
    os.kill(pid, signal.SIGKILL)


def test_a_process_that_exits_before_it_is_up_raises_with_its_log(cluster_root: Path) -> None:
    port = free_port()
    dies = "import time; time.sleep(0.6); print('failed to identify the node', flush=True); raise SystemExit(1)"
    recorded_ready(cluster_root, "dies", [sys.executable, "-c", dies], {"url": f"http://127.0.0.1:{port}/healthz"})
    with pytest.raises(LocalClusterError) as raised:
        dataplane.restart_process("c", "dies", settle=0.2)
    assert "dies of cluster c exited as it was started again" in raised.value.message
    assert "failed to identify the node" in raised.value.message


def test_ready_problem_names_each_signal_missing_and_none_once_all_hold(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("old: serving\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}/healthz"
    problem = dataplane.ready_problem({"url": url, "log": "serving"}, log, offset=log.stat().st_size)
    assert problem is not None and url in problem and "'serving'" in problem
    with log.open("a") as fh:
        fh.write("new: serving\n")
    assert dataplane.ready_problem({"log": "serving"}, log, offset=len("old: serving\n")) is None
