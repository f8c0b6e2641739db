"""Build the local cluster's binaries from the Go module proxy (`wincon cluster build`).

Versions come from ``versions.toml`` only. Each group of binaries is built from a throw-away wrapper
module generated in a temporary directory:

- kubernetes: ``require k8s.io/kubernetes vX.Y.Z`` plus a ``replace`` of every staging module that
  k8s.io/kubernetes's own go.mod lists at ``v0.0.0`` (read from the downloaded go.mod, not hard-coded)
  by its published ``v0.Y.Z``; version ldflags so that ``--version`` prints the real ``vX.Y.Z``;
- etcd: ``require go.etcd.io/etcd/server/v3`` (no replaces needed);
- kwok: ``require sigs.k8s.io/kwok`` for ``kwok`` and ``kwokctl``.

``versions.toml`` names several Kubernetes releases; one build makes one release's binaries (the default, or
``--kubernetes-version``), into ``${WINCON_CACHE:-~/.cache/wincon}/bin/<hash of that release's versions>/``, so
each release is cached apart. A release whose go.mod needs a newer Go than the machine's names a
``go_toolchain``, set as ``GOTOOLCHAIN`` for its go commands (the go command fetches it from the module proxy).
A marker is written after each verified binary, so an interrupted build resumes where it stopped and a complete
cache is never rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from wincon.commandline.errors import LocalClusterError
from wincon.documents import releases
from wincon.localcluster import paths

HEARTBEAT_SECONDS = 30.0
_STAGING_RE = re.compile(r"(?m)^\s*(?:require\s+)?(k8s\.io/[^\s]+)\s+v0\.0\.0(?:\s|$)")


@dataclass(frozen=True)
class Component:
    """One binary: the Go package it is built from and how its version is checked."""

    name: str
    group: str  # "kubernetes", "etcd" or "kwok": which wrapper module builds it
    package: str
    ldflags: tuple[str, ...]
    version_args: tuple[str, ...]
    expect: str  # must appear in the output of `<binary> <version_args>`
    static: bool = False  # CGO_ENABLED=0: a one-file binary that runs alone in an image


def components(versions: dict[str, Any] | None = None) -> list[Component]:
    """Every binary the local cluster needs, in build order (small ones first)."""
    v = versions or paths.load_versions()
    k8s, etcd, kwok, coredns = v["kubernetes"], v["etcd"], v["kwok"], v["coredns"]
    kver = k8s["version"]
    major, minor = releases.minor_of(kver) or (0, 0)  # versions.toml's versions always parse
    k8s_ldflags = (
        "-s",
        "-w",
        f"-X k8s.io/component-base/version.gitVersion={kver}",
        f"-X k8s.io/component-base/version.gitMajor={major}",
        f"-X k8s.io/component-base/version.gitMinor={minor}",
    )
    kwok_ldflags = (
        "-s",
        "-w",
        f"-X sigs.k8s.io/kwok/pkg/consts.Version={kwok['version']}",
        f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={kver}",
    )
    result = [
        Component("etcd", "etcd", etcd["module"], ("-s", "-w"), ("--version",), etcd["version"].lstrip("v")),
    ]
    for cmd in kwok["commands"]:
        result.append(
            Component(cmd, "kwok", f"{kwok['module']}/cmd/{cmd}", kwok_ldflags, ("--version",), kwok["version"])
        )
    for cmd in k8s["commands"]:
        args = ("version", "--client") if cmd == "kubectl" else ("--version",)
        result.append(Component(cmd, "kubernetes", f"{k8s['module']}/cmd/{cmd}", k8s_ldflags, args, kver))
    for name, path in k8s.get("images", {}).items():
        version = k8s[f"{name}_version"]
        result.append(
            Component(
                name,
                "kubernetes",
                f"{k8s['module']}/{path}",
                ("-s", "-w", f"-X main.Version={version}"),  # as upstream's image Makefile sets it
                ("--version",),
                version,
                True,
            )
        )
    result.append(
        Component(
            "coredns", "coredns", coredns["module"], ("-s", "-w"), ("-version",), coredns["version"].lstrip("v"), True
        )
    )
    return result


def _marker(bindir: Path, name: str) -> Path:
    return bindir / ".built" / name


def missing(bindir: Path | None = None, release: str | None = None) -> list[str]:
    """Names of the binaries not yet built (and verified) for one release (default: the selected one)."""
    bindir = bindir or paths.bin_dir(release)
    return [
        c.name
        for c in components(paths.load_versions(release))
        if not (_marker(bindir, c.name).is_file() and (bindir / c.name).is_file())
    ]


def require_binaries(release: str | None = None) -> Path:
    """The binary directory of one release, or a LocalClusterError saying how to build what is missing."""
    bindir = paths.bin_dir(release)
    absent = missing(bindir, release)
    if absent:
        minor = paths.resolve_release(release)
        version = paths.load_versions(minor)["kubernetes"]["version"]
        flag = "" if minor == paths.default_release() else f" --kubernetes-version {minor}"
        raise LocalClusterError(
            f"the local cluster's binaries of Kubernetes {version} are not built "
            f"({', '.join(absent)} missing in {bindir})",
            f"run `wincon cluster build{flag}` (15-20 min on 2 cores the first time; later runs reuse the cache)",
        )
    return bindir


def go_environment(versions: dict[str, Any], go: str | None = None) -> dict[str, str]:
    """What the go command needs in its environment for a release: :func:`paths.go_environment` (GOTOOLCHAIN
    where versions.toml's go_toolchain is newer than the machine's go), the same a module download takes."""
    return paths.go_environment(versions, go)


def go_binary() -> str:
    """The `go` command, or a LocalClusterError naming the fix."""
    go = os.environ.get("WINCON_GO") or shutil.which("go")
    if not go or not os.access(go, os.X_OK):
        raise LocalClusterError(
            "the Go toolchain is not installed: `go` is not on PATH (needed to build kube-apiserver, "
            "etcd, kwok and kwokctl from the Go module proxy)",
            "install Go 1.24 or newer and put its bin directory on PATH (or set WINCON_GO=/path/to/go), "
            "then re-run `wincon cluster build`",
        )
    return go


_REFUSED_RE = re.compile(
    r"(\S+@v[^\s:]+): reading \S+: 403 Forbidden\s*\n\s*server response: This module version is not available"
)


def refused_modules(output: str) -> list[str]:
    """The module versions a go command's output says the Go module proxy refused (403, 'not available'),
    in order, each once."""
    return list(dict.fromkeys(_REFUSED_RE.findall(output)))


def _fmt(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


class _Builder:
    def __init__(self, go: str, bindir: Path, log: TextIO, out: TextIO, env: dict[str, str] | None = None) -> None:
        self.go = go
        self.env = dict(env or {})
        self.bindir = bindir
        self.log = log
        self.log_path = Path(log.name)
        self.out = out
        self.peak_rss_kib = 0
        # Set by a caller on another thread (wincon.localcluster.prefetch): the go command running is killed and
        # run() raises LocalClusterError, so that nothing of it outlives the build it served.
        self.stop: threading.Event | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def run(self, what: str, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
        """Run a go command, echo a heartbeat while it runs, return its output; raise naming `what`."""
        self.log.write(f"\n$ (cd {cwd} && {' '.join(args)})\n")
        self.log.flush()
        with tempfile.TemporaryFile(mode="w+") as capture:
            proc = subprocess.Popen(
                args,
                cwd=cwd,
                stdout=capture,
                stderr=subprocess.STDOUT,
                text=True,
                env={**os.environ, **self.env, **(env or {})},
            )
            start = time.monotonic()
            next_beat = start + HEARTBEAT_SECONDS
            status = rusage = None
            try:
                while True:
                    pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        proc.returncode = os.waitstatus_to_exitcode(status)
                        break
                    if self.stop is not None and self.stop.is_set():
                        raise LocalClusterError(f"{what} was stopped", "nothing to do: the build it served ended")
                    now = time.monotonic()
                    if now >= next_beat:
                        self.say(f"    ... still {what} ({_fmt(now - start)})")
                        next_beat += HEARTBEAT_SECONDS
                    time.sleep(0.5)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            self.peak_rss_kib = max(self.peak_rss_kib, rusage.ru_maxrss if rusage else 0)
            capture.seek(0)
            output = capture.read()
        self.log.write(output)
        self.log.flush()
        if proc.returncode != 0:
            refused = refused_modules(output)
            if refused:
                raise LocalClusterError(
                    f"{what} failed: the Go module proxy does not serve {', '.join(refused)} (it answered "
                    f"'This module version is not available'), which this release's build needs\n  log: {self.log_path}",
                    "nothing here can build this release until the proxy serves those versions: use another "
                    "release (`--kubernetes-version`, `wincon cluster up --help` lists them); retrying later is harmless",
                )
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise LocalClusterError(
                f"{what} failed (exit {proc.returncode}); last lines:\n{tail}\n  log: {self.log_path}",
                f"read {self.log_path}; if the Go module proxy was unreachable, retry "
                "`wincon cluster build` (finished binaries are kept)",
            )
        return output

    def prepare_module(self, group: str, versions: dict[str, Any], workdir: Path) -> Path:
        """Write the wrapper module of `group` and resolve its dependencies; return its directory."""
        moddir = workdir / group
        moddir.mkdir()
        spec = versions[group]
        lines = [
            f"module wincon.local/{group}build",
            "",
            "go 1.24.0",
            "",
            f"require {spec['module']} {spec['version']}",
        ]
        if group == "kubernetes":
            staging = self.staging_modules(spec["module"], spec["version"], workdir)
            lines += ["", "replace ("]
            lines += [f"\t{mod} => {mod} {spec['staging_version']}" for mod in staging]
            lines += [")"]
        (moddir / "go.mod").write_text("\n".join(lines) + "\n")
        packages = sorted({c.package for c in components(versions) if c.group == group})
        imports = "\n".join(f'\t_ "{pkg}"' for pkg in packages)
        (moddir / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n")
        self.run(f"resolving the {group} module (go mod tidy)", [self.go, "mod", "tidy"], moddir)
        return moddir

    def staging_modules(self, module: str, version: str, workdir: Path) -> list[str]:
        """The k8s.io modules that `module`'s go.mod requires at v0.0.0 (its in-tree staging modules)."""
        output = self.run(
            f"downloading {module}@{version}", [self.go, "mod", "download", "-json", f"{module}@{version}"], workdir
        )
        info, _ = json.JSONDecoder().raw_decode(output[output.index("{") :])
        gomod = Path(info["GoMod"]).read_text()
        staging = sorted(set(_STAGING_RE.findall(gomod)))
        if not staging:
            raise LocalClusterError(
                f"found no k8s.io staging modules (required at v0.0.0) in {info['GoMod']}",
                "check the kubernetes version in wincon/localcluster/versions.toml",
            )
        return staging

    def build(self, comp: Component, moddir: Path) -> str:
        """Build one binary into the cache, check its version, mark it done; return the version line."""
        tmp = self.bindir / f".{comp.name}.tmp"
        self.run(
            f"building {comp.name}",
            [self.go, "build", "-o", str(tmp), "-ldflags", " ".join(comp.ldflags), comp.package],
            moddir,
            {"CGO_ENABLED": "0"} if comp.static else None,
        )
        result = subprocess.run([str(tmp), *comp.version_args], capture_output=True, text=True, timeout=60)
        version_out = (result.stdout + result.stderr).strip()
        if comp.expect not in version_out:
            raise LocalClusterError(
                f"{comp.name} was built but `{comp.name} {' '.join(comp.version_args)}` printed "
                f"{version_out[:200]!r}, not {comp.expect}",
                "check the ldflags in wincon/localcluster/build.py and the versions in versions.toml",
            )
        os.replace(tmp, self.bindir / comp.name)
        marker = _marker(self.bindir, comp.name)
        marker.parent.mkdir(exist_ok=True)
        first_line = version_out.splitlines()[0]
        marker.write_text(first_line + "\n")
        return first_line


