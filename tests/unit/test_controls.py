"""Linux controls and the differential verdicts (wincon/session/controls.py), on small suites against profile files.

The Windows node is real in these profiles (``simulated=False``) so that both twins reach their checks; the
check's outcome per OS is chosen by the test body from ``target_os``.
"""

import json
import textwrap

import pytest

from tests.unit.test_plugin import LIMITS
from wincon.session.controls import control_test_id

TID = "6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0101"


def profile(windows_real=True, linux_real=True, linux=True):
    nodes = [
        {"name": "win1", "os": "windows", "arch": "amd64", "ready": True, "simulated": not windows_real,
         "windows_build": 20348, "os_version": "ltsc2022", "runtime": "containerd", "runtime_version": "1.7.20"},
    ]  # fmt: skip
    if linux:
        nodes.append({"name": "lin1", "os": "linux", "arch": "amd64", "ready": True, "simulated": not linux_real})
    return json.dumps({"server_version": "v1.34.4", "cni": "win-overlay", "cni_backend": "vxlan", "nodes": nodes})


@pytest.fixture
def suite(pytester):
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")

    def run(body, *args, **profile_kw):
        (pytester.path / "suites" / "test_s.py").write_text(textwrap.dedent(body))
        (pytester.path / "profile.json").write_text(profile(**profile_kw))
        return pytester.runpytest_subprocess(
            "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", "-rA", *args
        )

    return run


def check(windows_ok: bool, linux_ok: bool, limitation: bool = False) -> str:
    deviation = '@pytest.mark.limitation("icmp-egress")\n' if limitation else ""
    body = (
        '    with expect_deviation("icmp-egress"):\n        assert ok, "no reply"\n'
        if limitation
        else '    assert ok, "no reply"\n'
    )
    return f"""
import pytest
from wincon.commandline.errors import expect_deviation

@pytest.mark.test_id("{TID}")
@pytest.mark.dataplane
{deviation}def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    ok = {{"windows": {windows_ok}, "linux": {linux_ok}}}[target_os]
{body}"""


def test_each_check_with_a_linux_meaning_gets_a_control_that_runs_first_with_its_own_test_id(suite, pytester):
    result = suite(check(True, True), "--collect-only", "-q")
    lines = [line for line in result.outlines if "::" in line]
    assert lines == ["suites/test_s.py::test_flow[linux]", "suites/test_s.py::test_flow[windows]"]
    result = suite(check(True, True), "--junitxml=out.xml")
    result.assert_outcomes(passed=2)
    xml = (pytester.path / "out.xml").read_text()
    assert f'value="{control_test_id(TID)}"' in xml and f'value="{TID}"' in xml
    assert control_test_id(TID) != TID and control_test_id(TID) == control_test_id(TID)


def test_windows_failure_with_a_passing_control_is_a_windows_deviation(suite):
    result = suite(check(False, True))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*a Windows deviation (its Linux control passed in this run)*"])
    assert result.ret == 1


def test_windows_failure_with_a_failing_control_is_a_cluster_wide_error_exit_3(suite):
    result = suite(check(False, False))
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*cluster-wide: Linux pods fail the same check*"])
    assert result.ret == 3


def test_expected_failure_is_confirmed_by_a_passing_control(suite):
    result = suite(check(False, True, limitation=True))
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*limitation icmp-egress*confirmed: Linux control passed*"])


def test_expected_failure_with_a_failing_control_cannot_be_judged(suite):
    result = suite(check(False, False, limitation=True))
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*the limitation cannot be judged here*"])
    assert result.ret == 3


def test_limitations_never_apply_to_the_control(suite):
    """The Linux twin of a limitation test passes where Windows deviates; it is not an unexpected pass."""
    result = suite(check(False, True, limitation=True), "-m", "control")
    result.assert_outcomes(passed=1)


def test_without_a_linux_worker_the_control_skips_and_the_windows_verdict_says_no_control(suite):
    result = suite(check(False, True, limitation=True), linux=False)
    result.assert_outcomes(skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["*no Ready Linux worker with a data plane*", "*(no control)*"])


def test_on_simulated_windows_nodes_the_control_runs_and_the_windows_check_skips(suite):
    result = suite(check(True, True), windows_real=False)
    result.assert_outcomes(passed=1, skipped=1)


def test_a_control_on_a_simulated_linux_node_skips_never_passes(suite):
    result = suite(check(True, True), windows_real=False, linux_real=False)
    result.assert_outcomes(skipped=2)


def test_markers_select_the_windows_checks_or_the_controls_alone(suite):
    result = suite(check(True, True), "-m", "not control")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED *test_flow?windows?"])
    result = suite(check(True, True), "-m", "control")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED *test_flow?linux?"])


def test_under_xdist_a_control_and_its_twin_share_a_worker_and_the_verdict(suite):
    result = suite(check(False, False), "-n", "2")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*cluster-wide: Linux pods fail the same check*"])


def test_the_plan_says_which_checks_have_a_control_and_why_others_have_none(suite, pytester):
    body = check(True, True) + textwrap.dedent(
        """
        @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0102")
        @pytest.mark.dataplane
        @pytest.mark.windows_only("runAsUserName names a Windows account")
        def test_windows_thing(data_plane):
            data_plane("whoami")
        """
    )
    suite(body, "--collect-only", "-q", "--wincon-plan-out", "plan.json")
    rows = {r["nodeid"].split("::")[1]: r for r in json.loads((pytester.path / "plan.json").read_text())["tests"]}
    assert rows["test_flow[linux]"]["os"] == "linux" and "Linux control of" in rows["test_flow[linux]"]["control"]
    assert rows["test_flow[windows]"]["control"].startswith("Linux control runs first")
    assert rows["test_windows_thing"]["control"] == "none: runAsUserName names a Windows account"
