"""suites/node/test_node_log_query.py on constructed kubelet answers. The Windows answer holds only the provider
header upstream asserts (k8s.io/kubernetes v1.37.2 test/e2e/node/kubelet.go:590); the table Format-Table prints
below it is neither recorded here nor asserted. The Linux answer is a journalctl --output=short-precise line of the
kubelet unit; "-- No entries --" (a node whose journal has no kubelet unit) is not the log."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.checks.node import KubeletAnswer

SUITE = suites.load("suites/node/test_node_log_query.py")

SPP_HEADER = "\r\n\r\n   ProviderName: Microsoft-Windows-Security-SPP\r\n\r\n"
JOURNAL_LINE = "2026-11-27T15:50:01.123456+0000 worker-1 kubelet[4242]: I1127 15:50:01.123456 4242 kubelet.go:1] ok\n"
QUERY_ON = {"kubeletconfig": {"enableSystemLogHandler": True, "enableSystemLogQuery": True}}


def run(monkeypatch, target_os: str, body: str, status: int = 200, configz: dict | None = None) -> list[str]:
    gated: list[str] = []
    asked: list[str] = []

    def kubelet_get(api_client, node, path, timeout=60.0):
        asked.append(path)
        return KubeletAnswer(path, status, body, 0.1)

    monkeypatch.setattr(SUITE, "kubelet_get", kubelet_get)
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
    ],
    ids=["no-entries", "no-journal", "no-journalctl"],
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
