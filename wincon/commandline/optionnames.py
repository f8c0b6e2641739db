"""One name per concept across `wincon`'s commands and the pytest plugin's options (docs/options.md), and the
hidden deprecated spellings of the old names."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptionName:
    """One concept's one spelling, shared by every `wincon` command and the pytest plugin that takes it
    (docs/options.md shows this table; tests/unit/test_cli_option_names.py holds the parsers to it)."""

    concept: str
    canonical: str
    deprecated: tuple[str, ...] = ()  # old spellings: accepted for one release, hidden, with a deprecation line
    dests: tuple[str, ...] = ()  # where a parser stores it under another name than the canonical's (pytest's)

    @property
    def all_dests(self) -> tuple[str, ...]:
        return (self.canonical.lstrip("-").replace("-", "_"), *self.dests)


# The concepts more than one place takes (or that had two spellings), kubectl's, Sonobuoy's and kubeadm's spelling where
# they have one. A deprecated spelling is deprecated only where the command took it with this meaning (`cluster up
# --timeout` is the start-up timeout, prepull's old `--timeout` the pod start timeout).
OPTION_NAMES = (
    OptionName("kubeconfig file", "--kubeconfig", dests=("wincon_kubeconfig",)),
    OptionName("kubeconfig context", "--context", dests=("wincon_context",)),
    OptionName("the local cluster's name", "--cluster-name", ("--name",), dests=("name",)),
    OptionName("Kubernetes release (X.Y)", "--kubernetes-version", ("--k8s-version",)),
    OptionName(
        "cluster profile JSON (`wincon profile --json`) read instead of the cluster",
        "--profile-file",
        ("--wincon-profile",),
        dests=("wincon_profile_file",),
    ),  # fmt: skip
    OptionName("limitations file", "--limitations", ("--file",), dests=("wincon_limitations",)),
    OptionName("registry override file (KUBE_TEST_REPO_LIST format)", "--image-repo-list", dests=("wincon_repo_list",)),
    OptionName(
        "pull secret ([NAMESPACE/]NAME) on every pod and for the registry reads",
        "--image-pull-secret",
        dests=("wincon_image_pull_secret",),
    ),
    OptionName("docker config.json of the registry credentials", "--docker-config", dests=("wincon_docker_config",)),
    OptionName(
        "age after which a dead run's namespaces are reaped", "--namespace-ttl", ("--ttl",), dests=("wincon_ns_ttl",)
    ),  # fmt: skip
    OptionName(
        "seconds a pod may take to become Ready", "--pod-start-timeout", ("--timeout",), dests=("wincon_pod_timeout",)
    ),  # fmt: skip
    OptionName("how long `cluster up` waits for the whole cluster", "--timeout"),
    OptionName("pod network (CNI) override", "--cni", dests=("wincon_cni",)),
    OptionName("NetworkPolicy engine override", "--network-policy", dests=("wincon_network_policy",)),
    OptionName("only the Windows nodes of this build", "--windows-build", dests=("wincon_windows_build",)),
    OptionName("run the disruptive checks", "--allow-disruptive", dests=("wincon_allow_disruptive",)),
    OptionName("machine-readable output", "--json"),
    OptionName("output directory", "--output"),
    OptionName("more output (kubectl's -v)", "--verbose"),
    OptionName("only errors and the summary line", "--quiet"),
)


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option, hidden from --help: it stores into the canonical option's dest and prints one
    line on stderr naming the new spelling. Only plain values and flags (``nargs=0``) are aliased."""

    def __init__(self, option_strings: list[str], dest: str, canonical: str = "", **kwargs: Any) -> None:
        kwargs["help"] = argparse.SUPPRESS
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.canonical = canonical
        self.warned = False

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        # Once: pytest parses its command line twice with the same actions, and its xdist workers parse it again.
        if not self.warned and not os.environ.get("PYTEST_XDIST_WORKER"):
            self.warned = True
            prog = "pytest" if parser.prog.endswith("pytest") else parser.prog  # not "python -m pytest"
            print(
                f"{prog}: warning: {option_string} is deprecated, use {self.canonical} "
                "(the old spelling goes in a later release)",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def alias_kwargs(canonical: argparse.Action) -> dict[str, Any]:
    """The add_argument keywords of a hidden deprecated spelling of ``canonical`` (an action already added)."""
    flag = canonical.nargs == 0
    spelling = next(s for s in canonical.option_strings if s.startswith("--"))
    return {
        "dest": canonical.dest,
        "action": DeprecatedAlias,
        "canonical": spelling,
        "nargs": 0 if flag else canonical.nargs,
        "const": canonical.const if flag else None,
        "type": None if flag else canonical.type,
        "choices": None if flag else canonical.choices,
        "metavar": canonical.metavar,
    }


def add_option(parser: Any, canonical: str, *names: str, deprecated: Sequence[str] = (), **kwargs: Any) -> Any:
    """``parser.add_argument(canonical, *names, **kwargs)`` and, for each ``deprecated`` spelling, a hidden alias
    that says it is deprecated. ``parser`` is an argparse parser or group (a pytest option group too)."""
    add = getattr(parser, "add_argument", None) or parser.addoption
    action = add(canonical, *names, **kwargs)
    if action is None:  # pytest's OptionGroup.addoption returns nothing: find the action it made
        action = next(a for a in parser.options if canonical in a.names())._action
    for old in deprecated:
        add(old, **alias_kwargs(action))
    return action
