"""How the CPU-limit checks read a pod's CPU from the kubelet's /stats/summary and when a reading can judge a limit.

Both CPU-limit checks (suites/scheduling/test_compute_limitations.py's cap check and test_cpu_limits.py) judge a pod
by the CPU seconds it used over a window of at least RATE_WINDOW_SECONDS (its cumulative ``usageCoreNanoSeconds`` at
two sample times), never by one stats period's ``usageNanoCores``: that rate covers about 10 s between two samples
whose timestamps drift from the actual reads under load (0.048 core over 10 s is 0.48 CPU seconds, about 1 s of a
500m pod's time; over 20 s the same drift is half as much). And both run an unlimited twin (the same load and CPU request, no limit) beside the limited
pods, so that a pass needs evidence that the node would have given that load more than the limit (judges_the_cap).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from wincon.checks.node import MAX_CORES_UNDER_500M, summary_pods

# A busy load under a 500m limit uses at least this much once it gets the CPU.
LOAD_SHOWN_CORES = 0.25
# The unlimited twin (the same load and request, no limit) must use at least this much over the very window that
# judges the limited pods: 1.5 times the limit, so that the node is shown to give that load more than the limit allows
# (against MAX_CORES_UNDER_500M, a ratio of 1.39 between two pods of equal weight).
TWIN_SHOWN_CORES = 0.75
# Each judged rate is a pod's CPU time over at least this long (its cumulative usageCoreNanoSeconds at two sample
# times), the same window for every pod: on a busy node one stats period's usageNanoCores of two pods of equal weight
# read as far apart as 0.14 and 0.47 core (the shared local cluster under a load of 19 on 2 CPUs, 2026-11-28).
RATE_WINDOW_SECONDS = 20.0

Sample = tuple[datetime, float]  # when the kubelet sampled a pod, and the CPU seconds it had used by then


def cpu_seconds(summary: dict[str, Any], namespace: str, name: str) -> Sample | None:
    """When the kubelet last sampled pod ``name``'s containers (the latest of their ``cpu.time``) and the CPU seconds
    they used so far (their ``usageCoreNanoSeconds`` summed); None while the summary lists no sample of it."""
    pod = next((p for p in summary_pods(summary, namespace) if (p.get("podRef") or {}).get("name") == name), {})
    cpus = [c.get("cpu") or {} for c in pod.get("containers") or []]
    if not cpus or not all(c.get("time") and c.get("usageCoreNanoSeconds") is not None for c in cpus):
        return None
    taken = max(datetime.fromisoformat(str(c["time"]).replace("Z", "+00:00")) for c in cpus)
    return taken, sum(c["usageCoreNanoSeconds"] for c in cpus) / 1e9


def window_cores(history: list[dict[str, Sample]], names: Iterable[str]) -> dict[str, float] | None:
    """Each pod of ``names``'s cores, its CPU time over the same stretch: from the latest reading of ``history`` at
    least RATE_WINDOW_SECONDS (by each pod's own sample times) before its last one, to that last one; None while there
    is none such. Each reading of ``history`` holds a sample of every pod of ``names``."""
    pods = tuple(names)
    last = history[-1]

    def spans(first: dict[str, Sample]) -> bool:
        return all((last[n][0] - first[n][0]).total_seconds() >= RATE_WINDOW_SECONDS for n in pods)

    first = next((h for h in reversed(history[:-1]) if spans(h)), None)
    if first is None:
        return None
    return {n: (last[n][1] - first[n][1]) / (last[n][0] - first[n][0]).total_seconds() for n in pods}


def judges_the_cap(reading: tuple[float, float]) -> bool:
    """Whether one reading (limited, twin) can judge the 500m limit: the limited pod over the ceiling (the limit did
    not hold: nothing else is needed), or its load shown (at least LOAD_SHOWN_CORES) while its unlimited twin, the same
    load with the same request beside it, used at least TWIN_SHOWN_CORES (the node gave that load more than the limit
    allows at that very moment). A reading where neither holds shows nothing about the limit: an uncapped container
    that its node starves reads as low as a capped one, and so does its twin."""
    limited, twin = reading
    return limited > MAX_CORES_UNDER_500M or (limited >= LOAD_SHOWN_CORES and twin >= TWIN_SHOWN_CORES)
