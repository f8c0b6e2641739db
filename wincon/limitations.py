"""The documented limitation list: load, validate, and match each entry against a ClusterProfile.

limitations.yaml is data. Each entry says when it applies (CNI, Windows build, Kubernetes version,
runtime, ...) and from when it no longer holds. A test marked ``@pytest.mark.limitation("id")`` becomes a
strict expected failure exactly where its entry applies to the cluster at hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from wincon.errors import LimitationsError
from wincon.profile import ClusterProfile

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "limitations.yaml"


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

    @property
    def source_text(self) -> str:
        return "; ".join(f"{s['file']} ({s['section']})" for s in self.sources)


@dataclass(frozen=True)
class Match:
    """Whether a limitation applies to a profile, and the profile facts that decided it."""

    applies: bool
    facts: tuple[str, ...]

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
        document = yaml.safe_load(path.read_text())
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
        for key in ("windows_build", "k8s_version"):
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


def match(limitation: Limitation, profile: ClusterProfile) -> Match:
    """Does this limitation apply to this cluster? Unknown facts never make a limitation apply."""
    if limitation.untestable:
        return Match(False, ("untestable: " + limitation.untestable,))
    facts: list[str] = []
    cond = limitation.applies_when
    if "cni" in cond:
        hit = sorted(profile.cni_aliases & set(cond["cni"]))
        if not hit:
            return Match(False, (f"cni {profile.cni} not in {cond['cni']}",))
        facts.append(f"cni {profile.cni}{'/' + profile.cni_backend if profile.cni_backend else ''} ({hit[0]})")
    if "windows_build" in cond:
        builds = [b for b in profile.windows_builds if Version(str(b)) in SpecifierSet(cond["windows_build"])]
        if not builds:
            return Match(False, (f"no Windows build {cond['windows_build']}",))
        facts.append(f"windows build {','.join(map(str, builds))} {cond['windows_build']}")
    if "k8s_version" in cond:
        if Version(profile.k8s_version) not in SpecifierSet(cond["k8s_version"]):
            return Match(False, (f"kubernetes {profile.k8s_version} not {cond['k8s_version']}",))
        facts.append(f"kubernetes {profile.k8s_version} {cond['k8s_version']}")
    for key, value in (
        ("runtime", profile.runtime),
        ("cloud", profile.cloud),
        ("kube_proxy_mode", profile.kube_proxy_mode),
    ):
        if key in cond:
            if value not in cond[key]:
                return Match(False, (f"{key} {value} not in {cond[key]}",))
            facts.append(f"{key} {value}")
    if "isolation" in cond:
        # Process isolation is what every supported runtime gives unless a RuntimeClass asks for Hyper-V.
        if "process" not in cond["isolation"]:
            return Match(False, ("isolation process (Hyper-V not requested)",))
        facts.append("isolation process")
    lifted = limitation.lifted_in or {}
    reasons = _lifted_reasons(lifted, profile)
    if reasons is not None:
        return Match(False, (f"lifted ({', '.join(reasons)}): {lifted['note']}",))
    return Match(True, tuple(facts) or ("applies on every cluster",))


def _lifted_reasons(lifted: dict[str, Any], profile: ClusterProfile) -> list[str] | None:
    """The facts that lift the limitation on this cluster; None unless every given key holds."""
    reasons = []
    if "k8s_version" in lifted:
        if Version(profile.k8s_version) < Version(lifted["k8s_version"]):
            return None
        reasons.append(f"kubernetes {profile.k8s_version} >= {lifted['k8s_version']}")
    if "windows_build" in lifted:
        # One older node keeps the limitation alive on the cluster.
        if not profile.windows_builds or min(profile.windows_builds) < lifted["windows_build"]:
            return None
        reasons.append(f"Windows builds >= {lifted['windows_build']}")
    if "containerd_version" in lifted:
        if profile.runtime != "containerd" or not profile.runtime_version:
            return None
        lowest = min(Version(v.split("+")[0].split("-")[0]) for v in profile.runtime_version.split(","))
        if lowest < Version(lifted["containerd_version"]):
            return None
        reasons.append(f"containerd {lowest} >= {lifted['containerd_version']}")
    return reasons or None
