"""suites/node/test_node_log_query.py on constructed kubelet answers. The Windows answer holds only the provider
header upstream asserts (k8s.io/kubernetes v1.37.2 test/e2e/node/kubelet.go:590); the table Format-Table prints
below it is neither recorded here nor asserted. The Linux answer is a journalctl --output=short-precise line of the
kubelet unit, as a real node of the local cluster answered (below); "-- No entries --" (a node whose journal has no
kubelet unit) is not the log, nor the kubelet's own answer where it finds no journal of the unit."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster.kubelet import KubeletAnswer
from wincon.commandline.errors import InfrastructureError, UnreadableOutput

SUITE = suites.load("suites/node/test_node_log_query.py")

SPP_HEADER = "\r\n\r\n   ProviderName: Microsoft-Windows-Security-SPP\r\n\r\n"
# Recorded: GET /api/v1/nodes/worker-1/proxy/logs/?query=kubelet&pattern=Started on the local cluster (kubelet v1.37.2,
# Debian 12's journalctl 252 reading the node's journal, wincon.localcluster.journal), 2026-11-27.
JOURNAL_LINE = (
    'Nov 27 22:34:09.948078 worker-1 kubelet[20602]: I1127 22:34:09.933596   20602 server.go:1336] "Started kubelet"\n'
)
# Recorded the same day from worker-0 with its journal directory moved aside (tests/faults: node journals gone).
NO_JOURNAL_ANSWER = "\noptions present and query resolved to log files for [kubelet]\ntry without specifying options\n"
QUERY_ON = {"kubeletconfig": {"enableSystemLogHandler": True, "enableSystemLogQuery": True}}


def run(monkeypatch, target_os: str, body: str, status: int = 200, configz: dict | None = None) -> list[str]:
    gated: list[str] = []
    asked: list[str] = []

    def kubelet_query(api_client, node, path, query, timeout=60.0):
        asked.append(SUITE.shown(query))
        assert path == "logs/"
        return KubeletAnswer(path, status, body, 0.1)

    monkeypatch.setattr(SUITE, "kubelet_query", kubelet_query)
    monkeypatch.setattr(SUITE, "kubelet_json", lambda api_client, node, path, timeout=60.0: (configz or QUERY_ON, 0.1))
    node = NS(name=f"{target_os}-node")
    SUITE.test_node_log_query_returns_the_nodes_service_log(
        NS(api_client=None), node, lambda command, where="", pod_node=None: gated.append(pod_node), target_os
    )
    assert gated == [node.name]
    return asked


def test_windows_provider_header_passes(monkeypatch):
    assert run(monkeypatch, "windows", SPP_HEADER) == ["logs/?query=Microsoft-Windows-Security-SPP"]


@pytest.mark.parametrize(
    "body",
    ["", "\r\n   ProviderName: Microsoft-Windows-Kernel-General\r\n", "Get-WinEvent : No events were found"],
    ids=["empty", "another-provider", "an-error"],
)
def test_windows_without_the_provider_header_fails(monkeypatch, body):
    with pytest.raises(AssertionError, match="did not return the Microsoft-Windows-Security-SPP log"):
        run(monkeypatch, "windows", body)


def test_linux_journal_line_of_the_kubelet_passes(monkeypatch):
    assert run(monkeypatch, "linux", JOURNAL_LINE) == ["logs/?query=kubelet"]


@pytest.mark.parametrize(
    "body",
    [
        "-- No entries --\n",
        "No journal files were found.\n-- No entries --\n",
        "\nerror: journal output not available\n",
        NO_JOURNAL_ANSWER,
    ],
    ids=["no-entries", "no-journal", "no-journalctl", "kubelet-found-no-journal"],
)
def test_linux_without_a_kubelet_journal_line_fails(monkeypatch, body):
    """Each of these names no kubelet line; upstream's bare "kubelet" substring would not even be asked here."""
    with pytest.raises(AssertionError, match="did not return the kubelet log"):
        run(monkeypatch, "linux", body)


def test_a_refused_query_fails(monkeypatch):
    with pytest.raises(AssertionError, match="answered 405"):
        run(monkeypatch, "windows", "Method not allowed", status=405)


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"enableSystemLogHandler": True}, "enableSystemLogQuery is not true"),
        ({"enableSystemLogHandler": True, "enableSystemLogQuery": False}, "enableSystemLogQuery is not true"),
        ({"enableSystemLogHandler": False, "enableSystemLogQuery": True}, "enableSystemLogHandler false"),
    ],
)
def test_a_kubelet_that_serves_no_query_skips_with_its_reason(monkeypatch, config, reason):
    with pytest.raises(pytest.skip.Exception, match=reason):
        run(monkeypatch, "windows", SPP_HEADER, configz={"kubeletconfig": config})


