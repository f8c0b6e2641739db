"""`wincon images verify`: will each Windows image of the catalog run on each Windows node of the cluster?

For each image it reads the manifest (list) from the image's registry (the OCI distribution API: ``GET
/v2/<repository>/manifests/<tag>``, answering a 401 as docker does: HTTP basic, or the bearer-token flow, with the
registry's credentials from the docker config file or a pull secret of the cluster (wincon.workloads.registryauth), and
anonymously where there are none), the catalog's registries overridden by a repo list as everywhere else. A manifest list's entries say which platform each
serves (``platform.os``, ``.architecture``, ``.os.version``); a single manifest names none, so its config blob
(``GET /v2/<repository>/blobs/<digest>``) is read for its ``os``, ``architecture`` and ``os.version``. For each real
Windows node (its build, its architecture and the containerd version it reports) and each isolation its pods may
request (process; Hyper-V where the cluster has a Hyper-V RuntimeClass) only the Windows entries of the node's
architecture that name a build count, and of those :func:`wincon.workloads.platforms.pick_entry` decides which runs
there (the exact build under Hyper-V and on an unknown containerd, containerd's own matcher rule otherwise). A
pairing that cannot run is an error naming the image, the node's build, the isolation and what would serve, before
any pod is created. Real nodes whose Windows build is unknown are not judged (nothing is refused there), and the
preflight's line names them."""

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

from wincon.clusterinfo.profile import WINDOWS_BUILD_LABEL, ClusterProfile, NodeProfile, parse_build
from wincon.commandline.errors import ExitCode, InfrastructureError, UsageError
from wincon.workloads.catalog import Catalog
from wincon.workloads.platforms import Verdict, pick_entry
from wincon.workloads.registryauth import CREDENTIALS_FIX, HELPER_FIX, Credential, Credentials, RegistryAuthError

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
FetchBlob = Callable[[str, str], dict[str, Any]]


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


def _bearer_token(
    challenge: str, timeout: float, host: str, credential: Credential | None, credentials: Credentials | None = None
) -> str:
    """A token from a ``WWW-Authenticate: Bearer realm=...,service=...,scope=...`` challenge: anonymous without a
    credential, else with the user and password (HTTP basic on the token request) or, for an identity token, the
    OAuth2 refresh-token grant (a POST of ``grant_type=refresh_token``), as docker asks its token services."""
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", "")
    if not challenge.lower().startswith("bearer") or not realm:
        raise InfrastructureError(
            f"the registry asks for authentication this command cannot give ({challenge!r})",
            "mirror the image to a registry that serves it anonymously and pass --image-repo-list",
        )
    if credential is not None and credential.identity_token:
        form = {**params, "grant_type": "refresh_token", "refresh_token": credential.identity_token}
        form.setdefault("client_id", "wincon")
        request = urllib.request.Request(realm, data=urllib.parse.urlencode(form).encode(), method="POST")
    else:
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(params)
        request = urllib.request.Request(url)
        if credential is not None:
            request.add_header("Authorization", credential.basic())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the registry's own realm)
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise _auth_error(host, f"its token service {realm}", exc.code, credential, credentials) from exc
        raise
    token = answer.get("token") or answer.get("access_token")
    if not token:
        raise InfrastructureError(f"the token service {realm} gave no token", "check the registry")
    return str(token)


def _auth_error(
    host: str, what: str, code: int, credential: Credential | None, credentials: Credentials | None = None
) -> RegistryAuthError:
    """The registry (or its token service) refused: the credentials given, or the absence of any (naming the
    credential helper that holds them, where one does)."""
    if credential is not None:
        return RegistryAuthError(
            f"registry {host}: {what} refused the credentials of {credential.source} (HTTP {code})",
            f"check the user and password for {host} (`docker login {host}` again, or recreate the pull secret "
            "with the right ones), and that they may pull this repository",
        )
    helper = credentials.helper_for(host) if credentials is not None else ""
    if helper:
        return RegistryAuthError(
            f"registry {host}: {what} wants credentials (HTTP {code}); they are in the credential helper {helper}, "
            "which wincon does not run",
            HELPER_FIX.format(host=host),
        )
    return RegistryAuthError(
        f"registry {host}: {what} wants credentials (HTTP {code}) and none were given for {host}", CREDENTIALS_FIX
    )


def fetch_manifest(reference: str, timeout: float = 30.0, credentials: Credentials | None = None) -> dict[str, Any]:
    """The manifest (list) document of ``reference`` from its registry; plain HTTP for a loopback registry."""
    _, _, tag = split_reference(reference)
    return _registry_json(reference, f"manifests/{tag}", ACCEPT, timeout, credentials)


