"""Fixtures of the node suite: kubelet stats and metrics, NodeAllocatable, density, device plugins, and the
disruptive reboot and shutdown checks. Pods are created for real on any cluster; what only a real kubelet can
answer (its endpoints through the node proxy, container start latency) passes the ``data_plane`` gate first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.pods import schedulable_windows_nodes, windows_nodes_of_build, windows_pod
from wincon.cluster.waits import pod_running_ready, pod_scheduled
from wincon.profile import NodeProfile


@pytest.fixture
def windows_node(wincon: Any, build: int | None) -> NodeProfile:
    """One Ready Windows node of the test's build that ordinary Windows pods may be scheduled on."""
    allowed = set(schedulable_windows_nodes(wincon.profile))
    nodes = [n for n in windows_nodes_of_build(wincon.profile, build) if n.name in allowed]
    if not nodes:
        pytest.skip(f"no Ready, schedulable Windows node of build {build}")
    return sorted(nodes, key=lambda n: n.name)[0]


@pytest.fixture
def start_pods(kube, wincon: Any, namespace: str, build: int | None) -> Callable[..., list[Any]]:
    """``start_pods(prefix, count, node, ready=True, **spec)``: create ``count`` agnhost pause pods pinned to
    ``node`` at once, then wait for each (Ready, or only scheduled with ``ready=False``)."""

    def start(prefix: str, count: int, node: str, ready: bool = True, **spec: Any) -> list[Any]:
        names = [f"{prefix}-{i}" for i in range(count)]
        for name in names:
            body = windows_pod(wincon, name, build, node=node, labels={"app": prefix}, **spec)
            kube.create(body)
        done = pod_running_ready if ready else pod_scheduled
        return [kube.wait_pod(name, done=done, timeout=wincon.pod_start_timeout) for name in names]

    return start
