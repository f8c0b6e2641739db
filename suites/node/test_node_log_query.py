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
pinned to the node queried, and the two are compared as upstream compares them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from wincon import forms
from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED, HOST_PROCESS_REFUSAL_AT_RUN_TIME, submit_pod
from wincon.checks.node import kubelet_config, kubelet_json, kubelet_query, powershell
from wincon.checks.pods import windows_pod

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


def log_query_off(config: dict[str, Any], node: str) -> str | None:
    """Why the kubelet of ``node`` serves no log query, from its KubeletConfiguration (/configz); None where it does."""
    if config.get("enableSystemLogHandler") is False:
        return f"the kubelet of {node} does not serve /logs/ (enableSystemLogHandler false in its /configz)"
    if not config.get("enableSystemLogQuery"):
        return f"the kubelet of {node} does not serve log queries (enableSystemLogQuery is not true in its /configz)"
    return None


def log_query(service: str, *options: tuple[str, str]) -> list[tuple[str, str]]:
    """The /logs/ endpoint's query parameters: ``query=<service>`` and the options."""
    return [("query", service), *options]


def shown(query: list[tuple[str, str]]) -> str:
    return "logs/?" + "&".join(f"{k}={v}" for k, v in query)


@pytest.mark.test_id("c79f3c52-4691-4f79-b176-f0775924d038")
@pytest.mark.dataplane
@pytest.mark.requires("node-log-query")
@pytest.mark.decided_at_run_time("the run skips where the node's kubelet does not enable enableSystemLogQuery")
@pytest.mark.documents("k8s-windows-guide", "Troubleshooting")
@pytest.mark.windows_form(no_command="GETs the kubelet's /logs/ endpoint through the API server's node proxy")
def test_node_log_query_returns_the_nodes_service_log(wincon, target_node, data_plane, target_os):
    """Logs "are an important element of troubleshooting" (002_8a7e76f95009f44f.txt, Troubleshooting): GET /api/v1/nodes/<node>/proxy/logs/?query=Microsoft-Windows-Security-SPP returns that provider's Application events, "ProviderName: Microsoft-Windows-Security-SPP" (upstream v1.37.2 test/e2e/node/kubelet.go:580-591); its Linux control asks a Linux worker for query=kubelet and gets the kubelet unit's journal lines (kubelet.go:493-501)."""
    node = target_node.name
    query = log_query(QUERY[target_os])
    path = shown(query)
    data_plane(f"GET /api/v1/nodes/{node}/proxy/{path}", where="the API server's node proxy", pod_node=node)
    configz, _ = kubelet_json(wincon.api_client, node, "configz")
    off = log_query_off(kubelet_config(configz), node)
    if off:
        pytest.skip(off)
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
    body = windows_pod(wincon, name, build, command=powershell(get_win_event(args)), node=node)
    body["spec"]["hostNetwork"] = True
    body["spec"]["restartPolicy"] = "Never"
    body["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}}
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


@pytest.mark.test_id("f3821c8e-08b3-4512-89d6-6aebe7ac6e3e")
@pytest.mark.dataplane
@pytest.mark.requires("node-log-query")
@pytest.mark.decided_at_run_time(
    "the run skips where the node's kubelet does not enable enableSystemLogQuery; " + HOST_PROCESS_REFUSAL_AT_RUN_TIME
)
@pytest.mark.windows_only(
    "the Application event log and Get-WinEvent are Windows's own (the query itself has its Linux control: "
    "test_node_log_query_returns_the_nodes_service_log)"
)
@pytest.mark.parametrize("case", list(WINDOWS_QUERIES))
@pytest.mark.documents("k8s-windows-guide", "Troubleshooting")
@pytest.mark.windows_form(forms.POWERSHELL_HOSTPROCESS, forms.GET_WIN_EVENT)
def test_node_log_query_options_match_get_winevent_on_the_node(kube, wincon, windows_node, build, case):
    """Logs "are an important element of troubleshooting" (002_8a7e76f95009f44f.txt, Troubleshooting): ?query=Microsoft-Windows-Security-SPP with tailLines=3, or with pattern=Health, returns what Get-WinEvent with -MaxEvents 3, or filtered by Message -Match Health, prints on the node, compared as upstream compares them (v1.37.2 test/e2e/node/kubelet.go:598-612, :619-633, :781-792; upstream runs Get-WinEvent over SSH, here in a HostProcess container on the node)."""
    node = windows_node.name
    option, args = WINDOWS_QUERIES[case]
    query = log_query(PROVIDER, option)
    path = shown(query)
    kube.gate(f"GET /api/v1/nodes/{node}/proxy/{path}; on the node: {get_win_event(args)}", pod_node=node)
    configz, _ = kubelet_json(wincon.api_client, node, "configz")
    off = log_query_off(kubelet_config(configz), node)
    if off:
        pytest.skip(off)
    answer = kubelet_query(wincon.api_client, node, "logs/", query)
    assert answer.status == 200, f"GET /{path} on the kubelet of {node} answered {answer.status}: {answer.body[:300]}"
    on_node = host_get_win_event(kube, wincon, node, build, args)
    assert trim_space_newline(answer.body) == trim_space_newline(on_node), (
        f"GET /{path} on {node} differs from Get-WinEvent on the node:\n{answer.body[:800]}\n---\n{on_node[:800]}"
    )
