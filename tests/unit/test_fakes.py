"""tests/unit/fakes.py keeps its promises: a fresh worker starts with none of FlowChecks' records, whatever records
FlowChecks gains, and the fakes answer as their users rely on."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.cluster.waits import WaitTimeout
from wincon.network import flows
from wincon.windows import connectivity


def test_fresh_worker_resets_every_record_flowchecks_keeps_for_its_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    records = {
        name: type(value)
        for name, value in vars(flows.FlowChecks).items()
        if isinstance(value, (set, dict, list)) and not name.startswith("__")
    }
    assert records == dict(fakes.FLOW_RECORDS)  # a record FlowChecks gains must be reset here too
    monkeypatch.setattr(flows.FlowChecks, "proxy_down", {"worker-0": (1.0, "left by an earlier test")})
    calls: list[tuple[str, Any]] = []
    for name in ("attempts", "collect_dial"):
        monkeypatch.setattr(connectivity, name, lambda *a, _name=name, **k: calls.append((_name, k["sleep"])))
    fakes.fresh_worker(monkeypatch)
    assert all(not getattr(flows.FlowChecks, name) for name in records)
    connectivity.attempts()
    connectivity.collect_dial()
    assert [name for name, _ in calls] == ["attempts", "collect_dial"]
    assert all(sleep is not time.sleep and sleep(30) is None for _, sleep in calls)  # retried without sleeping


def test_service_kube_answers_dials_and_curls_by_address_and_counts_service_lists() -> None:
    class Kube(fakes.ServiceKube):
        def dial(self, target: str) -> ExecResult:
            return ExecResult(0, fakes.netexec_answer(f"by-{target}"), "")

    kube = Kube("ns-a", ("10.0.0.50",))
    assert kube.core.list_namespaced_service("ns-a").items[0].spec.cluster_ips == ["10.0.0.50"] and kube.lists == 1
    assert kube.core.read_namespaced_service("kubernetes", "default").spec.ports[0].port == 443
    dial = ["curl", "-s", "http://10.244.1.5:8080/dial?request=hostname&protocol=http&host=10.0.0.50&port=80&tries=1"]
    assert kube.exec(None, dial).stdout == '{"responses": ["by-10.0.0.50"]}'
    with pytest.raises(AssertionError, match="expected only netexec /dial"):
        kube.exec(None, ["curl", "-s", "http://10.0.0.50:80/hostname"])
    assert kube.commands == [dial, ["curl", "-s", "http://10.0.0.50:80/hostname"]]


def test_command_kube_answers_by_command_line_raises_an_exception_answer_and_waits_run_out() -> None:
    kube = fakes.CommandKube({"sh -c true": ExecResult(0, "", ""), "sh -c boom": OSError("stream closed")}, {"p": 1})
    assert kube.exec(None, ["sh", "-c", "true"]).exit_code == 0
    with pytest.raises(OSError, match="stream closed"):
        kube.exec(None, ["sh", "-c", "boom"])
    assert kube.ran == ["sh -c true", "sh -c boom"]
    assert kube.wait_pod("p", lambda pod: pod == 1) == 1
    with pytest.raises(WaitTimeout, match="pod ns/p: Ready: not observed"):
        kube.wait_pod("p", lambda pod: False, describe="Ready")


def test_node_pods_api_answers_in_order_on_its_own_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    first, last = [fakes.requesting_pod("a", "cpu", "1", deleting=True)], []
    api = fakes.NodePodsApi(monkeypatch, first, last, allocatable={"cpu": "2"}, epoch=500.0)
    core = client.CoreV1Api(None)
    assert core.list_pod_for_all_namespaces(field_selector="spec.nodeName=win-0").items == first
    time.sleep(3)
    assert time.monotonic() == 503.0 and api.now == 3
    assert [core.list_pod_for_all_namespaces(field_selector="spec.nodeName=win-0").items for _ in "xy"] == [last, last]
    assert api.lists == 3 and core.read_node("win-0").status.allocatable == {"cpu": "2"}
    assert first[0].metadata.deletion_timestamp is not None
    assert first[0].spec.containers[0].resources.requests == {"cpu": "1"}
