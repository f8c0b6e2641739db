"""Local clusters a test module (or one test) starts for itself, and always brings down.

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

import pytest

from wincon.localcluster import cluster
from wincon.localcluster.topology import Topology

ROOT_REASON = "the real Linux data plane needs root"


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
        yield name, cluster.up(name, topology)
