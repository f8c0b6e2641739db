"""Pin workloads to an operating system, and check where a pod really ran before trusting a result."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from wincon.errors import FrameworkFailure
from wincon.profile import ClusterProfile, NodeProfile
from wincon.verdicts import NODE

# The taints Windows node pools commonly carry: the KEP's, AKS's and GKE's conventions.
WINDOWS_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "sku", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
)


# The item whose pods are being placed: set by the plugin around each item's run (an xdist worker runs one
# item at a time; a stack, so that a pytester run inside a test restores the outer item afterwards).
_RUNNING: list[pytest.Item] = []


@contextmanager
def running(item: pytest.Item) -> Iterator[None]:
    """While ``item`` runs (setup, call, teardown), the nodes ``assert_ran_on`` checks are recorded on it."""
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


def recorded_nodes(item: pytest.Item) -> list[str]:
    """The nodes ``item``'s pods ran on, as known so far: recorded (placement checks, the gate's exec pods),
    then those of the pods its fixtures hand it (see :func:`fixture_pod_nodes`)."""
    nodes = [str(v) for k, v in item.user_properties if k == NODE]
    return nodes + [n for n in fixture_pod_nodes(item) if n not in nodes]


def pod_node(pod: Any) -> str | None:
    """The node of a pod given as an API object, a manifest-like dict or a ``PodRef``; None for a bare name."""
    if isinstance(pod, str):
        return None
    spec = pod.get("spec") if isinstance(pod, dict) else getattr(pod, "spec", None)
    if spec is not None:
        name = spec.get("nodeName") if isinstance(spec, dict) else getattr(spec, "node_name", None)
        return str(name) if name else None
    node = getattr(pod, "node", None)  # a PodRef (wincon.network.pods)
    return node if isinstance(node, str) and node else None


def fixture_pod_nodes(item: pytest.Item) -> list[str]:
    """The nodes of the pods ``item``'s fixtures hand it (``PodRef`` values, alone or in a list, tuple or dict):
    module-scoped pods are placed while the first item that uses them sets up, but count for every item."""
    from wincon.network.pods import PodRef  # it imports this module

    nodes: list[str] = []
    for value in (getattr(item, "funcargs", None) or {}).values():
        refs: Iterable[Any] = [value]
        if isinstance(value, dict):
            refs = value.values()
        elif isinstance(value, (list, tuple)):
            refs = value
        for ref in refs:
            if isinstance(ref, PodRef) and ref.node and ref.node not in nodes:
                nodes.append(ref.node)
    return nodes


class WrongNode(FrameworkFailure):
    """A pod ran somewhere its result cannot be trusted: a false pass prevented."""


def pin_windows(pod_spec: dict[str, Any], build: int | None = None, node: str | None = None) -> dict[str, Any]:
    """A copy of ``pod_spec`` that can only run on a Windows node (of ``build``, or the named node)."""
    spec = copy.deepcopy(pod_spec)
    spec["os"] = {"name": "windows"}
    selector = dict(spec.get("nodeSelector") or {})
    selector["kubernetes.io/os"] = "windows"
    if build:
        selector["node.kubernetes.io/windows-build"] = f"10.0.{build}"
    if node:
        selector["kubernetes.io/hostname"] = node
    spec["nodeSelector"] = selector
    tolerations = list(spec.get("tolerations") or [])
    tolerations += [t for t in WINDOWS_TOLERATIONS if t not in tolerations]
    spec["tolerations"] = tolerations
    return spec


def pin_linux(pod_spec: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(pod_spec)
    spec["os"] = {"name": "linux"}
    selector = dict(spec.get("nodeSelector") or {})
    selector["kubernetes.io/os"] = "linux"
    if node:
        selector["kubernetes.io/hostname"] = node
    spec["nodeSelector"] = selector
    return spec


def assert_ran_on(pod: Any, profile: ClusterProfile, os_name: str = "windows", build: int | None = None) -> NodeProfile:
    """The node the pod ran on, after checking it is of the intended OS (and build); recorded on the running
    item (a ``node`` property), whose data-plane gate then judges that node."""
    node_name = pod.spec.node_name if hasattr(pod, "spec") else pod["spec"].get("nodeName")
    pod_name = pod.metadata.name if hasattr(pod, "metadata") else pod["metadata"]["name"]
    if not node_name:
        raise WrongNode(f"pod {pod_name} was never scheduled, so nothing it reports can be trusted")
    node = next((n for n in profile.nodes if n.name == node_name), None)
    if node is None:
        raise WrongNode(f"pod {pod_name} ran on {node_name}, a node the cluster profile does not know")
    if node.os != os_name:
        raise WrongNode(f"pod {pod_name} ran on {node_name}, a {node.os} node, not {os_name}: result discarded")
    if build and node.windows_build != build:
        raise WrongNode(f"pod {pod_name} ran on {node_name} (build {node.windows_build}), not build {build}")
    item = current_item()
    if item is not None:
        record_node(item, node.name)
    return node
