"""Verdict integrity: only a check that observed the documented deviation may end as an expected failure.

Each test runs a one-test suite against a profile file (pytester) where the limitation applies, and raises
one kind of exception from it: only ``DeviationObserved`` may read as "deviates as documented".
"""

import json
import textwrap

import pytest

from tests.unit import fakes
from wincon.commandline.errors import (
    DeviationObserved,
    ExitCode,
    FrameworkFailure,
    InfrastructureError,
    expect_deviation,
)

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
from wincon.commandline.errors import DeviationObserved, InfrastructureError, expect_deviation
from wincon.cluster.waits import WaitTimeout, WorkloadFailed
from wincon.checks.pods import Rejected
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
            "--profile-file",
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


SETUP_RAISES = {
    # A fixture that saw behaviour not hold: the check failed (exit 1), not "the cluster could not run it".
    "assert": ('assert False, "the Service got no cluster IP"', "failed", ExitCode.TESTS_FAILED),
    "behaviour-wait": (
        'raise BehaviourNotObserved("the netserver never answered: connection refused")',
        "failed",
        ExitCode.TESTS_FAILED,
    ),
    "crash": ('raise WorkloadFailed("pod x: CrashLoopBackOff in container c")', "failed", ExitCode.TESTS_FAILED),
    "pytest-fail": ('pytest.fail("the recorder pod answered nothing")', "failed", ExitCode.TESTS_FAILED),
    # The cluster's own reason: an infrastructure error (exit 3), said so in the message.
    "setup-wait": (
        'raise WaitTimeout("pod ns/x did not become ready within 300s (last phase: Pending)")',
        "errors",
        ExitCode.INFRASTRUCTURE,
    ),
    # The suite itself crashed: an error, but never dismissed as the cluster's fault (exit 1, not 3).
    "suite-bug": ('raise TypeError("unsupported operand")', "errors", ExitCode.TESTS_FAILED),
}


@pytest.mark.parametrize("kind", list(SETUP_RAISES))
def test_what_a_fixture_raises_decides_its_verdict_never_an_expected_failure(run_limited, kind):
    """Before: every exception in setup was an error, and errors alone gave exit 3 (infrastructure)."""
    raise_it, outcome, exit_code = SETUP_RAISES[kind]
    fixture = f"""
    from wincon.cluster.waits import BehaviourNotObserved

    @pytest.fixture
    def prepared():
        {raise_it}
    """
    result = run_limited("pass", fixture=fixture)
    result.assert_outcomes(**{outcome: 1})
    assert result.ret == exit_code
    if kind == "setup-wait":
        result.stdout.fnmatch_lines(["*infrastructure error (not a node failure)*did not become ready*"])


def test_an_infrastructure_error_in_teardown_says_so_and_gives_exit_3(run_limited):
    fixture = """
    @pytest.fixture
    def prepared():
        yield
        raise InfrastructureError("namespace ns was not deleted within 120s")
    """
    result = run_limited('with expect_deviation("icmp-egress"):\n    assert False, "ping: request timed out"', fixture)
    result.assert_outcomes(xfailed=1, errors=1)
    result.stdout.fnmatch_lines(["*infrastructure error (not a node failure)*namespace ns was not deleted*"])
    assert result.ret == ExitCode.INFRASTRUCTURE


def test_expect_deviation_turns_only_a_failed_assert_into_the_deviation():
    with pytest.raises(DeviationObserved, match="icmp-egress: no reply"), expect_deviation("icmp-egress"):
        raise AssertionError("no reply")
    for framework in (FrameworkFailure("crash"), InfrastructureError("never scheduled")):
        with pytest.raises(type(framework)), expect_deviation("icmp-egress"):
            raise framework
    assert not issubclass(FrameworkFailure, AssertionError)
    assert not issubclass(InfrastructureError, AssertionError)


# --- limitations match the nodes a test's pods run on, and the plan says when a fact is unknown

NODE_LIMITS = """\
version: 1
limitations:
  - id: old-kubelet
    title: Something old kubelets get wrong on Windows
    area: compute
    statement: Kubelets before v1.24 get this wrong on Windows.
    sources: [{file: 000_4130a90def37a825.txt, section: Compute}]
    applies_when: {kubelet_version: "<1.24"}
    mode: xfail
    note: still stated by the current documentation of this test fixture
  - id: hyperv-only
    title: Something Hyper-V isolated pods cannot do
    area: runtime
    statement: Hyper-V isolated containers cannot do this.
    sources: [{file: 000_4130a90def37a825.txt, section: Compute}]
    applies_when: {isolation: [hyperv]}
    mode: xfail
    note: still stated by the current documentation of this test fixture
"""

NODE_SUITE = """
import pytest

@pytest.fixture
def build():
    return None

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0201")
@pytest.mark.limitation("old-kubelet")
@pytest.mark.parametrize("n", range(6))
def test_on_its_build(build, n):
    pass

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0202")
@pytest.mark.isolation("hyperv")
@pytest.mark.limitation("hyperv-only")
def test_hyperv():
    pass
"""


def windows_node(name, build, kubelet):
    return fakes.profile_windows_node(name, build, kubelet_version=kubelet)


