"""wincon/checks/scheduling.py: a node's requested resources as the scheduler counts them, and the reading the checks
that fill a node take once the pods being deleted there have gone (a fake API: no cluster, no real sleep)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.unit import fakes
from wincon.checks import scheduling
from wincon.commandline.errors import InfrastructureError


def pod(name: str, cpu: str | None, phase: str = "Running", deleting: bool = False, init: str | None = None):
    return fakes.requesting_pod(name, "cpu", cpu, phase=phase, deleting=deleting, init=init)


def node_api(monkeypatch, *answers: list) -> fakes.NodePodsApi:
    """The node's pods, answer after answer (the last one repeats), and its allocatable CPU."""
    return fakes.NodePodsApi(monkeypatch, *answers, allocatable={"cpu": "2"}, epoch=500.0)


def test_requested_counts_what_the_scheduler_counts_and_skips_terminal_pods(monkeypatch):
    node_api(
        monkeypatch, [pod("a", "500m"), pod("b", "250m", init="1"), pod("done", "1", phase="Succeeded"), pod("c", None)]
    )
    assert scheduling.requested(None, "win-0", "cpu") == Decimal("1.5")  # 0.5 + max(0.25, init 1) + 0 + 0


def test_terminating_requests_names_the_deleted_pods_that_still_request_the_resource(monkeypatch):
    node_api(monkeypatch, [pod("kept", "500m"), pod("going", "500m", deleting=True), pod("idle", None, deleting=True)])
    assert scheduling.terminating_requests(None, "win-0", "cpu") == ["ns/going"]


def test_the_reading_waits_until_the_deleted_pods_have_gone(monkeypatch):
    going = [pod("kept", "500m"), pod("cpu-0p5", "500m", deleting=True), pod("cpu-500m", "500m", deleting=True)]
    gone = [pod("kept", "500m")]
    api = node_api(monkeypatch, going, going, going, gone)
    # Read at once, it would be 0.5 core: the two deleted pods' 1 core comes free a moment later.
    assert scheduling.unrequested_once_settled(None, "win-0", "cpu", 300) == Decimal("1.5")
    assert api.now == pytest.approx(6.0)  # polled every 2 s until they went


def test_pods_that_never_go_are_the_clusters_error_naming_them(monkeypatch):
    node_api(monkeypatch, [pod("stuck", "1", deleting=True)])
    with pytest.raises(InfrastructureError, match="still being deleted after 60s: ns/stuck"):
        scheduling.unrequested_once_settled(None, "win-0", "cpu", 60)


def test_least_requested_takes_the_node_another_runs_load_does_not_hold(monkeypatch):
    """bench at 86ee81d: two runs' CPU pairs pinned to the first node, one stayed Unschedulable for 91 s. The check's
    node is the one with the most CPU unrequested; on a tie, the first, as before."""
    held = {"worker-0": Decimal("1.5"), "worker-1": Decimal("0.1"), "worker-2": Decimal("0.1")}
    monkeypatch.setattr(scheduling, "allocatable", lambda api, node, resource: Decimal("2"))
    monkeypatch.setattr(scheduling, "requested", lambda api, node, resource: held[node])
    assert scheduling.least_requested(None, ["worker-0", "worker-1", "worker-2"], "cpu") == "worker-1"
    held["worker-1"] = Decimal("1.5")
    assert scheduling.least_requested(None, ["worker-0", "worker-1", "worker-2"], "cpu") == "worker-2"
    held.update({"worker-0": Decimal("0"), "worker-1": Decimal("0"), "worker-2": Decimal("0")})
    assert scheduling.least_requested(None, ["worker-0", "worker-1", "worker-2"], "cpu") == "worker-0"
