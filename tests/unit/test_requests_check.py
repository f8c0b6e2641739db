"""suites/scheduling/test_resources.py's requests-vs-allocatable check, run on fakes: what it waits for, in order.
The filler counts once bound, so its start is not waited for (a Windows pod start, p50 30 s under the pod-latency
model); the overflow is still refused for Insufficient cpu, then waited for to run after the filler goes."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from tests.support import suites
from wincon.cluster import waits

RESOURCES = suites.load("suites/scheduling/test_resources.py")
CHECK = RESOURCES.test_requests_are_subtracted_from_allocatable_until_failed_scheduling


class Kube:
    def __init__(self, steps: list[str], refusal: str) -> None:
        self.steps = steps
        self.refusal = refusal
        self.core = SimpleNamespace(delete_namespaced_pod="delete")

    def create(self, body: dict) -> None:
        self.steps.append(f"create {body['metadata']['name']}")

    def wait_pod(self, name: str, done, timeout=None, failure=None):
        what = {waits.pod_running_ready: "running", RESOURCES.pod_unschedulable: "unschedulable"}[done]
        self.steps.append(f"wait {name} {what}")
        return SimpleNamespace(spec=SimpleNamespace(node_name=None if what == "unschedulable" else "win-0"))

    def wait_event(self, name: str, reason: str):
        self.steps.append(f"event {name} {reason}")
        return [SimpleNamespace(message=self.refusal)]


def run(monkeypatch, refusal: str = "0/4 nodes are available: 1 Insufficient cpu.") -> list[str]:
    steps: list[str] = []
    monkeypatch.setattr(RESOURCES, "windows_nodes_of_build", lambda profile, build: [SimpleNamespace(name="win-0")])
    monkeypatch.setattr(RESOURCES, "unrequested_once_settled", lambda api, node, resource, timeout: Decimal("1.5"))

    def scheduled(wincon, namespace, body):
        steps.append(f"scheduled {body['metadata']['name']}")
        return SimpleNamespace(spec=SimpleNamespace(node_name="win-0"))

    monkeypatch.setattr(RESOURCES, "admitted_and_scheduled", scheduled)
    monkeypatch.setattr(
        RESOURCES,
        "windows_pod",
        lambda wincon, name, build, node: {"metadata": {"name": name}, "spec": {"containers": [{}]}},
    )
    monkeypatch.setattr(RESOURCES, "call", lambda fn, name, namespace, **kw: steps.append(f"{fn} {name}"))
    wincon = SimpleNamespace(profile=None, api_client=None, pod_start_timeout=300)
    CHECK(Kube(steps, refusal), wincon, "ns", 17763)
    return steps


def test_the_filler_is_only_bound_and_the_overflow_waited_for_to_run_after_it_goes(monkeypatch):
    assert run(monkeypatch) == [
        "scheduled filler",  # bound: its request counts; its start is not waited for
        "create overflow",
        "wait overflow unschedulable",
        "event overflow FailedScheduling",
        "delete filler",
        "wait overflow running",  # the one pod start the check waits for
    ]


def test_a_refusal_for_another_reason_than_cpu_still_fails(monkeypatch):
    with pytest.raises(AssertionError, match="Insufficient memory"):
        run(monkeypatch, refusal="0/4 nodes are available: 1 Insufficient memory.")
