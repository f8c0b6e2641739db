"""What a node is, decided in one place: the facts of the nodes an item's pods ran on (read late where the
profile did not know them), the nodes it may land on, and whether they have a data plane.

Placement (``wincon.workloads.pinning``), the gate (``wincon.session.fixtures``), collection and the verdict code
(``wincon.session.collection``, ``wincon.session.controls``, ``wincon.session.reports``) ask this module; it asks none of them.

A node the profile did not know when the run started (an autoscaler's new node, a node-image upgrade, a spot
replacement) is read from the API server when a pod lands on it, and judged by the same rule as every other
node: it has no data plane only where the simulator marks it (``profile.node_profile``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import pytest

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile, node_profile, tolerated
from wincon.session.verdicts import ISOLATION_OBSERVED, NODE

OS_FIXTURE = "target_os"
LINUX, WINDOWS = "linux", "windows"
REAL, SIMULATED, MIXED = "real", "simulated", "mixed"  # data_plane_where: the planned nodes' data plane


# ----------------------------------------------------------------------------- the OS an item checks


def target_os(item: pytest.Item) -> str:
    """The OS whose pods an item checks: linux for a Linux control, windows for everything else."""
    callspec = getattr(item, "callspec", None)
    return str(callspec.params.get(OS_FIXTURE, WINDOWS)) if callspec is not None else WINDOWS


def is_control(item: pytest.Item) -> bool:
    return target_os(item) == LINUX


# ----------------------------------------------------------------------------- node facts, read late


# How a node the profile does not know is read: name -> the Node as the API returns it (a dict), or None when
# the API server has no such node. Set by the run's context (its API client); None outside a run.
NodeReader = Callable[[str], "dict[str, Any] | None"]
_READER: list[NodeReader] = []
_LATE: dict[str, NodeProfile] = {}  # the nodes read late in this process, by name


def set_reader(reader: NodeReader | None) -> None:
    """Install how nodes the profile does not know are read (one reader per process; None removes it)."""
    _READER[:] = [reader] if reader is not None else []
    _LATE.clear()


def late_nodes() -> list[NodeProfile]:
    """The nodes read late in this process (unknown to the profile when the run started)."""
    return list(_LATE.values())


def lookup(profile: ClusterProfile, name: str) -> NodeProfile | None:
    """The facts of node ``name``: from the profile (every node of the cluster, ``--windows-build`` or not),
    else read now from the API server (once per process). None when the API server has no such node (it went
    away) or nothing can read it. A failed read raises the API error: the cluster could not answer."""
    for node in profile.all_nodes:
        if node.name == name:
            return node
    if name in _LATE:
        return _LATE[name]
    if not _READER:
        return None
    raw = _READER[0](name)
    if raw is None:
        return None
    _LATE[name] = node_profile(raw)
    return _LATE[name]


def _known(profile: ClusterProfile, name: str) -> NodeProfile | None:
    """``lookup`` for the verdict hooks, which must not raise: a node that cannot be read is unknown."""
    try:
        return lookup(profile, name)
    except Exception:
        return None


# ----------------------------------------------------------------------------- the nodes an item's pods ran on


# The item whose pods are being placed: set by the plugin around each item's run (an xdist worker runs one
# item at a time; a stack, so that a pytester run inside a test restores the outer item afterwards).
_RUNNING: list[pytest.Item] = []


@contextmanager
def running(item: pytest.Item) -> Iterator[None]:
    """While ``item`` runs (setup, call, teardown), the nodes its pods are placed on are recorded on it."""
    _RUNNING.append(item)
    try:
        yield
    finally:
        _RUNNING.pop()


def current_item() -> pytest.Item | None:
    return _RUNNING[-1] if _RUNNING else None


def record_node(item: pytest.Item, node_name: str | None) -> None:
    """Record that one of ``item``'s pods ran on ``node_name`` (a ``node`` property, once per node)."""
    if node_name and (NODE, node_name) not in item.user_properties:
        item.user_properties.append((NODE, node_name))


def observe_isolation(node_name: str, kind: str, item: pytest.Item | None = None) -> None:
    """Record the isolation a check saw its pod run in on ``node_name`` ("process" or "hyperv"), on ``item`` (the
    running item by default): the run's execution record counts it, and a check that asked for Hyper-V and saw
    process isolation makes `wincon run` exit 1 (wincon.results.execution)."""
    if kind not in ("process", "hyperv"):
        raise ValueError(f"isolation {kind!r}: process or hyperv")
    item = item or current_item()
    if item is not None and node_name and (ISOLATION_OBSERVED, f"{node_name}={kind}") not in item.user_properties:
        item.user_properties.append((ISOLATION_OBSERVED, f"{node_name}={kind}"))


@runtime_checkable
class PlacedPod(Protocol):
    """A pod that ran where intended, as fixtures hand it to checks (``wincon.network.pods.PodRef``)."""

    name: str
    node: str
    os: str
    ip: str


def fixture_pod_nodes(item: pytest.Item) -> list[str]:
    """The nodes of the pods ``item``'s fixtures hand it (``PlacedPod`` values, alone or in a list, tuple or
    dict): module-scoped pods are placed while the first item that uses them sets up, but count for every item."""
    nodes: list[str] = []
    for value in (getattr(item, "funcargs", None) or {}).values():
        refs: Iterable[Any] = [value]
        if isinstance(value, dict):
            refs = value.values()
        elif isinstance(value, (list, tuple)):
            refs = value
        for ref in refs:
            node = getattr(ref, "node", None) if isinstance(ref, PlacedPod) else None
            if isinstance(node, str) and node and node not in nodes:
                nodes.append(node)
    return nodes


