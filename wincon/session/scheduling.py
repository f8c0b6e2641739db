"""xdist spreads the parallel phase by its cost: the costliest test modules start first (issue 44, item 4).

`wincon run` asks xdist for ``--dist worksteal``: at the start each worker is sent one contiguous slice of the
collection, equal in number of tests, and a worker with nothing left takes the second half of the longest queue.
With the suite's modules in collection order, one worker's slice could hold the controllers' chains of Windows pod
starts one after another (minutes) while another's held API reads, and at the end one worker ran its long tests
alone (stealing moves queued tests, never the one running).

``CostScheduling`` keeps worksteal's stealing and changes only the first distribution: each test module is one
unit (its tests stay on one worker, in their order, so a module's shared pods start once and a Linux control runs
before its Windows twin), the units are taken costliest first, each given to the worker with the least cost so
far (the longest-processing-time rule), and each worker's queue starts with its costliest unit. So the long
modules start at once, on different workers, and what is left for stealing at the end is the cheap modules at the
queues' tails. Which tests run, and their verdicts, do not change: only which worker runs them and when.

The cost of a module (``module_weights``) is the sum of its tests' seconds, each test's taken from the first of:

* the last run's JUnit (``$WINCON_COST_JUNIT``, a JUnit file, else the JUnit files of the newest other run beside
  this run's ``--results-dir``): the test's own time, set-up, call and teardown, as pytest measured it. That holds
  whatever the test waited for, a StatefulSet's ordered starts as much as its pods, which the pod-wait ledger alone
  missed;
* the committed table ``test_seconds.json``: the same figures from a full run of the suite on the local cluster under
  the Windows pod-latency model (its ``source`` says which), for a first run with no run beside it;
* a static weight: per Windows check ``WINDOWS_ITEM_SECONDS`` (under the pod-latency model a Windows pod takes 30 s
  to start at the median, and a Windows check starts at least one), per Linux control (``[linux`` in its id)
  ``ITEM_SECONDS`` (a Linux pod starts in a few seconds).
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from xdist.scheduler import WorkStealingScheduling

from wincon.commandline.errors import ResultsError
from wincon.results import junit

COST_JUNIT_ENV = "WINCON_COST_JUNIT"  # a JUnit file to weigh the tests by, instead of the last run's
TABLE = Path(__file__).with_name("test_seconds.json")  # the committed seconds (a full local run under the model)
ITEM_SECONDS = 3.0  # a test's own work, and a Linux pod's start
WINDOWS_ITEM_SECONDS = 30.0  # a Windows check's pod start under the model (p50)


def module_of(nodeid: str) -> str:
    """The test module of a node id (``suites/x/test_y.py``); xdist's group suffix (``@group``) dropped."""
    return test_of(nodeid).split("::", 1)[0]


def static_weight(nodeid: str) -> float:
    return ITEM_SECONDS if "[linux" in nodeid else WINDOWS_ITEM_SECONDS


def test_of(nodeid: str) -> str:
    """A node id without xdist's group suffix (``@group``), as JUnit names the test."""
    return nodeid.split("@", 1)[0]


def module_weights(nodeids: Iterable[str], seconds: dict[str, float] | None = None) -> dict[str, float]:
    """Per module, its cost in seconds: the sum of its tests' ``seconds`` (per node id, as JUnit names them), a test
    missing there weighing its static weight."""
    weights: dict[str, float] = {}
    for nodeid in nodeids:
        module = module_of(nodeid)
        known = (seconds or {}).get(test_of(nodeid))
        weights[module] = weights.get(module, 0.0) + (static_weight(nodeid) if known is None else known)
    return weights


