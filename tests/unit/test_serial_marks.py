"""The serial phase holds only what must be alone (issue 22, item 3): every ``serial`` mark in suites/ says why,
and the phase `wincon run` gives the serial and disruptive tests selects exactly those, collected from the real
suites against a profile file (no cluster)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.unit.test_controls import profile
from wincon.results.runner import phase_args

REPO = Path(__file__).resolve().parents[2]
SERIAL = re.compile(r"pytest\.mark\.serial\b")

# What must be alone, and why (the comment at each mark says the same).
MUST_BE_ALONE = {
    "suites/hostprocess/test_host_process_in_practice.py::test_kubelet_counts_started_and_failed_host_process_containers":
        "node-wide kubelet counters other HostProcess pods raise too",
    "suites/node/test_density.py::test_ten_pods_on_one_windows_node_start_within_the_latency_limits[linux]":
        "pod start latency",
    "suites/node/test_density.py::test_ten_pods_on_one_windows_node_start_within_the_latency_limits[windows]":
        "pod start latency",
    "suites/node/test_disruptive.py::test_rebooted_windows_node_comes_back_ready_and_restarts_its_pods": "reboots",
    "suites/node/test_disruptive.py::test_graceful_node_shutdown_gives_pods_their_grace_periods": "shuts down",
    "suites/node/test_eviction.py::test_greedy_pod_is_evicted_under_memory_pressure_and_the_node_recovers": "evicts",
    "suites/node/test_kubelet.py::test_stats_summary_answers_within_10_seconds_with_10_pods[linux]":
        "/stats/summary latency with its 10 pods",
    "suites/node/test_kubelet.py::test_stats_summary_answers_within_10_seconds_with_10_pods[windows]":
        "/stats/summary latency with its 10 pods",
    "suites/scheduling/test_compute_limitations.py::test_node_reports_memory_pressure_when_its_memory_runs_out":
        "exhausts memory",
    "suites/scheduling/test_compute_limitations.py::test_pods_beyond_allocatable_memory_are_evicted":
        "exhausts memory",
    "suites/scheduling/test_compute_limitations.py::test_kubelet_stays_responsive_when_host_processes_exhaust_memory":
        "exhausts memory",
    "suites/scheduling/test_compute_limitations.py::test_requested_memory_is_granted_on_an_overprovisioned_node":
        "exhausts memory",
    "suites/scheduling/test_compute_limitations.py::test_cpu_limit_caps_a_busy_container[linux]":
        "its unlimited twin must be given more than the limit",
    "suites/scheduling/test_compute_limitations.py::test_cpu_limit_caps_a_busy_container[windows]":
        "its unlimited twin must be given more than the limit",
    "suites/scheduling/test_cpu_limits.py::test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it[linux]":
        "reads the pods' CPU use beside no other load",
    "suites/scheduling/test_cpu_limits.py::test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it[windows]":
        "reads the pods' CPU use beside no other load",
    "suites/scheduling/test_memory_limits.py::test_pod_past_allocatable_memory_fails_scheduling_for_insufficient_memory":
        "fills every Windows node's memory",
    "suites/scheduling/test_preemption_and_quota.py::test_scheduler_preempts_a_lower_priority_windows_pod":
        "fills a node's CPU, preempts",
    "suites/scheduling/test_resources.py::test_requests_are_subtracted_from_allocatable_until_failed_scheduling":
        "fills a node's CPU",
    "suites/scheduling/test_taints_and_runtimeclass.py::test_tainted_windows_node_takes_only_pods_with_the_matching_toleration":
        "taints a node",
}  # fmt: skip


def reason_of(lines: list[str], index: int) -> str:
    """The comment that says why the mark at ``lines[index]``: on its line, or the comment block right above."""
    line = lines[index]
    if "#" in line.split("pytest.mark.serial", 1)[1]:
        return line.split("#", 1)[1].strip()
    block = []
    for above in reversed(lines[:index]):
        if not above.strip().startswith("#"):
            break
        block.insert(0, above.strip().lstrip("#").strip())
    return " ".join(block)


def test_every_serial_mark_says_why_it_must_be_alone():
    marks = 0
    for path in sorted((REPO / "suites").rglob("*.py")):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if SERIAL.search(line) and not line.lstrip().startswith("#"):
                marks += 1
                reason = reason_of(lines, index)
                assert len(reason.split()) >= 5, (
                    f"{path.relative_to(REPO)}:{index + 1}: a serial mark without its reason"
                )
    assert marks >= 10  # the grep found the marks (the suites' serial checks, not an empty tree)


def collect(tmp_path: Path, serial: bool) -> list[str]:
    """The node ids `wincon run`'s phase selects from suites/, in the order it runs them, collected against a
    profile file."""
    (tmp_path / "profile.json").write_text(profile())
    args = phase_args([], serial=serial)
    if not serial:
        args = ["-n", "0", *args]
    answer = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:randomly", "-p",
         "no:cacheprovider", "--profile-file", str(tmp_path / "profile.json"), *args],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stdout[-2000:] + answer.stderr[-2000:]
    return [line.strip() for line in answer.stdout.splitlines() if line.startswith("suites/")]


def test_the_serial_phase_selects_exactly_what_must_be_alone(tmp_path):
    assert set(collect(tmp_path, serial=True)) == set(MUST_BE_ALONE)


def test_the_serial_phase_fills_a_nodes_cpu_before_the_cpu_limit_checks_leave_pods_being_deleted(tmp_path):
    """The checks that fill a node's CPU wait until no CPU-requesting pod is being deleted there: run after the
    CPU-limit checks, whose pods a Windows node deletes slowly, preemption waited ~60 s for them (issue 22)."""
    order = collect(tmp_path, serial=True)
    cpu_limits = [
        i for i, item in enumerate(order) if "test_cpu_limits.py" in item or "test_cpu_limit_caps_a_busy" in item
    ]
    fillers = [i for i, item in enumerate(order) if "test_preemption_and_quota" in item or "test_resources.py" in item]
    assert len(cpu_limits) == 4 and len(fillers) == 2, order
    assert max(fillers) < min(cpu_limits)
    assert cpu_limits == list(range(len(order) - 4, len(order)))  # last of the phase


def test_nothing_that_must_be_alone_runs_in_the_parallel_phase(tmp_path):
    """The CPU-limit checks went to the parallel phase once (c642863) and read 0.0 cores there under load: back."""
    parallel = set(collect(tmp_path, serial=False))
    assert not parallel & set(MUST_BE_ALONE)
    assert any("test_probes_of_every_kind_are_accepted" in i for i in parallel)  # the parallel phase was collected
