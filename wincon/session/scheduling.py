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

The cost of a module (``module_weights``):

* from the pod-wait ledger of the last run when there is one (``$WINCON_COST_LEDGER``, else the newest
  ``artifacts/pod-waits.jsonl`` of another run beside this run's ``--results-dir``): the seconds its tests waited
  for pods (wincon.results.podwaits.module_costs), plus ``ITEM_SECONDS`` per test for its own work;
* otherwise a static weight: per Windows check ``WINDOWS_ITEM_SECONDS`` (under the pod-latency model a Windows
  pod takes 30 s to start at the median, and a Windows check starts at least one), per Linux control (``[linux``
  in its id) ``ITEM_SECONDS`` (a Linux pod starts in a few seconds).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from xdist.scheduler import WorkStealingScheduling

from wincon.results import podwaits

COST_LEDGER_ENV = "WINCON_COST_LEDGER"  # a ledger to weigh the modules by, instead of the last run's
ITEM_SECONDS = 3.0  # a test's own work, and a Linux pod's start
WINDOWS_ITEM_SECONDS = 30.0  # a Windows check's pod start under the model (p50)


def module_of(nodeid: str) -> str:
    """The test module of a node id (``suites/x/test_y.py``); xdist's group suffix (``@group``) dropped."""
    return nodeid.split("::", 1)[0].split("@", 1)[0]


def static_weight(nodeid: str) -> float:
    return ITEM_SECONDS if "[linux" in nodeid else WINDOWS_ITEM_SECONDS


def module_weights(nodeids: Iterable[str], costs: dict[str, float] | None = None) -> dict[str, float]:
    """Per module, its cost in seconds: the ledger's waits plus ``ITEM_SECONDS`` per test where ``costs`` (the
    ledger's, per module) is given, the static weight of its tests otherwise."""
    weights: dict[str, float] = {}
    for nodeid in nodeids:
        module = module_of(nodeid)
        item = ITEM_SECONDS if costs is not None else static_weight(nodeid)
        weights[module] = weights.get(module, (costs or {}).get(module, 0.0)) + item
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


def last_ledger(results_dir: str | None) -> Path | None:
    """The ledger to weigh modules by: ``$WINCON_COST_LEDGER``, else the newest ledger of another run in the
    directory that holds ``results_dir`` (`wincon run`'s results/<run-id>), else None."""
    given = os.environ.get(COST_LEDGER_ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    if not results_dir:
        return None
    own = Path(results_dir).resolve()
    found = [p for p in own.parent.glob(f"*/artifacts/{podwaits.LEDGER_NAME}") if p.parents[1] != own]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


class CostScheduling(WorkStealingScheduling):
    """worksteal whose first distribution gives each worker whole modules, costliest first (``plan``)."""

    def schedule(self) -> None:
        assert self.collection_is_completed
        started: list[str] | None = self.collection  # type: ignore[has-type]  # set by worksteal's __init__
        if started is not None or not self._check_nodes_have_same_collection():
            super().schedule()  # a later call (a worker added), or collections that differ: worksteal's own
            return
        collection = next(iter(self.node2collection.values()))
        ledger = last_ledger(self.config.getoption("wincon_results_dir", None))
        costs = podwaits.module_costs(podwaits.load(ledger)) if ledger else None
        weights = module_weights(collection, costs)
        self.log(f"cost scheduling: {len(weights)} modules, weights from {ledger or 'the static weight'}")
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
