"""What a check needs of the cluster beyond Windows nodes, decided at collection from the profile or (LIVE) from
one read of the live cluster per run.

A test declares ``@pytest.mark.requires("<capability>")``; where the profile (or the live read) shows the cluster
lacks it, the item is skipped at collection with the reason, so ``wincon plan`` and the run agree. Where neither
can tell, the item runs and decides at run time (``require``, ``require_live``): an unknown capability never skips.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from wincon.clusterinfo.profile import ClusterProfile
from wincon.documents import releases


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
    """A capability a Kubernetes release brought: held from the minor wincon.documents.releases.MINORS names for ``fact``."""
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
    # kube_features.go and the validation each check cites): the minor and the reason are wincon.documents.releases.MINORS'.
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
            if capability not in CAPABILITIES and capability not in LIVE:
                raise pytest.UsageError(
                    f"wincon: error: {item.nodeid} requires unknown capability {capability!r}\n"
                    f"  fix: use one of {', '.join(sorted({*CAPABILITIES, *LIVE}))}"
                )
            if capability in CAPABILITIES:
                has, reason = CAPABILITIES[capability]
                if has(profile) is False:
                    item.add_marker(pytest.mark.skip(reason=reason(profile)))
                    return
            if capability in LIVE and _skip_live(item, capability):
                return


def plan_note(item: pytest.Item, profile: ClusterProfile) -> str:
    """What the plan says of a capability the profile cannot tell and the check reads at run time."""
    facts = [
        RUN_TIME_FACTS[capability]
        for marker in item.iter_markers("requires")
        for capability in marker.args
        if capability in RUN_TIME_FACTS and has(profile, capability) is None
    ]
    notes = []
    if facts:
        notes.append(
            f"decided at run time: the profile lacks {', '.join(dict.fromkeys(facts))} (a profile file without it, "
            "or unreadable in discovery); the check reads it and skips where the cluster lacks what it requires"
        )
    for capability, error in item.stash.get(_UNKNOWN, {}).items():
        notes.append(f"decided at run time: the run skips where {LIVE[capability].fact} ({error})")
    return "; ".join(notes)


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


# ----------------------------------------------------------------------------- read from the live cluster


@dataclass(frozen=True)
class Live:
    """A capability the profile does not hold: ``read(context)`` asks the live cluster once per run, and its
    answer serves every check requiring it, at collection and at run time; ``lacks(context, answer, item)`` says
    why the cluster lacks it for that check, or None. A read that fails (at collection: not even once) leaves the
    check to decide at run time, where the failure is the check's error with the cluster's reason."""

    fact: str  # where the check skips, for the plan's note where the plan could not read it
    read: Callable[[Any], Any]
    lacks: Callable[[Any, Any, pytest.Item], str | None]
    applies: Callable[[pytest.Item], bool] = lambda item: True  # the items it concerns (a control, a Windows check)


def _metrics_api(context: Any) -> str | None:
    """Why the cluster lacks the resource metrics API (metrics-server), or None. Registered but not Available is
    the cluster failing, not a capability it lacks: the check runs and ends in an error with the APIService's
    own condition."""
    from wincon.checks.controllers import metrics_api_available, metrics_api_installed
    from wincon.cluster.kube import Kube

    kube = Kube(context, "default")  # a cluster-scoped read; no gate, no exec
    missing = metrics_api_available(kube)
    if missing and metrics_api_installed(kube):
        return None
    return missing


def _linux_image(key: str) -> Live:
    """A Linux control's image the cluster's Linux nodes must carry (they pull nothing on the local cluster): the
    control skips with the catalog's reason, the one ``image()`` skips with at run time; its twin runs."""
    from wincon.clusterinfo.nodes import is_control

    return Live(
        f"the Linux nodes do not carry the {key} image (a Linux control)",
        lambda context: context.catalog.linux_missing(key),
        lambda context, missing, item: missing if is_control(item) else None,
        is_control,
    )


def _storage_classes(context: Any) -> list[Any]:
    from wincon.cluster.client import call
    from wincon.cluster.kube import Kube

    return list(call(Kube(context, "default").storage.list_storage_class).items)