def fetch_config(
    reference: str, digest: str, timeout: float = 30.0, credentials: Credentials | None = None
) -> dict[str, Any]:
    """The config blob ``digest`` of ``reference``'s repository (``GET /v2/<repository>/blobs/<digest>``): where a
    single manifest says which os, architecture and os.version it was built for."""
    return _registry_json(reference, f"blobs/{digest}", "application/json, */*", timeout, credentials)


class _NoAuthorizationElsewhere(urllib.request.HTTPRedirectHandler):
    """A registry may answer a blob with a redirect to its storage: the bearer token goes to the registry only."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(_NoAuthorizationElsewhere)


def _registry_json(
    reference: str, tail: str, accept: str, timeout: float, credentials: Credentials | None = None
) -> dict[str, Any]:
    """``GET /v2/<repository>/<tail>`` of ``reference``'s registry as JSON. A 401's challenge is answered with the
    host's credential of ``credentials`` (HTTP basic, or a bearer token got with it), anonymously without one; a
    401 or 403 after that is a RegistryAuthError (exit 12)."""
    host, repository, _ = split_reference(reference)
    scheme = "http" if LOOPBACK.match(host) else "https"
    url = f"{scheme}://{host}/v2/{repository}/{tail}"
    headers = {"Accept": accept}
    credential: Credential | None = None
    for attempt in range(2):
        request = urllib.request.Request(url, headers=headers)
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            challenge = exc.headers.get("WWW-Authenticate", "")
            if exc.code == 401 and attempt == 0 and challenge:
                credential = credentials.for_host(host) if credentials is not None else None
                if challenge.lower().startswith("basic"):
                    if credential is None:
                        raise _auth_error(host, "it", 401, None, credentials) from exc
                    headers["Authorization"] = credential.basic()
                else:
                    token = _bearer_token(challenge, timeout, host, credential, credentials)
                    headers["Authorization"] = f"Bearer {token}"
                continue
            if exc.code == 401 or (exc.code == 403 and "Authorization" in headers):
                raise _auth_error(host, f"it (for {repository})", exc.code, credential, credentials) from exc
            if exc.code == 404:
                raise ImageMissing(
                    f"image {reference} does not exist in its registry (404 for {url})"
                    if tail.startswith("manifests/")
                    else f"image {reference}'s config blob does not exist in its registry (404 for {url})",
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


@dataclass(frozen=True)
class Platform:
    """What one image (a manifest list's entry, or a single manifest's config) was built for."""

    os: str
    architecture: str
    build: int | None  # of ``os.version`` (10.0.<build>.<revision>); None where it names none

    def __str__(self) -> str:
        return f"{self.os or '?'}/{self.architecture or '?'}" + (f" {self.build}" if self.build else "")


def _platform(fields: dict[str, Any]) -> Platform:
    return Platform(
        str(fields.get("os") or ""), str(fields.get("architecture") or ""), parse_build(fields.get("os.version"))
    )


def list_platforms(document: dict[str, Any]) -> list[Platform] | None:
    """The platforms of a manifest list's entries (``platform.os``, ``.architecture``, ``.os.version``); None for a
    single manifest, which names no platform: its config does (:func:`config_platform`)."""
    if "manifests" not in document:
        return None
    return [_platform(entry.get("platform") or {}) for entry in document.get("manifests") or []]


def config_platform(config: dict[str, Any]) -> Platform:
    """The platform a single manifest's config blob says its image was built for (``os``, ``architecture`` and
    ``os.version``, OCI image-spec config.md)."""
    return _platform(config)


def windows_builds(document: dict[str, Any]) -> list[int] | None:
    """The builds of a manifest list's Windows entries, any architecture; None for a single manifest."""
    platforms = list_platforms(document)
    if platforms is None:
        return None
    return sorted({p.build for p in platforms if p.os == "windows" and p.build})


