"""What a networking deviation accepts as its own evidence (wincon.network.flows.no_answer, ping_unanswered):
curl's no-answer exit codes and ping's statistics without an echo reply, read from recorded real outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation, expect_deviation
from wincon.network.flows import no_answer, ping_unanswered

OUTPUTS = Path(__file__).resolve().parents[1] / "data" / "windows-outputs"
LINUX_NO_REPLY = "PING 10.0.0.9 (10.0.0.9): 56 data bytes\n\n--- 10.0.0.9 ping statistics ---\n1 packets transmitted, 0 packets received, 100% packet loss\n"
LINUX_REPLY = "PING 10.0.0.9 (10.0.0.9): 56 data bytes\n64 bytes from 10.0.0.9: seq=0 ttl=64 time=0.1 ms\n\n--- 10.0.0.9 ping statistics ---\n1 packets transmitted, 1 packets received, 0% packet loss\n"


@pytest.mark.parametrize("code", [7, 28, 52, 56])
def test_curl_that_reached_nothing_is_no_answer(code):
    assert no_answer(ExecResult(code, "", "curl: failed"))


@pytest.mark.parametrize("code", [0, 6, 22, 127, 126, 3])
def test_an_answer_a_bad_name_a_bad_url_or_a_missing_curl_is_not_no_answer(code):
    assert not no_answer(ExecResult(code, "wrong-pod", ""))


@pytest.mark.parametrize(
    "name",
    [
        "ping-windows-n1-w-timeout.txt",
        "ping-windows-n1-w-unreachable-cut.txt",
        "ping-windows-destination-host-unreachable-counted-received.txt",
        "ping-windows-server-destination-host-unreachable.txt",
        "ping-windows-11-general-failure-and-unreachable.txt",
        "ping-windows-server-2019-pod-unreachable-timeout-cut.txt",
        "ping-windows-servercore-ltsc2019-container-timeout-cut.txt",
    ],
)
def test_recorded_windows_pings_without_an_echo_reply_are_the_deviation(name):
    output = (OUTPUTS / name).read_text(errors="replace")
    assert ping_unanswered("windows", ExecResult(1, output, ""))


@pytest.mark.parametrize(
    "name",
    ["ping-windows-n1-w-success.txt", "ping-windows-servercore-ltsc2019-container-success.txt"],
)
def test_recorded_windows_echo_replies_are_not(name):
    output = (OUTPUTS / name).read_text(errors="replace")
    assert not ping_unanswered("windows", ExecResult(0, output, ""))


def test_linux_ping_statistics_without_a_reply_are_the_deviation_and_with_one_are_not():
    assert ping_unanswered("linux", ExecResult(1, LINUX_NO_REPLY, ""))
    assert not ping_unanswered("linux", ExecResult(0, LINUX_REPLY, ""))


def test_a_windows_ping_that_could_not_transmit_is_not_the_deviation():
    output = (OUTPUTS / "ping-windows-server-general-failure.txt").read_text(errors="replace")
    assert not ping_unanswered("windows", ExecResult(1, output, ""))


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_a_missing_ping_or_an_unknown_host_is_not_the_deviation(os_name):
    assert not ping_unanswered(os_name, ExecResult(127, "", 'exec: "ping": executable file not found'))
    assert not ping_unanswered(os_name, ExecResult(1, "Ping request could not find host x. Please check the name.", ""))


def test_the_node_checks_accept_only_no_answer():
    timed_out, wrong = ExecResult(28, "", ""), ExecResult(0, "another-pod", "")
    with pytest.raises(DeviationObserved):
        with expect_deviation("service-vip-from-node", accepts=lambda: no_answer(timed_out)):
            assert timed_out.ok
    with pytest.raises(NotTheDeviation):
        with expect_deviation("service-vip-from-node", accepts=lambda: no_answer(wrong)):
            assert wrong.stdout == "netserver-0"
