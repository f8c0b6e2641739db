"""The memory checks whose documented deviation is "nothing happened" claim it only once their load was seen held.

An independent read of the suite (the twenty-sixth session) found three checks that took a wait running out (or a
container ending by itself) for the deviation without ever showing that the pod held the memory it was to commit:
the no-OOM-killer check (lifecycle), the MemoryPressure check and the beyond-allocatable check (compute). Each is
run here on fakes whose stats/summary reading (``wincon.checks.memory.working_set``) is given: the deviation needs
the reading; without it the cluster could not apply the load, an error; the behaviour itself still passes.
"""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.checks import memory
from wincon.checks.memory import MIB, Peak
from wincon.commandline.errors import DeviationObserved, InfrastructureError, NotTheDeviation

COMPUTE = suites.load("suites/scheduling/test_compute_limitations.py")
LIFECYCLE = suites.load("suites/lifecycle/test_lifecycle.py")
ALLOCATABLE = 8 * 1024 * MIB


def no_gate(what, where=None, pod_node=None):
    pass


def readings(monkeypatch, values: list[int | None]) -> None:
    """stats/summary's working set of the pod, one value per reading (the last one repeated)."""
    left = list(values)
    monkeypatch.setattr(memory, "working_set", lambda *a: left.pop(0) if len(left) > 1 else left[0])


def test_peak_keeps_the_largest_reading_and_says_what_was_read(monkeypatch):
    readings(monkeypatch, [None, 150 * MIB, 199 * MIB, 120 * MIB])
    peak = Peak(None, "win-0", "hog", "ns")
    assert not peak.reached(1) and "did not list pod hog in 0" in peak.describe()
    for _ in range(4):
        peak.read()
    assert peak.reached(199 * MIB) and not peak.reached(200 * MIB)
    assert peak.describe() == "pod hog's largest working set was 199 MiB over 4 readings"


# --------------------------------------------------------------------------- no-oom-killer (lifecycle)


def container_ended(reason: str | None, code: int = 0) -> Any:
    terminated = NS(reason=reason, exit_code=code) if reason else None
    return NS(status=NS(phase="Running", container_statuses=[NS(state=NS(terminated=terminated))]))


def oom(monkeypatch, reads: list[int | None], end: str | None, code: int = 0) -> None:
    """The check on a Windows node whose container ends ``end`` (None: it runs on) after ``reads``."""
    readings(monkeypatch, reads)
    running = NS(
        spec=NS(node_name="win-0"), status=NS(phase="Running", container_statuses=[NS(state=NS(terminated=None))])
    )
    states = [running] * (len(reads) - 1) + [container_ended(end, code)]
    monkeypatch.setattr(LIFECYCLE, "windows_pod", lambda *a, **k: {})
    monkeypatch.setattr(LIFECYCLE, "wait_for_pod", lambda *a, **k: running)
    monkeypatch.setattr(LIFECYCLE, "call", lambda *a, **k: states.pop(0) if len(states) > 1 else states[0])
    kube = fakes.CommandKube()
    kube.api_client, kube.pod_start_timeout, kube.core = None, 300, NS(read_namespaced_pod=None)
    LIFECYCLE.test_container_over_its_memory_limit_is_oom_killed(kube, NS(), 26100, no_gate, "windows")


def test_an_oom_kill_passes_and_a_limit_held_without_one_is_the_deviation(monkeypatch, clock):
    oom(monkeypatch, [None], "OOMKilled", 137)
    with pytest.raises(DeviationObserved, match="no-oom-killer"):
        oom(monkeypatch, [120 * MIB, 199 * MIB], None)  # held its limit, ran on past the wait
    with pytest.raises(DeviationObserved, match="no-oom-killer"):
        oom(monkeypatch, [120 * MIB, 199 * MIB, 199 * MIB], "Error", 1)  # held it, then its next commit failed


def test_a_container_never_seen_holding_its_limit_is_an_error_not_the_deviation(monkeypatch, clock):
    """Before: "still running", "Error" and "Completed" were the deviation whatever the container held."""
    with pytest.raises(InfrastructureError, match="never shown applied.*largest working set was 12 MiB"):
        oom(monkeypatch, [12 * MIB], None)  # its first commit refused: it sits idle
    with pytest.raises(InfrastructureError, match="ended Error \\(exit 1\\) before it was seen holding its 200Mi"):
        oom(monkeypatch, [None, None], "Error", 1)
    with pytest.raises(InfrastructureError, match="ended Completed"):
        oom(monkeypatch, [5 * MIB, 5 * MIB], "Completed", 0)


