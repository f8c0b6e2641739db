"""The plugin's verdicts and exit codes, on runs of small suites against a profile file."""

import json
import textwrap

import pytest

from wincon.commandline.errors import ExitCode

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
    note: still stated by the current documentation of this test fixture
  - id: hangs-node
    title: A check that would hang the node
    area: compute
    statement: Doing this hangs a Windows node.
    sources: [{file: 000_4130a90def37a825.txt, section: Compute}]
    mode: skip
    note: still stated by the current documentation of this test fixture
    skip_reason: running it hangs the node for minutes
"""


def profile_json(cni="flannel", backend="vxlan", simulated=True, linux=True):
    nodes = [
        {
            "name": "win1",
            "os": "windows",
            "arch": "amd64",
            "ready": True,
            "simulated": simulated,
            "windows_build": 20348,
            "os_version": "ltsc2022",
            "runtime": "containerd",
            "runtime_version": "1.7.20",
        }
    ]
    if linux:
        nodes.append({"name": "lin1", "os": "linux", "arch": "amd64", "ready": True, "simulated": simulated})
    return json.dumps({"server_version": "v1.34.4", "cni": cni, "cni_backend": backend, "nodes": nodes})


@pytest.fixture
def suite(pytester):
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")

    def run(body, *args, **profile_kw):
        (pytester.path / "suites" / "test_s.py").write_text(textwrap.dedent(body))
        (pytester.path / "profile.json").write_text(profile_json(**profile_kw))
        return pytester.runpytest_subprocess(
            "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", "-rA", *args
        )

    return run


ICMP = """
import pytest

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0001")
@pytest.mark.limitation("icmp-egress")
def test_icmp():
    from wincon.commandline.errors import expect_deviation

    with expect_deviation("icmp-egress"):
        assert {outcome}, "no reply"
"""


def test_documented_deviation_is_an_expected_failure(suite):
    result = suite(ICMP.format(outcome="False"))
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*limitation icmp-egress*cni flannel/vxlan (win-overlay)*"])
    assert result.ret == ExitCode.OK


def test_behaviour_that_holds_despite_a_limitation_says_lifted(suite):
    result = suite(ICMP.format(outcome="True"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*limitation icmp-egress appears lifted on this cluster*"])
    assert result.ret == ExitCode.TESTS_FAILED


def test_limitation_that_does_not_apply_leaves_a_plain_test(suite):
    passing = suite(ICMP.format(outcome="True"), cni="calico", backend=None)
    passing.assert_outcomes(passed=1)
    failing = suite(ICMP.format(outcome="False"), cni="calico", backend=None)
    failing.assert_outcomes(failed=1)


def test_infrastructure_error_inside_an_expected_failure_is_an_error_not_an_xfail(suite):
    body = ICMP.replace(
        'assert {outcome}, "no reply"',
        'from wincon.commandline.errors import InfrastructureError\n    raise InfrastructureError("pod never scheduled")',
    )
    result = suite(body)
    result.assert_outcomes(errors=1)
    assert result.ret == ExitCode.INFRASTRUCTURE


def test_skip_mode_limitation_skips_with_its_reason(suite):
    body = ICMP.replace("icmp-egress", "hangs-node").format(outcome="True")
    result = suite(body)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*limitation hangs-node: running it hangs the node*"])


DATAPLANE = """
import pytest

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0002")
def test_gated(data_plane):
    data_plane(["curl.exe", "--fail", "http://10.0.0.1"], where="pod client")
    assert True

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0003")
def test_ungated():
    assert True

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0004")
def test_fails_before_the_gate():
    assert False, "the simulator's fake status"

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0005")
def test_errors_before_the_gate():
    from wincon.commandline.errors import InfrastructureError
    raise InfrastructureError("pod never scheduled")

@pytest.fixture
def broken():
    raise RuntimeError("setup crashed")

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0006")
def test_setup_fails_before_the_gate(broken):
    pass
"""


def test_data_plane_checks_skip_on_simulated_nodes_whatever_they_raise_and_never_pass(suite):
    result = suite(DATAPLANE)
    result.assert_outcomes(skipped=5)
    result.stdout.fnmatch_lines(
        ["*simulated nodes have no data plane*would run: pod client: curl.exe --fail http://10.0.0.1*"]
    )
    result.stdout.fnmatch_lines(["*passed without reaching the data-plane gate (a test bug*"])
    result.stdout.fnmatch_lines(["*ended before reaching the data-plane gate (call)*simulator's fake status*"])
    result.stdout.fnmatch_lines(["*ended before reaching the data-plane gate (setup)*setup crashed*"])
    assert result.ret == ExitCode.OK


def test_data_plane_checks_run_on_real_nodes(suite):
    result = suite(DATAPLANE, simulated=False)
    result.assert_outcomes(passed=2, failed=1, errors=2)


def test_hybrid_tests_skip_without_linux_workers(suite):
    body = """