@contextlib.contextmanager
def _locked(path: Path, out: TextIO) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another build of the same versions to finish (lock {path})", file=out, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(out: TextIO | None = None, release: str | None = None) -> Path:
    """Build whatever binary of one release (default: the selected one) is missing; return its directory.

    Prints which component is being built and the elapsed time of each and of the whole build.
    """
    out = out or sys.stderr
    release = paths.resolve_release(release)
    bindir = paths.bin_dir(release)
    versions = paths.load_versions(release)
    if not missing(bindir, release):
        print(f"all binaries present in {bindir}: nothing to build", file=out, flush=True)
        return bindir
    go = go_binary()
    bindir.mkdir(parents=True, exist_ok=True)
    with _locked(bindir / ".lock", out):
        todo = [c for c in components(versions) if c.name in missing(bindir, release)]
        if not todo:
            print(f"all binaries present in {bindir}: nothing to build", file=out, flush=True)
            return bindir
        (bindir / "versions.json").write_text(json.dumps(versions, indent=2, sort_keys=True) + "\n")
        log_path = bindir / "build.log"
        total_start = time.monotonic()
        with log_path.open("a") as log, tempfile.TemporaryDirectory(prefix="wincon-build-") as tmp:
            env = go_environment(versions, go)
            builder = _Builder(go, bindir, log, out, env)
            toolchain = f", with GOTOOLCHAIN={env['GOTOOLCHAIN']}" if env else ""
            builder.say(
                f"building Kubernetes {versions['kubernetes']['version']}{toolchain}: "
                f"{', '.join(c.name for c in todo)} into {bindir} (log: {log_path})"
            )
            modules: dict[str, Path] = {}
            for comp in todo:
                if comp.group not in modules:
                    start = time.monotonic()
                    builder.say(f"[{comp.group}] preparing the wrapper module ...")
                    modules[comp.group] = builder.prepare_module(comp.group, versions, Path(tmp))
                    builder.say(f"[{comp.group}] module ready in {_fmt(time.monotonic() - start)}")
                start = time.monotonic()
                builder.say(f"[{comp.name}] building {comp.package} ...")
                version_line = builder.build(comp, modules[comp.group])
                builder.say(f"[{comp.name}] built in {_fmt(time.monotonic() - start)}: {version_line}")
        builder.say(
            f"build finished in {_fmt(time.monotonic() - total_start)} "
            f"(peak RSS of a single build process: {builder.peak_rss_kib / 1024 / 1024:.1f} GiB)"
        )
    return bindir
