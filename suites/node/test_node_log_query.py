"""Node log query: the kubelet's /logs/ endpoint with ``?query=<service>``, through the API server's node proxy,
returns the node's own service log; on Windows that is an Application event log provider read with Get-WinEvent.

Upstream (k8s.io/kubernetes v1.37.2 test/e2e/node/kubelet.go, Describe [Feature:NodeLogQuery] at :441): the Windows
It "should return the Microsoft-Windows-Security-SPP logs" (:580-591) GETs
``/api/v1/nodes/<windows node>/proxy/logs/?query=Microsoft-Windows-Security-SPP`` and asserts the answer contains
"ProviderName: Microsoft-Windows-Security-SPP" (the header Format-Table prints for the provider's events: the
kubelet runs ``Get-WinEvent -FilterHashtable @{LogName='Application'; ProviderName=...} | Sort-Object TimeCreated
| Format-Table -AutoSize -Wrap``, pkg/kubelet/kubelet_server_journal_windows.go:64-104). Its Linux counterpart, "should
return the kubelet logs" (:493-501), asks a Linux node for ``query=kubelet`` (journalctl ``--unit=kubelet
--output=short-precise``, kubelet_server_journal_linux.go:34-62), here the Linux control. On the local cluster it runs
for real: each real node's kubelet serves log queries and reads a journal of its own (wincon.localcluster.journal);
with those journals gone it fails (tests/faults/test_faults.py).

NodeLogQuery is GA and locked on from 1.36 (v1.36.3 pkg/features/kube_features.go:1729), but the kubelet serves
queries only with ``enableSystemLogHandler`` and ``enableSystemLogQuery`` true in its configuration (v1.37.2
pkg/kubelet/kubelet.go:1887, pkg/kubelet/server/server.go:730-755; enableSystemLogQuery defaults to false): each
check reads its node's /configz first and skips with that reason where the kubelet does not serve them.

Upstream's "last three lines" (tailLines=3) and "with the pattern Health" Its (v1.37.2 kubelet.go:598-612 and
:619-633) compare the answer with Get-WinEvent run on the node over SSH, after removing spaces around line breaks
and then every space (trimSpaceNewlineInString, :786-792); here the same Get-WinEvent command line (getWinEventCommandOnNode,
:781-784) runs on the node in a HostProcess container (SSH being a provider's, ``WithProvider(ProvidersWithSSH)``),
pinned to the node queried, and the two are compared as upstream compares them, once Get-WinEvent on the node showed
events to compare: where it finds none, both sides are empty (the kubelet adds nothing, v1.37.2
pkg/kubelet/kubelet_server_journal.go:327-345) and the check is an error, "nothing to compare", never a pass. Its Linux
control cannot read the node's journal itself (upstream's journalctl over SSH), so it writes an entry of its own (a pod
the kubelet logs as failing to sync) and finds it, by the unfiltered query first, then by the pattern; and compares
tailLines=3 with a longer tail read right after.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED, submit_pod
from wincon.checks.hostprocess import host_process_pod
from wincon.checks.node import log_query_off, powershell
from wincon.checks.pods import eventually, os_pod
from wincon.cluster.kubelet import kubelet_config, kubelet_json, kubelet_query
from wincon.commandline.errors import InfrastructureError, UnreadableOutput
from wincon.windows import forms

pytestmark = [pytest.mark.scheduling]

# What each OS's kubelet is asked, and the positive evidence its answer must hold.
QUERY = {"windows": "Microsoft-Windows-Security-SPP", "linux": "kubelet"}


def answered_the_log(target_os: str, body: str) -> bool:
    """Windows: the provider header Format-Table prints for the events (upstream's own assertion, kubelet.go:590).
    Linux: a journal line of the kubelet unit, ``<time> <host> kubelet[<pid>]: ...`` in journalctl's short-precise
    output (upstream asserts only that "kubelet" appears, :500, which its own error lines would satisfy)."""
    if target_os == "windows":
        return f"ProviderName: {QUERY['windows']}" in body
    return any("kubelet[" in line and "]: " in line for line in body.splitlines())


def log_query(service: str, *options: tuple[str, str]) -> list[tuple[str, str]]:
    """The /logs/ endpoint's query parameters: ``query=<service>`` and the options."""
    return [("query", service), *options]


def shown(query: list[tuple[str, str]]) -> str:
    return "logs/?" + "&".join(f"{k}={v}" for k, v in query)


@pytest.mark.test_id("c79f3c52-4691-4f79-b176-f0775924d038")
@pytest.mark.dataplane
@pytest.mark.requires("node-log-query")  # from 1.36, and its kubelet serving log queries (its /configz)
@pytest.mark.documents("k8s-windows-guide", "Troubleshooting")
@pytest.mark.windows_form(no_command="GETs the kubelet's /logs/ endpoint through the API server's node proxy")
@pytest.mark.no_pod("GETs the kubelet's /logs/ endpoint through the API server")
def test_node_log_query_returns_the_nodes_service_log(wincon, target_node, data_plane, target_os):
    """Logs "are an important element of troubleshooting" (002_8a7e76f95009f44f.txt, Troubleshooting): GET /api/v1/nodes/<node>/proxy/logs/?query=Microsoft-Windows-Security-SPP returns that provider's Application events, "ProviderName: Microsoft-Windows-Security-SPP" (upstream v1.37.2 test/e2e/node/kubelet.go:580-591); its Linux control asks a Linux worker for query=kubelet and gets the kubelet unit's journal lines (kubelet.go:493-501)."""
    node = target_node.name
    query = log_query(QUERY[target_os])
    path = shown(query)
    data_plane(f"GET /api/v1/nodes/{node}/proxy/{path}", where="the API server's node proxy", pod_node=node)
    configz, _ = kubelet_json(wincon.api_client, node, "configz")
    off = log_query_off(kubelet_config(configz), node)
    if off:
        pytest.skip(off)  # requires("node-log-query") decides this at collection too: the plan says skip
    answer = kubelet_query(wincon.api_client, node, "logs/", query)
    assert answer.status == 200, f"GET /{path} on the kubelet of {node} answered {answer.status}: {answer.body[:300]}"
    assert answered_the_log(target_os, answer.body), (
        f"GET /{path} on the kubelet of {node} did not return the {QUERY[target_os]} log: {answer.body[:500]!r}"
    )


# ----------------------------------------------------------------------------- tailLines and pattern, against the node

PROVIDER = QUERY["windows"]
# (the query's extra parameter, the Get-WinEvent arguments upstream compares it with: kubelet.go:605/:608, :626/:629)
WINDOWS_QUERIES = {
    "tail-lines-3": (("tailLines", "3"), " -MaxEvents 3"),
    "pattern-health": (("pattern", "Health"), "  | Where-Object -Property Message -Match Health"),
}


def get_win_event(args: str) -> str:
    """Upstream's getWinEventCommandOnNode command line for the provider (v1.37.2 kubelet.go:782)."""
    return (
        f"Get-WinEvent -FilterHashtable @{{LogName='Application'; ProviderName='{PROVIDER}'}}{args}"
        " | Sort-Object TimeCreated | Format-Table -AutoSize -Wrap"
    )


def trim_space_newline(text: str) -> str:
    """Upstream's trimSpaceNewlineInString (v1.37.2 kubelet.go:786-792): spaces around a line break removed with
    it, then every space."""
    return re.sub(r" +\r?\n +", "", text).replace(" ", "")


def host_get_win_event(kube: Any, wincon: Any, node: str, build: int | None, args: str) -> str:
    """Run ``get_win_event(args)`` on ``node`` in a HostProcess container (SYSTEM, host network) and return what it
    printed; skip with the cluster's reason where HostProcess pods are refused or dropped."""
    name = "spp-events-on-node"
    body = host_process_pod(wincon, name, build, powershell(get_win_event(args)), node=node)
    created, rejection = submit_pod(kube.api_client, kube.namespace, body, dry_run=False)
    if rejection is not None and HOST_PROCESS_DISALLOWED in rejection.describe():
        pytest.skip(f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}")
    assert rejection is None, f"the HostProcess pod {name} was refused: {rejection.describe()}"
    if (
        not (((created or {}).get("spec") or {}).get("securityContext") or {})
        .get("windowsOptions", {})
        .get("hostProcess")
    ):
        pytest.skip(
            "HostProcess pods are not enabled on this cluster (the API server dropped windowsOptions.hostProcess)"
        )
    pod = kube.wait_pod(
        name,
        done=lambda p: bool(p.status and p.status.phase in ("Succeeded", "Failed")),
        failure=None,
        timeout=wincon.pod_start_timeout,
        describe="its Get-WinEvent ended",
    )
    output = kube.logs(pod)
    assert pod.status.phase == "Succeeded", f"Get-WinEvent on {node} ended {pod.status.phase}: {output[-500:]}"
    return str(output)


# Windows: Format-Table's group header over the provider's events (upstream asserts it in the kubelet's answer,
# kubelet.go:590): Get-WinEvent on the node found events to compare. Where it found none (no event of the provider,
# or none whose Message matches the pattern), it prints nothing, and so does the kubelet (its Get-WinEvent prints
# nothing either, and kubelet_server_journal.go:327-345 at v1.37.2 adds nothing): "" == "" would pass on no evidence.
def events_shown(on_node: str) -> bool:
    return f"ProviderName: {PROVIDER}" in on_node


PATTERN_HINT = {WINDOWS_QUERIES["pattern-health"][1]: " whose Message matches Health"}


def compared_events(on_node: str, node: str, args: str) -> None:
    """Raise unless ``on_node`` (Get-WinEvent ``args`` on ``node``) shows events to compare with the kubelet's
    answer: printed nothing, an infrastructure error ("nothing to compare"); printed something else, the suite's
    gap (a form it does not read)."""
    if events_shown(on_node):
        return
    if not on_node.strip():
        raise InfrastructureError(
            f"nothing to compare: {get_win_event(args)} printed no event on {node}, so the kubelet's answer to the "
            "same question would be empty too and shows nothing either way",
            f"run the check on a node whose Application log has {PROVIDER} events{PATTERN_HINT.get(args, '')}",
        )
    raise UnreadableOutput(
        f"Get-WinEvent on {node} printed no {PROVIDER} event table (no 'ProviderName: {PROVIDER}' header)",
        tool="Get-WinEvent",
        output=on_node[-500:],
    )


# Linux control. The kubelet's journal is the node's own (journalctl on the node, which upstream runs over SSH and
# this suite cannot reach): so the control writes an entry of its own and finds it. Its pod, named with a random
# token, has a container that cannot start; the kubelet logs each failed sync at error level, whatever its
# verbosity ("Error syncing pod, skipping" ... pod="<namespace>/<name>", v1.37.2 pkg/kubelet/pod_workers.go:1338).
# The entry is shown first by the unfiltered query (query=kubelet&sinceTime=<the check's start>), within
# ENTRY_SECONDS, else "nothing to compare" (an error); then ?pattern=<token> must return it, and only lines with it.
# tailLines=3 is compared with a tailLines=TAIL_WINDOW read right after: its 3 journal lines must be 3 consecutive
# ones there (upstream compares with `journalctl -u kubelet -n 3` on the node, kubelet.go:536-548).
ENTRY_SECONDS = 60.0
TAIL_WINDOW = 200
NO_SUCH_COMMAND = "/wincon-no-such-command"


def journal_lines(body: str) -> list[str]:
    """The kubelet unit's journal lines of an answer (``answered_the_log``'s rule, line by line)."""
    return [line for line in body.splitlines() if "kubelet[" in line and "]: " in line]


# journalctl's own words for a journal with no entry in the range asked (Debian 12's journalctl 252, with --since
# past the last entry or a --grep that matches none; the latter exits 1 after printing it).
NO_ENTRIES = "-- No entries --"


def journal_answered(body: str) -> bool:
    """The kubelet answered from its unit's journal: journal lines, or journalctl's "-- No entries --" alone. Any
    other answer (the kubelet's "options present and query resolved to log files", "error: journal output not
    available") is not the log: the query failed, which is the check's failure, never "nothing to compare"."""
    return bool(journal_lines(body)) or body.strip() == NO_ENTRIES


def not_the_log(query: list[tuple[str, str]], node: str, body: str) -> str:
    return f"GET /{shown(query)} on the kubelet of {node} did not return the kubelet log: {body[:500]!r}"


def linux_pattern(kube: Any, wincon: Any, node: str) -> None:
    token = f"log-entry-{uuid.uuid4().hex[:10]}"
    since = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.create_pod(os_pod(wincon, token, "linux", None, command=[NO_SUCH_COMMAND], node=node))
    unfiltered = log_query("kubelet", ("sinceTime", since))
    seen: list[str] = []

    def entry_logged() -> bool:
        answer = kubelet_query(wincon.api_client, node, "logs/", unfiltered)
        # An answer that is not the journal ends the wait at once: the query failed (the journal gone answers so
        # for good: measured 61 s, the whole wait, before this line).
        assert answer.status == 200, f"GET /{shown(unfiltered)} on {node} answered {answer.status}: {answer.body[:300]}"
        assert journal_answered(answer.body), not_the_log(unfiltered, node, answer.body)
        seen[:] = [line for line in journal_lines(answer.body) if token in line]
        return bool(seen)

    try:
        eventually(entry_logged, ENTRY_SECONDS, f"a journal entry of the kubelet of {node} naming pod {token}")
    except InfrastructureError as exc:
        raise InfrastructureError(
            f"nothing to compare: GET /{shown(unfiltered)} on the kubelet of {node} showed no entry naming the "
            f"check's pod {token} (whose container cannot start) within {ENTRY_SECONDS:.0f}s",
            "the kubelet must log to the journal of its unit (kubelet.service)",
        ) from exc
    query = log_query("kubelet", ("pattern", token))
    answer = kubelet_query(wincon.api_client, node, "logs/", query)
    assert answer.status == 200, f"GET /{shown(query)} on {node} answered {answer.status}: {answer.body[:300]}"
    lines = journal_lines(answer.body)
    others = [line for line in lines if token not in line]
    missing = [line for line in seen if line not in lines]
    assert lines and not others and not missing, (
        f"GET /{shown(query)} on {node} did not return the entries with {token} alone: "
        f"{len(lines)} journal lines, {len(others)} without it, {len(missing)} of the {len(seen)} seen before missing: "
        f"{answer.body[:800]!r}"
    )


def linux_tail_lines(wincon: Any, node: str) -> None:
    query = log_query("kubelet", ("tailLines", "3"))
    answer = kubelet_query(wincon.api_client, node, "logs/", query)
    assert answer.status == 200, f"GET /{shown(query)} on {node} answered {answer.status}: {answer.body[:300]}"
    window = log_query("kubelet", ("tailLines", str(TAIL_WINDOW)))
    longer = kubelet_query(wincon.api_client, node, "logs/", window)
    assert longer.status == 200, f"GET /{shown(window)} on {node} answered {longer.status}: {longer.body[:300]}"
    assert journal_answered(longer.body), not_the_log(window, node, longer.body)
    later = journal_lines(longer.body)
    if len(later) < 3:
        raise InfrastructureError(
            f"nothing to compare: GET /{shown(window)} on the kubelet of {node} showed {len(later)} journal lines "
            "of the kubelet, fewer than 3",
            "the kubelet must log to the journal of its unit (kubelet.service)",
        )
    lines = journal_lines(answer.body)
    runs = [later[i : i + 3] for i in range(len(later) - 2)]
    assert len(lines) == 3 and lines in runs, (
        f"GET /{shown(query)} on {node} did not return 3 consecutive lines of the kubelet's journal "
        f"(compared with GET /{shown(window)} right after): {answer.body[:800]!r}"
    )


@pytest.mark.test_id("f3821c8e-08b3-4512-89d6-6aebe7ac6e3e")
@pytest.mark.dataplane
@pytest.mark.requires("node-log-query", "host-process")  # node-log-query: its kubelet's /configz too
@pytest.mark.parametrize("case", list(WINDOWS_QUERIES))
@pytest.mark.documents("k8s-windows-guide", "Troubleshooting")
@pytest.mark.windows_form(forms.POWERSHELL_HOSTPROCESS, forms.GET_WIN_EVENT)
def test_node_log_query_options_match_get_winevent_on_the_node(kube, wincon, target_node, build, case, target_os):
    """Logs "are an important element of troubleshooting" (002_8a7e76f95009f44f.txt, Troubleshooting): ?query=Microsoft-Windows-Security-SPP with tailLines=3, or with pattern=Health, returns what Get-WinEvent with -MaxEvents 3, or filtered by Message -Match Health, prints on the node, compared as upstream compares them (v1.37.2 test/e2e/node/kubelet.go:598-612, :619-633, :781-792; upstream runs Get-WinEvent over SSH, here in a HostProcess container on the node), once Get-WinEvent showed events to compare; its Linux control asks a Linux worker's kubelet (query=kubelet) for an entry the check wrote, by pattern, and for its last 3 lines."""
    node = target_node.name
    option, args = WINDOWS_QUERIES[case]
    if target_os == "linux":
        linux_option = ("pattern", "<the check's token>") if case == "pattern-health" else ("tailLines", "3")
        kube.gate(f"GET /api/v1/nodes/{node}/proxy/{shown(log_query('kubelet', linux_option))}", pod_node=node)
    else:
        kube.gate(
            f"GET /api/v1/nodes/{node}/proxy/{shown(log_query(PROVIDER, option))}; on the node: {get_win_event(args)}",
            pod_node=node,
        )
    configz, _ = kubelet_json(wincon.api_client, node, "configz")
    off = log_query_off(kubelet_config(configz), node)
    if off:
        pytest.skip(off)  # requires("node-log-query") decides this at collection too: the plan says skip
    if target_os == "linux":
        if case == "pattern-health":
            linux_pattern(kube, wincon, node)
        else:
            linux_tail_lines(wincon, node)
        return
    query = log_query(PROVIDER, option)
    path = shown(query)
    answer = kubelet_query(wincon.api_client, node, "logs/", query)
    assert answer.status == 200, f"GET /{path} on the kubelet of {node} answered {answer.status}: {answer.body[:300]}"
    on_node = host_get_win_event(kube, wincon, node, build, args)
    compared_events(on_node, node, args)
    assert trim_space_newline(answer.body) == trim_space_newline(on_node), (
        f"GET /{path} on {node} differs from Get-WinEvent on the node:\n{answer.body[:800]}\n---\n{on_node[:800]}"
    )
