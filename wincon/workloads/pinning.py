"""Pin workloads to an operating system, and check where a pod really ran before trusting a result."""

from __future__ import annotations

import copy
from typing import Any

from wincon.errors import FrameworkFailure
from wincon.profile import ClusterProfile, NodeProfile

# The taints Windows node pools commonly carry: the KEP's, AKS's and GKE's conventions.
WINDOWS_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "sku", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
)


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
    """The node the pod ran on, after checking it is of the intended OS (and build)."""
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
    return node
