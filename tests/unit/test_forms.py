"""wincon/windows/forms.py: the windows_form declaration, its evidence, lint and the figure (issue 18, item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wincon.documents import upstream
from wincon.windows import forms

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def modcache(tmp_path):
    root = tmp_path / f"k8s.io/kubernetes@{forms.pinned_version()}/test/e2e/windows"
    root.mkdir(parents=True)
    (root / "dns.go").write_text('package windows\n\n\tcmd := []string{"ipconfig", "/all"}\n')
    return tmp_path


def test_upstream_evidence_resolves_to_a_line_naming_the_tool(modcache):
    version = forms.pinned_version()
    assert forms.evidence_problems(f"k8s.io/kubernetes@{version}/test/e2e/windows/dns.go:3 ipconfig", modcache) == []
    assert (
        "not on line"
        in forms.evidence_problems(f"k8s.io/kubernetes@{version}/test/e2e/windows/dns.go:1 ipconfig", modcache)[0]
    )
    assert (
        "has 3 lines" in forms.evidence_problems(f"k8s.io/kubernetes@{version}/test/e2e/windows/dns.go:9", modcache)[0]
    )
    assert "is not in" in forms.evidence_problems(f"k8s.io/kubernetes@{version}/test/e2e/windows/x.go:1", modcache)[0]


def test_upstream_evidence_must_cite_the_pinned_version(modcache):
    problems = forms.evidence_problems("k8s.io/kubernetes@v1.20.0/test/e2e/windows/dns.go:3", modcache)
    assert problems and "versions.toml pins" in problems[0]


def test_recorded_output_evidence_needs_its_source(tmp_path):
    outputs = tmp_path / "tests/data/windows-outputs"
    outputs.mkdir(parents=True)
    (outputs / "a.txt").write_text("Reply from 10.0.0.1\n")
    assert "has no a.txt.source" in forms.evidence_problems(f"{forms.OUTPUTS}a.txt", repo=tmp_path)[0]
    (outputs / "a.txt.source").write_text("Source: https://example.invalid/\n")
    assert forms.evidence_problems(f"{forms.OUTPUTS}a.txt Reply", repo=tmp_path) == []
    assert "does not contain" in forms.evidence_problems(f"{forms.OUTPUTS}a.txt Pinging", repo=tmp_path)[0]
    assert "does not exist" in forms.evidence_problems(f"{forms.OUTPUTS}b.txt", repo=tmp_path)[0]


def test_the_real_corpus_resolves():
    assert forms.evidence_problems(f"{forms.OUTPUTS}resolve-dnsname-nxdomain.txt DNS_ERROR_RCODE_NAME_ERROR") == []


def test_anything_else_is_not_evidence():
    assert "neither" in forms.evidence_problems("it works on my machine")[0]


def row(**form):
    return {"nodeid": "suites/x.py::test_a[windows]", "windows_form": {"declared": True, "has_control": True, **form}}


def test_lint_fails_an_item_with_neither():
    undeclared = {"nodeid": "suites/x.py::test_a[windows]", "windows_form": {"declared": False, "has_control": True}}
    assert "no windows_form" in forms.lint_problems([undeclared])[0]
    assert "no windows_form" in forms.lint_problems([row(same_as_control=False, evidence=[])])[0]
    assert forms.lint_problems([row(same_as_control=True, evidence=[])]) == []
    assert forms.lint_problems([{"nodeid": "suites/x.py::test_a[linux]", "windows_form": None}]) == []


def test_same_as_control_needs_a_control():
    problems = forms.lint_problems(
        [{"nodeid": "n", "windows_form": {"declared": True, "has_control": False, "same_as_control": True}}]
    )
    assert "no Linux control" in problems[0]


def test_share_counts_the_items_with_a_control_that_run():
    tests = [
        row(same_as_control=True),
        row(same_as_control=True),
        row(same_as_control=False, no_command="reads stats/summary"),
        row(same_as_control=False, evidence=["tests/data/windows-outputs/x.txt"]),
        row(same_as_control=False, unavailable="no form"),
        {"nodeid": "w", "windows_form": {"declared": True, "has_control": False, "evidence": ["e"]}},
        {"nodeid": "l", "windows_form": None},
    ]
    assert forms.share(tests) == (2, 1, 4)
    assert forms.unavailable_count(tests) == 1
    line = forms.share_line(tests)
    assert "share 75.0 %" in line and "counted as not running it: 60.0 %" in line


SUITE = """
import pytest

pytestmark = [pytest.mark.windows_form(same_as_control=True)]


@pytest.fixture(scope="module")
def target_os(request):
    return request.param


def pytest_generate_tests(metafunc):
    pass


@pytest.mark.dataplane
@pytest.mark.test_id("3b0c7c0e-0f0e-4c55-8b9e-3f2d7a0f9e01")
def test_same(target_os):
    pass


@pytest.mark.dataplane
@pytest.mark.test_id("3b0c7c0e-0f0e-4c55-8b9e-3f2d7a0f9e02")
@pytest.mark.windows_form(unavailable="no recorded output of the tool")
def test_unavailable(target_os):
    pass
"""


def test_plan_rows_carry_the_declaration_and_unavailable_skips_the_windows_item(pytester):
    pytester.makeconftest("")
    pytester.makepyfile(test_forms_suite=SUITE)
    out = pytester.path / "plan.json"
    result = pytester.runpytest("-p", "no:randomly", "--collect-only", "-q", "--wincon-plan-out", str(out))
    assert out.exists(), result.stdout.str()
    rows = {r["nodeid"].split("::")[1]: r for r in json.loads(out.read_text())["tests"]}
    windows = {k: v for k, v in rows.items() if k.endswith("[windows]")}
    assert windows["test_same[windows]"]["windows_form"]["same_as_control"] is True
    assert windows["test_same[windows]"]["windows_form"]["has_control"] is True
    unavailable = windows["test_unavailable[windows]"]
    assert unavailable["outcome"] == "skip" and "no Windows form with evidence" in unavailable["reason"]
    assert rows["test_unavailable[linux]"]["windows_form"] is None
    assert rows["test_unavailable[linux]"]["outcome"] != "skip"


def _evidence_constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(forms).items()
        if name.isupper()
        and isinstance(value, str)
        and value.startswith(("k8s.io/kubernetes@", forms.OUTPUTS))
        and " " in value
    }


def test_every_evidence_constant_resolves_against_the_pinned_module():
    """Each evidence constant the suites cite names a file and line of k8s.io/kubernetes at the pinned version that
    carries its word (or a recorded output with its source): the new busybox-w32 applets (Dockerfile_windows), the
    conformance preStop hook's sh/curl and the HostProcess hostname comparison included."""
    upstream.ensure_module(forms.pinned_version(), forms.module_cache())  # downloaded where the cache lacks it
    constants = _evidence_constants()
    for name in ("BUSYBOX_W32_APPLETS", "BUSYBOX_W32_DD", "PRESTOP_SH_CURL", "HOSTPROCESS_HOSTNAME"):
        assert name in constants
    problems = {name: forms.evidence_problems(value) for name, value in constants.items()}
    assert {name: p for name, p in problems.items() if p} == {}


def test_a_constant_whose_word_moved_off_its_line_is_a_problem():
    upstream.ensure_module(forms.pinned_version(), forms.module_cache())  # downloaded where the cache lacks it
    ref = forms.BUSYBOX_W32_DD.split(" ")[0]
    assert forms.evidence_problems(f"{ref} fsutil")  # the applet list carries no fsutil
    assert forms.evidence_problems(forms.PRESTOP_SH_CURL.replace(":184", ":183"))
