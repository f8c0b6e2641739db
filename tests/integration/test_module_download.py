"""The download path of upstream's module trees (wincon.documents.upstream.ensure_module) for real, from an empty module cache.

For each release wincon/localcluster/versions.toml names, `go mod download` of the k8s.io/kubernetes module zip
alone (not its dependencies; no build) from the Go module proxy into a Go module cache of the test's own, with the
toolchain the release's go.mod needs (GOTOOLCHAIN from versions.toml's go_toolchain, wincon.localcluster.paths):
on a Go 1.26 machine 1.38's module cannot be extracted without it ("requires go >= 1.27.0"). The environment's
construction is unit-tested in tests/unit/test_coverage_parity.py; this is the one real download, an integration
test because it takes tens of seconds (measured 2026-11-28 on 2 cores under other load, the four into one empty
cache in /dev/shm: 22 s and 40 s in two runs, 1 s of it removing the trees; one at a time on disk: 4.6 s, 5.7 s,
8.1 s and 24.2 s for 1.35-1.38, the last fetching go1.27.3, and 3-11 s each to remove). No cluster is needed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from wincon.documents import upstream
from wincon.localcluster import paths

MEMORY = Path("/dev/shm")
ROOM = 4 << 30  # the four trees and a toolchain take some 650 MB


@pytest.fixture
def empty_modcache(tmp_path: Path) -> Iterator[Path]:
    """A Go module cache of the test's own, empty, in memory where /dev/shm has room (on disk, during a build,
    removing the extracted trees took 118 s; from /dev/shm one tree goes in 0.2 s, 4.6 s from disk); removed
    afterwards (go makes its files read-only)."""
    in_memory = MEMORY.is_dir() and os.access(MEMORY, os.W_OK) and shutil.disk_usage(MEMORY).free > ROOM
    modcache = Path(tempfile.mkdtemp(prefix="wincon-gomodcache-", dir=MEMORY if in_memory else tmp_path))
    try:
        yield modcache
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(modcache)], check=True)
        shutil.rmtree(modcache)


def test_each_release_s_module_downloads_into_an_empty_module_cache_with_its_toolchain(empty_modcache):
    """Every release's tree is extracted, and the cache holds a fetched toolchain exactly where the release's go.mod
    needs a newer Go than the machine's (and it is versions.toml's go_toolchain)."""
    go = shutil.which("go")
    assert go, "the go command is needed to download module trees (install Go, see README)"
    machine = paths.machine_go_version(go)
    assert machine, f"`{go} env GOVERSION` did not say what it is"
    needing = []
    for release in paths.releases():
        versions = paths.load_versions(release)
        version = versions["kubernetes"]["version"]
        root = upstream.ensure_module(version, empty_modcache)
        assert root == upstream.module_dir(version, empty_modcache) and (root / upstream.UPSTREAM_DIR).is_dir()
        directive = re.search(r"(?m)^go (\S+)", (root / "go.mod").read_text())
        assert directive, f"{version}: its go.mod has no go directive"
        toolchain = paths.go_environment(versions, go).get("GOTOOLCHAIN")
        needs_newer = paths.go_version_key(directive.group(1)) > paths.go_version_key(machine)
        assert bool(toolchain) == needs_newer, (release, directive.group(1), machine, toolchain)
        if toolchain:
            needing.append(toolchain)
    fetched = sorted(p.name for p in (empty_modcache / "golang.org").glob("toolchain@*"))
    assert len(fetched) == len(set(needing)), fetched
    assert all(any(f"-{toolchain}." in name for name in fetched) for toolchain in needing), (fetched, needing)
