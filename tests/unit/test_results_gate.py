"""The release gate: the required list, and the verdict on a run."""

from __future__ import annotations

import textwrap

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode, UsageError
from wincon.results import artifacts
from wincon.results.gate import DEFAULT_REQUIRED, judge, load_required, minor_of
from wincon.results.model import Verdict

A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"
C = "00000000-0000-4000-8000-00000000000c"
D = "00000000-0000-4000-8000-00000000000d"


def write_required(tmp_path, body):
    path = tmp_path / "required.yaml"
    path.write_text(textwrap.dedent(body))
    return path


REQUIRED = f"""
    version: 1
    accept_expected_failures: true
    kubernetes:
      "1.33":
        tests:
          - {{id: {A}, name: pod to pod}}
          - {{id: {B}, name: icmp egress}}
      "1.34":
        include: ["1.33"]
        tests:
          - {{id: {C}, name: dns single label}}
"""


def make_run(tmp_path, verdicts, k8s="v1.34.4", name="run"):
    cases = [
        synthetic.case(f"suites/t.py::test_{test_id[-1]}", verdict, test_id=test_id, limitation=lim)
        for test_id, verdict, lim in verdicts
    ]
    path = artifacts.write_run(
        tmp_path / "results" / name, cases, start=1_000, result="FAILURE", profile=synthetic.profile(k8s)
    )
    return artifacts.load_run(path)


def test_includes_resolve_and_minor_versions_parse(tmp_path):
    required = load_required(write_required(tmp_path, REQUIRED))
    assert set(required.versions["1.34"]) == {A, B, C}
    assert set(required.versions["1.33"]) == {A, B}
    assert minor_of("v1.34.4") == "1.34" and minor_of("1.33") == "1.33" and minor_of("latest") == ""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("version: 1\nkubernetes: {}\n", "should be non-empty"),
        ('version: 1\nkubernetes: {"1.34": {tests: [{id: not-a-uuid, name: x}]}}\n', "does not match"),
        (f'version: 1\nkubernetes: {{"1.34": {{include: ["1.30"], tests: [{{id: {A}, name: x}}]}}}}\n', "1.30"),
        (
            f'version: 1\nkubernetes: {{"1.34": {{tests: [{{id: {A}, name: x}}, {{id: {A}, name: y}}]}}}}\n',
            "listed twice",
        ),
        ('version: 1\nkubernetes: {"1.34": {include: ["1.33"]}, "1.33": {include: ["1.34"]}}\n', "include cycle"),
        ('version: 1\nkubernetes: {"1.34": {tests: []}}\n', "no required tests"),
        ("version: 1\nkubernetes: [\n", "not valid YAML"),
    ],
)
def test_bad_required_files_are_usage_errors_naming_the_problem(tmp_path, body, expected):
    with pytest.raises(UsageError) as info:
        load_required(write_required(tmp_path, body))
    assert expected in info.value.message
    assert str(tmp_path / "required.yaml") in info.value.message


def test_all_required_passing_or_accepted_passes_and_lists_lifted_limitations(tmp_path):
    run = make_run(
        tmp_path,
        [
            (A, Verdict.PASSED, None),
            (B, Verdict.XFAILED, "icmp-egress-through-vfp"),
            (C, Verdict.PASSED, None),
            (D, Verdict.XPASSED, "pqdn-dotted-names"),
        ],
    )
    result = judge(run, load_required(write_required(tmp_path, REQUIRED)))
    assert result.ok and result.minor == "1.34"
    assert [t for t, _, _ in result.accepted] == [B]
    assert result.review == [("pqdn-dotted-names", "suites/t.py::test_d")]
    text = result.render()
    assert "PASS" in text and "REVIEW pqdn-dotted-names" in text


def test_failed_errored_skipped_and_missing_required_tests_block(tmp_path):
    run = make_run(tmp_path, [(A, Verdict.FAILED, None), (B, Verdict.ERROR, None), (D, Verdict.PASSED, None)])
    result = judge(run, load_required(write_required(tmp_path, REQUIRED)))
    assert not result.ok
    assert {(t, why.split(":")[0]) for t, _, why in result.blocking} == {(A, "failed"), (B, "error"), (C, "missing")}
    skipped = make_run(tmp_path, [(A, Verdict.SKIPPED, None), (B, Verdict.PASSED, None)], k8s="v1.33.2", name="s")
    assert [
        why.split(":")[0] for _, _, why in judge(skipped, load_required(write_required(tmp_path, REQUIRED))).blocking
    ] == ["skipped"]


def test_expected_failures_block_when_the_file_does_not_accept_them(tmp_path):
    body = REQUIRED.replace("accept_expected_failures: true", "accept_expected_failures: false")
    run = make_run(tmp_path, [(A, Verdict.PASSED, None), (B, Verdict.XFAILED, "icmp")], k8s="v1.33.1")
    assert not judge(run, load_required(write_required(tmp_path, body))).ok


def test_a_minor_version_the_file_does_not_list_is_an_error(tmp_path):
    run = make_run(tmp_path, [(A, Verdict.PASSED, None)], k8s="v1.29.0")
    with pytest.raises(UsageError, match="no required tests for Kubernetes 1.29"):
        judge(run, load_required(write_required(tmp_path, REQUIRED)))


def test_cli_exit_codes_and_version_override(tmp_path, capsys):
    required = write_required(tmp_path, REQUIRED)
    run = make_run(tmp_path, [(A, Verdict.PASSED, None), (B, Verdict.PASSED, None)])  # C missing for 1.34
    assert main(["gate", str(run.path), "--required", str(required)]) == ExitCode.GATE
    assert "BLOCKING 00000000-0000-4000-8000-00000000000c dns single label: missing" in capsys.readouterr().out
    assert main(["gate", str(run.path), "--required", str(required), "--kubernetes-version", "1.33"]) == ExitCode.OK
    assert main(["gate", str(run.path), "--required", str(required), "--kubernetes-version", "one"]) == ExitCode.USAGE
    assert main(["gate", str(tmp_path / "missing"), "--required", str(required)]) == ExitCode.RESULTS


def test_the_repository_required_list_is_valid():
    required = load_required(DEFAULT_REQUIRED)
    assert required.versions, "gating/required.yaml lists no Kubernetes version"
