"""wincon.windows.connectivity's parsers on output they cannot read (issue 22 follow-up): UnreadableOutput, a SuiteError
quoting what the tool printed, so the run reports the suite's gap as such (an error, exit 1) and never as the
behaviour failing, a documented deviation or a pass. And the netexec pods' readiness probe, from the start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.test_controls import suite  # noqa: F401  (the pytester fixture)
from tests.unit.test_network import CLIENT, FakeKube
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import InfrastructureError, SuiteError, UnreadableOutput
from wincon.documents.upstream import ensure_module
from wincon.network.flows import FlowChecks
from wincon.windows import connectivity as c

GARBLED = "<html><body>404 page not found</body></html>"


@pytest.mark.parametrize(
    ("parse", "tool"),
    [
        (lambda out: c.parse_dial(out), "netexec /dial"),
        (lambda out: c.parse_dial(json.dumps({"responses": out})), "netexec /dial"),  # a string, not a list
        (lambda out: c.parse_ping("windows", out), "ping"),
        (lambda out: c.parse_ping("linux", out), "ping"),
        (lambda out: c.parse_resolve(1, out, ""), "agnhost connect"),
        (lambda out: c.parse_agnhost_dns("cluster.local", out), "agnhost dns-server-list"),
        (lambda out: c.parse_get_volume(out), "Get-Volume"),
    ],
    ids=["dial-not-json", "dial-no-list", "ping-windows", "ping-linux", "connect", "dns-server-list", "get-volume"],
)
def test_a_parser_that_cannot_read_the_output_raises_unreadable_output_quoting_it(parse, tool):
    """Before: a bare ValueError, which the plugin reported as the test failing."""
    with pytest.raises(UnreadableOutput) as raised:
        parse(GARBLED)
    error = raised.value
    assert isinstance(error, SuiteError) and not isinstance(error, AssertionError)
    assert error.exit_code == 1 and error.tool == tool
    assert "404 page not found" in error.output
    assert f"[tool {tool}]; it printed: " in str(error) and "404 page not found" in str(error)


def test_argument_errors_stay_plain_value_errors():
    """A bad call is the caller's bug, not a tool's output: no UnreadableOutput for those."""
    for call in (lambda: c.parse_ping("darwin", "x"), lambda: c.dial_url("10.0.0.1", "a b", 80)):
        with pytest.raises(ValueError) as raised:
            call()
        assert not isinstance(raised.value, UnreadableOutput)


def test_a_dial_answer_the_suite_cannot_read_stops_the_dial_at_once():
    """Before: counted as a failed try, so ten unreadable answers became an endpoint that did not answer."""
    runs = []

    def run() -> str:
        runs.append(1)
        return c.DialAnswer(GARBLED)

    with pytest.raises(UnreadableOutput, match="404 page not found"):
        c.collect_dial(run, {"netserver-0"}, max_tries=10, sleep=lambda s: None)
    assert len(runs) == 1


def test_a_try_that_got_no_answer_still_counts_as_a_failed_try():
    answers = iter(["exit 7: curl: (7) Failed to connect", c.DialAnswer(json.dumps({"responses": ["netserver-0"]}))])
    outcome = c.collect_dial(lambda: next(answers), {"netserver-0"}, max_tries=5, sleep=lambda s: None)
    assert outcome.reached_all and outcome.tries == 2
    assert outcome.errors == ["netexec /dial did not answer: 'exit 7: curl: (7) Failed to connect'"]


def fresh_flows(monkeypatch, results) -> tuple[FlowChecks, FakeKube]:
    monkeypatch.setattr(FlowChecks, "silent_targets", set())
    monkeypatch.setattr(FlowChecks, "silent_clients", set())
    kube = FakeKube(results)
    return FlowChecks(kube), kube


def test_flow_checks_dial_hands_curls_answer_over_as_such(monkeypatch):
    """FlowChecks.dial: a curl that exited 0 is the client's answer (unreadable: the suite's error, after one
    exec); a failed exec or a curl that reached nothing is a failed try, as before."""
    monkeypatch.setattr(c.time, "sleep", lambda s: None)
    flows, kube = fresh_flows(monkeypatch, [ExecResult(0, GARBLED, "")])
    with pytest.raises(UnreadableOutput, match="404 page not found"):
        flows.dial(CLIENT, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert len(kube.execs) == 1
    answer = json.dumps({"responses": ["netserver-0"]})
    failed = [InfrastructureError("exec timed out", ""), ExecResult(7, "", "curl: (7) Failed to connect")]
    flows, kube = fresh_flows(monkeypatch, [*failed, ExecResult(0, answer, "")])
    outcome = flows.dial(CLIENT, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert outcome.reached_all and outcome.tries == 3 and len(outcome.errors) == 2
    assert "exec failed: exec timed out" in outcome.errors[0] and "Failed to connect" in outcome.errors[1]


def test_a_single_dial_that_cannot_be_read_is_neither_a_miss_nor_a_denial(monkeypatch):
    """FlowChecks.dial_once ('' is what the NetworkPolicy checks count as denied): before, an unreadable answer
    was ''."""
    flows, _ = fresh_flows(monkeypatch, [ExecResult(0, GARBLED, "")])
    command = c.dial_command("windows", CLIENT.ip, "10.0.0.5", 8083)
    with pytest.raises(UnreadableOutput):
        flows.dial_once(CLIENT, command)
    answer = json.dumps({"responses": ["netserver-1"]})
    flows, _ = fresh_flows(monkeypatch, [ExecResult(28, "", "timed out"), ExecResult(0, answer, "")])
    assert flows.dial_once(CLIENT, command) == ""
    assert flows.dial_once(CLIENT, command) == "netserver-1"


def test_an_unreadable_ping_is_no_reply_and_a_bad_os_is_not_swallowed():
    assert c.ping_succeeded("linux", 0, GARBLED) is False  # no statistics: never a pass
    with pytest.raises(ValueError, match="unknown operating system"):  # before: False
        c.ping_succeeded("darwin", 0, GARBLED)


DIAL_CHECK = """
import json
import pytest
from wincon.windows import connectivity as conn
from wincon.commandline.errors import expect_deviation

