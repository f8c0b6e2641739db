"""The documented limitation list: load, validate, and match each entry against a ClusterProfile.

limitations.yaml is data. Each entry says when it applies (CNI, Windows build, Kubernetes version,
runtime, ...) and from when it no longer holds. A test marked ``@pytest.mark.limitation("id")`` becomes a
strict expected failure exactly where its entry applies to the cluster at hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import LimitationsError
from wincon.documents import releases

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "limitations.yaml"


@dataclass(frozen=True)
class Limitation:
    id: str
    title: str
    area: str
    statement: str
    sources: tuple[dict[str, str], ...]
    mode: str
    applies_when: dict[str, Any] = field(default_factory=dict)
    lifted_in: dict[str, Any] | None = None
    skip_reason: str = ""
    untestable: str = ""
    note: str = ""
    retired: str = ""

    @property
    def source_text(self) -> str:
        return "; ".join(f"{s['file']} ({s['section']})" for s in self.sources)


@dataclass(frozen=True)
class Match:
    """Whether a limitation applies, the facts that decided it, and the facts that were unknown.

    A limitation is matched against the node a check runs on (its build, kubelet version, runtime) and
    the isolation its pods request; the CNI, cloud and kube-proxy mode are the cluster's. An unknown
    fact never makes a limitation apply: ``unknown`` names it, so the plan can say so.
    """

    applies: bool
    facts: tuple[str, ...]
    unknown: tuple[str, ...] = ()

    def explain(self) -> str:
        return ", ".join(self.facts)


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    schema = json.loads(resources.files("wincon").joinpath("data/limitations.schema.json").read_text())
    return Draft202012Validator(schema)


def load(path: str | Path | None = None) -> dict[str, Limitation]:
    """Every entry of the file by id. Raises LimitationsError naming file, entry and field on any defect."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        # libyaml's loader where PyYAML has it: the same document, 0.01 s against 0.09 s of every run's start.
        document = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except FileNotFoundError as exc:
        raise LimitationsError(
            f"{path}: file not found", "pass --limitations PATH or restore limitations.yaml"
        ) from exc
    except yaml.YAMLError as exc:
        raise LimitationsError(f"{path}: not valid YAML: {exc}", "fix the YAML syntax at the line shown") from exc
    errors = sorted(_validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        raise LimitationsError(
            f"{path}: {_locate(document, list(first.absolute_path))}: {first.message}"
            + (f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""),
            "correct the entry to match wincon/data/limitations.schema.json (see docs/limitations.md)",
        )
    result: dict[str, Limitation] = {}
    for index, raw in enumerate(document["limitations"]):
        if raw["id"] in result:
            raise LimitationsError(
                f"{path}: entry {index} ({raw['id']}): field 'id': duplicate id",
                "give every limitation a unique id",
            )
        for key in ("windows_build", *VERSION_KEYS):
            spec = (raw.get("applies_when") or {}).get(key)
            if spec is not None:
                try:
                    SpecifierSet(spec)
                except InvalidSpecifier as exc:
                    raise LimitationsError(
                        f"{path}: entry {index} ({raw['id']}): field 'applies_when.{key}': {exc}",
                        "write a specifier such as '>=17763' or '<1.24'",
                    ) from exc
        result[raw["id"]] = Limitation(
            id=raw["id"],
            title=raw["title"],
            area=raw["area"],
            statement=raw["statement"],
            sources=tuple(raw["sources"]),
            mode=raw["mode"],
            applies_when=raw.get("applies_when") or {},
            lifted_in=raw.get("lifted_in"),
            skip_reason=raw.get("skip_reason", ""),
            untestable=raw.get("untestable", ""),
            note=raw.get("note", ""),
            retired=raw.get("retired", ""),
        )
    return result


def _locate(document: Any, path: list[Any]) -> str:
    """'entry 3 (icmp-egress): field 'applies_when.cni'' for a schema error at that path."""
    if len(path) >= 2 and path[0] == "limitations" and isinstance(path[1], int):
        entries = document.get("limitations") or []
        entry = entries[path[1]] if path[1] < len(entries) else {}
        ident = entry.get("id", "?") if isinstance(entry, dict) else "?"
        field_path = ".".join(str(p) for p in path[2:]) or "(entry)"
        return f"entry {path[1]} ({ident}): field '{field_path}'"
    return f"field '{'.'.join(str(p) for p in path) or '(top level)'}'"


def parse_version(text: str | None) -> Version | None:
    """'1.34.4' from 'v1.34.4', 'v1.34.4-gke.100' or '1.34'; None when there is no version to read.

    An unparseable version is unknown, never 0.0 (which would satisfy every '<' condition).
    """
    found = releases.numbers(text)
    return Version(".".join(map(str, found))) if found else None


def match(
    limitation: Limitation,
    profile: ClusterProfile,
    node: NodeProfile | None = None,
    isolation: str = "process",
    nodes: Sequence[NodeProfile] | None = None,
) -> Match:
    """Does this limitation apply to a check on ``node``, whose pods request ``isolation``?

    Without a node, it applies where it applies on every one of ``nodes`` (default: the Windows nodes):
    the node a check will run on is one of them. Unknown facts never make it apply.
    """
    if limitation.untestable:
        return Match(False, ("untestable: " + limitation.untestable,))
    if limitation.retired:
        return Match(False, ("retired: " + limitation.retired,))
    if node is not None:
        return _match_node(limitation, profile, node, isolation)
    candidates = list(nodes if nodes is not None else profile.windows_nodes)
    if not candidates:
        return Match(False, ("no Windows node to match against",), ("windows nodes",))
    per_node = [(n, _match_node(limitation, profile, n, isolation)) for n in candidates]
    applying = [n.name for n, m in per_node if m.applies]
    if len(applying) == len(per_node):
        facts = per_node[0][1].facts
        if len(per_node) > 1:
            facts += (f"on nodes {', '.join(applying)}",)
        return Match(True, facts)
    unknown = tuple(dict.fromkeys(u for _, m in per_node for u in m.unknown))
    if not applying:
        reasons = dict.fromkeys(f for _, m in per_node for f in m.facts)
        return Match(False, tuple(reasons), unknown)
    others = "; ".join(f"{n.name}: {m.explain()}" for n, m in per_node if not m.applies)
    return Match(
        False,
        (f"depends on the node: applies on {', '.join(applying)} only, not on {others}",),
        unknown,
    )


# The component whose version decides a condition: applies_when specifiers and lifted_in versions name it.
VERSION_KEYS = ("apiserver_version", "kubelet_version", "kube_proxy_version", "containerd_version")


def component_version(key: str, profile: ClusterProfile, node: NodeProfile) -> tuple[str, Version | None]:
    """The component ``key`` names, as the plan names it, and its version (None: unknown or unparseable).

    The API server's is the cluster's; the kubelet's, kube-proxy's and containerd's are the node's (a skewed node
    keeps its own behaviour). containerd's version is known only on a node whose runtime is containerd."""
    if key == "apiserver_version":
        return "API server version", parse_version(profile.server_version)
    if key == "kubelet_version":
        return f"kubelet version of node {node.name}", parse_version(node.kubelet_version)
    if key == "kube_proxy_version":
        return f"kube-proxy version of node {node.name}", parse_version(node.kube_proxy_version)
    if key == "containerd_version":
        version = parse_version(node.runtime_version) if node.runtime == "containerd" else None
        return f"containerd version of node {node.name}", version
    raise KeyError(key)


def _short(key: str) -> str:
    return {"apiserver_version": "API server", "kubelet_version": "kubelet", "kube_proxy_version": "kube-proxy"}.get(
        key, "containerd"
    )


def _match_node(limitation: Limitation, profile: ClusterProfile, node: NodeProfile, isolation: str) -> Match:
    facts: list[str] = [f"node {node.name}"]
    cond = limitation.applies_when

    def unknown(what: str) -> Match:
        return Match(False, (f"{what} unknown: an unknown fact never applies",), (what,))

    if "cni" in cond:
        if profile.cni in ("", "unknown"):
            return unknown("cni")
        hit = sorted(profile.cni_aliases & set(cond["cni"]))
        if not hit:
            return Match(False, (f"cni {profile.cni} not in {cond['cni']}",))
        facts.append(f"cni {profile.cni}{'/' + profile.cni_backend if profile.cni_backend else ''} ({hit[0]})")
    if "windows_build" in cond:
        if not node.windows_build:
            return unknown(f"windows build of node {node.name}")
        if Version(str(node.windows_build)) not in SpecifierSet(cond["windows_build"]):
            return Match(False, (f"node {node.name} windows build {node.windows_build} not {cond['windows_build']}",))
        facts.append(f"windows build {node.windows_build} {cond['windows_build']}")
    for key in VERSION_KEYS:
        if key in cond:
            component, version = component_version(key, profile, node)
            if version is None:
                return unknown(component)
            if version not in SpecifierSet(cond[key]):
                return Match(False, (f"{component} {version} not {cond[key]}",))
            facts.append(f"{_short(key)} {version} {cond[key]}")
    if "runtime" in cond:
        if not node.runtime:
            return unknown(f"runtime of node {node.name}")
        if node.runtime not in cond["runtime"]:
            return Match(False, (f"node {node.name} runtime {node.runtime} not in {cond['runtime']}",))
        facts.append(f"runtime {node.runtime}")
    for key, value in (("cloud", profile.cloud), ("kube_proxy_mode", profile.kube_proxy_mode)):
        if key in cond:
            if not value or value == "unknown":
                return unknown(key.replace("_", "-"))
            if value not in cond[key]:
                return Match(False, (f"{key} {value} not in {cond[key]}",))
            facts.append(f"{key} {value}")
    if "isolation" in cond:
        if isolation not in cond["isolation"]:
            return Match(False, (f"isolation {isolation} (the pods request it) not in {cond['isolation']}",))
        facts.append(f"isolation {isolation}")
    lifted = limitation.lifted_in or {}
    below, reasons, unknowns = _lifted_state(lifted, profile, node)
    if below:
        facts.extend(below)
    elif unknowns:  # not shown below the lifting version, and a deciding version unknown: never applies
        return Match(
            False,
            tuple(f"{u} unknown: an unknown fact never applies" for u in unknowns),
            tuple(unknowns),
        )
    elif reasons:
        return Match(False, (f"lifted on node {node.name} ({', '.join(reasons)}): {lifted['note']}",))
    return Match(True, tuple(facts) if len(facts) > 1 else (*facts, "applies on every node"))


def _lifted_state(
    lifted: dict[str, Any], profile: ClusterProfile, node: NodeProfile
) -> tuple[list[str], list[str], list[str]]:
    """(facts showing it still holds, facts showing it lifted, components whose version is unknown).

    Every ``lifted_in`` key is needed to lift it: one component known below its version keeps it in force; all
    known at or above lift it; otherwise an unknown version decides nothing (it never applies, the plan names it).
    """
    below: list[str] = []
    lifted_by: list[str] = []
    unknowns: list[str] = []
    for key in VERSION_KEYS:
        if key not in lifted:
            continue
        component, version = component_version(key, profile, node)
        if version is None:
            unknowns.append(component)
        elif version < Version(lifted[key]):
            below.append(f"{_short(key)} {version} < {lifted[key]} (lifted from {lifted[key]})")
        else:
            lifted_by.append(f"{_short(key)} {version} >= {lifted[key]}")
    if "windows_build" in lifted:
        if not node.windows_build:
            unknowns.append(f"windows build of node {node.name}")
        elif node.windows_build < lifted["windows_build"]:
            below.append(f"windows build {node.windows_build} < {lifted['windows_build']}")
        else:
            lifted_by.append(f"windows build {node.windows_build} >= {lifted['windows_build']}")
    return below, lifted_by, unknowns
