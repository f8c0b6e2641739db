"""limitations.yaml says where a feature gate it names is gone: checked against each Kubernetes release's
pkg/features/kube_features.go (the releases wincon/localcluster/versions.toml builds, and the parity baseline),
read from the module trees (downloaded where missing, never built; without them the test fails saying why)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from wincon.documents import upstream

ROOT = Path(__file__).resolve().parents[2]
GATE = re.compile(r"\b([A-Z][A-Za-z0-9]+) (?:kube-proxy |kubelet )?(?:feature )?gate\b")
DEFINED = re.compile(r"^\t(\w+): \{$", re.M)  # an entry of the versioned feature gate specs


def defined_gates(root: Path) -> set[str]:
    return set(DEFINED.findall((root / "pkg" / "features" / "kube_features.go").read_text()))


def entry_text(entry: dict) -> str:
    return yaml.safe_dump(entry, width=10_000)


def gate_problems(entries: list[dict], releases: list[tuple[str, set[str]]]) -> list[str]:
    """An entry naming a gate that the newest release no longer defines must say it was removed: "removed in
    vX.Y" where an older release of the list still defines it, else "removed" at all."""
    problems = []
    for entry in entries:
        text = entry_text(entry)
        for gate in sorted(set(GATE.findall(text))):
            if gate in releases[-1][1]:
                continue
            last = [index for index, (_, gates) in enumerate(releases) if gate in gates]
            if last:
                gone = next(v for v, gates in releases[last[-1] + 1 :] if gate not in gates)
                minor = ".".join(gone.lstrip("v").split(".")[:2])
                if f"removed in v{minor}" not in text and f"removed in {minor}" not in text:
                    problems.append(
                        f"{entry['id']}: {gate} is gone from {gone} on; the entry does not say 'removed in v{minor}'"
                    )
            elif "removed" not in text:
                problems.append(
                    f"{entry['id']}: {gate} is no gate of any release here; the entry does not say it was removed"
                )
    return problems


@pytest.fixture(scope="module")
def releases() -> list[tuple[str, set[str]]]:
    data = upstream.load_data()
    try:
        return [(v, defined_gates(upstream.ensure_module(v))) for v in [data.baseline, *data.versions]]
    except upstream.ModuleUnavailable as error:
        pytest.fail(f"the gate check reads each release's kube_features.go: {error}")


def test_every_gate_the_limitations_name_is_current_or_said_to_be_removed(releases):
    entries = yaml.safe_load((ROOT / "limitations.yaml").read_text())["limitations"]
    problems = gate_problems(entries, releases)
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_removed_gate_the_text_calls_current():
    releases = [("v1.37.2", {"WinDSR", "Other"}), ("v1.38.0-beta.0", {"Other"})]
    current = {"id": "a", "note": "needs the WinDSR feature gate"}
    assert gate_problems([current], releases) == [
        "a: WinDSR is gone from v1.38.0-beta.0 on; the entry does not say 'removed in v1.38'"
    ]
    assert gate_problems([{"id": "a", "note": "the WinDSR gate, removed in v1.38"}], releases) == []
    assert gate_problems([{"id": "b", "note": "the Other gate"}], releases) == []
    assert gate_problems([{"id": "c", "note": "the Ancient gate"}], releases) == [
        "c: Ancient is no gate of any release here; the entry does not say it was removed"
    ]
