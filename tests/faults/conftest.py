"""Fault-injection tests share the integration tests' fixtures (binaries present, cluster names) and one local
cluster of the default topology: every fault module runs on one xdist worker (group "faults"), one fault at a
time, and each restores what it broke, so a cluster per module would only add its start (about 20 s) each."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.integration.conftest import localcluster_binaries  # noqa: F401
from wincon.localcluster import cluster
from wincon.localcluster.topology import Topology


@contextmanager
def own_cluster(prefix: str, topology: Topology | None = None) -> Iterator[tuple[str, Path]]:
    """A local cluster for fault injection (``WINCON_FAULT_CLUSTER`` names one to start or reuse), brought down
    at the end with its lock: (name, kubeconfig)."""
    if os.geteuid() != 0:
        pytest.skip("fault injection needs the real Linux data plane, which needs root")
    name = os.environ.get("WINCON_FAULT_CLUSTER") or f"{prefix}-{uuid.uuid4().hex[:6]}"
    try:
        yield name, cluster.up(name, topology)
    finally:
        cluster.down(name)
        cluster.lock_path(name).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def fault_cluster(localcluster_binaries: Path) -> Iterator[tuple[str, Path]]:  # noqa: F811
    """The default-topology cluster every fault module shares: (name, kubeconfig)."""
    with own_cluster("faults") as found:
        yield found