def _storage_class(capability: str) -> Live:
    from wincon.checks.storage import lacking_class

    return Live(
        "the cluster has no StorageClass of the kind the check needs",
        _storage_classes,
        lambda context, classes, item: lacking_class(classes, capability),
    )


def _kubelet_configs(context: Any) -> dict[str, dict[str, Any]]:
    """The answer the kubelet capabilities share: each node's KubeletConfiguration, read as the checks ask."""
    return {}


def _kubelet(judge: Callable[[dict[str, Any], str], str | None]) -> Callable[[Any, Any, pytest.Item], str | None]:
    """Why the kubelet the check asks (its ``target_node``) lacks what ``judge`` looks for in its configuration:
    that node's /configz through the node proxy, read once per node. A simulated node's kubelet is not asked: the
    data-plane gate skips the check."""

    def lacks(context: Any, configs: dict[str, dict[str, Any]], item: pytest.Item) -> str | None:
        from wincon.cluster.kubelet import kubelet_config, kubelet_json
        from wincon.clusterinfo.nodes import build_for, pick_node, target_os
        from wincon.workloads.pinning import WINDOWS_TOLERATIONS

        profile = context.profile
        builds = sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
        node = pick_node(profile, target_os(item), build_for(item.nodeid, builds), WINDOWS_TOLERATIONS)
        if node is None or not node.data_plane:
            return None
        if node.name not in configs:
            configz, _ = kubelet_json(context.api_client, node.name, "configz", timeout=10)
            configs[node.name] = kubelet_config(configz)
        return judge(configs[node.name], node.name)

    return lacks


def _nothing_reserved(config: dict[str, Any], node: str) -> str | None:
    from wincon.checks.node import nothing_reserved

    return nothing_reserved(config, node)


def _log_query_off(config: dict[str, Any], node: str) -> str | None:
    from wincon.checks.node import log_query_off

    return log_query_off(config, node)


def _certificates(capability: str) -> Live:
    """The projected certificate checks where the API server does not serve their certificates.k8s.io/v1
    resources (a gate off): the reason the check gives on the same discovery read."""
    from wincon.checks import certificates

    return Live(
        "the API server does not serve the certificates.k8s.io/v1 resources the check needs (a gate off)",
        _served_certificate_resources,
        lambda context, served, item: certificates.skip_reason(served, capability),
    )


def _served_certificate_resources(context: Any) -> set[str]:
    from wincon.checks import certificates

    return certificates.served_resources(context.api_client)


def _gmsa(context: Any) -> Any:
    from wincon.checks.gmsa import detect_gmsa
    from wincon.cluster.kube import Kube

    return detect_gmsa(Kube(context, "default"))  # cluster-scoped reads only; no gate, no exec


def _stop_signals(context: Any) -> bool:
    from wincon.checks.lifecycle import stop_signal_kept

    return stop_signal_kept(context, "default")  # a server-side dry run


def _stop_signals_lacking(context: Any, kept: bool, item: pytest.Item) -> str | None:
    from wincon.checks.lifecycle import GATE_OFF

    return None if kept else GATE_OFF


HOST_PROCESS_DROPPED = (
    "HostProcess pods are not enabled on this cluster (the API server dropped windowsOptions.hostProcess)"
)


def _host_process(context: Any) -> str | None:
    """Why the API server does not take HostProcess pods, or None: a server-side dry run of one (SYSTEM, host
    network) in the default namespace. Refused by --allow-privileged=false, or the field dropped: the checks'
    own reasons; refused otherwise (an admission policy of that namespace, say): unknown, the checks decide."""
    from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED, submit_pod
    from wincon.checks.hostprocess import host_process_pod

    body = host_process_pod(context, "host-process-probe", None, ["cmd", "/c", "exit 0"])
    created, rejection = submit_pod(context.api_client, "default", body)
    if rejection is not None:
        if HOST_PROCESS_DISALLOWED in rejection.describe():
            return f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}"
        raise RuntimeError(f"a HostProcess pod was refused in the default namespace: {rejection.describe()}")
    options = (((created or {}).get("spec") or {}).get("securityContext") or {}).get("windowsOptions") or {}
    return None if options.get("hostProcess") else HOST_PROCESS_DROPPED