def recorded_nodes(item: pytest.Item) -> list[str]:
    """The nodes ``item``'s pods ran on, as known so far: recorded (placement checks, the gate's exec pods),
    then those of the pods its fixtures hand it (see :func:`fixture_pod_nodes`)."""
    nodes = [str(v) for k, v in item.user_properties if k == NODE]
    return nodes + [n for n in fixture_pod_nodes(item) if n not in nodes]


# ----------------------------------------------------------------------------- where an item's pods may land


def schedulable(node: NodeProfile, tolerations: Iterable[dict[str, str]] = ()) -> bool:
    """A Ready node a pod with ``tolerations`` (none: a Linux control's, an ordinary pod's) may be scheduled to:
    every NoSchedule/NoExecute taint tolerated (control-plane nodes carry one)."""
    return node.ready and all(tolerated(t, tolerations) for t in node.taints)


def schedulable_windows_nodes(profile: ClusterProfile, tolerations: Iterable[dict[str, str]]) -> list[str]:
    """Ready Windows nodes whose NoSchedule/NoExecute taints ``tolerations`` all tolerate, by name."""
    return sorted(node.name for node in profile.ready_windows_nodes if schedulable(node, tolerations))


def windows_nodes_of_build(profile: ClusterProfile, build: int | None) -> list[NodeProfile]:
    return [n for n in profile.ready_windows_nodes if build is None or n.windows_build == build]


def nodes_for(profile: ClusterProfile, os_name: str, build: int | None) -> list[NodeProfile]:
    """The Ready nodes a check's pods may use: Windows nodes of ``build``, or Linux nodes with a data plane."""
    if os_name == WINDOWS:
        return windows_nodes_of_build(profile, build)
    return [n for n in profile.linux_nodes if n.ready and n.data_plane]


def pick_node(
    profile: ClusterProfile, os_name: str, build: int | None, tolerations: Iterable[dict[str, str]]
) -> NodeProfile | None:
    """The one node a check of ``os_name`` asks (the node suite's ``target_node``): the first Ready Windows node of
    ``build`` by name whose taints ``tolerations`` tolerate, or the first Ready Linux worker with a data plane."""
    if os_name == WINDOWS:
        allowed = set(schedulable_windows_nodes(profile, tolerations))
        nodes = [n for n in windows_nodes_of_build(profile, build) if n.name in allowed]
    else:
        nodes = nodes_for(profile, os_name, build)
    return sorted(nodes, key=lambda n: n.name)[0] if nodes else None


def build_for(nodeid: str, builds: list[int]) -> int | None:
    """The Windows build a test pins to: one of ``builds``, fixed per test id, spread over all of them."""
    if not builds:
        return None
    return builds[zlib.crc32(nodeid.encode()) % len(builds)]


def candidate_nodes(item: pytest.Item, profile: ClusterProfile) -> list[NodeProfile]:
    """The Windows nodes a test's pods may run on: the Ready ones of the build it pins to (the ``build``
    fixture's choice, fixed per test id), else every Ready Windows node (of ``--windows-build``'s build)."""
    ready = profile.ready_windows_nodes or profile.windows_nodes
    if "build" in getattr(item, "fixturenames", ()):
        build = build_for(
            item.nodeid, sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
        )
        same = [n for n in ready if n.windows_build == build]
        if same:
            return same
    return ready


def planned_nodes(item: pytest.Item, profile: ClusterProfile) -> list[NodeProfile]:
    """The nodes an item's pods may land on, before any ran: the Ready Linux nodes for a control; for a Windows
    item its candidate nodes (:func:`candidate_nodes`)."""
    if is_control(item):
        return [n for n in profile.linux_nodes if n.ready]
    return candidate_nodes(item, profile)


# ----------------------------------------------------------------------------- the data-plane judgement


def data_plane_where(item: pytest.Item, profile: ClusterProfile) -> str:
    """Before placement: REAL (every planned node has a data plane), SIMULATED (none has, or there is none),
    MIXED (placement decides: the plan says so, the run judges the nodes the pods ran on)."""
    nodes = planned_nodes(item, profile)
    real = sum(1 for n in nodes if n.data_plane)
    if nodes and real == len(nodes):
        return REAL
    return MIXED if real else SIMULATED


def without_data_plane(item: pytest.Item, profile: ClusterProfile) -> list[str]:
    """The nodes the item's pods ran on that have no data plane (simulated), or that cannot be read at all
    (gone from the API server: nothing vouches for them). A node the profile did not know is read now."""
    out = []
    for name in recorded_nodes(item):
        node = _known(profile, name)
        if node is None or not node.data_plane:
            out.append(name)
    return out


def data_plane_for(item: pytest.Item, profile: ClusterProfile) -> bool:
    """Whether the nodes an item's pods run on have a data plane, judged per node.

    Once pods ran (their nodes recorded by the placement checks and the gate): every one of those nodes must
    have one, whether the profile knew it or it was read late. Before (and for a Windows item none of whose
    recorded pods is on Windows) the planned nodes decide: for a Windows item every Ready Windows node of its
    build must have one; for a control, any Ready Linux node (its pods are pinned to the Linux workers).
    """
    if without_data_plane(item, profile):
        return False
    ran_on = [_known(profile, name) for name in recorded_nodes(item)]  # every one readable and real (above)
    if is_control(item):
        return bool(ran_on) or data_plane_where(item, profile) != SIMULATED
    return any(n is not None and n.os == WINDOWS for n in ran_on) or data_plane_where(item, profile) == REAL


def mixed_note(item: pytest.Item, profile: ClusterProfile) -> str:
    """The plan's reason where placement decides (MIXED)."""
    simulated = sorted(n.name for n in planned_nodes(item, profile) if not n.data_plane)
    return (
        "depends on the node: runs where its pods land on a real node; skips on a simulated one "
        f"({', '.join(simulated)})"
    )
