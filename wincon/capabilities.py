"""What a check needs of the cluster beyond Windows nodes, decided at collection from the profile.

A test declares ``@pytest.mark.requires("<capability>")``; where the profile shows the cluster lacks it, the
item is skipped at collection with the reason, so ``wincon plan`` and the run agree. Where the profile cannot
tell, the item runs and the check's own runtime probe decides (and skips with its reason).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wincon.profile import ClusterProfile

# CNIs whose policy engine enforces NetworkPolicy on Windows nodes (and on Linux ones).
POLICY_CNIS = frozenset({"calico", "antrea", "cilium", "ovn-kubernetes"})


def _families(profile: ClusterProfile) -> str:
    return ", ".join(profile.ip_families) or "unknown"


# capability -> (does the cluster have it? None when the profile cannot tell, reason when it does not)
CAPABILITIES: dict[str, tuple[Callable[[ClusterProfile], bool | None], Callable[[ClusterProfile], str]]] = {
    "load-balancer": (
        lambda p: False if p.cloud == "kwok" else None,
        lambda p: "the local cluster has no LoadBalancer provider",
    ),
    "network-policy": (
        lambda p: p.cni in POLICY_CNIS,
        lambda p: (
            f"the CNI ({p.cni}) enforces no NetworkPolicy; engines that do: {', '.join(sorted(POLICY_CNIS))}"
            " (override detection with --cni)"
        ),
    ),
    "dual-stack": (
        lambda p: len(set(p.ip_families)) == 2 if p.ip_families else None,
        lambda p: f"the cluster is not IPv4/IPv6 dual-stack (default/kubernetes has families {_families(p)})",
    ),
    "ipv6-single-stack": (
        lambda p: p.ip_families == ["IPv6"] if p.ip_families else None,
        lambda p: f"the cluster is not IPv6 single-stack (default/kubernetes has families {_families(p)})",
    ),
}


def skip_missing(item: pytest.Item, profile: ClusterProfile) -> None:
    """Skip ``item`` at collection where the profile shows the cluster lacks a capability it requires."""
    for marker in item.iter_markers("requires"):
        for capability in marker.args:
            if capability not in CAPABILITIES:
                raise pytest.UsageError(
                    f"wincon: error: {item.nodeid} requires unknown capability {capability!r}\n"
                    f"  fix: use one of {', '.join(sorted(CAPABILITIES))}"
                )
            has, reason = CAPABILITIES[capability]
            if has(profile) is False:
                item.add_marker(pytest.mark.skip(reason=reason(profile)))
                return