def _field_kept(
    context: Any,
    path: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    present: Callable[[dict[str, Any]], bool],
) -> bool:
    """Whether the API server keeps a gated field a Windows pod sets (``change``): a server-side dry run in the
    default namespace, refused at ``path`` (the field validated) or stored with it (``present``); stored without it,
    its feature gate is off. Refused otherwise (an admission policy, say): unknown, the checks decide."""
    from wincon.checks.api_rules import submit_pod
    from wincon.checks.pods import windows_pod

    body = change(windows_pod(context, "gated-field-probe", None))
    created, rejection = submit_pod(context.api_client, "default", body)
    if rejection is not None:
        if rejection.cause(path) is not None:
            return True
        raise RuntimeError(f"a Windows pod setting {path} was refused in the default namespace: {rejection.describe()}")
    return present(created or {})


POD_LEVEL_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
POD_LEVEL_RESOURCES_DROPPED = "the API server dropped spec.resources (feature gate PodLevelResources is off)"


def _pod_level_resources(context: Any) -> bool:
    def change(body: dict[str, Any]) -> dict[str, Any]:
        body["spec"]["resources"] = POD_LEVEL_RESOURCES
        return body

    return _field_kept(context, "spec.resources", change, lambda pod: bool((pod.get("spec") or {}).get("resources")))


def _gated_rule(item: pytest.Item) -> Any:
    """The gated securityContext field a check's ``rule`` parameter sets (wincon.checks.api_rules), or None."""
    rule = getattr(getattr(item, "callspec", None), "params", {}).get("rule")
    return rule if getattr(rule, "feature_gate", "") else None


def _security_gates(context: Any) -> dict[str, bool]:
    """Each gated Linux-only field validateWindows forbids, at each place (its rule's id): whether the API server
    keeps it (its feature gate on)."""
    from wincon.checks.api_rules import forbidden_fields

    return {
        rule.id: _field_kept(context, rule.path, rule.apply, rule.present_in)
        for rule in forbidden_fields()
        if rule.feature_gate
    }


def _security_gate_off(context: Any, kept: dict[str, bool], item: pytest.Item) -> str | None:
    rule = _gated_rule(item)
    if rule is None or kept.get(rule.id, True):
        return None
    return (
        f"the API server dropped {rule.path} (feature gate {rule.feature_gate} is off), so there is nothing to validate"
    )


def _is_control(item: pytest.Item) -> bool:
    from wincon.clusterinfo.nodes import is_control

    return is_control(item)


def _host_process_lacking(context: Any, why: str | None, item: pytest.Item) -> str | None:
    from wincon.clusterinfo.nodes import is_control

    return None if is_control(item) else why  # a Linux control runs no HostProcess pod


# capability -> how the live cluster tells it. A name also in CAPABILITIES is decided by the profile first.
LIVE: dict[str, Live] = {
    "metrics-api": Live(
        "the cluster has no resource metrics API (APIService v1beta1.metrics.k8s.io)",
        _metrics_api,
        lambda context, missing, item: f"HPA scaling needs the resource metrics API: {missing}" if missing else None,
    ),
    "resource-consumer-image": _linux_image("resource-consumer"),
    "default-storage-class": _storage_class("default-storage-class"),
    "block-storage-class": _storage_class("block-storage-class"),
    "expandable-storage-class": _storage_class("expandable-storage-class"),
    "kubelet-reservations": Live(
        "the kubelet the check asks reserves nothing (its /configz through the node proxy)",
        _kubelet_configs,
        _kubelet(_nothing_reserved),
    ),  # its answer: the nodes' kubelet configurations, read node by node as the checks ask
    # a name of CAPABILITIES too: from 1.36 (the profile's), then the kubelet the check asks serves log queries
    "node-log-query": Live(
        "the kubelet the check asks does not serve log queries (enableSystemLogQuery in its /configz through the "
        "node proxy)",
        _kubelet_configs,
        _kubelet(_log_query_off),
    ),
    # a name of CAPABILITIES too: from 1.34 (the profile's), then the API server keeps spec.resources (a dry run)
    "pod-level-resources": Live(
        "the API server drops spec.resources (feature gate PodLevelResources off; a dry-run pod)",
        _pod_level_resources,
        lambda context, kept, item: None if kept else POD_LEVEL_RESOURCES_DROPPED,
    ),
    "gated-security-fields": Live(
        "the API server drops the field (its feature gate off; a dry-run pod)",
        _security_gates,
        _security_gate_off,
        lambda item: _gated_rule(item) is not None,
    ),
    "cluster-trust-bundles": _certificates("cluster-trust-bundles"),
    "pod-certificates": _certificates("pod-certificates"),
    "gmsa": Live(
        "the GMSACredentialSpec CRD or a GMSA webhook is missing",
        _gmsa,
        lambda context, support, item: None if support.version else support.reason,
    ),
    "stop-signals": Live(
        "the API server drops lifecycle.stopSignal (a dry-run pod)", _stop_signals, _stop_signals_lacking
    ),
    "host-process": Live(
        "the API server refuses HostProcess pods (--allow-privileged=false) or drops windowsOptions.hostProcess",
        _host_process,
        _host_process_lacking,
        lambda item: not _is_control(item),
    ),
}