# --------------------------------------------------------------------------- tailLines / pattern against the node
# The strings below are constructed: the comparison is upstream's (trimSpaceNewlineInString, v1.37.2
# test/e2e/node/kubelet.go:786-792) and reads no particular layout of Format-Table's output.


def test_trim_space_newline_as_upstream():
    assert SUITE.trim_space_newline("a  \r\n  b c\nd") == "abc\nd"
    assert SUITE.trim_space_newline("x \n y") == "xy"
    assert SUITE.trim_space_newline("x\n y") == "x\ny"  # no space before the break: kept, as upstream's regexp


def test_get_win_event_is_upstreams_command_line():
    assert SUITE.get_win_event(" -MaxEvents 3") == (
        "Get-WinEvent -FilterHashtable @{LogName='Application'; ProviderName='Microsoft-Windows-Security-SPP'}"
        " -MaxEvents 3 | Sort-Object TimeCreated | Format-Table -AutoSize -Wrap"
    )


class HostKube:
    """Creates the HostProcess pod (``refusal``: the API server's answer instead), reports it ended with
    ``phase`` and ``output`` as its log."""

    def __init__(self, output: str, phase: str = "Succeeded", refusal: str | None = None) -> None:
        self.output, self.phase, self.refusal = output, phase, refusal
        self.api_client, self.namespace, self.bodies, self.gated = None, "ns", [], []

    def gate(self, command, where="", pod_node=None):
        self.gated.append((command, pod_node))

    def wait_pod(self, name, **kwargs):
        return NS(status=NS(phase=self.phase))

    def logs(self, pod, container=None):
        return self.output


def run_options(monkeypatch, case: str, body: str, kube: HostKube, configz: dict | None = None) -> list[str]:
    asked: list[str] = []

    def kubelet_query(api_client, node, path, query, timeout=60.0):
        asked.append(SUITE.shown(query))
        assert path == "logs/"
        return KubeletAnswer(path, 200, body, 0.1)

    def submit(api_client, namespace, pod_body, dry_run=True):
        kube.bodies.append(pod_body)
        if kube.refusal:
            return None, NS(describe=lambda: kube.refusal)
        return pod_body, None

    monkeypatch.setattr(SUITE, "kubelet_query", kubelet_query)
    monkeypatch.setattr(SUITE, "kubelet_json", lambda api_client, node, path, timeout=60.0: (configz or QUERY_ON, 0.1))
    monkeypatch.setattr(SUITE, "submit_pod", submit)
    wincon = NS(api_client=None, pod_start_timeout=4, catalog=NS(image=lambda key, os_name, build: "agnhost"))
    SUITE.test_node_log_query_options_match_get_winevent_on_the_node(
        kube, wincon, NS(name="win-0"), 20348, case, "windows"
    )
    return asked


EVENTS = (
    "\r\n   ProviderName: Microsoft-Windows-Security-SPP\r\n\r\nTimeCreated  Id Message\r\n-----------  -- -------\r\n"
)


@pytest.mark.parametrize("case", ["tail-lines-3", "pattern-health"])
def test_the_same_events_pass(monkeypatch, case):
    kube = HostKube(EVENTS.replace("  ", " "))  # spacing differs: upstream's comparison ignores it
    asked = run_options(monkeypatch, case, EVENTS, kube)
    option = "tailLines=3" if case == "tail-lines-3" else "pattern=Health"
    assert asked == [f"logs/?query=Microsoft-Windows-Security-SPP&{option}"]
    pod = kube.bodies[0]
    assert pod["spec"]["securityContext"]["windowsOptions"]["hostProcess"] is True
    assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "win-0"  # on the node queried
    assert SUITE.get_win_event(SUITE.WINDOWS_QUERIES[case][1]) in pod["spec"]["containers"][0]["command"][-1]


def test_other_events_fail(monkeypatch):
    kube = HostKube(EVENTS + "11/27/2026 3:00:00 PM 1003 Another event\r\n")
    with pytest.raises(AssertionError, match="differs from Get-WinEvent on the node"):
        run_options(monkeypatch, "tail-lines-3", EVENTS, kube)


def test_get_winevent_failing_on_the_node_fails(monkeypatch):
    with pytest.raises(AssertionError, match="ended Failed"):
        run_options(monkeypatch, "tail-lines-3", EVENTS, HostKube("Get-WinEvent : error", phase="Failed"))


def test_host_process_refused_skips(monkeypatch):
    refusal = "403 Forbidden: hostProcess containers are disallowed by cluster policy"
    with pytest.raises(pytest.skip.Exception, match="allow-privileged=false"):
        run_options(monkeypatch, "pattern-health", EVENTS, HostKube(EVENTS, refusal=refusal))


