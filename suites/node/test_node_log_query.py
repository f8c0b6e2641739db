"""Node log query: the kubelet's /logs/ endpoint with ``?query=<service>``, through the API server's node proxy,
returns the node's own service log; on Windows that is an Application event log provider read with Get-WinEvent.

Upstream (k8s.io/kubernetes v1.37.2 test/e2e/node/kubelet.go, Describe [Feature:NodeLogQuery] at :441): the Windows
It "should return the Microsoft-Windows-Security-SPP logs" (:580-591) GETs
``/api/v1/nodes/<windows node>/proxy/logs/?query=Microsoft-Windows-Security-SPP`` and asserts the answer contains
"ProviderName: Microsoft-Windows-Security-SPP" (the header Format-Table prints for the provider's events: the
kubelet runs ``Get-WinEvent -FilterHashtable @{LogName='Application'; ProviderName=...} | Sort-Object TimeCreated
| Format-Table -AutoSize -Wrap``, pkg/kubelet/kubelet_server_journal_windows.go:64-104). Its Linux counterpart, "should
return the kubelet logs" (:493-501), asks a Linux node for ``query=kubelet`` (journalctl ``--unit=kubelet
--output=short-precise``, kubelet_server_journal_linux.go:34-62), here the Linux control.

NodeLogQuery is GA and locked on from 1.36 (v1.36.3 pkg/features/kube_features.go:1729), but the kubelet serves
queries only with ``enableSystemLogHandler`` and ``enableSystemLogQuery`` true in its configuration (v1.37.2
pkg/kubelet/kubelet.go:1887, pkg/kubelet/server/server.go:730-755; enableSystemLogQuery defaults to false): each
check reads its node's /configz first and skips with that reason where the kubelet does not serve them.

Not checked here: upstream's "last three lines" (tailLines=3) and "with the pattern Health" Its compare the answer
with Get-WinEvent run on the node over SSH (kubelet.go:598-633, ``WithProvider(ProvidersWithSSH)`` from v1.37.2);
the suite has no such reference on the node.
"""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks.node import kubelet_config, kubelet_get, kubelet_json

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


def log_query_path(target_os: str) -> str:
    return f"logs/?query={QUERY[target_os]}"


@pytest.mark.test_id("c79f3c52-4691-4f79-b176-f0775924d038")
@pytest.mark.dataplane
@pytest.mark.requires("node-log-query")
@pytest.mark.decided_at_run_time("the run skips where the node's kubelet does not enable enableSystemLogQuery")
@pytest.mark.documents("k8s-windows-guide", "Troubleshooting")
@pytest.mark.windows_form(no_command="GETs the kubelet's /logs/ endpoint through the API server's node proxy")
def test_node_log_query_returns_the_nodes_service_log(wincon, target_node, data_plane, target_os):
    """Logs "are an important element of troubleshooting" (002_8a7e76f95009f44f.txt, Troubleshooting): GET /api/v1/nodes/<node>/proxy/logs/?query=Microsoft-Windows-Security-SPP returns that provider's Application events, "ProviderName: Microsoft-Windows-Security-SPP" (upstream v1.37.2 test/e2e/node/kubelet.go:580-591); its Linux control asks a Linux worker for query=kubelet and gets the kubelet unit's journal lines (kubelet.go:493-501)."""
    node = target_node.name
    path = log_query_path(target_os)
    data_plane(f"GET /api/v1/nodes/{node}/proxy/{path}", where="the API server's node proxy", pod_node=node)
    configz, _ = kubelet_json(wincon.api_client, node, "configz")
    off = log_query_off(kubelet_config(configz), node)
    if off:
        pytest.skip(off)
    answer = kubelet_get(wincon.api_client, node, path)
    assert answer.status == 200, f"GET /{path} on the kubelet of {node} answered {answer.status}: {answer.body[:300]}"
    assert answered_the_log(target_os, answer.body), (
        f"GET /{path} on the kubelet of {node} did not return the {QUERY[target_os]} log: {answer.body[:500]!r}"
    )
