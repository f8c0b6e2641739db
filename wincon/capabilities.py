"""What a check needs of the cluster beyond Windows nodes, decided at collection from the profile.

A test declares ``@pytest.mark.requires("<capability>")``; where the profile shows the cluster lacks it, the
item is skipped at collection with the reason, so ``wincon plan`` and the run agree. Where the profile cannot
tell, the item runs and its verdict decides: an unknown capability never skips.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wincon.profile import ClusterProfile


def _policy(p: ClusterProfile) -> bool | None:
    """The policy engine on the Windows nodes (``profile.network_policy``), a fact apart from the pod network:
    unknown (None) runs the checks; only a provider's or the user's "none" says the cluster enforces none."""
    if p.network_policy in ("", "unknown"):
        return None
    return p.network_policy != "none"


def _load_balancer(p: ClusterProfile) -> bool | None:
    """A Service of type LoadBalancer with an ingress address shows a provider, on any cluster. Its absence is
    conclusive only on the local cluster (cloud kwok), where nothing but its own add-on could provide one."""
    if p.load_balancers:
        return True
    return False if p.cloud == "kwok" else None


def _families(profile: ClusterProfile) -> str:
    return ", ".join(profile.ip_families) or "unknown"


# capability -> (does the cluster have it? None when the profile cannot tell, reason when it does not)
CAPABILITIES: dict[str, tuple[Callable[[ClusterProfile], bool | None], Callable[[ClusterProfile], str]]] = {
    "load-balancer": (
        _load_balancer,
        lambda p: "the local cluster has no LoadBalancer provider (no Service of type LoadBalancer has an address)",
    ),
    "network-policy": (
        _policy,
        lambda p: (
            f"no NetworkPolicy engine on the Windows nodes ({p.network_policy_source}; override with "
            "--network-policy ENGINE)"
        ),
    ),
    "dual-stack": (
        lambda p: len(set(p.ip_families)) == 2 if p.ip_families else None,
        lambda p: f"the cluster is not IPv4/IPv6 dual-stack (its Service ranges have families {_families(p)})",
    ),
    "ipv6-single-stack": (
        lambda p: p.ip_families == ["IPv6"] if p.ip_families else None,
        lambda p: f"the cluster is not IPv6 single-stack (its Service ranges have families {_families(p)})",
    ),
}


def has(profile: ClusterProfile, capability: str) -> bool | None:
    """Whether the cluster has ``capability``: True, False, or None where the profile cannot tell."""
    return CAPABILITIES[capability][0](profile)


def reason(profile: ClusterProfile, capability: str) -> str:
    return CAPABILITIES[capability][1](profile)


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
