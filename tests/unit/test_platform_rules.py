"""wincon.workloads.platforms: containerd's Windows platform matcher per containerd release, checked against the
code itself (issue 31 part 2's rule): the platforms version (or in-tree package) each boundary release vendors, read
from its go.mod in the Go module cache, and the matcher's compatibility function of each github.com/containerd/
platforms version run on a matrix of host and image builds, compared with the rule wincon applies."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wincon.workloads import platforms
from wincon.workloads.platforms import (
    EXACT,
    FROM_LTSC2022,
    PREVIOUS_LTSC,
    PREVIOUS_LTSC_GENERATION,
    containerd_rule,
    pick_entry,
)

BUILDS = (17763, 20348, 22621, 26100, 26200)  # 2019, 2022, Windows 11 22H2, 2025, a build past 2025


def go_download(module: str) -> dict:
    go = shutil.which("go")
    if not go:
        pytest.fail(f"the go command is needed to read {module} from the Go module cache (install Go, see README)")
    result = subprocess.run(
        [go, "mod", "download", "-json", module], capture_output=True, text=True, timeout=600, cwd="/"
    )
    info = json.loads(result.stdout or "{}")
    if result.returncode or not info.get("Dir"):
        pytest.fail(f"go mod download {module} failed: {info.get('Error') or result.stderr[-300:]}")
    return info


# containerd release -> what its go.mod or in-tree platforms package shows, and the rule wincon applies.
RELEASES = [
    ("github.com/containerd/containerd@v1.6.22", "in-tree prefix match", EXACT),
    ("github.com/containerd/containerd@v1.6.23", "in-tree hcsshim compat", FROM_LTSC2022),
    ("github.com/containerd/containerd@v1.7.5", "in-tree prefix match", EXACT),
    ("github.com/containerd/containerd@v1.7.6", "in-tree hcsshim compat", FROM_LTSC2022),
    ("github.com/containerd/containerd@v1.7.27", "github.com/containerd/platforms v0.2.1", FROM_LTSC2022),
    ("github.com/containerd/containerd/v2@v2.0.4", "github.com/containerd/platforms v1.0.0-rc.1", FROM_LTSC2022),
    ("github.com/containerd/containerd/v2@v2.1.5", "github.com/containerd/platforms v1.0.0-rc.1", FROM_LTSC2022),
    ("github.com/containerd/containerd/v2@v2.1.6", "github.com/containerd/platforms v1.0.0-rc.2", PREVIOUS_LTSC),
    ("github.com/containerd/containerd/v2@v2.2.1", "github.com/containerd/platforms v1.0.0-rc.2", PREVIOUS_LTSC),
    ("github.com/containerd/containerd/v2@v2.3.4", "github.com/containerd/platforms v1.0.0-rc.4", PREVIOUS_LTSC),
    (
        "github.com/containerd/containerd/v2@v2.3.5",
        "github.com/containerd/platforms v1.0.0-rc.5",
        PREVIOUS_LTSC_GENERATION,
    ),
    (
        "github.com/containerd/containerd/v2@v2.4.0",
        "github.com/containerd/platforms v1.0.0-rc.5",
        PREVIOUS_LTSC_GENERATION,
    ),
]


@pytest.mark.parametrize("module, shows, rule", RELEASES, ids=[m.split("@")[1] for m, _, _ in RELEASES])
def test_each_containerd_release_vendors_the_matcher_of_its_rule(module, shows, rule):
    info = go_download(module)
    version = module.split("@")[1]
    assert containerd_rule(version) == rule
    assert containerd_rule(version.lstrip("v") + "+azure") == rule  # AKS's suffix changes nothing
    go_mod = Path(info["GoMod"]).read_text()
    if shows.startswith("github.com/"):
        assert re.search(rf"(?m)^\s*{re.escape(shows)}\s*$", go_mod), f"{module} does not require {shows}"
        return
    matcher = (Path(info["Dir"]) / "platforms" / "defaults_windows.go").read_text()
    if shows == "in-tree prefix match":
        assert "strings.HasPrefix(p.OSVersion, m.osVersionPrefix)" in matcher
        assert "CheckHostAndContainerCompat" not in matcher
    else:
        assert "osversion.CheckHostAndContainerCompat(" in matcher


MATRIX_TEST = """package platforms

import (
\t"fmt"
\t"testing"
)

