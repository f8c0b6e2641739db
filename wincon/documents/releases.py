"""The one owner of what the suite knows about Kubernetes releases (issue 43).

- **The releases the local cluster builds**: ``wincon/localcluster/versions.toml`` (package data), read here and
  nowhere else: :func:`releases`, :func:`default_release`, :func:`resolve`, :func:`get` (a :class:`Release`).
  Nothing here reads the process environment: the command line resolves the release once (its
  ``--kubernetes-version``, then ``$WINCON_KUBERNETES_VERSION`` read there alone, a running cluster's release, the
  default) and passes the :class:`Release` down.
- **One parser of versions**: :func:`minor_of` (``'v1.34.4-gke.100'`` -> ``(1, 34)``), :func:`minor_name`,
  :func:`numbers`, :func:`at_least`; every module that turns a version into a minor asks these.
- **One per-minor facts table**: :data:`MINORS`, what changed at each minor that the suite depends on (the
  capabilities' "since", the kubelet feature gates' stages, the local data plane's gates, the Windows overlay
  network's removal). :func:`since` and :func:`kubelet_gate_stages` are read from it.

Adding a minor (docs/releases.md): one ``[releases."1.N"]`` table in versions.toml, one :data:`MINORS` entry (empty
where nothing the suite depends on changed), one ``kubernetes."1.N"`` list in gating/required.yaml and the minor's
parity table (``make parity``); tests/unit/test_releases.py fails naming whichever is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from wincon.commandline.errors import UsageError

VERSIONS_FILE = Path(__file__).parents[1] / "localcluster" / "versions.toml"
# Read by the command line alone (wincon cluster, wincon run --local): no module below it reads the environment.
VERSION_ENV = "WINCON_KUBERNETES_VERSION"

# ------------------------------------------------------------------------------------------------ version parsing

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def numbers(version: str | None) -> tuple[int, int, int] | None:
    """``(1, 34, 4)`` from ``'v1.34.4'``, ``'v1.34.4-gke.100'`` or ``'1.34.4-beta.0'``; ``(1, 34, 0)`` from ``'1.34'``;
    None where there is no version to read (unknown, never 0.0, which would satisfy every "older than")."""
    found = _VERSION.match((version or "").strip())
    if not found:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def minor_of(version: str | None) -> tuple[int, int] | None:
    """``(1, 34)`` from ``'v1.34.4'``, ``'1.34'`` or ``'1.38.0-beta.0'``; None where unparseable."""
    found = numbers(version)
    return (found[0], found[1]) if found else None


def minor_name(version: str | None) -> str:
    """``'1.34'`` from any version :func:`minor_of` reads; ``''`` where unparseable."""
    minor = minor_of(version)
    return f"{minor[0]}.{minor[1]}" if minor else ""


def at_least(version: str | None, minor: str | tuple[int, int]) -> bool | None:
    """Whether ``version`` (a version or a minor) is at ``minor`` (``'1.36'`` or ``(1, 36)``) or later; None where
    ``version`` is unparseable."""
    have = minor_of(version)
    if have is None:
        return None
    wanted = minor if isinstance(minor, tuple) else minor_of(minor)
    if wanted is None:
        raise ValueError(f"not a Kubernetes minor: {minor!r}")
    return have >= wanted


# ------------------------------------------------------------------------------------------- per-minor facts


@dataclass(frozen=True)
class MinorFacts:
    """What changed at one Kubernetes minor that the suite depends on. An entry with no facts says the minor was
    read (kube_features.go, the e2e sources the checks cite) and nothing the suite depends on changed.

    ``since``: fact -> what changed (the capability of that name, wincon.clusterinfo.capabilities, holds from this minor; the
    text ends the reason a check is skipped on an older cluster; a fact no capability names is behaviour a check
    or the local cluster follows by the release, read with :func:`since`). ``kubelet_gates``: gate -> (default,
    stage) from this minor, as pkg/features/kube_features.go states it (wincon.clusterinfo.profile.KUBELET_GATE_STAGES)."""

    since: dict[str, str] = field(default_factory=dict)
    kubelet_gates: dict[str, tuple[bool, str]] = field(default_factory=dict)


# PodAndContainerStatsFromCRI: alpha from 1.23, beta from 1.37, off by default in both (k8s.io/kubernetes@v1.37.2 and
# @v1.38.0-beta.0 kube_features.go). ClusterTrustBundleProjection: alpha 1.29 and beta 1.33 (off), GA 1.37 (on);
# PodCertificateRequest: alpha 1.34 and beta 1.35 (off), GA 1.37 (on) (@v1.37.2 kube_features.go:1423-1426 and
# :1945-1948); neither is locked at 1.37 nor at 1.38.0-beta.0 (:1307-1310, :1789-1792 there: "LockToDefault in 1.38"
# is still a comment), so a kubelet may turn either off. NodeLogQuery: beta and off by default at 1.35, GA and locked
# on from 1.36 (v1.36.3 pkg/features/kube_features.go): the local data plane turns it on below 1.36, which a kubelet
# needs for enableSystemLogQuery (v1.35.4 pkg/kubelet/apis/config/validation/validation.go:355). Projected
# certificate volumes: GA in 1.37 with their certificates.k8s.io/v1 APIs (ClusterTrustBundle,
# ClusterTrustBundleProjection and PodCertificateRequest GA and on by default, kube_features.go:1417, :1423, :1945).
# win-overlay-removed: kube-proxy's WinOverlay gate is gone from 1.38 (the local flannel-vxlan kube-proxy-windows
# passes --feature-gates=WinOverlay=true below it only, wincon.localcluster.cni). endpoint-slices-v1:
# discovery.k8s.io/v1 EndpointSlices GA in 1.21 (KEP-752); the Service checks wait for them from it
# (wincon.network.services).
# stats-sized-by-overhead and memory-filler-buffer, upstream's e2e checks of that release (the suite of the cluster's
# release is the one run against it): from v1.37 test/e2e/windows/kubelet_stats.go:48-90 and :171-198 size the stats
# checks' pods by Pod Overhead (10 and 3 pods whatever the overhead at v1.35.4 and v1.36.3, :48-59 and :140-151),
# and memory_limits.go:109-126 leaves the filler's node 256 MiB past its reservation and the filler's overhead
# (allocatable less 100 MiB at v1.35.4 and v1.36.3, memory_limits.go:112); the same at v1.38.0-beta.0
# (wincon.checks.overhead.sized_as_upstream_since).
MINORS: dict[str, MinorFacts] = {
    "1.21": MinorFacts(since={"endpoint-slices-v1": "EndpointSlices went GA (discovery.k8s.io/v1)"}),
    "1.23": MinorFacts(kubelet_gates={"PodAndContainerStatsFromCRI": (False, "alpha")}),
    "1.29": MinorFacts(kubelet_gates={"ClusterTrustBundleProjection": (False, "alpha")}),
    "1.33": MinorFacts(kubelet_gates={"ClusterTrustBundleProjection": (False, "beta")}),
    "1.34": MinorFacts(
        since={"pod-level-resources": "the API server began to refuse pod-level resources for Windows pods"},
        kubelet_gates={"PodCertificateRequest": (False, "alpha")},
    ),
    "1.35": MinorFacts(
        since={"in-place-resize": "in-place pod resize went GA (InPlacePodVerticalScaling locked on)"},
        kubelet_gates={"PodCertificateRequest": (False, "beta")},
    ),
    "1.36": MinorFacts(since={"node-log-query": "node log query went GA (NodeLogQuery locked on)"}),
    "1.37": MinorFacts(
        since={
            "cluster-trust-bundles": "clusterTrustBundle projected volumes went GA (certificates.k8s.io/v1)",
            "pod-certificates": "podCertificate projected volumes went GA (certificates.k8s.io/v1)",
            "stats-sized-by-overhead": "upstream's stats checks began to size their pods by Pod Overhead",
            "memory-filler-buffer": "upstream's memory-limits filler began to leave its node a 256 MiB buffer",
        },
        kubelet_gates={
            "PodAndContainerStatsFromCRI": (False, "beta"),
            "ClusterTrustBundleProjection": (True, "GA"),
            "PodCertificateRequest": (True, "GA"),
        },
    ),
    "1.38": MinorFacts(since={"win-overlay-removed": "kube-proxy's WinOverlay feature gate was removed"}),
}


def _minor_key(minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in minor.split("."))


def since(fact: str) -> str:
    """The minor (``'1.36'``) from which ``fact`` of :data:`MINORS` holds; a KeyError naming the table otherwise."""
    for minor in sorted(MINORS, key=_minor_key):
        if fact in MINORS[minor].since:
            return minor
    raise KeyError(f"{fact!r} is not a fact of wincon.documents.releases.MINORS")


def what_changed(fact: str) -> str:
    """What changed at :func:`since` (``fact``), as :data:`MINORS` says it."""
    return MINORS[since(fact)].since[fact]


def kubelet_gate_stages() -> dict[str, tuple[tuple[int, int, bool, str], ...]]:
    """Each kubelet gate's stages, oldest first, as (major, minor, default, stage), from :data:`MINORS`."""
    stages: dict[str, list[tuple[int, int, bool, str]]] = {}
    for minor in sorted(MINORS, key=_minor_key):
        major, number = _minor_key(minor)
        for gate, (default, stage) in MINORS[minor].kubelet_gates.items():
            stages.setdefault(gate, []).append((major, number, default, stage))
    return {gate: tuple(rows) for gate, rows in stages.items()}