def judge(
    platforms: list[Platform], single: bool, node: NodeProfile, isolation: str, containerd: str | None
) -> Verdict:
    """Whether an image of ``platforms`` runs on ``node`` under ``isolation``: an entry (or a single manifest's
    config) counts only with os ``windows``, the node's architecture (status.nodeInfo.architecture, the
    kubernetes.io/arch label) and a build; of those, :func:`wincon.workloads.platforms.pick_entry` decides (the exact
    build under Hyper-V and on an unknown containerd, containerd's matcher rule otherwise)."""
    offered = ", ".join(sorted({str(p) for p in platforms})) or "no platform"
    what = f"a single manifest (no platform list) whose config says {offered}" if single else "the manifest list"
    arch = node.arch
    listed = "" if single else f" has {offered}"
    if not arch:
        return Verdict(
            False,
            None,
            "the node reports no architecture (status.nodeInfo.architecture, label kubernetes.io/arch), so no "
            f"entry can be shown to run there ({what}{listed})",
        )
    builds = sorted({p.build for p in platforms if p.os == "windows" and p.architecture == arch and p.build})
    if not builds:
        return Verdict(
            False,
            None,
            f"{what}: not a windows/{arch} image with an os.version build"
            if single
            else f"{what} has no windows/{arch} entry with an os.version build (it has {offered})",
        )
    verdict = pick_entry(node.windows_build or 0, builds, isolation, containerd)
    others = sorted({str(p) for p in platforms if p.os == "windows" and p.architecture != arch})
    reason = verdict.reason
    if single:
        reason = f"{what}: {reason}"
    elif others:
        reason += f" (windows/{arch} entries only; not counted: {', '.join(others)})"
    return Verdict(verdict.runs, verdict.entry, reason)


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
    fetch_blob: FetchBlob | None = None,
    credentials: Credentials | None = None,
) -> list[Finding]:
    """One finding per (Windows image, real Windows node, isolation); the registries read with ``credentials``
    (wincon.workloads.registryauth) where they ask for some."""
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
        platforms, single = read_platforms(reference, fetch, fetch_blob, credentials)
        for node in nodes:
            for isolation in isolations:
                verdict = judge(platforms, single, node, isolation, node.runtime_version or None)
                if not verdict.runs:
                    verdict = Verdict(False, None, verdict.reason + _what_serves(catalog, key, node.windows_build))
                findings.append(
                    Finding(
                        key, reference, node.name, node.windows_build or 0, node.runtime_version, isolation, verdict
                    )
                )
    return findings


def read_platforms(
    reference: str,
    fetch: Fetch | None = None,
    fetch_blob: FetchBlob | None = None,
    credentials: Credentials | None = None,
) -> tuple[list[Platform], bool]:
    """The platforms ``reference`` offers, and whether it is a single manifest (whose one platform its config blob
    says: that blob is read too)."""
    document = fetch(reference) if fetch else fetch_manifest(reference, credentials=credentials)
    platforms = list_platforms(document)
    if platforms is not None:
        return platforms, False
    digest = (document.get("config") or {}).get("digest")
    if not digest:
        raise InfrastructureError(
            f"the registry's manifest of {reference} is neither a manifest list nor an image manifest with a config",
            "check the image in its registry (or the registry --image-repo-list names)",
        )
    blob = (
        fetch_blob(reference, str(digest))
        if fetch_blob
        else fetch_config(reference, str(digest), credentials=credentials)
    )
    return [config_platform(blob)], True


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
    p.add_argument(
        "--docker-config",
        metavar="PATH",
        help="registry credentials: a docker config.json (or its directory); default $DOCKER_CONFIG/config.json, "
        "then ~/.docker/config.json",
    )
    p.add_argument(
        "--image-pull-secret",
        metavar="[NAMESPACE/]NAME",
        help="registry credentials from this kubernetes.io/dockerconfigjson secret of the cluster (namespace "
        "default unless named) instead of the docker config",
    )
    p.add_argument("--json", action="store_true", help="print the per-image verdicts as JSON (same exit code)")
    p.set_defaults(func=cmd_verify)


def credentials_for(api_client: Any, pull_secret: str | None, docker_config: str | None) -> Credentials:
    """The registry credentials of a command: the pull secret's when one is named (read from the cluster),
    else the docker config file's (wincon.workloads.registryauth)."""
    from wincon.workloads.registryauth import load_docker_config, read_secret, secret_credentials

    if pull_secret:
        return secret_credentials(read_secret(api_client, pull_secret), pull_secret)
    return load_docker_config(docker_config)


def cmd_verify(args: argparse.Namespace) -> int:
    api_client = None
    if args.image_pull_secret or not args.profile_file:
        from wincon.cluster.client import connect

        api_client = connect(args.kubeconfig, args.context)
    if args.profile_file:
        from wincon.clusterinfo.profile import load_profile_file

        profile = load_profile_file(args.profile_file)
    else:
        from wincon.clusterinfo.profile import discover

        profile = discover(api_client)
    credentials = credentials_for(api_client, args.image_pull_secret, args.docker_config)
    catalog = Catalog.load(repo_list=args.image_repo_list)
    isolations = tuple(args.isolation) if args.isolation else None
    findings = verify(catalog, profile, args.image, isolations, credentials=credentials)
    unknown = unknown_build_nodes(profile)
    if args.json:
        print(json.dumps(verdicts_json(findings, unknown), indent=2))
        require_runnable(findings)
        return ExitCode.OK
    if unknown:
        print(f"images verify: {unknown_build_note(unknown)}")
    if not findings:
        if not unknown:
            print("images verify: no real Windows node (simulated nodes pull nothing): nothing to verify")
        return ExitCode.OK
    for finding in findings:
        print(finding.line())
    require_runnable(findings)
    return ExitCode.OK