func TestWinconMatrix(t *testing.T) {
\tfor _, h := range []uint16{%(builds)s} {
\t\tfor _, c := range []uint16{%(builds)s} {
\t\t\tfmt.Printf("wincon %%d %%d %%v\\n", h, c, %(call)s)
\t\t}
\t}
}
"""


def matcher_matrix(version: str, tmp_path: Path) -> dict[tuple[int, int], bool]:
    """Run the compatibility function of github.com/containerd/platforms@version on every (host, image) pair."""
    source = Path(go_download(f"github.com/containerd/platforms@{version}")["Dir"])
    copy = tmp_path / version
    shutil.copytree(source, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    compat = next(p for p in copy.glob("platform*compat*.go") if not p.name.endswith("_test.go"))
    text = compat.read_text()
    if compat.name.endswith("_windows.go"):  # v0.2.1: a Windows-only file; its code is plain Go, run it here
        compat.rename(copy / "platform_compat_wincon.go")
    if "func checkWindowsHostAndContainerCompat" in text:
        call = "checkWindowsHostAndContainerCompat(windowsOSVersion{MajorVersion: 10, Build: h}, windowsOSVersion{MajorVersion: 10, Build: c})"
    else:
        call = (
            "checkHostAndContainerCompat(osVersion{MajorVersion: 10, Build: h}, osVersion{MajorVersion: 10, Build: c})"
        )
    builds = ", ".join(str(b) for b in BUILDS)
    (copy / "wincon_matrix_test.go").write_text(MATRIX_TEST % {"builds": builds, "call": call})
    for other in copy.glob("*_test.go"):
        if other.name != "wincon_matrix_test.go":
            other.unlink()
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off", "CGO_ENABLED": "0"}
    result = subprocess.run(
        ["go", "test", "-count=1", "-run", "TestWinconMatrix", "-v", "."],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = re.findall(r"(?m)^wincon (\d+) (\d+) (true|false)$", result.stdout)
    assert len(rows) == len(BUILDS) ** 2, result.stdout[-1000:]
    return {(int(h), int(c)): ok == "true" for h, c, ok in rows}


@pytest.mark.parametrize(
    "version, rule",
    [
        ("v0.2.1", FROM_LTSC2022),
        ("v1.0.0-rc.1", FROM_LTSC2022),
        ("v1.0.0-rc.2", PREVIOUS_LTSC),
        ("v1.0.0-rc.4", PREVIOUS_LTSC),
        ("v1.0.0-rc.5", PREVIOUS_LTSC_GENERATION),
    ],
)
def test_the_rule_is_what_the_platforms_code_computes(version, rule, tmp_path):
    matrix = matcher_matrix(version, tmp_path)
    differ = {pair: ok for pair, ok in matrix.items() if rule.accepts(*pair) != ok}
    assert not differ, f"{rule.name} differs from containerd/platforms {version} on (host, image): {differ}"


def test_the_rules_differ_where_the_releases_did():
    """ltsc2022 images on a 2025 host run from containerd 1.6.23/1.7.6 on; on a host past 26100 containerd 2.1.6 to
    2.3.4 refused them (containerd/platforms#34 fixed it); 1.7.5 and older need the exact build everywhere."""
    assert [containerd_rule(v).accepts(26100, 20348) for v in ("1.7.5", "1.7.27", "2.0.4+azure", "2.1.6", "2.3.5")] == [
        False,
        True,
        True,
        True,
        True,
    ]
    assert [containerd_rule(v).accepts(26200, 20348) for v in ("2.0.4", "2.1.6", "2.3.4", "2.3.5")] == [
        True,
        False,
        False,
        True,
    ]
    assert not any(containerd_rule(v).accepts(26100, 17763) for v in ("1.7.27", "2.0.4", "2.4.0"))
    assert not containerd_rule("2.4.0").accepts(20348, 26100)  # never a newer image than the host
    assert containerd_rule("unknown") is None and containerd_rule("") is None


def test_pick_entry_follows_isolation_containerd_and_the_list():
    only_2019_2022 = (17763, 20348)
    ok = pick_entry(26100, only_2019_2022, "process", "2.0.4+azure")
    assert ok.runs and ok.entry == 20348 and "containerd 2.0.4+azure" in ok.reason
    hyperv = pick_entry(26100, only_2019_2022, "hyperv", "2.0.4+azure")
    assert not hyperv.runs and "HCS_E_IMAGE_MISMATCH" in hyperv.reason and "26100" in hyperv.reason
    unknown = pick_entry(26100, only_2019_2022, "process", None)
    assert not unknown.runs and "unknown" in unknown.reason
    old = pick_entry(26100, only_2019_2022, "process", "1.7.5")
    assert not old.runs and "exact build" in old.reason
    exact = pick_entry(26100, (17763, 20348, 26100), "hyperv", None)
    assert exact.runs and exact.entry == 26100
    assert not pick_entry(17763, (20348, 26100), "process", "2.4.0").runs  # a 2019 host: exact only
    assert platforms.LTSC_RELEASES == (20348, 26100)
