"""Fixtures of the node suite: kubelet stats and metrics, NodeAllocatable, density, device plugins, and the
disruptive reboot and shutdown checks. Pods are created for real on any cluster; what only a real kubelet can
answer (its endpoints through the node proxy, container start latency) passes the ``data_plane`` gate first.

The kubelet and density checks have Linux controls (``target_os``): ``target_node`` is then a Ready Linux worker
with a data plane and ``start_pods`` starts Linux pods there, so the control asks a Linux kubelet the very same
questions through the same node proxy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.pods import os_pod
from wincon.cluster.waits import pod_running_ready, pod_scheduled
from wincon.clusterinfo.nodes import pick_node
from wincon.clusterinfo.profile import NodeProfile
from wincon.workloads.pinning import WINDOWS_TOLERATIONS


@pytest.fixture
def windows_node(wincon: Any, build: int | None) -> NodeProfile:
    """One Ready Windows node of the test's build that ordinary Windows pods may be scheduled on (the first by
    name: wincon.clusterinfo.nodes.pick_node)."""
    node = pick_node(wincon.profile, "windows", build, WINDOWS_TOLERATIONS)
    if node is None:
        pytest.skip(f"no Ready, schedulable Windows node of build {build}")
    return node


@pytest.fixture
def target_node(wincon: Any, build: int | None, target_os: str) -> NodeProfile:
    """The node a check with a Linux control asks: ``windows_node`` for the check, and for its control a Ready
    Linux worker with a data plane (the first by name)."""
    node = pick_node(wincon.profile, target_os, build, WINDOWS_TOLERATIONS)
    if node is None:
        what = f"Windows node of build {build}" if target_os == "windows" else "Linux worker with a data plane"
        pytest.skip(f"no Ready, schedulable {what}")
    return node


@pytest.fixture
def start_pods(kube, wincon: Any, namespace: str, build: int | None) -> Callable[..., list[Any]]:
    """``start_pods(prefix, count, node, ready=True, os_name="windows", **spec)``: create ``count`` agnhost
    pause pods of ``os_name`` pinned to ``node`` at once, then wait for each (Ready, or only scheduled with
    ``ready=False``)."""

    def start(
        prefix: str, count: int, node: str, ready: bool = True, os_name: str = "windows", **spec: Any
    ) -> list[Any]:
        names = [f"{prefix}-{i}" for i in range(count)]
        for name in names:
            body = os_pod(wincon, name, os_name, build, node=node, labels={"app": prefix}, **spec)
            kube.create(body)
        done = pod_running_ready if ready else pod_scheduled
        return [kube.wait_pod(name, done=done, timeout=wincon.pod_start_timeout) for name in names]

    return start
