"""Issue 32's five findings, each on a public recording that the suite read wrong before (tests/data/windows-outputs/,
each file with its .source): Windows nslookup's own "Non-existent domain", a trust failure that nltest still closes
with "The command completed successfully", Get-Volume's other column headers, curl's message after a resolved name,
and ping.exe in another language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import UnreadableOutput
from wincon.network import flows
from wincon.network.pods import PodRef
from wincon.windows import connectivity as conn

CORPUS = Path(__file__).resolve().parent.parent / "data" / "windows-outputs"


def recorded(name: str) -> str:
    return (CORPUS / name).read_text()


def command_output(name: str) -> str:
    """A recording without the terminal's prompt line and typed command (``PS C:\\> nslookup ...``) some start
    with: the terminal's, not the tool's output, which an exec never holds."""
    return re.sub(r"^(?:PS )?[A-Za-z]:\\[^>\n]*>.*\n", "", recorded(name), flags=re.MULTILINE)


# ----------------------------------------------------------------------------- 1. nslookup.exe "Non-existent domain"


def test_windows_nslookup_non_existent_domain_is_the_name_does_not_exist():
    lookup = conn.parse_nslookup(recorded("nslookup-windows-container-non-existent-domain.txt"))
    assert not lookup.ok and lookup.not_found
    assert lookup.error == "*** dc1.mycompany.com can't find server8: Non-existent domain"


def test_windows_nslookup_server_failed_is_not_the_name_does_not_exist():
    lookup = conn.parse_nslookup(recorded("nslookup-windows-container-server-failed.txt"))
    assert not lookup.ok and not lookup.not_found and "Server failed" in (lookup.error or "")


def test_windows_nslookup_non_existent_domain_clears_the_resolver_silent_record():
    # nslookup exits 1 on a failed look-up; the server answered (NXDOMAIN), so the record of a silent resolver goes.
    answered = ExecResult(1, recorded("nslookup-windows-container-non-existent-domain.txt"), "")
    assert flows.resolver_answered("nslookup", answered) and not flows.resolver_silent("nslookup", answered)
    silent = ExecResult(1, command_output("nslookup-windows-timeout.txt"), "")
    assert flows.resolver_silent("nslookup", silent) and not flows.resolver_answered("nslookup", silent)


# ----------------------------------------------------------------------------- 2. nltest /QUERY and NERR_Success


@pytest.fixture(scope="module")
def gmsa():
    return suites.load("suites/gmsa/test_gmsa.py")


def test_nltest_trust_failure_that_completed_successfully_is_not_success(gmsa):
    output = recorded("nltest-sc-verify-no-trust-sam-account.txt")
    assert "The command completed successfully" in output  # what upstream's isValidOutput takes for success
    assert not gmsa.query_succeeded(output)


def test_nltest_success_needs_nerr_success(gmsa):
    assert gmsa.query_succeeded(recorded("nltest-sc-reset-success.txt"))
    assert not gmsa.query_succeeded(recorded("nltest-query-rpc-server-unavailable.txt"))


def test_nltest_success_without_its_english_sentence_is_unreadable_never_a_failure(gmsa):
    # Synthetic: the recorded /sc_reset success without its closing sentence (what a translated nltest would keep:
    # the status codes). Not a recorded form: a suite error, neither success nor the domain failing.
    text = recorded("nltest-sc-reset-success.txt").replace("The command completed successfully\n", "")
    with pytest.raises(UnreadableOutput, match="nltest"):
        gmsa.query_succeeded(text)


# ----------------------------------------------------------------------------- 3. Get-Volume's other headers


def test_get_volume_powershell7_headers_are_read_by_name():
    assert conn.parse_get_volume(recorded("get-volume-powershell7-friendlyname-filesystemtype.txt")) == ["NTFS"]


def test_get_volume_docs_example_columns_are_read_by_name():
    assert conn.parse_get_volume(recorded("get-volume-docs-example-drive-letter.txt")) == ["NTFS"]


# ----------------------------------------------------------------------------- 4. curl's message, not only its exit


def test_curl_exit_28_after_the_name_resolved_shows_the_resolver_answered():
    result = ExecResult(28, "", recorded("curl-windows-servercore-ltsc2019-connect-timeout.txt"))
    assert flows.resolver_answered("curl", result) and not flows.resolver_silent("curl", result)


def test_curl_could_not_resolve_host_shows_no_answer_either_way():
    result = ExecResult(6, "", recorded("curl-windows-pod-could-not-resolve-host.txt"))
    assert not flows.resolver_answered("curl", result) and not flows.resolver_silent("curl", result)
    assert flows.resolver_failed("curl", result)


# ----------------------------------------------------------------------------- 5. ping.exe in another language


@pytest.mark.parametrize("name", ["ping-windows-french-success.txt", "ping-windows-chinese-success.txt"])
def test_ping_in_another_language_is_unreadable_never_no_echo_reply(name):
    output = recorded(name)
    with pytest.raises(UnreadableOutput, match="ping"):
        conn.ping_succeeded("windows", 0, output)
    assert not flows.ping_unanswered("windows", ExecResult(0, output, ""))


# ----------------------------------------------------------------------------- through FlowChecks, as the checks run


class Answers(fakes.ExecKube):
    """Every exec answers ``result``."""

    def __init__(self, result: ExecResult) -> None:
        super().__init__()
        self.result = result

    def respond(self, command: list[str]) -> ExecResult:
        return self.result


WINDOWS = PodRef("client", "10.244.2.9", ("10.244.2.9",), "win-0", "", "windows", "agnhost")


def test_a_ping_check_in_another_language_is_a_suite_error(monkeypatch: pytest.MonkeyPatch):
    fakes.fresh_worker(monkeypatch)
    checks = flows.FlowChecks(Answers(ExecResult(0, recorded("ping-windows-french-success.txt"), "")))
    with pytest.raises(UnreadableOutput, match="English"):
        checks.ping(WINDOWS, "8.8.8.8")


def test_a_windows_nxdomain_clears_the_record_of_a_silent_resolver(monkeypatch: pytest.MonkeyPatch):
    fakes.fresh_worker(monkeypatch)
    checks = flows.FlowChecks(
        Answers(ExecResult(1, recorded("nslookup-windows-container-non-existent-domain.txt"), ""))
    )
    key = checks.resolver_key(WINDOWS)
    checks.silent_resolver[key] = "an earlier look-up timed out"
    lookup = checks.lookup(WINDOWS, "server8.", tool="nslookup")
    assert lookup.not_found and key not in checks.silent_resolver


def test_curl_could_not_resolve_needs_curls_own_message_for_that_name():
    # The two-nameserver check's negative control and its dns-config-via-cni deviation: exit 6 alone is not it.
    text = recorded("curl-windows-pod-could-not-resolve-host.txt")
    assert conn.curl_could_not_resolve(6, text, "google.com")
    assert not conn.curl_could_not_resolve(6, "", "google.com")
    assert not conn.curl_could_not_resolve(6, text, "kubernetes")
    connect = recorded("curl-windows-servercore-ltsc2019-connect-timeout.txt")
    assert not conn.curl_could_not_resolve(28, connect, "github.com")