# ------------------------------------------------------------------------------------------------ versions.toml


def read(path: Path | None = None) -> dict[str, Any]:
    """versions.toml as it is (``path``: another file of its format, for tests and the parity generator)."""
    with (path or VERSIONS_FILE).open("rb") as fh:
        return tomllib.load(fh)


def releases(path: Path | None = None) -> list[str]:
    """The Kubernetes minors the local cluster can be built at (``1.35``, ...), oldest first."""
    return sorted(read(path)["releases"], key=_minor_key)


def default_release() -> str:
    """The minor used when none is asked for (versions.toml's ``default``)."""
    return str(read()["default"])


@dataclass(frozen=True)
class Release:
    """One release the local cluster is built at: its minor (``1.37``) and the versions versions.toml resolves for
    it, one table per component (:meth:`versions`)."""

    minor: str
    tables: dict[str, Any] = field(compare=False, repr=False)

    @property
    def version(self) -> str:
        """The k8s.io/kubernetes version (``v1.37.2``)."""
        return str(self.tables["kubernetes"]["version"])

    @property
    def agnhost_version(self) -> str:
        """The agnhost tag this release's test/utils/image/manifest.go pins."""
        return str(self.tables["kubernetes"]["agnhost_version"])

    def versions(self) -> dict[str, Any]:
        """``kubernetes`` (module, version, staging_version, minor, commands, images, agnhost_version, go_toolchain
        where needed), ``etcd``, ``kwok``, ``coredns`` (module, version): a fresh copy."""
        return {name: dict(table) for name, table in self.tables.items()}


