"""Pin workloads to an operating system, and check where a pod really ran before trusting a result.

What a node is (its facts, read late where the profile did not know it, and whether it has a data plane) is
``wincon.clusterinfo.nodes``'s to say; this module asks it.
"""

from __future__ import annotations

import copy
from typing import Any

from wincon.clusterinfo import nodes
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import FrameworkFailure, InfrastructureError

# The taints Windows node pools commonly carry: the KEP's, AKS's and GKE's conventions.
WINDOWS_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
    {"key": "sku", "operator": "Equal", "value": "windows", "effect": "NoSchedule"},
)


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
    item (a ``node`` property), whose data-plane gate then judges that node. A node the profile did not know
    (added after the run started) is read from the API server now and judged like every other node."""
    node_name = pod.spec.node_name if hasattr(pod, "spec") else pod["spec"].get("nodeName")
    pod_name = pod.metadata.name if hasattr(pod, "metadata") else pod["metadata"]["name"]
    if not node_name:
        raise WrongNode(f"pod {pod_name} was never scheduled, so nothing it reports can be trusted")
    node = nodes.lookup(profile, node_name)
    if node is None:
        raise InfrastructureError(
            f"pod {pod_name} ran on {node_name}, a node the API server no longer knows (it went away mid-check)",
            "re-run the check once the cluster's nodes hold still",
        )
    if node.os != os_name:
        raise WrongNode(f"pod {pod_name} ran on {node_name}, a {node.os} node, not {os_name}: result discarded")
    if build and node.windows_build != build:
        raise WrongNode(f"pod {pod_name} ran on {node_name} (build {node.windows_build}), not build {build}")
    item = nodes.current_item()
    if item is not None:
        nodes.record_node(item, node.name)
    return node