# each read -> its answer, or the exception it raised: capabilities sharing a read (the StorageClasses) share it
_ANSWERS = pytest.StashKey[dict[Callable[[Any], Any], Any]]()
_UNKNOWN = pytest.StashKey[dict[str, str]]()  # per item: capability -> why collection could not tell


def live_context(config: pytest.Config) -> Any:
    """The run's context where a live cluster is asked (not a profile file, not lint), else None."""
    from wincon.session.context import get_context

    if config.getoption("wincon_profile_file", None):
        return None
    return get_context(config)


def _answer(config: pytest.Config, context: Any, capability: str) -> Any:
    """The cluster's answer for ``capability``, read once per run; the exception its read raised, kept."""
    answers, read = config.stash.setdefault(_ANSWERS, {}), LIVE[capability].read
    if read not in answers:
        try:
            answers[read] = read(context)
        except Exception as exc:  # noqa: BLE001 - collection cannot tell; the check decides at run time
            answers[read] = exc
    return answers[read]


def live_lacks(item: pytest.Item, capability: str, context: Any) -> str | None:
    """Why the live cluster lacks ``capability`` for ``item``, or None where it has it. Raises where the cluster
    cannot be asked (the read's own error)."""
    answer = _answer(item.config, context, capability)
    if isinstance(answer, Exception):
        raise answer
    return LIVE[capability].lacks(context, answer, item)


def _skip_live(item: pytest.Item, capability: str) -> bool:
    """At collection: skip ``item`` where the live cluster lacks ``capability``; where it cannot tell, record why
    for the plan (the check decides at run time)."""
    if not LIVE[capability].applies(item):
        return False
    context = live_context(item.config)
    if context is None:  # a plan from a profile file: nothing live to ask
        item.stash.setdefault(_UNKNOWN, {})[capability] = "this plan asks no live cluster"
        return False
    try:
        why = live_lacks(item, capability, context)
    except Exception as exc:  # noqa: BLE001 - unknown: the check runs and decides
        error = f"{type(exc).__name__}: {exc}".strip()[:200]
        item.stash.setdefault(_UNKNOWN, {})[capability] = f"the plan could not read it: {error}"
        return False
    if why:
        item.add_marker(pytest.mark.skip(reason=why))
        return True
    return False


def require_live(item: pytest.Item, capability: str) -> Any:
    """At run time, the rule collection applied to ``item``: the answer read once per run (read now where
    collection could not tell, its failure the check's error with the cluster's reason); skips with the same
    reason where the cluster lacks ``capability``. Returns the answer (e.g. GMSA's served version)."""
    from wincon.session.context import get_context

    context = get_context(item.config)
    answers, read = item.config.stash.setdefault(_ANSWERS, {}), LIVE[capability].read
    if isinstance(answers.get(read), Exception):
        del answers[read]  # collection could not tell: ask again, and let the failure be the check's
    if read not in answers:
        answers[read] = read(context)
    why = LIVE[capability].lacks(context, answers[read], item)
    if why:
        pytest.skip(why)
    return answers[read]
