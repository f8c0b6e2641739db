"""The local cluster's control plane runs at a higher CPU priority than its nodes' pods (netns.CONTROL_PLANE_NICE).

kwokctl starts each component in a session of its own; with the kernel's autogroup scheduling each session weighs
1024 against a real node's cgroupRoot at 8192 (netns.NODE_CPU_SHARES), so pods spinning without a limit starved the
API server until it stopped answering (stop 53's CI). Each control-plane process now has its autogroup at niceness
-10, and its own niceness too for a kernel without autogroups. These tests give a real process that priority and
read it back from /proc.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from wincon.localcluster import netns


def test_a_command_is_started_at_the_control_plane_niceness_as_root_and_unchanged_otherwise(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert netns.at_control_plane_priority(["kwokctl", "start"]) == ["nice", "-n", "-10", "kwokctl", "start"]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert netns.at_control_plane_priority(["kwokctl", "start"]) == ["kwokctl", "start"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may raise a priority")
def test_a_process_started_so_runs_at_that_niceness():
    proc = subprocess.Popen(netns.at_control_plane_priority(["sleep", "30"]), start_new_session=True)
    try:
        time.sleep(0.2)  # nice execs sleep: read the process once it is sleep, not nice not yet run
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(fields[16]) == netns.CONTROL_PLANE_NICE  # proc(5) field 19: the 17th after the name
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="this kernel has no autogroup scheduling")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root may raise a priority")
def test_a_session_of_its_own_gets_its_autogroup_raised():
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        autogroup = Path(f"/proc/{proc.pid}/autogroup")
        assert autogroup.read_text().split()[-1] == "0"  # a fresh session starts at the default
        assert netns.raise_to_control_plane_priority(proc.pid)
        assert autogroup.read_text().split()[-1] == str(netns.CONTROL_PLANE_NICE)
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == netns.CONTROL_PLANE_NICE  # its own, and its threads'
    finally:
        proc.kill()
        proc.wait()


def test_a_process_gone_or_a_caller_not_root_sets_nothing(monkeypatch):
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not netns.raise_to_control_plane_priority(proc.pid)  # reaped: no /proc entry
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert not netns.raise_to_control_plane_priority(os.getpid())
