"""The hostNetwork check of suites/networking/test_node.py (issue 40, item 5), on fakes.

Before (c48de23): the deviation (hostnetwork-unsupported) was accepted as soon as the client's netexec reported the
node's IP silent, without showing that the pod's own netexec still listened: netexec exits at once when its port is
taken (the clashes b3128ff and ffae51d found), so a lifted limitation with a dead server read as "expected failure".
Now the server must answer its own /echo from inside its pod just before the dial and, where the dial went
unanswered, just after it; otherwise the check is an error naming that.
"""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, InfrastructureError
from wincon.windows import connectivity as conn

NODE = suites.load("suites/networking/test_node.py")

NAMESPACE = "wincon-ns"
PORT = NODE.host_network_port(NAMESPACE)
TIMEOUT = 'Get "http://10.0.0.6:8100/hostName": context deadline exceeded (Client.Timeout exceeded)'
ECHOED = ExecResult(0, NODE.LISTENING_MESSAGE if hasattr(NODE, "LISTENING_MESSAGE") else "", "")
REFUSED = ExecResult(7, "", "curl: (7) Failed to connect to 127.0.0.1 port 8100: Connection refused")


def dial_outcome(responses: list[str] | None = None) -> conn.DialOutcome:
    """One try of the client's netexec /dial: the node's name answered, or the target silent."""
    body = {"responses": responses} if responses else {"errors": [TIMEOUT]}
    answer = conn.DialAnswer(json.dumps(body))
    return conn.collect_dial(lambda: answer, frozenset({"win-1"}), max_tries=1, delay=0, silent_tries=1)


class Checks:
    """``checks`` for the hostNetwork check: the server's own echo answers from ``before`` (each try in turn) until
    the dial, from ``after`` after it; the dial gives ``outcome``. Every step is recorded in order."""

    def __init__(self, outcome: conn.DialOutcome, before: list[ExecResult], after: list[ExecResult]) -> None:
        self.outcome, self.before, self.after = outcome, list(before), list(after)
        self.steps: list[tuple[str, object]] = []
        self.dialled = False

    def gate(self, command, where=""):
        pass

    @staticmethod
    def where(pod):
        return pod.name

    def until(self, pod, command, ok, tries=5, container=None, resolver=None):
        self.steps.append(("until", (pod.name, pod.container, pod.os, tuple(command), tries)))
        script = self.after if self.dialled else self.before
        result = REFUSED
        for _ in range(tries):
            result = script.pop(0) if len(script) > 1 else script[0]
            if ok(result):
                return True, result
        return False, result

    def dial(self, client, target, port, protocol, expected, max_tries=None, min_tries=1):
        self.dialled = True
        self.steps.append(("dial", (client.name, target, port)))
        return self.outcome


def host_network(checks: Checks, os_name: str = "windows") -> None:
    pod = NS(
        metadata=NS(name="win-hostnet", namespace=NAMESPACE),
        spec=NS(node_name="win-1"),
        status=NS(phase="Running", reason=None, message=None, pod_ip="10.0.0.6", pod_ips=None, host_ip="10.0.0.6"),
    )
    client = NS(name="client", os=os_name, ip="10.244.1.5", host_ip="10.0.0.5", node="win-0")
    NODE.test_ordinary_windows_pod_with_host_network_shares_the_node_network(checks, (pod, client, NS(name="win-1")))


def checks(
    outcome: conn.DialOutcome, before: list[ExecResult] | None = None, after: list[ExecResult] | None = None
) -> Checks:
    return Checks(outcome, before or [ECHOED], after or [ECHOED])


def test_silence_while_the_server_listened_before_and_after_the_dial_is_the_deviation():
    with pytest.raises(DeviationObserved, match="hostnetwork-unsupported"):
        host_network(checks(dial_outcome()))


def test_a_server_dead_before_the_dial_is_an_error_not_the_deviation():
    """The port clash of b3128ff: netexec exited at once; c48de23 read the silence as the deviation."""
    with pytest.raises(InfrastructureError, match="not shown listening on its port .* just before the dial") as error:
        host_network(checks(dial_outcome(), before=[REFUSED]))
    assert "Connection refused" in str(error.value)  # what the server's own echo got, in the message
    assert not isinstance(error.value, AssertionError)


def test_a_server_that_died_during_the_dial_is_an_error_not_the_deviation():
    with pytest.raises(InfrastructureError, match="not shown listening on its port .* just after the dial"):
        host_network(checks(dial_outcome(), after=[REFUSED]))


@pytest.mark.parametrize(
    "answer",
    [ExecResult(0, "", ""), ExecResult(0, "NOW: 2026-11-28 14:00:00", ""), ExecResult(22, "", "curl: (22) 404")],
)
def test_anything_but_its_own_echo_is_not_the_server_listening(answer):
    with pytest.raises(InfrastructureError, match="not shown listening"):
        host_network(checks(dial_outcome(), before=[answer]))


def test_a_server_that_starts_listening_within_its_tries_is_shown_listening():
    with pytest.raises(DeviationObserved):
        host_network(checks(dial_outcome(), before=[REFUSED, ECHOED]))


def test_the_server_is_asked_from_inside_its_own_pod_just_before_and_just_after_an_unanswered_dial():
    asked = checks(dial_outcome())
    with pytest.raises(DeviationObserved):
        host_network(asked)
    assert [kind for kind, _ in asked.steps] == ["until", "dial", "until"]
    name, container, os_name, command, _ = asked.steps[0][1]
    assert (name, container, os_name) == ("win-hostnet", "netexec", "windows")
    assert command[0] == "curl.exe"
    assert command[-1] == f"http://127.0.0.1:{PORT}/echo?msg={NODE.LISTENING_MESSAGE}"
    assert asked.steps[2][1] == asked.steps[0][1]  # the same question after the dial


def test_an_answered_dial_passes_without_asking_again():
    answered = checks(dial_outcome(["win-1"]))
    host_network(answered)
    assert [kind for kind, _ in answered.steps] == ["until", "dial"]


def test_the_linux_control_asks_with_the_same_command_and_linux_curl():
    answered = checks(dial_outcome(["win-1"]))
    host_network(answered, os_name="linux")
    command = answered.steps[0][1][3]
    assert command[0] == "curl" and command[1:] == tuple(NODE.listening_command("windows", PORT)[1:])
