"""Which entry of a Windows image's manifest list runs on a node: its build, its containerd, the pod's isolation.

A process-isolated container runs an image entry whose ``os.version`` build the node's containerd platform
matcher accepts; which builds it accepts changed over containerd's releases (the rules below, each read from the
code the release vendors: ``tests/unit/test_platform_rules.py`` checks the table against the go.mod of each
boundary release and runs the matcher code of github.com/containerd/platforms itself). A Hyper-V isolated pod
needs the exact build: the utility VM boots the sandbox (pause) image's build and the app's layers must match it
(kubernetes-sigs/windows-testing#557: a 2022 sandbox with 2025 app layers fails with HCS_E_IMAGE_MISMATCH), as
does a node whose containerd version is unknown (no rule can be assumed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LTSC2022 = 20348
LTSC2025 = 26100
# The LTSC releases of the Windows stable ABI (containerd/platforms platform_windows_compat.go compatLTSCReleases).
LTSC_RELEASES = (LTSC2022, LTSC2025)


@dataclass(frozen=True)
class Rule:
    """One matcher rule: its name, what it accepts, and the code that says so."""

    name: str
    summary: str
    source: str

    def accepts(self, host: int, image: int) -> bool:
        if host < LTSC2022 or self.name == "exact":
            return host == image
        if self.name == "from-ltsc2022":
            floor = LTSC2022
        elif self.name == "previous-ltsc":  # the latest LTSC strictly below the host, else ltsc2022
            floor = next((ltsc for ltsc in reversed(LTSC_RELEASES) if host > ltsc), LTSC2022)
        else:  # "previous-ltsc-generation": the LTSC before the largest LTSC at or below the host
            at_or_below = [i for i, ltsc in enumerate(LTSC_RELEASES) if host >= ltsc]
            floor = LTSC_RELEASES[max(at_or_below[-1] - 1, 0)]
        return floor <= image <= host


EXACT = Rule(
    "exact",
    "the exact build only",
    "containerd <= 1.6.22 and 1.7.0-1.7.5: platforms/defaults_windows.go matches strings.HasPrefix(os.version, "
    "'10.0.<host build>')",
)
FROM_LTSC2022 = Rule(
    "from-ltsc2022",
    "hosts from ltsc2022: any build from 20348 up to the host's; older hosts: the exact build",
    "hcsshim osversion.CheckHostAndContainerCompat (v0.9.10 in containerd 1.6.23, v0.11.0 in 1.7.6), then "
    "github.com/containerd/platforms v0.2.1 (containerd 1.7.20), v1.0.0-rc.0/rc.1 (containerd 2.0, 2.1.0-2.1.5): "
    "compatLTSCReleases [20348], floor 20348 for every host >= 20348",
)
PREVIOUS_LTSC = Rule(
    "previous-ltsc",
    "an LTSC host: the previous LTSC up to its own build; a host past 26100: from 26100 only (ltsc2022 refused)",
    "github.com/containerd/platforms v1.0.0-rc.2 to rc.4 (containerd/platforms#24; containerd 2.1.6, 2.2, "
    "2.3.0-2.3.4): compatLTSCReleases [20348, 26100], floor the latest LTSC strictly below the host",
)
PREVIOUS_LTSC_GENERATION = Rule(
    "previous-ltsc-generation",
    "the previous LTSC up to the host's build for every host of an LTSC generation (a 26200 host accepts 20348)",
    "github.com/containerd/platforms v1.0.0-rc.5 (containerd/platforms#34; containerd 2.3.5 via "
    "containerd/containerd#14001, 2.4): floor the LTSC before the largest LTSC at or below the host",
)

# (first containerd version of a line's rule, rule), per release line, ascending; the first version of each line
# whose go.mod (or in-tree platforms package) changes the rule.
_BOUNDARIES: tuple[tuple[tuple[int, int, int], Rule], ...] = (
    ((0, 0, 0), EXACT),
    ((1, 6, 23), FROM_LTSC2022),
    ((1, 7, 0), EXACT),
    ((1, 7, 6), FROM_LTSC2022),
    ((2, 1, 6), PREVIOUS_LTSC),
    ((2, 3, 5), PREVIOUS_LTSC_GENERATION),
)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def containerd_rule(version: str | None) -> Rule | None:
    """The platform matcher rule of containerd ``version`` ('2.0.4+azure', '1.7.27', 'v2.3.5'); None when the
    version cannot be read (the caller then needs the exact build)."""
    found = _VERSION.match((version or "").strip())
    if not found:
        return None
    key = tuple(int(part or 0) for part in found.groups())
    rule = EXACT
    for first, boundary_rule in _BOUNDARIES:
        if key >= first:
            rule = boundary_rule
    return rule


@dataclass(frozen=True)
class Verdict:
    """Whether an image runs on a node, the entry that would serve it, and why."""

    runs: bool
    entry: int | None
    reason: str


def pick_entry(
    host_build: int, image_builds: Iterable[int], isolation: str = "process", containerd_version: str | None = None
) -> Verdict:
    """Which of ``image_builds`` (the Windows ``os.version`` builds of a manifest list) a node of ``host_build``
    runs for a pod of ``isolation`` on containerd ``containerd_version``: the exact build when present, else the
    newest build the matcher accepts (process isolation on a known containerd only)."""
    builds = sorted(set(image_builds))
    if host_build in builds:
        return Verdict(True, host_build, f"the manifest list has an entry of build {host_build}")
    listed = ", ".join(str(b) for b in builds) or "none"
    if isolation == "hyperv":
        return Verdict(
            False,
            None,
            f"Hyper-V isolation needs an entry of the node's build {host_build} (the utility VM boots the sandbox's "
            f"build; a mismatch fails with HCS_E_IMAGE_MISMATCH, kubernetes-sigs/windows-testing#557); the list "
            f"has {listed}",
        )
    rule = containerd_rule(containerd_version)
    if rule is None:
        return Verdict(
            False,
            None,
            f"the node's containerd version ({containerd_version or 'unknown'}) is unknown, so only an entry of its "
            f"build {host_build} is sure to run; the list has {listed}",
        )
    accepted = [b for b in builds if rule.accepts(host_build, b)]
    if accepted:
        return Verdict(
            True,
            accepted[-1],
            f"containerd {containerd_version} runs the {accepted[-1]} entry on build {host_build} with process "
            f"isolation ({rule.summary}: {rule.source})",
        )
    return Verdict(
        False,
        None,
        f"containerd {containerd_version} on build {host_build} accepts {rule.summary}; the list has {listed}",
    )