import pytest

@pytest.mark.hybrid
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0004")
def test_linux_to_windows():
    assert True
"""
    result = suite(body, linux=False)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a Ready Linux worker node*"])


def test_unknown_limitation_id_is_a_usage_error(suite):
    result = suite(ICMP.replace("icmp-egress", "no-such-limit").format(outcome="True"))
    assert result.ret == ExitCode.USAGE
    result.stderr.fnmatch_lines(["*references limitation 'no-such-limit'*"])


def test_unknown_marker_is_a_usage_error(suite):
    result = suite(
        ICMP.replace("@pytest.mark.test_id", "@pytest.mark.netwrking\n@pytest.mark.test_id").format(outcome="True")
    )
    assert result.ret == ExitCode.USAGE
    result.stderr.fnmatch_lines(["*test_icmp uses unknown marker 'netwrking'*"])


def test_malformed_limitations_file_stops_the_run_with_its_own_code(suite, pytester):
    pytester.makefile(".yaml", limitations=LIMITS.replace("mode: xfail", "mode: sometimes"))
    result = suite(ICMP.format(outcome="True"))
    assert result.ret == ExitCode.LIMITATIONS
    result.stderr.fnmatch_lines(["*limitations.yaml: entry 0 (icmp-egress): field 'mode'*"])


def test_no_tests_collected_keeps_exit_code_5(suite):
    result = suite(ICMP.format(outcome="True"), "-k", "nothing_matches_this")
    assert result.ret == ExitCode.NO_TESTS


def test_broken_kubeconfig_gets_its_own_exit_code(pytester, tmp_path):
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text("def test_x():\n    assert True\n")
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nclusters: [ {not: yaml\n")
    result = pytester.runpytest_subprocess("suites", "--kubeconfig", str(broken))
    assert result.ret == ExitCode.KUBECONFIG
    result.stderr.fnmatch_lines([f"*kubeconfig {broken}*", "*fix:*"])


def test_unreachable_cluster_is_an_infrastructure_error(pytester, tmp_path):
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text("def test_x():\n    assert True\n")
    config = tmp_path / "kubeconfig"
    config.write_text(
        textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
        users: [{name: u, user: {token: secret-token-value}}]
        contexts: [{name: x, context: {cluster: c, user: u}}]
        current-context: x
    """)
    )
    result = pytester.runpytest_subprocess("suites", "--kubeconfig", str(config))
    assert result.ret == ExitCode.INFRASTRUCTURE
    result.stderr.fnmatch_lines(["*API server at https://127.0.0.1:1 is unreachable*"])
    assert "secret-token-value" not in result.stdout.str() + result.stderr.str()


def test_project_tests_do_not_touch_a_cluster(pytester):
    pytester.makepyfile(test_plain="def test_x():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("--kubeconfig", "/does/not/exist")
    result.assert_outcomes(passed=1)


def test_header_shows_the_profile(suite):
    result = suite(ICMP.format(outcome="False"))
    result.stdout.fnmatch_lines(["wincon run *", "*kubernetes v1.34.4*", "*data plane: none (simulated nodes)*"])


FROZEN = """
import gc

def test_frozen():
    print("frozen objects:", gc.get_freeze_count())
"""


def test_a_suite_run_freezes_what_its_start_loaded(suite, pytester):
    """The objects alive once the run has started (the client's classes, the profile) are out of the cyclic
    collector's way, so pytest's collection at unconfigure and the interpreter's at exit skip them; a run of the
    project's own tests is left as it is."""
    import re

    result = suite(FROZEN, "-s")
    result.assert_outcomes(passed=1)
    assert int(re.search(r"frozen objects: (\d+)", result.stdout.str()).group(1)) > 10_000
    pytester.makepyfile(test_plain=FROZEN)
    plain = pytester.runpytest_subprocess("test_plain.py", "-s")
    plain.assert_outcomes(passed=1)
    plain.stdout.fnmatch_lines(["*frozen objects: 0*"])
