"""What a check needs of the cluster beyond Windows nodes, decided at collection from the profile.

A test declares ``@pytest.mark.requires("<capability>")``; where the profile shows the cluster lacks it, the
item is skipped at collection with the reason, so ``wincon plan`` and the run agree. Where the profile cannot
tell, the item runs and its verdict decides: an unknown capability never skips.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from wincon import releases
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


def _runtime_class(p: ClusterProfile, name: str | None = None) -> bool | None:
    """A RuntimeClass of that ``name``, or (None) one whose handler runs Hyper-V isolated containers: the same
    rule the checks name their RuntimeClass by (wincon.checks.scheduling.hyperv_runtime_class)."""
    from wincon.checks.scheduling import hyperv_runtime_class

    if p.runtime_classes is None:
        return None
    if name is not None:
        return any(have == name for have, _ in p.runtime_classes)
    return hyperv_runtime_class(p.runtime_classes) is not None


def minor_at_least(p: ClusterProfile, minor: str) -> bool | None:
    """Whether the API server's Kubernetes minor is ``minor`` or later; None where its version is unparseable."""
    return releases.at_least(p.server_version, minor)


def _since(p: ClusterProfile, minor: str, what: str) -> str:
    return f"the cluster runs Kubernetes {p.server_version}, older than {minor}, the release where {what}"


def _from_release(
    fact: str,
) -> tuple[Callable[[ClusterProfile], bool | None], Callable[[ClusterProfile], str]]:
    """A capability a Kubernetes release brought: held from the minor wincon.releases.MINORS names for ``fact``."""
    minor, what = releases.since(fact), releases.what_changed(fact)
    return (lambda p: minor_at_least(p, minor), lambda p: _since(p, minor, what))


def _classes(p: ClusterProfile) -> str:
    listed = ", ".join(f"{name} (handler {handler})" for name, handler in p.runtime_classes or ())
    return f"its RuntimeClasses: {listed or 'none'}"


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
    # Upstream's Hyper-V check runs its pods under this very RuntimeClass (test/e2e/windows/hyperv.go:36) and
    # skips without it; the suite's other Hyper-V checks take any RuntimeClass of a Hyper-V handler.
    "runhcs-wcow-hypervisor": (
        lambda p: _runtime_class(p, "runhcs-wcow-hypervisor"),
        lambda p: f"the cluster has no RuntimeClass runhcs-wcow-hypervisor (upstream skips the same; {_classes(p)})",
    ),
    "hyperv-runtime-class": (
        _runtime_class,
        lambda p: f"the cluster has no RuntimeClass with a Hyper-V handler ({_classes(p)})",
    ),
    # The legacy Hyper-V annotation (experimental.windows.kubernetes.io/isolation-type) is dockershim's: the Windows
    # nodes' runtime from their nodeInfo, always known to the profile ("unknown" or "mixed" is not Docker).
    "docker-runtime": (
        lambda p: p.runtime == "docker",
        lambda p: f"the legacy Hyper-V annotation is a Docker (dockershim) feature; the Windows nodes run {p.runtime}",
    ),
    "cluster-dns": (
        lambda p: None if p.cluster_dns is None else bool(p.cluster_dns),
        lambda p: "the cluster has no kube-system/kube-dns Service (with a cluster IP): no cluster DNS to use",
    ),
    # Behaviour a Kubernetes release introduced, by the API server's minor (k8s.io/kubernetes pkg/features/
    # kube_features.go and the validation each check cites): the minor and the reason are wincon.releases.MINORS'.
    "in-place-resize": _from_release("in-place-resize"),
    "pod-level-resources": _from_release("pod-level-resources"),
    "node-log-query": _from_release("node-log-query"),
    # Projected certificate volumes: GA in 1.37 with their certificates.k8s.io/v1 APIs (ClusterTrustBundle,
    # ClusterTrustBundleProjection and PodCertificateRequest GA and on by default, kube_features.go:1417, :1423,
    # :1945); whether this API server serves them (a gate turned off) the check reads (wincon.checks.certificates).
    "cluster-trust-bundles": _from_release("cluster-trust-bundles"),
    "pod-certificates": _from_release("pod-certificates"),
}

# What each capability the checks themselves read at run time (require) is decided by, for the plan's note where
# the profile lacks it (a profile file written before the field, or a read refused in discovery).
RUN_TIME_FACTS = {
    "runhcs-wcow-hypervisor": "the cluster's RuntimeClasses",
    "hyperv-runtime-class": "the cluster's RuntimeClasses",
    "cluster-dns": "the kube-system/kube-dns Service",
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


def plan_note(item: pytest.Item, profile: ClusterProfile) -> str:
    """What the plan says of a capability the profile cannot tell and the check reads at run time."""
    facts = [
        RUN_TIME_FACTS[capability]
        for marker in item.iter_markers("requires")
        for capability in marker.args
        if capability in RUN_TIME_FACTS and has(profile, capability) is None
    ]
    if not facts:
        return ""
    return (
        f"decided at run time: the profile lacks {', '.join(dict.fromkeys(facts))} (a profile file without it, or "
        "unreadable in discovery); the check reads it and skips where the cluster lacks what it requires"
    )


def require(
    profile: ClusterProfile, capability: str, complete: Callable[[ClusterProfile], ClusterProfile]
) -> ClusterProfile:
    """For the check at run time, the rule ``skip_missing`` applies at collection: where the profile cannot tell,
    on the profile ``complete`` gives (the check's own read of the fact it lacks); the check skips with the same
    reason where the cluster lacks ``capability``. Returns the profile it decided on (its facts for the check)."""
    if has(profile, capability) is None:
        profile = complete(profile)
    if has(profile, capability) is False:
        pytest.skip(reason(profile, capability))
    return profile


def require_read(capability: str, **facts: Any) -> None:
    """``require`` for a check whose fixture reads the fact anyway (the cluster DNS): the rule on that read, as
    collection applies it to the profile's; skips with the same reason where the cluster lacks ``capability``."""
    require(ClusterProfile(server_version=""), capability, lambda p: replace(p, **facts))
