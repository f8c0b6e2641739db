"""The plugin's command-line options (``pytest --help``, group *wincon*) and its markers."""

from __future__ import annotations

import argparse
import os
import re

import pytest

from wincon.commandline.optionnames import add_option

AREAS = ("networking", "dns", "storage", "probes", "lifecycle", "controllers", "scheduling", "api")
MARKERS = {
    "networking": "network flows between pods, Services, nodes and the outside",
    "dns": "name resolution from Windows pods",
    "storage": "volume types and mounts",
    "probes": "liveness, readiness and startup probes",
    "lifecycle": "lifecycle hooks, termination and grace periods",
    "controllers": "Deployments, StatefulSets, DaemonSets, Jobs and other controllers",
    "scheduling": "node selection, taints, RuntimeClass and resources",
    "api": "API validation and admission rules for Windows pods",
    "hybrid": "needs Linux and Windows worker nodes",
    "serial": "must not run in parallel with other tests",
    "slow": "takes minutes",
    "disruptive": "changes node or cluster state",
    "dataplane": "needs nodes that really run containers; skipped on simulated nodes",
    "control": "a Linux control: the same check between Linux pods on Linux workers, run before its Windows twin",
    "windows_only(reason)": "a data-plane check without a Linux meaning (no control), and why",
    "windows_form(*evidence, same_as_control, no_command, unavailable)": "what the Windows check runs: its "
    "control's command, or the evidence of each Windows-only form (wincon/windows/forms.py)",
    "requires(capability)": "needs load-balancer, network-policy, dual-stack, ipv6-single-stack, "
    "runhcs-wcow-hypervisor, hyperv-runtime-class, docker-runtime, cluster-dns, in-place-resize, "
    "pod-level-resources, node-log-query, cluster-trust-bundles or pod-certificates (wincon/clusterinfo/capabilities.py); skipped "
    "at collection where the profile shows the cluster lacks it",
    "avoids(rule)": "its pod avoids the nodes that cannot tell its result (wincon/checks/scheduling.py AVOIDS: "
    "hyperv-cpu-count, cri-stats); skipped at collection where the profile shows every node of its build is one",
    "decided_at_run_time(what)": "a skip only the run can decide (a node's free CPU, the API server's answer to "
    "the check's own pod, the behaviour itself); `wincon plan` says 'decided at run time: <what>'",
    "no_pod(reason)": "the check creates no pod (it reads the API server or the kubelet only): the image "
    "preflight's refusals do not apply to it; `wincon lint` reports one whose code names a catalog image",
    "limitation(id)": "a documented Windows limitation (limitations.yaml) this behaviour may deviate by",
    "isolation(kind)": "the isolation the test's pods request (hyperv); limitations match it (default: process)",
    "test_id(uuid)": "the stable id of the test",
    "documents(source, section)": "a documented statement the test checks: a source id of docs/sources.md, its section",
}

ALLOW_DISRUPTIVE = "--allow-disruptive"
# The reason of every disruptive check's skip without the opt-in: the plan shows it, the run skips with it, and the
# release gate (wincon.results.gate) recognises it to say the required check was not run and which option runs it.
DISRUPTIVE_SKIP_REASON = (
    f"disruptive: not run without {ALLOW_DISRUPTIVE} (it reboots, pages, taints or shuts down a node); "
    f"pass {ALLOW_DISRUPTIVE} on a cluster you may disrupt"
)

DEFAULT_EXTERNAL_IP = "8.8.8.8"
DEFAULT_EXTERNAL_HOST = "kubernetes.io"


def register_markers(config: pytest.Config) -> None:
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")


_MARK_WORDS = re.compile(r"[A-Za-z_][\w.:+\-]*")
_OPERATORS = frozenset({"and", "or", "not", "True", "False"})


def check_mark_expression(config: pytest.Config) -> None:
    """A ``-m`` expression naming a marker nobody registered selects nothing (``-m netwroking``: every test
    deselected, exit 5, no hint): a usage error (exit 4) that lists the known markers instead."""
    expression = getattr(config.option, "markexpr", "") or ""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    unknown = [w for w in dict.fromkeys(_MARK_WORDS.findall(expression)) if w not in _OPERATORS and w not in known]
    if unknown:
        ours = sorted(k for k in known if k.split("(", 1)[0] in {m.split("(", 1)[0] for m in MARKERS})
        raise pytest.UsageError(
            f"wincon: error: -m {expression!r} names no registered marker {', '.join(map(repr, unknown))}\n"
            f"  fix: use one of the suite's markers: {', '.join(ours)} (all of them: `pytest --markers`)"
        )


