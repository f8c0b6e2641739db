"""The embedded local cluster: a real Kubernetes control plane built from the Go module proxy, with
kwok-simulated Windows and Linux nodes.

``wincon cluster build`` builds the binaries once into a cache; :func:`up` starts (or reuses) a named
cluster and returns its kubeconfig; :func:`down` stops it. See docs/local-cluster.md.
"""

from __future__ import annotations

from wincon.localcluster.cluster import down, kubeconfig_path, status, up
from wincon.localcluster.topology import Topology

__all__ = ["Topology", "down", "kubeconfig_path", "status", "up"]
