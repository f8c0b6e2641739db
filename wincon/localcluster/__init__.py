"""The embedded local cluster: a real Kubernetes control plane built from the Go module proxy, with
kwok-simulated Windows and Linux nodes.

``wincon cluster build`` builds the binaries once into a cache; :func:`up` starts (or reuses) a named
cluster and returns its kubeconfig; :func:`down` stops it. See docs/local-cluster.md.

The names below are imported on first use (PEP 562): a suite run imports ``wincon.localcluster.hints`` only,
and should not pay for the cluster's own modules (cluster, dataplane, cni, images) at every pytest start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wincon.localcluster.cluster import down, kubeconfig_path, status, up
    from wincon.localcluster.topology import Topology

__all__ = ["Topology", "down", "kubeconfig_path", "status", "up"]


def __getattr__(name: str) -> Any:
    if name == "Topology":
        from wincon.localcluster.topology import Topology

        return Topology
    if name in ("down", "kubeconfig_path", "status", "up"):
        from wincon.localcluster import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