def skip_disruptive(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """Without ``--allow-disruptive``, every test marked ``disruptive`` is skipped with DISRUPTIVE_SKIP_REASON.

    The skip goes first among the item's skips, so the plan (its first skip mark) and the run (pytest's first skip
    mark) give this very reason whatever else would skip it. Returns the items it skipped."""
    if config.getoption("wincon_allow_disruptive", False):
        return []
    skipped = [item for item in items if item.get_closest_marker("disruptive") is not None]
    for item in skipped:
        item.add_marker(pytest.mark.skip(reason=DISRUPTIVE_SKIP_REASON), append=False)
    return skipped


def add_options(parser: pytest.Parser) -> None:
    """The ``wincon`` option group of ``pytest --help``."""
    group = parser.getgroup("wincon", "wincon: Windows node conformance")
    group.addoption(
        "--kubeconfig",
        dest="wincon_kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    group.addoption("--context", dest="wincon_context", help="kubeconfig context (default: current)")
    group.addoption(
        "--image-repo-list",
        dest="wincon_repo_list",
        default=os.environ.get("KUBE_TEST_REPO_LIST"),
        help="registry override file in the upstream KUBE_TEST_REPO_LIST format",
    )
    group.addoption(
        "--image-pull-secret",
        dest="wincon_image_pull_secret",
        metavar="[NAMESPACE/]NAME",
        help="a kubernetes.io/dockerconfigjson secret (namespace default unless named): every pod the suite creates "
        "names it, each test namespace gets a copy, and the image preflight reads the registries with it",
    )
    group.addoption(
        "--docker-config",
        dest="wincon_docker_config",
        metavar="PATH",
        help="registry credentials of the image preflight without --image-pull-secret: a docker config.json (or its "
        "directory); default $DOCKER_CONFIG/config.json, then ~/.docker/config.json",
    )
    group.addoption(
        "--no-image-verify",
        dest="wincon_no_image_verify",
        action="store_true",
        help="on a live cluster, do not read the Windows images' manifest lists from their registries before the "
        "checks (the plan and run then say the images were not verified); for a cluster whose nodes pull through "
        "a mirror this machine cannot reach",
    )
    group.addoption(
        "--cni",
        dest="wincon_cni",
        help="override pod network detection (the network policy engine stays as detected): flannel-vxlan, "
        "flannel-host-gw, win-overlay, win-bridge, azure-cni, aws-vpc-cni, gke, calico, ...",
    )
    group.addoption(
        "--network-policy",
        dest="wincon_network_policy",
        help="override detection of the NetworkPolicy engine on the Windows nodes (the pod network stays as "
        "detected): calico, azure-npm, antrea, ovn-kubernetes, or none",
    )
    group.addoption(
        "--windows-build",
        dest="wincon_windows_build",
        type=int,
        help="restrict to Windows nodes of this build (e.g. 20348)",
    )
    group.addoption(
        ALLOW_DISRUPTIVE,
        dest="wincon_allow_disruptive",
        action="store_true",
        help="run the checks marked disruptive (they reboot, shut down, page or taint a Windows node); without it "
        "they are skipped with that reason, and a release gate that requires one fails",
    )
    group.addoption("--run-id", dest="wincon_run_id", help="id of this run (default: time and random suffix)")
    group.addoption(
        "--keep-namespaces",
        dest="wincon_keep",
        action="store_true",
        help="keep test namespaces for debugging",
    )
    group.addoption(
        "--pod-start-timeout",
        dest="wincon_pod_timeout",
        type=float,
        default=300.0,
        help="seconds a pod may take to become Ready (default 300)",
    )
    group.addoption(
        "--namespace-ttl",
        dest="wincon_ns_ttl",
        type=int,
        default=3600,
        help="age in seconds after which another run's namespaces are reaped (default 3600)",
    )
    group.addoption(
        "--limitations",
        dest="wincon_limitations",
        help="limitations file (default: limitations.yaml of the suite)",
    )
    group.addoption(
        "--external-ip",
        dest="wincon_external_ip",
        default=None,
        help="an IP outside the cluster for egress checks (default: the local cluster's simulated external host, "
        f"else {DEFAULT_EXTERNAL_IP})",
    )
    group.addoption(
        "--external-host",
        dest="wincon_external_host",
        default=None,
        help="a DNS name outside the cluster for egress checks (default: the local cluster's simulated external "
        f"host, else {DEFAULT_EXTERNAL_HOST})",
    )
    group.addoption(
        "--prepull",
        dest="wincon_prepull",
        action="store_true",
        help="pre-pull the catalog images on the Windows nodes before testing",
    )
    group.addoption(
        "--wincon",
        dest="wincon_force",
        action="store_true",
        help="treat this run as a suite run whatever its paths",
    )
    add_option(
        group,
        "--profile-file",
        deprecated=["--wincon-profile"],
        dest="wincon_profile_file",
        help="read the cluster profile from this JSON file instead of the cluster",
    )
    group.addoption("--wincon-plan-out", dest="wincon_plan_out", help=argparse.SUPPRESS)
    group.addoption("--wincon-lint-out", dest="wincon_lint_out", help=argparse.SUPPRESS)
