"""Local clusters a test module (or one test) starts for itself, and always brings down; their real nodes.

The integration tests that need a topology of their own (two real nodes, an IP family, a cluster to break) and
the fault tests share these: a name (from an environment variable when it is set, so a run can be pointed at a
cluster to start or reuse, otherwise a fresh ``<prefix>-<hex>``), ``up``, and at the end ``down`` and the
removal of the name's lock file (``down`` keeps it because someone may wait on it; these names are not used
again). ``down`` runs even when ``up`` failed half-way, so a failed start leaves nothing behind either.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from wincon.localcluster import cluster
from wincon.localcluster.topology import Topology

ROOT_REASON = "the real Linux data plane needs root"
# s a test's cluster may take to start: ``make test`` starts up to four at once (one an xdist worker) beside the main
# job's running cluster, on two cores, where a start took more than ``cluster.UP_TIMEOUT`` (120 s: lps-test's and a
# fault cluster's ran out at their last add-on wait in two CI runs). A bound on the test's set-up, not on a verdict;
# a start that does not finish still fails within it (tests/unit/test_start_queue_wait.py's counter-cases).
START_WITHIN = 300.0


def needs_root() -> None:
    """Skip the test unless it runs as root (network namespaces, routes, iptables)."""
    if os.geteuid() != 0:
        pytest.skip(ROOT_REASON)


def fresh_name(prefix: str, env: str | None = None) -> str:
    """``$env`` when that is set and not empty, else ``<prefix>-<6 hex digits>``."""
    return (os.environ.get(env) if env else None) or f"{prefix}-{uuid.uuid4().hex[:6]}"


@contextmanager
def removed_after(name: str) -> Iterator[str]:
    """Yield ``name``; afterwards, whatever happened, bring cluster ``name`` down and remove its lock file."""
    try:
        yield name
    finally:
        cluster.down(name)
        cluster.lock_path(name).unlink(missing_ok=True)


@contextmanager
def own_cluster(prefix: str, topology: Topology | None = None, *, env: str | None = None) -> Iterator[tuple[str, Path]]:
    """A running local cluster of ``topology`` (None: the default, or whatever runs under a reused name) for the
    block, as (name, kubeconfig); skipped unless root; brought down with its lock at the end."""
    needs_root()
    with removed_after(fresh_name(prefix, env)) as name:
        yield name, cluster.up(name, topology, timeout=START_WITHIN)


def real_nodes(core: Any) -> list[Any]:
    """The cluster's real nodes (not simulated by kwok: a local cluster's Linux workers), by name."""
    nodes = (n for n in core.list_node().items if (n.metadata.labels or {}).get("type") != "kwok")
    return sorted(nodes, key=lambda n: n.metadata.name)


def netexec_on_each_real_node(core: Any, namespace: str, prefix: str, image: str, port: int) -> list[str]:
    """Create an agnhost netexec pod (HTTP on ``port``, labelled ``app=<its name>``) on each real node, in
    ``namespace``: ``<prefix>-0``, ``<prefix>-1``... in the nodes' order. Returns their names (not awaited)."""
    names = []
    for i, node in enumerate(real_nodes(core)):
        name = f"{prefix}-{i}"
        container = {"name": "c", "image": image, "args": ["netexec", f"--http-port={port}"]}
        spec = {"nodeName": node.metadata.name, "terminationGracePeriodSeconds": 1, "containers": [container]}
        core.create_namespaced_pod(namespace, {"metadata": {"name": name, "labels": {"app": name}}, "spec": spec})
        names.append(name)
    return names
