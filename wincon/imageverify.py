"""`wincon images verify`: will each Windows image of the catalog run on each Windows node of the cluster?

For each image it reads the manifest list from the image's registry (the OCI distribution API: ``GET
/v2/<repository>/manifests/<tag>``, with the anonymous bearer-token flow registries answer a 401 with), the
catalog's registries overridden by a repo list as everywhere else, and takes the Windows entries' ``os.version``
builds. For each real Windows node (its build and the containerd version it reports) and each isolation its pods
may request (process; Hyper-V where the cluster has a Hyper-V RuntimeClass) it decides which entry runs there
(:func:`wincon.workloads.platforms.pick_entry`: the exact build under Hyper-V and on an unknown containerd,
containerd's own matcher rule otherwise). A pairing that cannot run is an error naming the image, the node's
build, the isolation and what would serve, before any pod is created.
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wincon.errors import ExitCode, InfrastructureError, UsageError
from wincon.profile import ClusterProfile, parse_build
from wincon.workloads.catalog import Catalog
from wincon.workloads.platforms import Verdict, pick_entry

ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
LOOPBACK = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$")
Fetch = Callable[[str], dict[str, Any]]


def split_reference(reference: str) -> tuple[str, str, str]:
    """(registry host, repository, tag) of ``host[:port]/path/name:tag``; docker.io's short names expanded."""
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        name, tag = reference, "latest"
    host, _, repository = name.partition("/")
    if "." not in host and ":" not in host and host != "localhost":
        host, repository = "docker.io", name if "/" in name else f"library/{name}"
    if host == "docker.io":
        host = "registry-1.docker.io"
    return host, repository, tag


