"""The image catalog: which image each suite uses, picked to match each Windows node's build.

One reference per image is a manifest list whose Windows entries carry ``os.version``; the node's
runtime picks the entry matching its build. Before deploying, the suite checks that an entry the node
can run exists, so an unsupported pairing is a clear error, not a 10-minute ImagePullBackOff. The
catalog's images carry an entry of every supported build (images/catalog.yaml, checked against the
pinned Kubernetes by tests/unit/test_images.py): an exact build is the only pairing that runs
everywhere. Registries are overridden with an upstream-format repo list file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from wincon.clusterinfo.profile import OS_VERSION_BUILDS
from wincon.commandline.errors import InfrastructureError, UsageError

DEFAULT_CATALOG = Path(__file__).resolve().parents[2] / "images" / "catalog.yaml"
LTSC2022 = 20348


def build_compatible(host_build: int, image_build: int) -> bool:
    """containerd's Windows platform match for a process-isolated pod on an LTSC host (containerd 1.6.23, 1.7.6
    and later: hosts older than ltsc2022 need the exact build; an ltsc2022 or ltsc2025 host accepts images from
    ltsc2022 up to its own build). It is the loosest rule: older containerd releases, hosts past 26100 on
    containerd 2.1.6-2.3.4 and Hyper-V isolated pods need more (wincon.workloads.platforms, per node and
    isolation, as `wincon images verify` applies it)."""
    if host_build < LTSC2022:
        return host_build == image_build
    return LTSC2022 <= image_build <= host_build


@dataclass(frozen=True)
class ImageSpec:
    key: str
    registry: str
    name: str
    tag: str
    os: tuple[str, ...]
    windows_versions: tuple[str, ...]
    purpose: str = ""

    def reference(self, registries: dict[str, str]) -> str:
        return f"{registries[self.registry].rstrip('/')}/{self.name}:{self.tag}"


class Catalog:
    def __init__(self, images: dict[str, ImageSpec], registries: dict[str, str], windows: dict[str, int]) -> None:
        self.images = images
        self.registries = registries
        self.windows_builds = windows  # os version name -> build
        # The Linux images a cluster without a registry carries (the local cluster's real nodes), or None
        # where any reference can be pulled: a check needing another Linux image skips there, with that reason.
        self.linux_available: set[str] | None = None

    @classmethod
    def load(
        cls, path: str | Path | None = None, repo_list: str | Path | None = None, repo_map: dict[str, str] | None = None
    ) -> Catalog:
        """The catalog at ``path``, its registries overridden by ``repo_list`` (a file; else KUBE_TEST_REPO_LIST),
        else by ``repo_map`` (a repo list already read, e.g. the one a local cluster hands to the suite)."""
        path = Path(path) if path else DEFAULT_CATALOG
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"image catalog {path} cannot be read: {exc}", "restore images/catalog.yaml") from exc
        registries = dict(data.get("registries") or {})
        repo_list = repo_list or os.environ.get("KUBE_TEST_REPO_LIST")
        if repo_list:
            registries.update(load_repo_list(repo_list))
        elif repo_map:
            registries.update(repo_map)
        windows = {name: int(v["build"]) for name, v in (data.get("windows_versions") or {}).items()} or dict(
            OS_VERSION_BUILDS
        )
        images = {}
        for key, raw in (data.get("images") or {}).items():
            if raw.get("registry") not in registries:
                raise UsageError(
                    f"image catalog {path}: image {key!r} names registry {raw.get('registry')!r}, which is not defined",
                    "add the registry under 'registries:' or in the --image-repo-list file",
                )
            images[key] = ImageSpec(
                key=key,
                registry=raw["registry"],
                name=raw["name"],
                tag=str(raw["tag"]),
                os=tuple(raw.get("os") or ("linux",)),
                windows_versions=tuple(raw.get("windows_versions") or ()),
                purpose=raw.get("purpose", ""),
            )
        return cls(images, registries, windows)

    def image(self, key: str, os_name: str = "windows", host_build: int | None = None) -> str:
        """The reference to deploy for ``key`` on a node of ``os_name`` (and Windows ``host_build``)."""
        spec = self.images.get(key)
        if spec is None:
            raise UsageError(f"image {key!r} is not in the image catalog", "add it to images/catalog.yaml")
        if os_name not in spec.os:
            raise UsageError(f"image {key!r} has no {os_name} variant", "pick an image built for that OS")
        if os_name == "windows" and host_build is not None:
            builds = [self.windows_builds[v] for v in spec.windows_versions if v in self.windows_builds]
            if not any(build_compatible(host_build, b) for b in builds):
                raise InfrastructureError(
                    f"image {key} ({spec.reference(self.registries)}) has no variant that runs on Windows build "
                    f"{host_build} (it has {', '.join(spec.windows_versions) or 'none'})",
                    "build and push the image for this Windows version (images/build.sh) or use --image-repo-list",
                )
        reference = spec.reference(self.registries)
        missing = self.linux_missing(key) if os_name == "linux" else None
        if missing:
            import pytest

            pytest.skip(missing)
        return reference

    def carry(self, references: dict[str, str]) -> None:
        """A cluster whose Linux nodes pull nothing carries these images (key -> reference, the local cluster's
        hint): they are the Linux images it can run (:meth:`linux_missing`), and where it carries a catalog image
        under another tag of the same repository (the local agnhost, tagged with the agnhost of the Kubernetes
        release the cluster runs), that tag is the one this catalog deploys and reports."""
        self.linux_available = set(references.values())
        for key, reference in references.items():
            spec = self.images.get(key)
            if spec is None:
                continue
            repository, _, tag = reference.rpartition(":")
            if tag != spec.tag and repository == spec.reference(self.registries).rpartition(":")[0]:
                self.images[key] = replace(spec, tag=tag)

    def linux_missing(self, key: str) -> str | None:
        """Why a Linux pod of image ``key`` cannot run here (the cluster's Linux nodes pull nothing and do not
        carry it), or None. Asked by :meth:`image` and at collection, so that ``wincon plan`` says the same."""
        spec = self.images.get(key)
        if spec is None or self.linux_available is None:
            return None
        reference = spec.reference(self.registries)
        if reference in self.linux_available:
            return None
        return (
            f"image {key} ({reference}) is not on this cluster's Linux nodes, which pull nothing (they carry "
            f"{', '.join(sorted(self.linux_available))})"
        )


def load_repo_list(path: str | Path) -> dict[str, str]:
    """Upstream's KUBE_TEST_REPO_LIST format: a YAML map of registry keys to registry paths."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"image repo list {path} cannot be read: {exc}", "pass a YAML file of key: registry") from exc
    return parse_repo_list(text, str(path))


def parse_repo_list(text: str, source: str) -> dict[str, str]:
    """A repo list's text (upstream's KUBE_TEST_REPO_LIST format); ``source`` names it in errors."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(
            f"image repo list {source} cannot be read: {exc}", "pass a YAML file of key: registry"
        ) from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise UsageError(
            f"image repo list {source} must map registry keys to strings, e.g. 'promoterE2eRegistry: my.registry/e2e'",
            "fix the file's format",
        )
    return data
