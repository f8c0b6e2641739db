"""wincon/windows/forms.py: a Windows form's upstream evidence is never passed unread (the sweep of issue 40: a default on
"found nothing"). Where the module tree is not in the Go module cache, it is fetched through wincon.documents.upstream's
download path; where that cannot be done, the evidence is a problem that says why, not a silent pass."""

from __future__ import annotations

from pathlib import Path

from wincon.documents import upstream
from wincon.windows import forms

EVIDENCE_PATH = "test/e2e/windows/dns.go"


def test_evidence_whose_module_cannot_be_fetched_is_a_problem_not_a_pass(tmp_path, monkeypatch):
    def refused(version: str, modcache: Path | None = None) -> Path:
        raise upstream.ModuleUnavailable(f"`go mod download k8s.io/kubernetes@{version}` failed (exit 1): refused")

    monkeypatch.setattr(upstream, "ensure_module", refused)
    version = forms.pinned_version()
    problems = forms.evidence_problems(f"k8s.io/kubernetes@{version}/{EVIDENCE_PATH}:3 ipconfig", tmp_path / "empty")
    assert problems == [
        f"evidence k8s.io/kubernetes@{version}/{EVIDENCE_PATH}:3 cannot be checked: "
        f"`go mod download k8s.io/kubernetes@{version}` failed (exit 1): refused"
    ]


def test_evidence_whose_module_is_missing_is_read_from_the_fetched_tree(tmp_path, monkeypatch):
    fetched: list[tuple[str, Path | None]] = []

    def download(version: str, modcache: Path | None = None) -> Path:
        fetched.append((version, modcache))
        root = tmp_path / "fetched" / f"k8s.io/kubernetes@{version}"
        (root / EVIDENCE_PATH).parent.mkdir(parents=True, exist_ok=True)
        (root / EVIDENCE_PATH).write_text('package windows\n\n\tcmd := []string{"ipconfig", "/all"}\n')
        return root

    monkeypatch.setattr(upstream, "ensure_module", download)
    version, empty = forms.pinned_version(), tmp_path / "empty"
    ref = f"k8s.io/kubernetes@{version}/{EVIDENCE_PATH}"
    assert forms.evidence_problems(f"{ref}:3 ipconfig", empty) == []
    assert "not on line" in forms.evidence_problems(f"{ref}:1 ipconfig", empty)[0]  # the fetched file is read
    assert fetched == [(version, empty), (version, empty)]
