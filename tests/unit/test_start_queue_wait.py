"""A cluster's start timeout counts its own start only, not the wait for another cluster's.

``cluster._start`` takes the machine-wide creation lock (kwokctl's free-port probe makes two creates at once pick
the same ports), so a cluster started beside others queues behind their starts. That wait used to count against
the queued cluster's whole ``up`` timeout: behind two busy starts, the third ran out of time waiting for its own
add-ons (stop 53's CI: "timed out waiting for kube-router", after "waiting for another cluster to finish
starting"). The wait now moves the deadline by the time waited (``Starting.waited``, which ``up`` adds to the
deadline it hands on). The counter-case: a start that itself does not finish still times out, queued or not.

The project's tests also give their clusters a longer window than a user's default (tests/support/clusters.py
START_WITHIN: a test cluster starts beside up to four others on two cores); its counter-case is the last test here,
an add-on that never becomes available still timing out at its deadline.
"""

from __future__ import annotations

import fcntl
import io
import threading
import time
from pathlib import Path

import pytest

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import cluster

QUEUED = 1.0  # s another cluster's start holds the creation lock
OWN = 0.5  # s this cluster's own timeout: shorter than the queue, longer than the fake kwokctl's quick run


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Cache and kwok work directory under ``tmp_path``; component checks off. Returns the fake binaries' dir."""
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KWOK_WORKDIR", str(tmp_path / "kwok"))
    monkeypatch.setattr(cluster, "_check_alive", lambda starting: None)
    (tmp_path / "kwok").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    return bindir


def fake_kwokctl(bindir: Path, seconds: float) -> None:
    script = bindir / "kwokctl"
    script.write_text(f"#!/bin/sh\nsleep {seconds}\n")
    script.chmod(0o755)


def held_by_another_start(seconds: float) -> threading.Thread:
    """Another cluster's start: holds the creation lock for ``seconds`` from now (returns once it holds it)."""
    path = cluster.paths.kwok_workdir() / "wincon-create.lock"
    holding = threading.Event()

    def hold() -> None:
        with path.open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            holding.set()
            time.sleep(seconds)
            fcntl.flock(fh, fcntl.LOCK_UN)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert holding.wait(5)
    return thread


def start(bindir: Path, deadline: float) -> cluster.Starting:
    return cluster._start("c1", bindir, None, [], deadline, io.StringIO(), "v1.37.2")


def test_the_wait_for_another_clusters_start_is_not_counted_against_the_timeout(machine: Path):
    fake_kwokctl(machine, 0.1)
    other = held_by_another_start(QUEUED)
    starting = start(machine, time.monotonic() + OWN)  # before: "did not finish in time" once the lock was free
    other.join()
    assert starting.waited >= QUEUED - 0.1


def test_a_queued_start_that_does_not_finish_still_times_out(machine: Path):
    fake_kwokctl(machine, 30)
    other = held_by_another_start(QUEUED)
    began = time.monotonic()
    with pytest.raises(LocalClusterError, match="kwokctl create cluster did not finish in time"):
        start(machine, began + OWN)
    other.join()
    assert QUEUED + OWN <= time.monotonic() - began < 10  # its own OWN s after the queue, not kwokctl's 30


def test_an_unqueued_start_waits_nothing_and_times_out_on_its_own_deadline(machine: Path):
    fake_kwokctl(machine, 30)
    began = time.monotonic()
    with pytest.raises(LocalClusterError, match="did not finish in time"):
        start(machine, began + OWN)
    assert time.monotonic() - began < QUEUED + OWN


def test_up_hands_the_provisioning_the_deadline_moved_by_the_wait(machine: Path, monkeypatch: pytest.MonkeyPatch):
    """``up`` passes ``deadline + starting.waited`` on: the add-on waits after the start get their whole share."""
    seen: dict[str, float] = {}

    def fake_start(name, bindir, port, extra, deadline, out, version, plan, topology):  # noqa: ANN001, ANN202
        seen["start"] = deadline
        return cluster.Starting(name, bindir, out, set(cluster.COMPONENTS), waited=42.0)

    def fake_provision(name, topology, deadline, starting, release, plan, **kw):  # noqa: ANN001, ANN003, ANN202
        seen["provision"] = deadline
        return Path("/nonexistent/kubeconfig")

    monkeypatch.setattr(cluster, "_start", fake_start)
    monkeypatch.setattr(cluster, "_provision", fake_provision)
    monkeypatch.setattr(cluster.build, "require_binaries", lambda minor: machine)
    topology = cluster.Topology(real_nodes=0)
    cluster.up("c1", topology, timeout=100, out=io.StringIO())
    assert seen["provision"] == pytest.approx(seen["start"] + 42.0)


def test_an_add_on_that_never_becomes_available_still_times_out_at_the_deadline(
    machine: Path, monkeypatch: pytest.MonkeyPatch
):
    """The counter-case of the project's tests' longer start window (tests/support/clusters.py START_WITHIN): the
    last add-on wait, where two CI runs ran out of the 120 s, still ends at its deadline with the add-on named."""
    monkeypatch.setattr(cluster, "components", lambda name: [])
    starting = cluster.Starting("c1", machine, io.StringIO(), set(cluster.COMPONENTS))
    began = time.monotonic()
    with pytest.raises(LocalClusterError, match="c1: timed out waiting for kube-router to be available"):
        cluster._wait("kube-router to be available", lambda: None, began + OWN, starting)
    assert OWN <= time.monotonic() - began < OWN + 2