def plan_of(pytester, nodes):
    pytester.makefile(".yaml", limitations=NODE_LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(NODE_SUITE)
    profile = {"server_version": "v1.34.4", "cni": "flannel", "cni_backend": "vxlan", "nodes": nodes}
    (pytester.path / "profile.json").write_text(json.dumps(profile))
    result = pytester.runpytest_subprocess(
        "suites",
        "--profile-file",
        "profile.json",
        "--limitations",
        "limitations.yaml",
        "--collect-only",
        "--wincon-plan-out",
        "plan.json",
    )
    assert result.ret == ExitCode.OK, result.stdout.str()
    return {row["nodeid"]: row for row in json.loads((pytester.path / "plan.json").read_text())["tests"]}


def test_a_kubelet_condition_follows_the_build_each_test_pins_to(pytester):
    """The API server is v1.34; only the ltsc2019 node's kubelet is older than v1.24."""
    from wincon.session.fixtures import build_for

    plan = plan_of(pytester, [windows_node("old", 17763, "v1.23.17"), windows_node("new", 20348, "v1.34.4")])
    rows = {k: v for k, v in plan.items() if "test_on_its_build" in k}
    for nodeid, row in rows.items():
        on_old = build_for(nodeid, [17763, 20348]) == 17763
        assert row["outcome"] == ("xfail" if on_old else "run"), (nodeid, row)
    assert {row["outcome"] for row in rows.values()} == {"xfail", "run"}


def test_an_unknown_kubelet_version_never_applies_and_the_plan_says_so(pytester):
    plan = plan_of(pytester, [windows_node("w", 20348, "")])
    row = next(v for k, v in plan.items() if "test_on_its_build" in k)
    assert row["outcome"] == "run"
    assert "limitation old-kubelet not applied: kubelet version of node w unknown" in row["reason"]


def test_a_hyperv_test_gets_its_hyperv_limitation(pytester):
    plan = plan_of(pytester, [windows_node("w", 20348, "v1.34.4")])
    row = next(v for k, v in plan.items() if "test_hyperv" in k)
    assert row["outcome"] == "xfail" and "isolation hyperv" in row["reason"]


def test_an_api_error_after_the_retries_is_an_infrastructure_error_not_a_failure(run_limited):
    """It used to read as the behaviour not holding (exit 1)."""
    body = (
        "from kubernetes.client.exceptions import ApiException\n"
        'raise ApiException(status=503, reason="Service Unavailable")'
    )
    result = run_limited(body)
    result.assert_outcomes(errors=1)
    assert result.ret == ExitCode.INFRASTRUCTURE
    result.stdout.fnmatch_lines(["*the API server answered 503 Service Unavailable*"])


def test_a_run_where_no_windows_node_can_take_a_pod_stops_at_once_with_one_infrastructure_error(pytester):
    """It used to let every test wait its pod start timeout, then blame image pulls."""
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(
        'import pytest\n\n@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0301")\ndef test_x():\n    pass\n'
    )
    tainted = dict(PROFILE["nodes"][0], taints=["gpu=true:NoSchedule"])
    not_ready = dict(PROFILE["nodes"][0], name="win2", ready=False)
    (pytester.path / "profile.json").write_text(json.dumps(dict(PROFILE, nodes=[tainted, not_ready])))
    args = ["suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml"]
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == ExitCode.INFRASTRUCTURE
    result.stderr.fnmatch_lines(
        ["*no Windows node can take the suite's pods (win1: taints gpu=true:NoSchedule; win2: NotReady)*"]
    )
    assert pytester.runpytest_subprocess(*args, "--collect-only").ret == ExitCode.OK  # the plan still shows


def test_a_namespace_without_its_default_service_account_is_an_infrastructure_error(run_limited):
    """kube-controller-manager lost: the namespace fixture's NamespaceRegistry.create waits out its 2 minutes (on a
    fake clock) for the default ServiceAccount. Before, the namespace was handed over at once and every pod of the
    check was refused ('error looking up service account'), a Rejected: FAILED, though no node was looked at."""
    fixture = """
    import time

    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from wincon.cluster.namespaces import NamespaceRegistry


    class WithoutControllerManager:
        def create_namespace(self, body, **_):
            return body

        def read_namespaced_service_account(self, name, namespace, **_):
            raise ApiException(status=404, reason="Not Found")


    @pytest.fixture
    def prepared(monkeypatch):
        now = [0.0]
        monkeypatch.setattr(time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
        monkeypatch.setattr(time, "monotonic", lambda: 100.0 + now[0])
        namespaces = NamespaceRegistry(client.ApiClient(client.Configuration()), "run1", "gw0")
        namespaces.core = WithoutControllerManager()
        yield namespaces.create("limited")
    """
    result = run_limited('raise Rejected("error looking up service account ns/default")', fixture)
    result.assert_outcomes(errors=1)
    assert result.ret == ExitCode.INFRASTRUCTURE
    result.stdout.fnmatch_lines(
        [
            "*infrastructure error (not a node failure)*got no default ServiceAccount within 120 s*",
            "*fix: the ServiceAccount controller of kube-controller-manager makes it*",
        ]
    )
