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