def test_the_hog_counts_as_holding_its_limit_from_90_percent_and_not_below(monkeypatch, clock):
    """OOM_HELD (0.9 of 200Mi, 180 MiB): the bound itself, both sides of it."""
    with pytest.raises(DeviationObserved, match="no-oom-killer"):
        oom(monkeypatch, [180 * MIB], None)
    with pytest.raises(InfrastructureError, match="largest working set was 179 MiB"):
        oom(monkeypatch, [179 * MIB], None)


# --------------------------------------------------------------------------- memory-pressure-not-reported (compute)


def pressure(monkeypatch, outcomes: list[str | None], condition: str = "False") -> None:
    """The MemoryPressure check; its pod's ``outcome`` one per poll (the last repeated), the node's condition."""
    left = list(outcomes)
    monkeypatch.setattr(COMPUTE, "target_node", lambda profile, build: "win-0")
    monkeypatch.setattr(COMPUTE, "node_memory", lambda kube, node, field: ALLOCATABLE)
    monkeypatch.setattr(COMPUTE, "memory_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "node_condition", lambda kube, node, kind: NS(status=condition))
    monkeypatch.setattr(COMPUTE, "outcome", lambda kube, name: left.pop(0) if len(left) > 1 else left[0])
    kube = fakes.CommandKube(pods={"pressure": NS(spec=NS(node_name="win-0"))})
    COMPUTE.test_node_reports_memory_pressure_when_its_memory_runs_out(kube, NS(profile=None), 26100, no_gate, [])


def test_pressure_reported_passes_and_none_while_the_load_was_held_is_the_deviation(monkeypatch, clock):
    pressure(monkeypatch, [None], condition="True")
    pressure(monkeypatch, [None, "allocated", "terminated: Evicted"])
    with pytest.raises(DeviationObserved, match="memory-pressure-not-reported"):
        pressure(monkeypatch, [None, "allocated"])


def test_a_pressure_load_never_held_or_ended_by_itself_is_an_error(monkeypatch, clock):
    """Before: a pod whose allocation failed at once let the 300 s run out, read as "no MemoryPressure"."""
    with pytest.raises(InfrastructureError, match="never reached 95 % of 8192 MiB"):
        pressure(monkeypatch, [None])
    with pytest.raises(InfrastructureError, match="ended \\(terminated: Error \\(exit 1\\)\\) before"):
        pressure(monkeypatch, [None, "terminated: Error (exit 1)"])


# --------------------------------------------------------------------------- enforce-node-allocatable (compute)


def beyond(monkeypatch, reads: list[int | None], outcomes: list[str | None]) -> None:
    """The beyond-allocatable check; its pod's ``outcome`` one per poll (the last repeated), and while it runs the
    working set ``outcome`` reads into the check's Peak, one of ``reads`` per poll."""
    readings(monkeypatch, reads)
    left = list(outcomes)

    def outcome(kube, name, peak=None):
        result = left.pop(0) if len(left) > 1 else left[0]
        if peak is not None and not (result and "terminated" in result):
            peak.read()
        return result

    monkeypatch.setattr(COMPUTE, "target_node", lambda profile, build: "win-0")
    monkeypatch.setattr(COMPUTE, "node_memory", lambda kube, node, field: ALLOCATABLE)
    monkeypatch.setattr(COMPUTE, "memory_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "outcome", outcome)
    kube = fakes.CommandKube(pods={"beyond": NS(spec=NS(node_name="win-0"))})
    kube.api_client = None
    COMPUTE.test_pods_beyond_allocatable_memory_are_evicted(kube, NS(profile=None), 26100, no_gate, [])


def test_an_eviction_passes_and_a_pod_held_beyond_allocatable_left_running_is_the_deviation(monkeypatch, clock):
    beyond(monkeypatch, [None], [None, "terminated: Evicted"])
    with pytest.raises(DeviationObserved, match="enforce-node-allocatable-not-implemented"):
        beyond(monkeypatch, [4096 * MIB, ALLOCATABLE + 300 * MIB], [None])


def test_a_pod_never_seen_beyond_allocatable_is_an_error_and_one_that_ended_after_is_a_failure(monkeypatch, clock):
    """Before: a pod that never held more than allocatable, left running, was the deviation."""
    with pytest.raises(InfrastructureError, match="never seen holding more than the node's allocatable 8192 MiB"):
        beyond(monkeypatch, [ALLOCATABLE - 600 * MIB], [None])
    with pytest.raises(InfrastructureError, match="ended \\(terminated: Error \\(exit 1\\)\\) before"):
        beyond(monkeypatch, [None], [None, "terminated: Error (exit 1)"])
    with pytest.raises(NotTheDeviation, match="terminated: Error"):
        beyond(monkeypatch, [ALLOCATABLE + 300 * MIB], [None, None, "terminated: Error (exit 1)"])
