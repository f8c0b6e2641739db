"""Optional components of the local cluster (``addons.toml``), built from their Go modules beside the others.

They are kept apart from ``versions.toml`` on purpose: each Kubernetes release's binaries are cached under a
hash of that release's resolved versions, so adding a component there would rebuild every binary of every
release (about 17 minutes of both cores each). An add-on is built by ``wincon cluster build`` after
the cluster's binaries, each into ``${WINCON_CACHE:-~/.cache/wincon}/addons/<hash of its own entry>/``, with the
same verified-marker scheme (an interrupted build resumes; a complete cache is never rebuilt). Each add-on has a
cache key of its own, so adding or bumping one never rebuilds another. ``up`` starts each add-on that is built
and says which are not.

An entry names ``module``, ``version`` and ``package`` (one binary per entry; two entries may share a module),
and how the binary states its version: ``version_ldflag`` (an ``-X`` flag set to ``version``), and optionally
``version_args`` (default ``["--version"]``) and ``expect`` (the text its output must contain; default
``version``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from wincon.localcluster import build, paths

ADDONS_FILE = Path(__file__).with_name("addons.toml")
GO_DIRECTIVE = "1.24.0"  # go mod tidy raises it to what the module requires


def load() -> dict[str, Any]:
    with ADDONS_FILE.open("rb") as fh:
        return tomllib.load(fh)


def key(name: str, addons: dict[str, Any] | None = None) -> str:
    """A short hash of add-on ``name``'s own entry (and the Go directive): its cache key."""
    entry = (addons or load())[name]
    blob = json.dumps({"name": name, "entry": entry, "go": GO_DIRECTIVE}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def bin_dir(name: str, addons: dict[str, Any] | None = None) -> Path:
    """Where add-on ``name`` is built: a directory of its own, keyed by its entry."""
    return paths.cache_root() / "addons" / key(name, addons)


def components(addons: dict[str, Any] | None = None) -> list[build.Component]:
    """One static binary per add-on, its version checked against the pinned one."""
    spec = addons or load()
    comps = []
    for name, entry in spec.items():
        ldflags = ["-s", "-w"]
        if entry.get("version_ldflag"):
            ldflags.append(f"-X {entry['version_ldflag']}={entry['version']}")
        comps.append(
            build.Component(
                name,
                name,
                entry["package"],
                tuple(ldflags),
                tuple(entry.get("version_args", ["--version"])),
                entry.get("expect", entry["version"]),
                True,
            )
        )
    return comps


def binary(name: str) -> Path | None:
    """The built, verified binary of add-on ``name``, or None when it is not built (or not an add-on)."""
    if name not in load():
        return None
    bindir = bin_dir(name)
    path = bindir / name
    return path if path.is_file() and (bindir / ".built" / name).is_file() else None


def missing() -> list[str]:
    return [c.name for c in components() if binary(c.name) is None]


def prepare_module(builder: build._Builder, comp: build.Component, entry: dict[str, Any], workdir: Path) -> Path:
    """Write add-on ``comp``'s wrapper module under ``workdir`` and resolve its dependencies (``go mod tidy``, which
    downloads them); return its directory."""
    moddir = workdir / comp.name
    moddir.mkdir()
    (moddir / "go.mod").write_text(
        f"module wincon.local/{comp.name}build\n\ngo {GO_DIRECTIVE}\n\nrequire {entry['module']} {entry['version']}\n"
    )
    (moddir / "tools.go").write_text(f'//go:build tools\n\npackage tools\n\nimport (\n\t_ "{comp.package}"\n)\n')
    builder.run(f"resolving the {comp.name} module (go mod tidy)", [builder.go, "mod", "tidy"], moddir)
    return moddir


def build_all(out: TextIO | None = None) -> Path:
    """Build every add-on not yet built, each into its own directory; return the add-ons' root."""
    out = out or sys.stderr
    root = paths.cache_root() / "addons"
    spec = load()
    if not missing():
        print(f"all add-ons present in {root}: nothing to build", file=out, flush=True)
        return root
    go = build.go_binary()
    for comp in components(spec):
        if binary(comp.name) is not None:
            continue
        bindir = bin_dir(comp.name, spec)
        bindir.mkdir(parents=True, exist_ok=True)
        with build._locked(bindir / ".lock", out):
            if binary(comp.name) is not None:  # another build finished it while we waited
                continue
            entry = spec[comp.name]
            (bindir / "entry.json").write_text(json.dumps({comp.name: entry}, indent=1, sort_keys=True) + "\n")
            log_path = bindir / "build.log"
            with log_path.open("a") as log, tempfile.TemporaryDirectory(prefix="wincon-addons-") as tmp:
                builder = build._Builder(go, bindir, log, out)
                start = time.monotonic()
                builder.say(f"[{comp.name}] building {comp.package} {entry['version']} into {bindir} ...")
                moddir = prepare_module(builder, comp, entry, Path(tmp))
                version_line = builder.build(comp, moddir)
                builder.say(f"[{comp.name}] built in {build._fmt(time.monotonic() - start)}: {version_line}")
    return root
