"""Verdict integrity: only a check that observed the documented deviation may end as an expected failure.

Each test runs a one-test suite against a profile file (pytester) where the limitation applies, and raises
one kind of exception from it: only ``DeviationObserved`` may read as "deviates as documented".
"""

import json
import textwrap

import pytest

from wincon.errors import DeviationObserved, ExitCode, FrameworkFailure, InfrastructureError, expect_deviation

LIMITS = """\
version: 1
limitations:
  - id: icmp-egress
    title: ICMP to destinations outside the cluster gets no reply
    area: networking
    statement: ICMP packets cannot leave the cluster network through win-overlay.
    sources: [{file: 000_4130a90def37a825.txt, section: Networking}]
    applies_when: {cni: [win-overlay]}
    mode: xfail
"""

PROFILE = {
    "server_version": "v1.34.4",
    "cni": "flannel",
    "cni_backend": "vxlan",
    "nodes": [
        {
            "name": "win1",
            "os": "windows",
            "arch": "amd64",
            "ready": True,
            "simulated": False,
            "windows_build": 20348,
            "os_version": "ltsc2022",
            "runtime": "containerd",
            "runtime_version": "1.7.20",
            "kubelet_version": "v1.34.4",
        }
    ],
}

HEAD = """
import pytest
from wincon.errors import DeviationObserved, InfrastructureError, expect_deviation
from wincon.cluster.waits import WaitTimeout, WorkloadFailed
from wincon.checks.workloads import Rejected
from wincon.workloads.pinning import WrongNode
"""


@pytest.fixture
def run_limited(pytester):
    """Run ``body`` as the test function of a suite whose one limitation applies."""
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "profile.json").write_text(json.dumps(PROFILE))

    def run(body: str, fixture: str = "") -> pytest.RunResult:
        source = (
            HEAD
            + textwrap.dedent(fixture)
            + textwrap.dedent(
                """
            @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0101")
            @pytest.mark.limitation("icmp-egress")
            def test_limited({args}):
            {body}
            """
            ).format(args="prepared" if fixture else "", body=textwrap.indent(textwrap.dedent(body), "    "))
        )
        (pytester.path / "suites" / "test_s.py").write_text(source)
        return pytester.runpytest_subprocess(
            "suites",
            "--wincon-profile",
            "profile.json",
            "--limitations",
            "limitations.yaml",
            "-rA",
            "-p",
            "no:randomly",
        )

    return run


def test_the_observed_deviation_is_an_expected_failure(run_limited):
    result = run_limited('with expect_deviation("icmp-egress"):\n    assert False, "ping: request timed out"')
    result.assert_outcomes(xfailed=1)
    assert result.ret == ExitCode.OK


def test_the_behaviour_holding_under_a_limitation_reads_lifted(run_limited):
    result = run_limited('with expect_deviation("icmp-egress"):\n    assert True, "ping: reply"')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*limitation icmp-egress appears lifted*"])


@pytest.mark.parametrize(
    "raise_it",
    [
        'raise WorkloadFailed("pod x: CrashLoopBackOff in container c")',
        'raise WrongNode("pod x ran on lin1, a linux node, not windows: result discarded")',
        'raise Rejected("the API server refused pod x: forbidden by PodSecurity")',
    ],
    ids=["crash", "wrong-node", "rejected"],
)
def test_a_framework_failure_under_a_limitation_fails_instead_of_xfailing(run_limited, raise_it):
    result = run_limited(raise_it)
    result.assert_outcomes(failed=1)
    assert result.ret == ExitCode.TESTS_FAILED


def test_a_limitation_test_whose_pod_never_ran_is_an_error(run_limited):
    result = run_limited('raise WaitTimeout("pod ns/x did not become ready within 300s (last phase: Pending)")')
    result.assert_outcomes(errors=1)
    assert result.ret == ExitCode.INFRASTRUCTURE


def test_a_plain_assert_under_a_limitation_is_a_failure_not_the_deviation(run_limited):
    """An assert outside expect_deviation (a precondition, a helper's own check) saw no deviation."""
    result = run_limited('assert False, "the probe command itself does not work"')
    result.assert_outcomes(failed=1)


def test_a_failed_setup_under_a_limitation_is_an_error_not_an_expected_failure(run_limited):
    fixture = """
    @pytest.fixture
    def prepared():
        assert False, "the pod the check needs never got an IP"
    """
    result = run_limited("pass", fixture=fixture)
    result.assert_outcomes(errors=1)


def test_expect_deviation_turns_only_a_failed_assert_into_the_deviation():
    with pytest.raises(DeviationObserved, match="icmp-egress: no reply"), expect_deviation("icmp-egress"):
        raise AssertionError("no reply")
    for framework in (FrameworkFailure("crash"), InfrastructureError("never scheduled")):
        with pytest.raises(type(framework)), expect_deviation("icmp-egress"):
            raise framework
    assert not issubclass(FrameworkFailure, AssertionError)
    assert not issubclass(InfrastructureError, AssertionError)
