"""wincon/checks/scheduling.py: a node's requested resources as the scheduler counts them, and the reading the checks
that fill a node take once the pods being deleted there have gone (a fake API: no cluster, no real sleep)."""

from __future__ import annotations

import time
from decimal import Decimal
from types import SimpleNamespace

import pytest
from kubernetes import client

from wincon.checks import scheduling
from wincon.errors import InfrastructureError


def pod(name: str, cpu: str | None, phase: str = "Running", deleting: bool = False, init: str | None = None):
    def container(request):
        return SimpleNamespace(resources=SimpleNamespace(requests={"cpu": request} if request else None))

    return SimpleNamespace(
        metadata=SimpleNamespace(
            namespace="ns", name=name, deletion_timestamp="2026-11-24T14:00:00Z" if deleting else None
        ),
        status=SimpleNamespace(phase=phase),
        spec=SimpleNamespace(
            containers=[container(cpu)], init_containers=[container(init)] if init else None, overhead=None
        ),
    )


class Api:
    """The node's pods, answer after answer (the last one repeats), and its allocatable CPU."""

    def __init__(self, monkeypatch, *answers: list) -> None:
        self.answers = list(answers)
        self.lists = 0
        self.now = 0.0
        monkeypatch.setattr(time, "sleep", self.sleep)
        monkeypatch.setattr(time, "monotonic", lambda: 500.0 + self.now)
        monkeypatch.setattr(client, "CoreV1Api", lambda api_client: self)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def list_pod_for_all_namespaces(self, field_selector: str, **_):
        assert field_selector == "spec.nodeName=win-0"
        self.lists += 1
        return SimpleNamespace(items=self.answers[min(self.lists, len(self.answers)) - 1])

    def read_node(self, name: str, **_):
        return SimpleNamespace(status=SimpleNamespace(allocatable={"cpu": "2"}))


def test_requested_counts_what_the_scheduler_counts_and_skips_terminal_pods(monkeypatch):
    Api(
        monkeypatch, [pod("a", "500m"), pod("b", "250m", init="1"), pod("done", "1", phase="Succeeded"), pod("c", None)]
    )
    assert scheduling.requested(None, "win-0", "cpu") == Decimal("1.5")  # 0.5 + max(0.25, init 1) + 0 + 0


def test_terminating_requests_names_the_deleted_pods_that_still_request_the_resource(monkeypatch):
    Api(monkeypatch, [pod("kept", "500m"), pod("going", "500m", deleting=True), pod("idle", None, deleting=True)])
    assert scheduling.terminating_requests(None, "win-0", "cpu") == ["ns/going"]


def test_the_reading_waits_until_the_deleted_pods_have_gone(monkeypatch):
    going = [pod("kept", "500m"), pod("cpu-0p5", "500m", deleting=True), pod("cpu-500m", "500m", deleting=True)]
    gone = [pod("kept", "500m")]
    api = Api(monkeypatch, going, going, going, gone)
    # Read at once, it would be 0.5 core: the two deleted pods' 1 core comes free a moment later.
    assert scheduling.unrequested_once_settled(None, "win-0", "cpu", 300) == Decimal("1.5")
    assert api.now == pytest.approx(6.0)  # polled every 2 s until they went


def test_pods_that_never_go_are_the_clusters_error_naming_them(monkeypatch):
    Api(monkeypatch, [pod("stuck", "1", deleting=True)])
    with pytest.raises(InfrastructureError, match="still being deleted after 60s: ns/stuck"):
        scheduling.unrequested_once_settled(None, "win-0", "cpu", 60)