def verdicts_json(findings: list[Finding], unknown: list[NodeProfile]) -> dict[str, Any]:
    """`images verify --json`: the text output's data, one verdict per (image, node, isolation), the real nodes of
    unknown build (not judged), and the count refused (the exit code says the same: 3 when any is)."""
    return {
        "verdicts": [{**f.to_dict(), "state": "runs" if f.verdict.runs else "refused"} for f in findings],
        "unjudged_nodes": [n.name for n in unknown],
        "unjudged_note": unknown_build_note(unknown) if unknown else "",
        "refused": sum(1 for f in findings if not f.verdict.runs),
    }


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


def unknown_build_nodes(profile: ClusterProfile) -> list[NodeProfile]:
    """The real Windows nodes whose build nothing names (neither the node.kubernetes.io/windows-build label nor the
    kernel version): no image can be judged there."""
    return [n for n in profile.windows_nodes if not n.simulated and not n.windows_build]


def unknown_build_note(unknown: list[NodeProfile]) -> str:
    """What an unjudged real node means for the verdicts, naming each such node."""
    return (
        f"not verified on {len(unknown)} real Windows node(s) of unknown build ({', '.join(n.name for n in unknown)}: "
        f"neither the {WINDOWS_BUILD_LABEL} label nor the kernel version names a build): no image is judged there and "
        "no check is refused for them, so a check whose pods go there runs unverified, and an image that cannot run "
        "there shows as that check's own container error (CreateContainerError), not as an error before any pod"
    )


def preflight(
    catalog: Catalog,
    profile: ClusterProfile,
    fetch: Fetch | None = None,
    fetch_blob: FetchBlob | None = None,
    credentials: Credentials | None = None,
) -> tuple[list[Finding], str]:
    """What a run (and `wincon plan`) on a live cluster verifies before any pod: the refused pairings of every
    Windows image of the catalog on every real Windows node of a known build, and one line for the run's header
    (which also names the real nodes of unknown build, left unjudged). An image the registry does not hold (404)
    is refused on every judged node; an unreachable registry raises (the run stops)."""
    unknown = unknown_build_nodes(profile)
    real = [n for n in profile.windows_nodes if not n.simulated and n.windows_build]
    if not real:
        if unknown:
            return [], f"images: {unknown_build_note(unknown)}; no registry is read"
        return [], (
            "images: not verified: the Windows nodes are simulated (no image is pulled there, no registry is read)"
        )
    keys = [k for k, spec in catalog.images.items() if "windows" in spec.os]
    # RuntimeClasses that could not be listed (None): the Hyper-V checks read them live and may run, so the Hyper-V
    # pairings are judged too (only checks whose pods request Hyper-V are refused by them).
    hyperv = profile.runtime_classes is None or hyperv_requested(profile)
    isolations = ("process", "hyperv") if hyperv else ("process",)
    findings: list[Finding] = []
    for key in keys:
        try:
            findings += verify(catalog, profile, [key], isolations, fetch, fetch_blob, credentials)
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
        f"Windows node(s), {' and '.join(isolations)} isolation"
        + (
            " (Hyper-V too: the cluster's RuntimeClasses could not be listed)"
            if profile.runtime_classes is None
            else ""
        )
        + ": "
        + (f"{len(refused)} pairing(s) refused (the checks whose pods go there are errors)" if refused else "all run")
        + (f"; {unknown_build_note(unknown)}" if unknown else "")
    )
    return refused, summary


def refusal_message(refused: list[Finding], read: bool = True) -> str:
    """Why a check is an error before any pod: each image, node, build, isolation and what would serve. ``read``
    False: the check's code names no catalog image (wincon.workloads.imageuse found none), so any image may be its own."""
    which = (
        "an image this check uses (named in its code or fixtures, wincon.workloads.imageuse) cannot run"
        if read
        else "wincon.workloads.imageuse found no catalog image named in this check's code or fixtures, so it may use any, and "
        "images cannot run"
    )
    return f"no pod created: {which} where its pods go: " + "; ".join(
        f"{f.image} ({f.reference}) on {f.node} (build {f.build}, {f.isolation} isolation): {f.verdict.reason}"
        for f in refused
    )


REFUSAL_FIX = (
    "push images with an entry of the node's build (images/build.sh; upstream: a tag whose manifest list has it) "
    "and point --image-repo-list at them, or run on nodes whose build the images serve"
)