def test_query_off_skips_before_any_pod(monkeypatch):
    kube = HostKube(EVENTS)
    with pytest.raises(pytest.skip.Exception, match="enableSystemLogQuery"):
        run_options(monkeypatch, "tail-lines-3", EVENTS, kube, configz={"kubeletconfig": {}})
    assert kube.bodies == []


def test_kubelet_query_sends_the_query_as_parameters_not_in_the_path(monkeypatch):
    """The generated client escapes a '?' inside the node-proxy path parameter (the kubelet then answers 404 for a
    path named 'logs/?query=kubelet', seen on the local cluster at v1.37.2): kubelet_query sends it as the request's
    own query string."""
    from kubernetes import client

    from wincon.cluster.kubelet import kubelet_query

    api = client.ApiClient(client.Configuration(host="https://api.example:6443"))
    seen: list[str] = []

    def call_api(method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        seen.append(url)
        return NS(read=lambda: None, data=b"ok", status=200)

    monkeypatch.setattr(api, "call_api", call_api)
    answer = kubelet_query(api, "worker-0", "logs/", [("query", "Microsoft-Windows-Security-SPP"), ("tailLines", "3")])
    assert answer.status == 200 and answer.body == "ok"
    assert seen[0].endswith("/proxy/logs%2F?query=Microsoft-Windows-Security-SPP&tailLines=3") or seen[0].endswith(
        "/proxy/logs/?query=Microsoft-Windows-Security-SPP&tailLines=3"
    ), seen[0]
    assert "%3F" not in seen[0]


# --------------------------------------------------------------------------- nothing to compare (issue 40, item 2)


@pytest.mark.parametrize("case", ["tail-lines-3", "pattern-health"])
def test_no_event_on_either_side_is_nothing_to_compare_never_a_pass(monkeypatch, case):
    """Get-WinEvent on the node printed nothing (no event of the provider, or none matching Health) and so did the
    kubelet (its Get-WinEvent prints nothing either; kubelet_server_journal.go:327-345 at v1.37.2 adds nothing).
    Passed at c48de23 ("" == ""); now an infrastructure error saying there is nothing to compare."""
    with pytest.raises(InfrastructureError, match="nothing to compare: Get-WinEvent .* printed no event on win-0"):
        run_options(monkeypatch, case, "", HostKube(""))
    with pytest.raises(InfrastructureError, match="nothing to compare"):
        run_options(monkeypatch, case, "\r\n\r\n", HostKube("\r\n"))  # blank lines only: the same


def test_an_output_without_the_event_table_is_the_suites_gap_never_a_pass(monkeypatch):
    """Both sides print the same text that is not the provider's event table: compared equal before; now unread."""
    with pytest.raises(UnreadableOutput, match="no Microsoft-Windows-Security-SPP event table"):
        run_options(monkeypatch, "pattern-health", "something else\r\n", HostKube("something else\r\n"))


def test_events_on_the_node_and_none_from_the_kubelet_fails(monkeypatch):
    with pytest.raises(AssertionError, match="differs from Get-WinEvent on the node"):
        run_options(monkeypatch, "pattern-health", "", HostKube(EVENTS))


# Linux control: journal lines in the local cluster's form (JOURNAL_LINE above, recorded), the entry the check
# writes constructed in the same form.
def kubelet_line(message: str, micros: int = 0) -> str:
    return f"Nov 28 15:00:00.{micros:06d} worker-1 kubelet[20602]: {message}\n"


class LinuxKube:
    """Creates the check's pod; records it."""

    def __init__(self) -> None:
        self.api_client, self.namespace, self.bodies, self.gated = None, "ns", [], []

    def gate(self, command, where="", pod_node=None):
        self.gated.append((command, pod_node))

    def create_pod(self, body):
        self.bodies.append(body)
        return body


def run_linux(monkeypatch, case: str, answer) -> tuple[LinuxKube, list[str]]:
    """``answer(query: dict, token: str | None) -> str``: the kubelet's body for each query."""
    asked: list[str] = []
    kube = LinuxKube()

    def kubelet_query(api_client, node, path, query, timeout=60.0):
        asked.append(SUITE.shown(query))
        token = kube.bodies[0]["metadata"]["name"] if kube.bodies else None
        return KubeletAnswer(path, 200, answer(dict(query), token), 0.1)

    monkeypatch.setattr(SUITE, "kubelet_query", kubelet_query)
    monkeypatch.setattr(SUITE, "kubelet_json", lambda api_client, node, path, timeout=60.0: (QUERY_ON, 0.1))
    monkeypatch.setattr(SUITE, "ENTRY_SECONDS", 1.0)
    wincon = NS(api_client=None, pod_start_timeout=4, catalog=NS(image=lambda key, os_name, build: "agnhost"))
    SUITE.test_node_log_query_options_match_get_winevent_on_the_node(
        kube, wincon, NS(name="worker-1"), None, case, "linux"
    )
    return kube, asked


def synced(token: str, micros: int) -> str:
    return kubelet_line(
        f'E1128 15:00:00.000000 20602 pod_workers.go:1338] "Error syncing pod, skipping" pod="ns/{token}"', micros
    )


OTHER = kubelet_line('I1128 15:00:00.000000 20602 kubelet.go:2500] "SyncLoop (probe)"', 1)


def pattern_answer(filtered):
    def answer(query, token):
        if "pattern" in query:
            return filtered(token)
        return OTHER + synced(token, 2)

    return answer


def test_linux_the_entry_written_is_found_by_the_pattern(monkeypatch):
    kube, asked = run_linux(monkeypatch, "pattern-health", pattern_answer(lambda t: synced(t, 2) + synced(t, 3)))
    token = kube.bodies[0]["metadata"]["name"]
    assert (
        token.startswith("log-entry-")
        and kube.bodies[0]["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "worker-1"
    )
    assert kube.bodies[0]["spec"]["containers"][0]["command"] == [SUITE.NO_SUCH_COMMAND]
    assert asked[0].startswith("logs/?query=kubelet&sinceTime=") and asked[-1] == f"logs/?query=kubelet&pattern={token}"


@pytest.mark.parametrize(
    "filtered",
    [lambda t: "", lambda t: OTHER + synced(t, 2), lambda t: synced(t, 3)],
    ids=["nothing", "unfiltered", "the-entry-seen-missing"],
)
def test_linux_a_pattern_answer_without_the_entry_alone_fails(monkeypatch, filtered):
    with pytest.raises(AssertionError, match="did not return the entries with log-entry-"):
        run_linux(monkeypatch, "pattern-health", pattern_answer(filtered))


@pytest.mark.parametrize("unfiltered", [OTHER, "-- No entries --\n"], ids=["other-lines", "no-entries"])
def test_linux_an_entry_never_logged_is_nothing_to_compare(monkeypatch, unfiltered):
    """Nothing names the check's pod in the kubelet's journal: both sides of a pattern query would hold no entry
    (journalctl prints "-- No entries --" for a --grep that matches none)."""
    with pytest.raises(InfrastructureError, match="nothing to compare: .* showed no entry naming the check's pod"):
        run_linux(
            monkeypatch,
            "pattern-health",
            lambda query, token: "-- No entries --\n" if "pattern" in query else unfiltered,
        )


@pytest.mark.parametrize("case", ["pattern-health", "tail-lines-3"])
def test_linux_an_answer_that_is_not_the_journal_fails_never_nothing_to_compare(monkeypatch, case):
    """The node's journal gone (tests/faults): the kubelet's answer is not the log; the query failed."""
    asked: list[dict] = []

    def answer(query, token):
        asked.append(query)
        return NO_JOURNAL_ANSWER

    monkeypatch.setattr(SUITE, "eventually", lambda check, *a, **k: check() or check())  # a wait would ask twice
    with pytest.raises(AssertionError, match="did not return the kubelet log"):
        run_linux(monkeypatch, case, answer)
    assert len(asked) == (1 if case == "pattern-health" else 2)  # the wait for the entry ends at its first answer


LAST = [kubelet_line(f'I1128 15:00:00.000000 20602 x.go:1] "line {i}"', i) for i in range(6)]


def tail_answer(three):
    return lambda query, token: "".join(three if query["tailLines"] == "3" else LAST)


def test_linux_the_last_three_lines_are_three_consecutive_lines_of_a_longer_tail(monkeypatch):
    _, asked = run_linux(monkeypatch, "tail-lines-3", tail_answer(LAST[2:5]))
    assert asked == ["logs/?query=kubelet&tailLines=3", f"logs/?query=kubelet&tailLines={SUITE.TAIL_WINDOW}"]


@pytest.mark.parametrize("three", [LAST[2:4], LAST[1:3] + LAST[4:5], []], ids=["two", "not-consecutive", "none"])
def test_linux_other_than_three_consecutive_lines_fails(monkeypatch, three):
    with pytest.raises(AssertionError, match="did not return 3 consecutive lines"):
        run_linux(monkeypatch, "tail-lines-3", tail_answer(three))


def test_linux_a_journal_of_fewer_than_three_lines_is_nothing_to_compare(monkeypatch):
    with pytest.raises(InfrastructureError, match="nothing to compare: .* fewer than 3"):
        run_linux(monkeypatch, "tail-lines-3", lambda query, token: "".join(LAST[:2]))
