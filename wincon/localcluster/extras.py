"""The local cluster's add-on components, started by ``up`` after the data plane, one module each.

Each module in ``MODULES`` offers:

- optionally ``IP_FAMILIES``: the ``--ip-family`` values it runs on (default ipv4 and dual; ipfamily.serves);
- ``NAME``: its name (its process name in ``cluster status --json``'s ``dataplane`` list, its key in ``addons``);
- ``start(plan, out) -> bool``: start its processes (``dataplane._spawn``) and say so; False (and say why on
  ``out``) when it is not built or cannot run, so ``up`` goes on without it;
- ``objects(plan) -> list[dict]``: the API objects it needs (created by ``up`` after ``start``);
- ``available(api) -> bool | None``: True once it works as a real cluster would show it (``up`` waits for it,
  naming ``WAITS_FOR`` if the module has it, else ``NAME``);
- ``status(plan, processes) -> dict``: what ``cluster status --json`` says of it under ``addons[NAME]``;
- optionally ``teardown(cluster) -> None``: what ``down`` must remove besides its processes (which the data plane's
  teardown kills by their marker), raising ``LocalClusterError`` naming what is left.

Adding a component is one module and one line here; ``cluster.py`` needs no change.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, TextIO

from wincon.localcluster import dataplane, ipfamily, kuberouter, lb, metrics, overhead, storage

# kube-router last: it reads its node's Node object at start, which the kubelets have registered by then.
MODULES: list[ModuleType] = [metrics, lb, storage, overhead, kuberouter]


def start(plan: dataplane.Plan, out: TextIO) -> list[ModuleType]:
    """Start every add-on that can run (on the cluster's IP family: ipfamily.serves); return those started."""
    return [mod for mod in MODULES if ipfamily.serves(mod, plan.ip_family, out) and mod.start(plan, out)]


def objects(plan: dataplane.Plan, started: list[ModuleType]) -> list[dict[str, Any]]:
    return [obj for mod in started for obj in mod.objects(plan)]


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    return {mod.NAME: mod.status(plan, processes) for mod in MODULES}


def teardown(cluster: str) -> None:
    for mod in MODULES:
        if hasattr(mod, "teardown"):
            mod.teardown(cluster)
