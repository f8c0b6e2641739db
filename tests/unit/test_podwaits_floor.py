"""The floor of a run under the pod-latency model and its longest chains of waits (issue 44, item 1), computed on
a synthetic ledger (no cluster): wincon.results.podwaits.floor / chains and bench_run's lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import suites
from wincon.results import podwaits

BENCH = suites.load("bench/bench_run.py")

NET = "suites/networking/test_dns.py"
NODE = "suites/node/test_density.py"
SCHED = "suites/scheduling/test_preemption.py"


def _wait(pod: str, start: float, end: float, test: str, worker: str = "gw0", phase: str = "call") -> podwaits.Wait:
    return podwaits.Wait("ns", pod, "win2022-0", "windows", start, end, True, f"{test} ({phase})", worker)


def ledger() -> list[podwaits.Wait]:
    """Two workers of a parallel phase, then a serial phase (worker "main") of two tests."""
    return [
        # gw0: the dns module, three waits one after another (two of them in one test) and one overlapping
        _wait("server", 0, 30, f"{NET}::test_a[windows]", phase="setup"),
        _wait("client", 10, 40, f"{NET}::test_a[windows]", phase="setup"),  # overlaps: together 40 s
        _wait("own-1", 45, 95, f"{NET}::test_b[windows]"),  # the parallel phase's longest single wait: 50 s
        _wait("own-2", 100, 120, f"{NET}::test_c[windows]"),
        # gw1: the density module
        _wait("d-0", 0, 35, f"{NODE}::test_d[windows]", worker="gw1"),
        _wait("d-1", 40, 60, f"{NODE}::test_e[windows]", worker="gw1"),
        # the serial phase: tests one at a time; each counts its longest wait (a wave of its own pods)
        _wait("victim", 200, 245, f"{SCHED}::test_p[windows]", worker="main", phase="setup"),
        _wait("preemptor", 250, 280, f"{SCHED}::test_p[windows]", worker="main"),  # after the victim: 30 s
        _wait("stats-0", 300, 310, f"{NODE}::test_stats[windows]", worker="main"),
        _wait("stats-1", 300, 320, f"{NODE}::test_stats[windows]", worker="main"),
    ]


def test_the_floor_is_the_serial_tests_longest_waits_plus_one_wave_of_the_parallel_phase() -> None:
    floor = podwaits.floor(ledger())
    assert floor.serial_seconds == pytest.approx(45 + 20)  # test_p's longest 45, test_stats's longest 20
    assert floor.serial_tests == 2
    assert floor.wave_seconds == pytest.approx(50)  # own-1, not the 40 s of overlapping waits nor a chain
    assert floor.wave_wait is not None and floor.wave_wait.pod == "own-1"
    assert floor.seconds == pytest.approx(115)
    # a lower bound: below the run's own critical path (gw0's chain, 40 + 50 + 20) plus the serial waits
    assert floor.seconds <= podwaits.summary(ledger())["critical_path_seconds"] + 45 + 30 + 20


def test_a_run_without_workers_is_all_serial_and_an_empty_ledger_has_no_floor() -> None:
    serial = [podwaits.Wait(**{**w.__dict__, "worker": "main"}) for w in ledger()]
    floor = podwaits.floor(serial)
    # every test's longest wait: test_a 30, test_b 50, test_c 20, test_d 35, test_e 20, test_p 45, test_stats 20
    assert (floor.seconds, floor.serial_tests, floor.wave_seconds, floor.wave_wait) == (220, 7, 0.0, None)
    assert podwaits.floor([]) == podwaits.Floor(0.0, 0.0, 0, 0.0, None)
    assert podwaits.chains([]) == []


def test_chains_are_per_worker_and_module_longest_first_with_their_tests() -> None:
    chains = podwaits.chains(ledger())
    assert [(c.worker, c.module, c.seconds, c.waits) for c in chains] == [
        ("gw0", NET, pytest.approx(40 + 50 + 20), 4),
        ("main", SCHED, pytest.approx(45 + 30), 2),
        ("gw1", NODE, pytest.approx(35 + 20), 2),
        ("main", NODE, pytest.approx(20), 2),
    ]
    assert chains[0].tests == (
        (f"{NET}::test_a[windows]", pytest.approx(40)),  # setup's two waits: their union
        (f"{NET}::test_b[windows]", pytest.approx(50)),
        (f"{NET}::test_c[windows]", pytest.approx(20)),
    )
    assert chains[1].serial and not chains[0].serial
    assert [c.module for c in podwaits.chains(ledger(), top=2)] == [NET, SCHED]


def test_check_of_drops_the_phase_and_keeps_parametrized_ids() -> None:
    assert podwaits.check_of(_wait("p", 0, 1, f"{NET}::test_a[a (b)]", phase="teardown")) == f"{NET}::test_a[a (b)]"
    assert podwaits.check_of(podwaits.Wait("ns", "p", "", "", 0, 1, True, "", "gw0")) == "(no test)"


def test_bench_run_prints_the_floor_the_ratio_and_the_chains(tmp_path: Path) -> None:
    path = tmp_path / podwaits.LEDGER_NAME
    path.write_text("\n".join(json.dumps({**w.__dict__}) for w in ledger()) + "\n")
    waits = podwaits.load(path)
    lines = BENCH.floor_lines(230.0, podwaits.floor(waits), podwaits.chains(waits))
    text = "\n".join(lines)
    assert "floor under the model: 115.0 s = serial phase 65.0 s" in text
    assert "one wave of the parallel phase 50.0 s (suites/networking/test_dns.py::test_b[windows]: pod own-1)" in text
    assert "wall / floor: 2.00" in text
    assert "the 4 longest chains of waits" in text
    assert f"110.0 s  gw0   {NET}: 4 waits, 3 tests" in text
    assert "40.0 s  test_a[windows]" in text
    assert "n/a" in "\n".join(BENCH.floor_lines(10.0, podwaits.floor([]), []))


def test_bench_run_prints_each_phases_test_time_and_its_costliest_modules(tmp_path: Path) -> None:
    """From the run's JUnit files: the parallel phase's (``_01``) time in all and over its workers, the serial
    phase's (``_02``), each module's sum of its tests' times, costliest first."""
    cases = {
        "junit_wincon_20261129-1800_01.xml": [(f"{NET}::test_a[linux]", 10.0), (f"{NET}::test_a[windows]", 50.0),
                                               ("suites/controllers/test_jobs.py::test_j", 80.0)],
        "junit_wincon_20261129-1800_02.xml": [("suites/node/test_density.py::test_d", 40.5)],
    }  # fmt: skip
    for name, tests in cases.items():
        body = "".join(f'<testcase name="{n}" classname="area" time="{t:.3f}"/>' for n, t in tests)
        (tmp_path / name).write_text(f"<testsuites><testsuite>{body}</testsuite></testsuites>")
    phases = BENCH.module_times(tmp_path)
    assert phases["parallel"] == {NET: (60.0, 2), "suites/controllers/test_jobs.py": (80.0, 1)}
    text = "\n".join(BENCH.module_lines(phases, workers=4))
    assert "parallel phase: its tests took 140.0 s in all (JUnit), 35.0 s per worker over 4" in text
    assert text.index("suites/controllers/test_jobs.py (1 tests)") < text.index(f"{NET} (2 tests)")
    assert "serial phase: its tests took 40.5 s in all (JUnit); the costliest modules:" in text


def test_bench_run_prints_the_floor_with_this_machines_own_work() -> None:
    lines = BENCH.own_work_floor_lines(837.5, 461.3, 162.6, 21.5)
    assert lines[0] == (
        "  floor with this machine's own work: 602.4 s = the run without the model 461.3 s + what the model adds to "
        "the floor 141.1 s"
    )
    assert lines[1] == "  wall / that floor: 1.39"
    # A model that drew shorter waits than the run without it adds nothing, never less than nothing
    assert BENCH.own_work_floor_lines(400.0, 400.0, 10.0, 20.0)[1] == "  wall / that floor: 1.00"
    assert BENCH.own_work_floor_lines(1.0, 0.0, 0.0, 0.0)[1] == "  wall / that floor: n/a"
