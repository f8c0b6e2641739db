"""A run's pod waits: how many pods it waited for, on which OS, and how much of its wall time went on waiting.

``wincon run`` points ``$WINCON_POD_LEDGER`` at ``artifacts/pod-waits.jsonl`` of the run; every pod wait of the
suite (``wincon.cluster.waits.wait_for_pod``) appends one line there, from whichever xdist worker ran it. This
module reads the ledger back and sums it up for ``finished.json``'s metadata, the dashboard and bench/bench_run.py.

Figures:

* ``pods``: distinct pods waited for (namespace/name), per OS (the OS the pod asked for; '' when it named none);
* ``wait_seconds``: the time at least one pod wait was in progress anywhere in the run (the union of the waits);
* ``critical_path_seconds``: the longest chain of waits one after another: per xdist worker (whose tests run
  one at a time), the union of its waits; the largest of those. With the waits of different workers overlapping,
  no run can be shorter than this on the same pods;
* ``share``: ``wait_seconds`` over the run's wall time.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LEDGER_NAME = "pod-waits.jsonl"
LEDGER_ENV = "WINCON_POD_LEDGER"  # the file wincon.cluster.waits.record_wait appends to


@dataclass(frozen=True)
class Wait:
    namespace: str
    pod: str
    node: str
    os: str
    start: float
    end: float
    ok: bool
    test: str
    worker: str

    @property
    def area(self) -> str:
        """The suite the waiting test belongs to (``suites/networking``), from its node id."""
        path = self.test.split("::", 1)[0]
        parts = path.split("/")
        return "/".join(parts[:2]) if len(parts) > 2 else (parts[0] if parts[0] else "(no test)")


def load(path: Path) -> list[Wait]:
    """Every wait in the ledger; lines that are not a wait (a write cut short) are left out."""
    waits = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            data = json.loads(line)
            waits.append(
                Wait(
                    str(data["namespace"]),
                    str(data["pod"]),
                    str(data.get("node", "")),
                    str(data.get("os", "")),
                    float(data["start"]),
                    float(data["end"]),
                    bool(data.get("ok", True)),
                    str(data.get("test", "")),
                    str(data.get("worker", "main")),
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return waits


def union_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of ``intervals`` (time covered by at least one of them)."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None and current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None and current_start is not None:
        total += current_end - current_start
    return total


def summary(waits: list[Wait], wall_seconds: float | None = None) -> dict[str, Any]:
    """The figures of a run's pod waits (see the module's docstring); ``share`` only with ``wall_seconds``."""
    pods_os: dict[tuple[str, str], str] = {}
    for wait in waits:
        key = (wait.namespace, wait.pod)
        pods_os[key] = wait.os or pods_os.get(key, "")
    by_os = Counter(pods_os.values())
    by_area: dict[str, Counter[str]] = defaultdict(Counter)
    seen: set[tuple[str, str]] = set()
    for wait in waits:
        key = (wait.namespace, wait.pod)
        if key not in seen:
            seen.add(key)
            by_area[wait.area][pods_os[key] or "unknown"] += 1
    per_worker: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for wait in waits:
        per_worker[wait.worker].append((wait.start, wait.end))
    critical = max((union_seconds(v) for v in per_worker.values()), default=0.0)
    covered = union_seconds([(w.start, w.end) for w in waits])
    result: dict[str, Any] = {
        "pods": len(pods_os),
        "windows_pods": by_os.get("windows", 0),
        "linux_pods": by_os.get("linux", 0),
        "other_pods": len(pods_os) - by_os.get("windows", 0) - by_os.get("linux", 0),
        "waits": len(waits),
        "wait_seconds": covered,
        "critical_path_seconds": critical,
        "by_area": {area: dict(counts) for area, counts in sorted(by_area.items())},
    }
    if wall_seconds:
        result["wall_seconds"] = wall_seconds
        result["share"] = covered / wall_seconds
    return result


def metadata(figures: dict[str, Any]) -> dict[str, str]:
    """The figures as finished.json metadata (strings: TestGrid column headers)."""
    result = {
        "pods-waited": str(figures["pods"]),
        "windows-pods-waited": str(figures["windows_pods"]),
        "linux-pods-waited": str(figures["linux_pods"]),
        "pod-wait-seconds": f"{figures['wait_seconds']:.1f}",
        "pod-wait-critical-path-seconds": f"{figures['critical_path_seconds']:.1f}",
    }
    if "wall_seconds" in figures:
        result["wall-time-seconds"] = f"{figures['wall_seconds']:.1f}"
        result["pod-wait-share"] = f"{figures['share']:.2f}"
    return result


# ----------------------------------------------------------------------------- the floor and the chains (issue 44)

SERIAL_WORKER = "main"  # the worker name of a pytest without xdist workers: `wincon run`'s serial phase (-n 0)


def check_of(wait: Wait) -> str:
    """The test a wait belongs to: its node id without the phase pytest appends (`` (setup)``, `` (call)``)."""
    test = wait.test
    if test.endswith(")") and " (" in test:
        test = test.rsplit(" (", 1)[0]
    return test or "(no test)"


def module_of(wait: Wait) -> str:
    """The test module a wait belongs to (``suites/networking/test_dns.py``)."""
    return check_of(wait).split("::", 1)[0]


def is_serial(wait: Wait) -> bool:
    """Whether the wait happened in a phase whose tests run one at a time (no xdist worker: `wincon run`'s serial
    phase, or any run with ``-n 0``)."""
    return wait.worker == SERIAL_WORKER


@dataclass(frozen=True)
class Floor:
    """The floor of a run under the pod-latency model (see ``floor``) and what sets it."""

    seconds: float
    serial_seconds: float  # the serial phase's part: its tests' longest waits, summed
    serial_tests: int  # serial tests that waited for a pod
    wave_seconds: float  # the parallel phase's part: its longest single wait
    wave_wait: Wait | None  # that wait (None: the parallel phase waited for no pod)


def floor(waits: list[Wait]) -> Floor:
    """The shortest wall time that the run's pod waits allow, however its pods were started and its tests spread.

    Precisely: ``floor = S + W`` where

    * ``S``, the serial phase's own unavoidable waits: its tests run one at a time, so their waits cannot overlap
      each other; each test, had it created every pod it needs at once, waits at least as long as its longest
      single pod wait. ``S`` is the sum, over the serial phase's tests, of each test's longest single wait;
    * ``W``, one wave of pod starts for the parallel phase: had every pod of the phase been created at its start,
      all of them at once, the phase still lasts as long as its slowest pod start. ``W`` is the longest single
      wait of the parallel phase.

    A wait is in the serial phase when no xdist worker ran it (``worker == "main"``), in the parallel phase
    otherwise. The floor counts pod waits only (the checks' own work and pod deletions are not in the ledger), each
    pod start as long as the run drew it; so no run of the same checks, with the same draws, can be shorter, and
    ``wall / floor`` says how much of the run is waits one after another that a wave could overlap, or work.
    """
    longest: dict[str, float] = defaultdict(float)
    wave: Wait | None = None
    for wait in waits:
        seconds = wait.end - wait.start
        if is_serial(wait):
            longest[check_of(wait)] = max(longest[check_of(wait)], seconds)
        elif wave is None or seconds > wave.end - wave.start:
            wave = wait
    serial = sum(longest.values())
    wave_seconds = (wave.end - wave.start) if wave is not None else 0.0
    return Floor(serial + wave_seconds, serial, len(longest), wave_seconds, wave)


@dataclass(frozen=True)
class Chain:
    """The waits one worker made for one test module, one after another (its tests run one at a time there)."""

    worker: str
    module: str
    seconds: float  # the union of those waits: the time that worker spent waiting for the module's pods
    waits: int
    tests: tuple[tuple[str, float], ...]  # (test, the union of its own waits), in the order they first waited

    @property
    def serial(self) -> bool:
        return self.worker == SERIAL_WORKER


def chains(waits: list[Wait], top: int = 10) -> list[Chain]:
    """The ``top`` longest chains of waits: per (worker, test module), the union of that worker's waits for the
    module's tests, longest first (ties: worker, module). A module whose pods a wave started together would have
    one chain no longer than its longest wait; a chain of many waits is the waits a wave could overlap."""
    grouped: dict[tuple[str, str], list[Wait]] = defaultdict(list)
    for wait in waits:
        grouped[(wait.worker, module_of(wait))].append(wait)
    result = []
    for (worker, module), group in grouped.items():
        per_test: dict[str, list[tuple[float, float]]] = {}
        for wait in sorted(group, key=lambda w: w.start):
            per_test.setdefault(check_of(wait), []).append((wait.start, wait.end))
        tests = tuple((test, union_seconds(spans)) for test, spans in per_test.items())
        result.append(Chain(worker, module, union_seconds([(w.start, w.end) for w in group]), len(group), tests))
    result.sort(key=lambda c: (-c.seconds, c.worker, c.module))
    return result[:top]