def _bearer_token(challenge: str, timeout: float) -> str:
    """An anonymous token from a ``WWW-Authenticate: Bearer realm=...,service=...,scope=...`` challenge."""
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", "")
    if not challenge.lower().startswith("bearer") or not realm:
        raise InfrastructureError(
            f"the registry asks for authentication this command cannot give ({challenge!r})",
            "mirror the image to a registry that serves it anonymously and pass --image-repo-list",
        )
    url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (the registry's own realm)
        answer = json.loads(response.read())
    token = answer.get("token") or answer.get("access_token")
    if not token:
        raise InfrastructureError(f"the token service {realm} gave no token", "check the registry")
    return str(token)


def fetch_manifest(reference: str, timeout: float = 30.0) -> dict[str, Any]:
    """The manifest (list) document of ``reference`` from its registry; plain HTTP for a loopback registry."""
    host, repository, tag = split_reference(reference)
    scheme = "http" if LOOPBACK.match(host) else "https"
    url = f"{scheme}://{host}/v2/{repository}/manifests/{tag}"
    headers = {"Accept": ACCEPT}
    for attempt in range(2):
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (a registry URL)
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            challenge = exc.headers.get("WWW-Authenticate", "")
            if exc.code == 401 and attempt == 0 and challenge:
                headers["Authorization"] = f"Bearer {_bearer_token(challenge, timeout)}"
                continue
            if exc.code == 404:
                raise ImageMissing(
                    f"image {reference} does not exist in its registry (404 for {url})",
                    "push it (images/build.sh for wincon's own images) or point --image-repo-list at a registry "
                    "that holds it",
                ) from exc
            raise InfrastructureError(
                f"the registry answered {exc.code} for {url}", "check the registry and --image-repo-list"
            ) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InfrastructureError(
                f"cannot read the manifest of {reference} from {url}: {exc}",
                "check that this machine reaches the registry, or mirror the images and pass --image-repo-list",
            ) from exc
    raise InfrastructureError(f"the registry refused the token it issued for {url}", "check the registry")


class ImageMissing(InfrastructureError):
    """The registry has no such image (404): it runs nowhere."""


def windows_builds(document: dict[str, Any]) -> list[int] | None:
    """The builds of a manifest list's Windows entries (``platform.os.version``); None for a single manifest,
    which names no platform (a runtime runs it on any build, unchecked)."""
    if "manifests" not in document:
        return None
    builds = []
    for entry in document.get("manifests") or []:
        platform = entry.get("platform") or {}
        if platform.get("os") == "windows":
            build = parse_build(platform.get("os.version"))
            if build:
                builds.append(build)
    return sorted(set(builds))


@dataclass(frozen=True)
class Finding:
    image: str
    reference: str
    node: str
    build: int
    containerd: str
    isolation: str
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        """JSON for the xdist workers (they receive the controller's findings, the registry is read once)."""
        verdict = {"runs": self.verdict.runs, "entry": self.verdict.entry, "reason": self.verdict.reason}
        return {**{k: getattr(self, k) for k in FINDING_FIELDS}, "verdict": verdict}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(**{k: data[k] for k in FINDING_FIELDS}, verdict=Verdict(**data["verdict"]))

    def line(self) -> str:
        state = "runs" if self.verdict.runs else "REFUSED"
        return (
            f"{state}: {self.image} ({self.reference}) on {self.node} (build {self.build}, containerd "
            f"{self.containerd or 'unknown'}, {self.isolation} isolation): {self.verdict.reason}"
        )


FINDING_FIELDS = ("image", "reference", "node", "build", "containerd", "isolation")


def hyperv_requested(profile: ClusterProfile) -> bool:
    """Whether the cluster offers Hyper-V isolation to the checks (a RuntimeClass whose handler is Hyper-V's)."""
    from wincon.checks.scheduling import hyperv_runtime_class

    return hyperv_runtime_class(profile.runtime_classes or ()) is not None


def verify(
    catalog: Catalog,
    profile: ClusterProfile,
    keys: list[str] | None = None,
    isolations: tuple[str, ...] | None = None,
    fetch: Fetch | None = None,
) -> list[Finding]:
    """One finding per (Windows image, real Windows node, isolation)."""
    fetch = fetch or fetch_manifest
    nodes = [n for n in profile.windows_nodes if not n.simulated and n.windows_build]
    wanted = keys or [k for k, spec in catalog.images.items() if "windows" in spec.os]
    unknown = [k for k in wanted if k not in catalog.images]
    if unknown:
        raise UsageError(f"no image {', '.join(unknown)} in the catalog", "pass keys of images/catalog.yaml")
    isolations = isolations or (("process", "hyperv") if hyperv_requested(profile) else ("process",))
    findings = []
    for key in wanted:
        reference = catalog.images[key].reference(catalog.registries)
        if not nodes:
            continue
        builds = windows_builds(fetch(reference))
        for node in nodes:
            for isolation in isolations:
                if builds is None:
                    verdict = Verdict(True, None, "a single manifest without a platform list: any build pulls it")
                else:
                    verdict = pick_entry(node.windows_build or 0, builds, isolation, node.runtime_version or None)
                    if not verdict.runs:
                        verdict = Verdict(False, None, verdict.reason + _what_serves(catalog, key, node.windows_build))
                findings.append(
                    Finding(
                        key, reference, node.name, node.windows_build or 0, node.runtime_version, isolation, verdict
                    )
                )
    return findings


def _what_serves(catalog: Catalog, key: str, build: int | None) -> str:
    version = next((name for name, b in catalog.windows_builds.items() if b == build), None)
    spec = catalog.images[key]
    if version and version in spec.windows_versions:
        return (
            f". The catalog records a {version} entry for {spec.name}:{spec.tag}: the registry answering for "
            f"{spec.registry} holds another manifest (mirror it again from the catalog's registry)"
        )
    return f". Serve it with a tag of {spec.name} whose manifest list has a 10.0.{build} entry"


def register(sub: Any) -> None:
    from wincon.cli import add_cluster_options

    images = sub.add_parser("images", help="the catalog's images: verify that each runs on each Windows node")
    actions = images.add_subparsers(dest="images_command", metavar="ACTION")
    p = actions.add_parser(
        "verify", help="read each Windows image's manifest list and say whether an entry runs on each Windows node"
    )
    add_cluster_options(p)
    p.add_argument("--profile-file", help="a profile JSON (wincon profile --json) instead of asking the cluster")
    p.add_argument("--image", action="append", help="only this catalog image (repeatable)")
    p.add_argument("--image-repo-list", help="upstream-format repo list overriding the catalog's registries")
    p.add_argument("--isolation", choices=("process", "hyperv"), action="append", help="isolations to check")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    if args.profile_file:
        from wincon.profile import load_profile_file

        profile = load_profile_file(args.profile_file)
    else:
        from wincon.cluster.client import connect
        from wincon.profile import discover

        profile = discover(connect(args.kubeconfig, args.context))
    catalog = Catalog.load(repo_list=args.image_repo_list)
    isolations = tuple(args.isolation) if args.isolation else None
    findings = verify(catalog, profile, args.image, isolations)
    if not findings:
        print("images verify: no real Windows node (simulated nodes pull nothing): nothing to verify")
        return ExitCode.OK
    for finding in findings:
        print(finding.line())
    require_runnable(findings)
    return ExitCode.OK


def require_runnable(findings: list[Finding]) -> None:
    """An InfrastructureError naming every image/node/isolation pairing that cannot run, before any pod."""
    refused = [f for f in findings if not f.verdict.runs]
    if refused:
        raise InfrastructureError(
            f"{len(refused)} image/node pairing(s) cannot run: "
            + "; ".join(f"{f.image} on {f.node} (build {f.build}, {f.isolation}): {f.verdict.reason}" for f in refused),
            "push images with an entry of each node's build (images/build.sh; upstream: a tag whose manifest list "
            "has it), mirror them with --image-repo-list, or run on nodes whose build they serve",
        )


def preflight(catalog: Catalog, profile: ClusterProfile, fetch: Fetch | None = None) -> tuple[list[Finding], str]:
    """What a run (and `wincon plan`) on a live cluster verifies before any pod: the refused pairings of every
    Windows image of the catalog on every real Windows node, and one line for the run's header. An image the
    registry does not hold (404) is refused on every node; an unreachable registry raises (the run stops)."""
    real = [n for n in profile.windows_nodes if not n.simulated and n.windows_build]
    if not real:
        return [], (
            "images: not verified: the Windows nodes are simulated (no image is pulled there, no registry is read)"
        )
    keys = [k for k, spec in catalog.images.items() if "windows" in spec.os]
    isolations = ("process", "hyperv") if hyperv_requested(profile) else ("process",)
    findings: list[Finding] = []
    for key in keys:
        try:
            findings += verify(catalog, profile, [key], isolations, fetch)
        except ImageMissing as exc:
            reference = catalog.images[key].reference(catalog.registries)
            gone = Verdict(False, None, exc.message)
            for n in real:
                for isolation in isolations:
                    findings.append(
                        Finding(key, reference, n.name, n.windows_build or 0, n.runtime_version, isolation, gone)
                    )
    refused = [f for f in findings if not f.verdict.runs]
    summary = (
        f"images: {len(keys)} Windows images of the catalog verified against their registries for {len(real)} real "
        f"Windows node(s), {' and '.join(isolations)} isolation: "
        + (f"{len(refused)} pairing(s) refused (the checks whose pods go there are errors)" if refused else "all run")
    )
    return refused, summary


def refusal_message(refused: list[Finding]) -> str:
    """Why a check is an error before any pod: each image, node, build, isolation and what would serve."""
    return (
        "no pod created: an image this check uses (named in its code or fixtures, wincon.imageuse) cannot run "
        "where its pods go: "
        + "; ".join(
            f"{f.image} ({f.reference}) on {f.node} (build {f.build}, {f.isolation} isolation): {f.verdict.reason}"
            for f in refused
        )
    )


REFUSAL_FIX = (
    "push images with an entry of the node's build (images/build.sh; upstream: a tag whose manifest list has it) "
    "and point --image-repo-list at them, or run on nodes whose build the images serve"
)