def resolve(spec: str | None = None, source: str = "") -> str:
    """The minor that ``spec`` names: a minor (``1.36``), a release's version (``v1.36.3`` or ``1.36.3``); nothing
    for versions.toml's default. ``source`` says where ``spec`` came from (``$WINCON_KUBERNETES_VERSION``) for the
    error. Raises a UsageError naming the supported releases for anything else."""
    raw = read()
    wanted = (spec or str(raw["default"])).strip()
    bare = wanted[1:] if wanted.startswith("v") else wanted
    for minor, release in raw["releases"].items():
        if bare == minor or bare == str(release["version"]).lstrip("v"):
            return str(minor)
    supported = ", ".join(f"{m} ({raw['releases'][m]['version']})" for m in sorted(raw["releases"], key=_minor_key))
    origin = f" (from {source})" if source else "" if spec else " (versions.toml default)"
    raise UsageError(
        f"Kubernetes version {wanted!r}{origin} is not one the local cluster is built at",
        f"pass --kubernetes-version with one of: {supported} (a minor picks the patch versions.toml names)",
    )


def get(spec: str | None = None, source: str = "") -> Release:
    """The :class:`Release` ``spec`` names (:func:`resolve`; nothing: the default)."""
    raw = read()
    minor = resolve(spec, source)
    rel = raw["releases"][minor]
    kubernetes = {
        **raw["kubernetes"],
        "version": rel["version"],
        "staging_version": rel["staging_version"],
        "minor": minor,
        "agnhost_version": rel["agnhost_version"],
    }
    if rel.get("go_toolchain"):
        kubernetes["go_toolchain"] = rel["go_toolchain"]
    tables = {
        "kubernetes": kubernetes,
        "etcd": {**raw["etcd"], "version": rel["etcd"]},
        "kwok": dict(raw["kwok"]),
        "coredns": {**raw["coredns"], "version": rel["coredns"]},
    }
    return Release(minor, tables)


def kwok() -> dict[str, Any]:
    """kwok's module and version: one for every release (versions.toml's [kwok])."""
    return dict(read()["kwok"])


def release_of(module: str, version: str) -> str | None:
    """The minor whose Kubernetes module and version ``module@version`` is, or None (another module, or a version
    versions.toml does not name, such as the parity data's baseline)."""
    raw = read()
    if module != raw["kubernetes"]["module"]:
        return None
    for minor, release in raw["releases"].items():
        if str(release["version"]) == version:
            return str(minor)
    return None


def release_versions(path: Path | None = None) -> list[str]:
    """The k8s.io/kubernetes versions versions.toml builds, oldest minor first (the parity tables' versions)."""
    table = read(path)
    rels = table.get("releases") or {}
    return [str(rels[minor]["version"]) for minor in sorted(rels, key=_minor_key)]


def requested(option: str | None, environ: Mapping[str, str]) -> str | None:
    """The minor a command line asks for: its ``--kubernetes-version`` (``option``), else ``$WINCON_KUBERNETES_VERSION``
    of ``environ`` (the command line passes its process environment: the one place it is read); None where neither
    names one (a running cluster's release, else the default, then decides). A UsageError names a bad one and
    where it came from."""
    if option and option.strip():
        return resolve(option)
    from_env = (environ.get(VERSION_ENV) or "").strip()
    return resolve(from_env, f"${VERSION_ENV}") if from_env else None
