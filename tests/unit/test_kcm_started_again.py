"""A local cluster's start survives kube-controller-manager giving up its 10 s wait for the API server, and only that.

kube-controller-manager exits with "failed to wait for apiserver being healthy" when the API server's /healthz is not
ok within 10 s of its start (controllermanager.go:567 at v1.37.2). kwokctl starts both at once and never restarts
either, so on a loaded machine the start failed (stop 51's CI). ``cluster._check_alive`` now starts such a controller
manager again once /healthz is ok. The counter-cases: any other exit, of it or of another component, is still
reported at once, and so is a controller-manager that exits so more than KCM_STARTS_AGAIN times.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import cluster

WAITED_OUT = (
    'E1129 20:21:32.290551    9535 controllermanager.go:271] "Error building controller context" '
    'err="failed to wait for apiserver being healthy: timed out waiting for the condition: failed to get apiserver '
    '/healthz status: an error on the server (\\"[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\\")"'
)
BAD_FLAG = "Error: unknown flag: --no-such-flag"


class FakeCluster:
    """The components of one cluster as `components` reads them; a dead controller-manager until started again."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kcm_last_words: str, healthy: bool = True):
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.running = {comp: True for comp in cluster.COMPONENTS}
        self.running["kube-controller-manager"] = False
        self.log("kube-controller-manager").write_text(f"I1129 starting\n{kcm_last_words}\n")
        self.healthy = healthy
        self.starts = 0
        self.dies_again_with: str | None = None
        monkeypatch.setattr(cluster, "components", self.components)
        monkeypatch.setattr(cluster, "_api_healthy", lambda name: self.healthy)
        self.reaped = True
        monkeypatch.setattr(cluster, "_reaped", lambda pid: self.reaped)
        monkeypatch.setattr(cluster, "_kwokctl_start", self.kwokctl_start)

    def log(self, comp: str) -> Path:
        return self.logs / f"{comp}.log"

    def components(self, name: str) -> list[cluster.Component]:
        return [cluster.Component(c, 100 + i, self.running[c], self.log(c)) for i, c in enumerate(cluster.COMPONENTS)]

    def kwokctl_start(self, starting: cluster.Starting) -> None:
        self.starts += 1
        # kwokctl truncates the log of the component it starts
        self.log("kube-controller-manager").write_text("I1129 starting again\n")
        if self.dies_again_with:
            self.log("kube-controller-manager").write_text(f"I1129 starting again\n{self.dies_again_with}\n")
        else:
            self.running["kube-controller-manager"] = True


def starting(out: io.StringIO | None = None) -> cluster.Starting:
    return cluster.Starting("c1", Path("/nonexistent/bin"), out or io.StringIO(), set(cluster.COMPONENTS))


def test_a_controller_manager_that_gave_up_waiting_is_started_again_and_the_start_goes_on(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, WAITED_OUT)
    out = io.StringIO()
    seen = starting(out)
    cluster._check_alive(seen)
    assert fake.starts == 1 and fake.running["kube-controller-manager"]
    kept = fake.logs / "kube-controller-manager.exited-1.log"
    assert seen.kept_logs == [kept] and WAITED_OUT in kept.read_text()
    assert "starting it again (1 of at most 2)" in out.getvalue() and str(kept) in out.getvalue()
    cluster._check_alive(seen)  # running now: nothing more
    assert fake.starts == 1


def test_it_waits_for_the_api_server_to_be_healthy_before_starting_it_again(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, WAITED_OUT, healthy=False)
    seen = starting()
    cluster._check_alive(seen)  # no error: the caller's deadline bounds the wait
    assert fake.starts == 0 and seen.again == 0
    fake.healthy = True
    cluster._check_alive(seen)
    assert fake.starts == 1


def test_it_waits_for_the_exited_process_to_be_reaped_as_kwokctl_skips_a_pid_that_answers(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, WAITED_OUT)
    fake.reaped = False  # a zombie: signal 0 still reaches it
    seen = starting()
    cluster._check_alive(seen)
    assert fake.starts == 0 and seen.again == 0
    fake.reaped = True
    cluster._check_alive(seen)
    assert fake.starts == 1


def test_reaped_reads_signal_0_as_kwokctl_does():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    while proc.poll() is None:  # poll reaps it once it has exited
        pass
    assert cluster._reaped(proc.pid)
    assert not cluster._reaped(os.getpid())


def test_counter_case_a_controller_manager_that_exits_for_another_reason_is_reported_at_once(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, BAD_FLAG)
    with pytest.raises(LocalClusterError) as raised:
        cluster._check_alive(starting())
    assert raised.value.message.startswith("kube-controller-manager of cluster c1 exited while starting")
    assert BAD_FLAG in raised.value.message
    assert fake.starts == 0


def test_counter_case_another_component_with_the_same_words_is_reported_at_once(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, "I1129 fine")
    fake.running["kube-controller-manager"] = True
    fake.running["kube-scheduler"] = False
    fake.log("kube-scheduler").write_text(f"{WAITED_OUT}\n")
    with pytest.raises(LocalClusterError, match="kube-scheduler of cluster c1 exited while starting"):
        cluster._check_alive(starting())
    assert fake.starts == 0


def test_counter_case_a_controller_manager_that_keeps_giving_up_is_reported_with_every_log(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, WAITED_OUT)
    fake.dies_again_with = WAITED_OUT
    seen = starting()
    cluster._check_alive(seen)
    cluster._check_alive(seen)
    assert fake.starts == cluster.KCM_STARTS_AGAIN == 2
    with pytest.raises(LocalClusterError) as raised:
        cluster._check_alive(seen)
    message = raised.value.message
    assert message.startswith("kube-controller-manager of cluster c1 exited while starting")
    assert "failed to wait for apiserver being healthy" in message
    for n in (1, 2):
        assert str(fake.logs / f"kube-controller-manager.exited-{n}.log") in message
    assert fake.starts == 2


def test_counter_case_a_controller_manager_started_again_that_dies_otherwise_is_reported(tmp_path, monkeypatch):
    fake = FakeCluster(tmp_path, monkeypatch, WAITED_OUT)
    fake.dies_again_with = BAD_FLAG
    seen = starting()
    cluster._check_alive(seen)
    with pytest.raises(LocalClusterError) as raised:
        cluster._check_alive(seen)
    assert BAD_FLAG in raised.value.message and "exited-1.log" in raised.value.message
    assert fake.starts == 1
