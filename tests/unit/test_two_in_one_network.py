"""suites/lifecycle/test_lifecycle.py ``test_containers_of_a_pod_share_its_network`` (limitation
multi-container-pods-pre-1709): the Windows form execs curl.exe itself, no ``cmd /c`` around it (upstream execs
curl.exe so in a Windows pod: forms.CURL_EXE_EXEC, test/e2e/windows/dns.go:107 at v1.34.4), so the exit status the
predicate reads is curl's own, with no claim about what cmd passes on; the command is the Linux control's but for
the binary's name. The predicate (flows.no_answer) on both forms: curl's codes for nothing answering are the
deviation on Windows, and in the Linux control a plain failure; an answer from elsewhere, an HTTP error, a bad URL
are never the deviation."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation, linux_control
from wincon.windows import connectivity as conn
from wincon.windows import forms

LIFECYCLE = suites.load("suites/lifecycle/test_lifecycle.py")
URL = "http://localhost:8080/hostname"
NOTHING_ANSWERED = [7, 28, 52, 56]  # couldn't connect, timed out, empty reply, failure receiving (curl's exit codes)
NOT_THE_DEVIATION = [
    ExecResult(0, "other-pod", ""),  # an answer, from another pod
    ExecResult(22, "", ""),  # an HTTP error status (--fail): a server answered
    ExecResult(3, "", ""),  # the URL malformed: the suite's command, not the network
    ExecResult(6, "", ""),  # could not resolve: localhost needs no DNS, nothing about a shared network
]


class Kube:
    def __init__(self, result: ExecResult) -> None:
        self.result = result
        self.ran: list[tuple[list[str], str | None]] = []

    def exec(self, pod: str, command: list[str], container: str | None = None, where: str = "") -> ExecResult:
        self.ran.append((command, container))
        return self.result


def run(target_os: str, result: ExecResult, monkeypatch: pytest.MonkeyPatch) -> Kube:
    body = {"metadata": {"name": "two-in-one"}, "spec": {"containers": [{"image": "agnhost"}]}}
    monkeypatch.setattr(LIFECYCLE, "os_pod", lambda *a, **k: body)
    monkeypatch.setattr(LIFECYCLE, "run_os_pod", lambda wincon, namespace, body: NS(metadata=NS(name="two-in-one")))
    kube = Kube(result)
    LIFECYCLE.test_containers_of_a_pod_share_its_network(kube, NS(), "ns", 17763, target_os)
    return kube


def test_both_forms_exec_curl_itself_with_the_same_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    (windows, container), *_ = run("windows", ExecResult(0, "two-in-one\n", ""), monkeypatch).ran
    (linux, _), *_ = run("linux", ExecResult(0, "two-in-one\n", ""), monkeypatch).ran
    assert container == "client"  # the second container, not the server's
    assert windows == conn.http_get_command("windows", URL) and linux == conn.http_get_command("linux", URL)
    assert (windows[0], linux[0]) == ("curl.exe", "curl") and windows[1:] == linux[1:]
    assert "cmd" not in windows and "/c" not in windows  # no shell between the exec and curl's exit status


def test_the_declared_evidence_execs_curl_exe_without_cmd() -> None:
    marker = LIFECYCLE.test_containers_of_a_pod_share_its_network.pytestmark
    declared = next(m for m in marker if m.name == forms.MARKER)
    assert declared.args == (forms.CURL_EXE_EXEC,) and declared.kwargs == {"same_as_control": True}
    assert forms.CURL_EXE_EXEC.endswith("test/e2e/windows/dns.go:107 curl.exe")


@pytest.mark.parametrize("code", NOTHING_ANSWERED)
def test_nothing_answering_is_the_deviation_on_windows_and_a_failure_in_the_linux_control(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(DeviationObserved, match="multi-container-pods-pre-1709"):
        run("windows", ExecResult(code, "", ""), monkeypatch)
    with linux_control(), pytest.raises(AssertionError) as failed:
        run("linux", ExecResult(code, "", ""), monkeypatch)
    assert not isinstance(failed.value, DeviationObserved)


@pytest.mark.parametrize("result", NOT_THE_DEVIATION, ids=lambda r: f"exit-{r.exit_code}")
def test_anything_else_is_never_the_deviation_on_either_form(
    result: ExecResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NotTheDeviation):
        run("windows", result, monkeypatch)
    with linux_control(), pytest.raises(AssertionError) as failed:
        run("linux", result, monkeypatch)
    assert not isinstance(failed.value, DeviationObserved)


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_the_pods_own_answer_passes_on_both_forms(os_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run(os_name, ExecResult(0, "two-in-one\n", ""), monkeypatch)
    with linux_control():
        run(os_name, ExecResult(0, "two-in-one", ""), monkeypatch)
