"""Upstream's resource-consumer for the local cluster's real Linux nodes, built from the pinned k8s.io/kubernetes.

The HPA scaling control deploys upstream's resource-consumer image (``images/catalog.yaml``), whose
``/consumer`` serves ``ConsumeCPU`` and runs ``./consume-cpu/consume-cpu`` from its working directory ``/``
(k8s.io/kubernetes@v1.34.4 test/images/resource-consumer: ``Dockerfile`` ``ADD consumer /consumer``,
``ADD consume-cpu /consume-cpu``, ``ENTRYPOINT ["/consumer"]``; ``Makefile`` ``SRCS = consumer
consume-cpu/consume-cpu``, built by ``image-util.sh bin`` with ``CGO_ENABLED=0`` and ``-w``; ``utils.go``
``consumeCPUBinary = "./consume-cpu/consume-cpu"``). Both binaries are built here the same way, static, from
the k8s.io/kubernetes module ``versions.toml`` pins (already in the Go module cache after ``wincon cluster
build``), through the same wrapper module as the cluster's binaries (every staging module replaced by its
published version). ``images.py`` puts them into the image.

They are cached apart from the cluster's binaries, under ``${WINCON_CACHE:-~/.cache/wincon}/images/<key>/``,
keyed by a hash of what they are built from (the kubernetes entry of ``versions.toml`` and ``RECIPE``), so
adding them rebuilds nothing else. Upstream's image also carries Debian's ``stress`` for ``ConsumeMem``; this
one does not (the local checks consume CPU only), so a ``ConsumeMem`` request only logs stress's absence.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from wincon.localcluster import build, paths

NAME = "resource-consumer"
SOURCE = "test/images/resource-consumer"
# binary name -> (package under k8s.io/kubernetes, path inside the image, text its `-help` must print)
BINARIES = {
    "consumer": (SOURCE, "consumer", "Port number."),
    "consume-cpu": (f"{SOURCE}/consume-cpu", "consume-cpu/consume-cpu", "millicores number"),
}
LDFLAGS = ("-w",)  # as image-util.sh bin builds them
RECIPE = {"binaries": BINARIES, "ldflags": LDFLAGS, "static": True}


def _kubernetes(versions: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict((versions or paths.load_versions())["kubernetes"])


def key(versions: dict[str, Any] | None = None) -> str:
    """A short hash of the kubernetes entry and the recipe: the cache key of the two binaries."""
    k8s = _kubernetes(versions)
    entry = {k: k8s[k] for k in ("module", "version", "staging_version")}
    blob = json.dumps({"name": NAME, "kubernetes": entry, "recipe": RECIPE}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def bin_dir(versions: dict[str, Any] | None = None) -> Path:
    return paths.cache_root() / "images" / f"{NAME}-{key(versions)}"


def components(versions: dict[str, Any] | None = None) -> list[build.Component]:
    """The two static binaries, each checked by its ``-help`` output (neither has a version flag)."""
    module = _kubernetes(versions)["module"]
    return [
        build.Component(name, NAME, f"{module}/{package}", LDFLAGS, ("-help",), expect, True)
        for name, (package, _, expect) in BINARIES.items()
    ]


def binaries(versions: dict[str, Any] | None = None) -> dict[str, Path] | None:
    """Path inside the image -> built, verified binary; None unless both are built."""
    bindir = bin_dir(versions)
    found = {}
    for name, (_, inside, _) in BINARIES.items():
        path = bindir / name
        if not (path.is_file() and (bindir / ".built" / name).is_file()):
            return None
        found[inside] = path
    return found


def prepare_module(builder: build._Builder, versions: dict[str, Any], workdir: Path) -> Path:
    """Write the wrapper module of both binaries under ``workdir`` (the release's k8s.io/kubernetes, every staging
    module replaced by its published version) and resolve its dependencies (``go mod tidy``, which downloads them);
    return its directory."""
    k8s = _kubernetes(versions)
    moddir = workdir / NAME
    moddir.mkdir()
    staging = builder.staging_modules(k8s["module"], k8s["version"], workdir)
    replaces = "".join(f"\t{mod} => {mod} {k8s['staging_version']}\n" for mod in staging)
    (moddir / "go.mod").write_text(
        f"module wincon.local/{NAME}build\n\ngo 1.24.0\n\n"
        f"require {k8s['module']} {k8s['version']}\n\nreplace (\n{replaces})\n"
    )
    imports = "".join(f'\t_ "{comp.package}"\n' for comp in components(versions))
    (moddir / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports})\n")
    builder.run(f"resolving the {NAME} module (go mod tidy)", [builder.go, "mod", "tidy"], moddir)
    return moddir


def build_binaries(out: TextIO | None = None, versions: dict[str, Any] | None = None) -> Path:
    """Build both binaries of a release (``versions``: its wincon.documents.releases.Release.versions(); None: the default
    release's) if they are not built yet; return their directory."""
    out = out or sys.stderr
    versions = versions or paths.load_versions()
    bindir = bin_dir(versions)
    if binaries(versions) is not None:
        print(f"{NAME} present in {bindir}: nothing to build", file=out, flush=True)
        return bindir
    go = build.go_binary()
    bindir.mkdir(parents=True, exist_ok=True)
    with build._locked(bindir / ".lock", out):
        if binaries(versions) is not None:  # another build finished it while we waited
            return bindir
        k8s = _kubernetes(versions)
        (bindir / "recipe.json").write_text(json.dumps({"key": key(versions), **RECIPE}, indent=1) + "\n")
        with (bindir / "build.log").open("a") as log, tempfile.TemporaryDirectory(prefix="wincon-consumer-") as tmp:
            builder = build._Builder(go, bindir, log, out, build.go_environment(versions, go))
            start = time.monotonic()
            builder.say(f"[{NAME}] building {k8s['module']}@{k8s['version']} {SOURCE} into {bindir} ...")
            moddir = prepare_module(builder, versions, Path(tmp))
            for comp in components(versions):
                line = builder.build(comp, moddir)
                builder.say(f"[{NAME}] {comp.name} built: {line}")
            builder.say(f"[{NAME}] built in {build._fmt(time.monotonic() - start)}")
    return bindir