ANSWERS = {{"linux": json.dumps({{"responses": ["netserver-0"]}}), "windows": {windows!r}}}

@pytest.mark.test_id("dd0a11e0-c434-4f5e-993e-293817769f3a")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress")
def test_flow(target_os, data_plane):
    data_plane("curl http://10.0.0.5:9080/dial?host=10.0.0.9")
    with expect_deviation("icmp-egress"):
        outcome = conn.collect_dial(
            lambda: conn.DialAnswer(ANSWERS[target_os]), {{"netserver-0"}}, 5, sleep=lambda s: None
        )
        assert outcome.reached_all, outcome.describe()
"""


def test_an_unreadable_dial_answer_inside_a_deviation_block_is_a_suite_error_never_the_deviation(suite):  # noqa: F811
    result = suite(DIAL_CHECK.format(windows=GARBLED))
    result.assert_outcomes(passed=1, errors=1)  # the Linux control passed; the twin errs, not xfailed
    result.stdout.fnmatch_lines(["*suite error (neither the node nor the cluster)*netexec /dial*404 page not found*"])
    assert result.ret == 1


def test_a_readable_dial_answer_that_misses_the_endpoint_is_still_the_deviation(suite):  # noqa: F811
    """The same block with netexec's JSON and no response: the deviation, as before (the change is only the
    unreadable answer)."""
    result = suite(DIAL_CHECK.format(windows=json.dumps({"responses": [], "errors": ["i/o timeout"]})))
    result.assert_outcomes(passed=1, xfailed=1)


# ----------------------------------------------------------------------------- the netexec pods' readiness


def test_netexec_pods_are_asked_for_readiness_from_their_start():
    spec = c.netexec_container("netexec", "registry/agnhost:2.56")
    ready, live = spec["readinessProbe"], spec["livenessProbe"]
    assert ready["httpGet"] == live["httpGet"] == {"path": "/healthz", "port": 8083}
    assert ready.get("initialDelaySeconds", 0) == 0 and ready["periodSeconds"] == c.READINESS_PERIOD_SECONDS == 3
    assert live["initialDelaySeconds"] == 30 and live["periodSeconds"] == 5  # liveness unchanged


def test_the_readiness_period_is_upstreams_for_its_netexec_service_backends():
    """k8s.io/kubernetes@v1.34.4 test/e2e/framework/service/jig.go:685-686: netexec backends with a readiness probe
    of period 3 s and no initial delay (the netserver pods of framework/network/utils.go:588-593 use 10 s and 10 s)."""
    root = ensure_module("v1.34.4")  # downloaded where the module cache lacks it
    jig = root / "test/e2e/framework/service/jig.go"
    utils = root / "test/e2e/framework/network/utils.go"
    lines = Path(jig).read_text().splitlines()
    assert "ReadinessProbe: &v1.Probe{" in lines[684] and "PeriodSeconds: 3," in lines[685]
    assert '"netexec"' in lines[683]
    netserver = Path(utils).read_text().splitlines()[587:593]
    assert "InitialDelaySeconds: 10," in netserver[1] and "PeriodSeconds:       10," in netserver[3]
