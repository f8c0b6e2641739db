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

from wincon import controls
from wincon.checks.node import kubelet_config, kubelet_json, nothing_reserved
from wincon.checks.pods import nodes_for, os_pod, schedulable_windows_nodes, windows_nodes_of_build
from wincon.cluster.waits import pod_running_ready, pod_scheduled
from wincon.context import get_context
from wincon.fixtures import build_for
from wincon.profile import ClusterProfile, NodeProfile


@pytest.fixture
def windows_node(wincon: Any, build: int | None) -> NodeProfile:
    """One Ready Windows node of the test's build that ordinary Windows pods may be scheduled on."""
    node = pick_node(wincon.profile, "windows", build)
    if node is None:
        pytest.skip(f"no Ready, schedulable Windows node of build {build}")
    return node


def pick_node(profile: ClusterProfile, os_name: str, build: int | None) -> NodeProfile | None:
    """The node ``target_node`` gives a check of ``os_name``: the first Ready, schedulable Windows node of
    ``build`` by name, or the first Ready Linux worker with a data plane."""
    if os_name == "windows":
        allowed = set(schedulable_windows_nodes(profile))
        nodes = [n for n in windows_nodes_of_build(profile, build) if n.name in allowed]
    else:
        nodes = nodes_for(profile, os_name, build)
    return sorted(nodes, key=lambda n: n.name)[0] if nodes else None


@pytest.fixture
def target_node(wincon: Any, build: int | None, target_os: str) -> NodeProfile:
    """The node a check with a Linux control asks: ``windows_node`` for the check, and for its control a Ready
    Linux worker with a data plane (the first by name)."""
    node = pick_node(wincon.profile, target_os, build)
    if node is None:
        what = f"Windows node of build {build}" if target_os == "windows" else "Linux worker with a data plane"
        pytest.skip(f"no Ready, schedulable {what}")
    return node


# Checks that skip where the kubelet they ask reserves nothing: decided at collection too, against a live cluster
# (the node's /configz through the node proxy, read once per node), so wincon plan agrees with the run.
NEEDS_RESERVATIONS = {"test_kube_and_system_reserved_shrink_allocatable_cpu"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A failed look-up (a simulated node's kubelet, no nodes/proxy right) leaves the decision to the test."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    needing = [item for item in items if getattr(item, "originalname", item.name) in NEEDS_RESERVATIONS]
    if not needing:
        return
    profile = context.profile
    builds = sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
    reasons: dict[str, str | None] = {}
    for item in needing:
        node = pick_node(profile, controls.target_os(item), build_for(item.nodeid, builds))
        if node is None or not node.data_plane:  # a simulated kubelet: the data-plane gate skips it
            continue
        if node.name not in reasons:
            try:
                configz, _ = kubelet_json(context.api_client, node.name, "configz", timeout=10)
                reasons[node.name] = nothing_reserved(kubelet_config(configz), node.name)
            except Exception:
                reasons[node.name] = None
        if reasons[node.name]:
            item.add_marker(pytest.mark.skip(reason=reasons[node.name]))


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