def plan(nodeids: Sequence[str], workers: int, weights: dict[str, float]) -> list[list[int]]:
    """The first distribution: per worker, the indices of its tests. Modules are taken costliest first (ties: the
    first collected), each to the worker with the least cost so far (ties: the lowest worker), and appended to its
    queue; a module's tests keep their collection order."""
    units: dict[str, list[int]] = {}
    for index, nodeid in enumerate(nodeids):
        units.setdefault(module_of(nodeid), []).append(index)
    order = sorted(units, key=lambda m: (-weights.get(m, 0.0), units[m][0]))
    queues: list[list[int]] = [[] for _ in range(max(workers, 1))]
    loads = [(0.0, worker) for worker in range(len(queues))]
    for module in order:
        load, worker = heapq.heappop(loads)
        queues[worker].extend(units[module])
        heapq.heappush(loads, (load + weights.get(module, 0.0), worker))
    return queues


def last_junit(results_dir: str | None) -> list[Path]:
    """The JUnit files to weigh tests by: ``$WINCON_COST_JUNIT``, else those of the newest other run in the directory
    that holds ``results_dir`` (`wincon run`'s results/<run-id>/artifacts/junit_*.xml), else none."""
    given = os.environ.get(COST_JUNIT_ENV)
    if given:
        return [Path(given)] if Path(given).is_file() else []
    if not results_dir:
        return []
    own = Path(results_dir).resolve()
    runs: dict[Path, list[Path]] = {}
    for path in own.parent.glob("*/artifacts/junit_*.xml"):
        if path.parents[1] != own:
            runs.setdefault(path.parents[1], []).append(path)
    if not runs:
        return []
    newest = max(runs, key=lambda run: max(p.stat().st_mtime for p in runs[run]))
    return sorted(runs[newest])


def junit_seconds(paths: Iterable[Path]) -> dict[str, float]:
    """Each test's own seconds in ``paths`` (JUnit: set-up, call and teardown), by node id. A file that cannot be
    read weighs nothing: the weights only order the work."""
    seconds: dict[str, float] = {}
    for path in paths:
        try:
            cases = junit.parse(path)
        except ResultsError:
            continue
        for case in cases:
            seconds[case.name] = case.duration
    return seconds


def table_seconds(path: Path | None = None) -> dict[str, float]:
    """The committed table's (or ``path``'s) seconds by node id (empty if it is missing or unreadable)."""
    try:
        data = json.loads((path or TABLE).read_text())
        return {str(k): float(v) for k, v in data["seconds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


class CostScheduling(WorkStealingScheduling):
    """worksteal whose first distribution gives each worker whole modules, costliest first (``plan``)."""

    def schedule(self) -> None:
        assert self.collection_is_completed
        started: list[str] | None = self.collection  # type: ignore[has-type]  # set by worksteal's __init__
        if started is not None or not self._check_nodes_have_same_collection():
            super().schedule()  # a later call (a worker added), or collections that differ: worksteal's own
            return
        collection = next(iter(self.node2collection.values()))
        last = last_junit(self.config.getoption("wincon_results_dir", None))
        seconds = {**table_seconds(), **junit_seconds(last)}
        weights = module_weights(collection, seconds)
        known = sum(test_of(nodeid) in seconds for nodeid in collection)
        source = ", ".join(str(p) for p in last) or "no earlier run"
        self.log(
            f"cost scheduling: {len(weights)} modules; {known} of {len(collection)} tests weighed by their seconds "
            f"({source}, then {TABLE.name}), the rest by the static weight"
        )
        self.collection = collection
        nodes = [node for node in self.node2pending if not node.shutting_down]
        for node, queue in zip(nodes, plan(collection, len(nodes), weights), strict=False):
            if queue:
                self.node2pending[node].extend(queue)
                node.send_runtest_some(queue)
        self.check_schedule()


def make_scheduler(config: Any, log: Any) -> CostScheduling | None:
    """xdist's scheduler for this run: ``CostScheduling`` with ``--dist worksteal``, None (xdist's own) otherwise."""
    return CostScheduling(config, log) if config.getvalue("dist") == "worksteal" else None
