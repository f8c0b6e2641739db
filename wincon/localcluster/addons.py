"""Optional components of the local cluster (``addons.toml``), built from their Go modules beside the others.

They are kept apart from ``versions.toml`` on purpose: the cluster's binaries are cached under a hash of
``versions.toml``, so adding a component there would rebuild every binary (about 17 minutes of both cores)
and move every running cluster to a new cache directory. An add-on is built by ``wincon cluster build`` after
the cluster's binaries, into ``${WINCON_CACHE:-~/.cache/wincon}/addons/<hash of addons.toml>/``, with the same
verified-marker scheme (an interrupted build resumes; a complete cache is never rebuilt). ``up`` starts each
add-on that is built and says which are not.
"""

from __future__ import annotations

import hashlib
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


def key() -> str:
    """A short hash of ``addons.toml``'s bytes: the add-ons' cache key."""
    return hashlib.sha256(ADDONS_FILE.read_bytes()).hexdigest()[:16]


def bin_dir() -> Path:
    return paths.cache_root() / "addons" / key()


def components(addons: dict[str, Any] | None = None) -> list[build.Component]:
    """One static binary per add-on, its version checked against the pinned one."""
    spec = addons or load()
    return [
        build.Component(
            name,
            name,
            entry["package"],
            ("-s", "-w", f"-X {entry['version_ldflag']}={entry['version']}"),
            ("--version",),
            entry["version"],
            True,
        )
        for name, entry in spec.items()
    ]


def binary(name: str) -> Path | None:
    """The built, verified binary of add-on ``name``, or None when it is not built."""
    path = bin_dir() / name
    return path if path.is_file() and (bin_dir() / ".built" / name).is_file() else None


def missing() -> list[str]:
    return [c.name for c in components() if binary(c.name) is None]


def build_all(out: TextIO | None = None) -> Path:
    """Build every add-on not yet built; return their directory."""
    out = out or sys.stderr
    bindir = bin_dir()
    spec = load()
    if not missing():
        print(f"all add-ons present in {bindir}: nothing to build", file=out, flush=True)
        return bindir
    go = build.go_binary()
    bindir.mkdir(parents=True, exist_ok=True)
    with build._locked(bindir / ".lock", out):
        todo = [c for c in components(spec) if c.name in missing()]
        (bindir / "addons.toml").write_bytes(ADDONS_FILE.read_bytes())
        log_path = bindir / "build.log"
        with log_path.open("a") as log, tempfile.TemporaryDirectory(prefix="wincon-addons-") as tmp:
            builder = build._Builder(go, bindir, log, out)
            for comp in todo:
                start = time.monotonic()
                entry = spec[comp.name]
                moddir = Path(tmp) / comp.name
                moddir.mkdir()
                (moddir / "go.mod").write_text(
                    f"module wincon.local/{comp.name}build\n\ngo {GO_DIRECTIVE}\n\n"
                    f"require {entry['module']} {entry['version']}\n"
                )
                (moddir / "tools.go").write_text(
                    f'//go:build tools\n\npackage tools\n\nimport (\n\t_ "{comp.package}"\n)\n'
                )
                builder.say(f"[{comp.name}] building {comp.package} {entry['version']} into {bindir} ...")
                builder.run(f"resolving the {comp.name} module (go mod tidy)", [go, "mod", "tidy"], moddir)
                version_line = builder.build(comp, moddir)
                builder.say(f"[{comp.name}] built in {build._fmt(time.monotonic() - start)}: {version_line}")
    return bindir
