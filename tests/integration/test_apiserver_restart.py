"""A run survives a kube-apiserver restart in its middle: transient errors are retried, not failed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wincon.localcluster import cluster as localcluster
from wincon.localcluster import procs
from wincon.localcluster.topology import Topology

REPO = Path(__file__).resolve().parents[2]
NAME = "wincon-restart"

SUITE = """
import time
import pytest
from kubernetes import client
from wincon.cluster.client import call

@pytest.mark.api
@pytest.mark.test_id("00000000-0000-4000-8000-0000000000dd")
def test_keeps_working_through_a_restart(wincon, namespace):
    core = client.CoreV1Api(wincon.api_client)
    with open("{marker}", "w") as f:
        f.write("started")
    for i in range(30):
        call(core.create_namespaced_config_map, namespace, {{"metadata": {{"name": f"c{{i}}"}}}})
        time.sleep(0.5)
    names = {{c.metadata.name for c in call(core.list_namespaced_config_map, namespace).items}}
    assert {{f"c{{i}}" for i in range(30)}} <= names
"""


def _port(argv: list[bytes]) -> int:
    return int(next(a for a in argv if a.startswith(b"--secure-port=")).split(b"=", 1)[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def restart_apiserver(name: str, downtime: float = 3.0) -> None:
    """Stop kube-apiserver, keep it down for ``downtime`` s, and start it again exactly as it ran."""
    comp = next(c for c in localcluster.components(name) if c.name == "kube-apiserver")
    assert comp.running and comp.pid
    argv = Path(f"/proc/{comp.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    cwd = os.readlink(f"/proc/{comp.pid}/cwd")
    env = dict(
        line.split(b"=", 1) for line in Path(f"/proc/{comp.pid}/environ").read_bytes().split(b"\0") if b"=" in line
    )
    port = _port(argv)
    os.kill(comp.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while (procs.cmdline(comp.pid) or _port_open(port)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _port_open(port), "the old kube-apiserver still holds its port"
    time.sleep(downtime)
    with open(comp.log, "ab") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=log, start_new_session=True)
    (comp.log.parent.parent / "pids" / "kube-apiserver.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + 60
    while not _port_open(port) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None and _port_open(port), f"the restarted kube-apiserver did not come back: see {comp.log}"


def _ephemeral_port() -> int:
    """A free port from the OS's ephemeral range (32768 and up).

    kwokctl probes for free ports from 32767 down, so while this cluster's API server is down no other
    cluster started meanwhile (the integration tests run under xdist) can take its port.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def restart_cluster():
    kubeconfig = localcluster.up(NAME, Topology(dataplane="none"), port=_ephemeral_port())
    try:
        yield kubeconfig
    finally:
        localcluster.down(NAME)


def test_a_run_survives_a_kube_apiserver_restart(tmp_path, restart_cluster):
    suites = tmp_path / "suites"
    suites.mkdir()
    marker = tmp_path / "started"
    (suites / "test_restart.py").write_text(textwrap.dedent(SUITE.format(marker=marker)))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(suites),
        "--kubeconfig",
        str(restart_cluster),
        "-q",
        "-p",
        "no:cacheprovider",
        "--results-dir",
        str(tmp_path / "results"),
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), proc.communicate()[0][-3000:]
    time.sleep(2)
    restart_apiserver(NAME)
    output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, output[-4000:]
    assert "1 passed" in output
