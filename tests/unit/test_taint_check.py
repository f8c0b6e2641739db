"""suites/scheduling/test_taints_and_runtimeclass.py's taint check, run on fakes: what it waits for, in order. The
behaviour is the scheduler's (bound to the tainted node, or refused), so the tolerant pod's start is not waited
for (a Windows pod start, p50 30 s under the pod-latency model)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import suites

TAINTS = suites.load("suites/scheduling/test_taints_and_runtimeclass.py")
CHECK = TAINTS.test_tainted_windows_node_takes_only_pods_with_the_matching_toleration


class Kube:
    def __init__(self, steps: list[str], refusal: str) -> None:
        self.steps = steps
        self.refusal = refusal

    def create(self, body: dict) -> None:
        self.steps.append(f"create {body['metadata']['name']}")

    def wait_pod(self, name: str, done, timeout=None, failure=None):
        assert done is TAINTS.pod_unschedulable
        self.steps.append(f"wait {name} unschedulable")
        return SimpleNamespace(spec=SimpleNamespace(node_name=None))

    def wait_event(self, name: str, reason: str):
        self.steps.append(f"event {name} {reason}")
        return [SimpleNamespace(message=self.refusal)]


def run(monkeypatch, refusal: str, bound_to: str = "win-0") -> list[str]:
    steps: list[str] = []
    monkeypatch.setattr(TAINTS, "windows_nodes_of_build", lambda profile, build: [SimpleNamespace(name="win-0")])
    monkeypatch.setattr(TAINTS, "node_has_taint", lambda api, node, key: True)
    monkeypatch.setattr(
        TAINTS,
        "windows_pod",
        lambda wincon, name, build, node: {"metadata": {"name": name}, "spec": {"tolerations": []}},
    )

    def scheduled(wincon, namespace, body):
        steps.append(f"scheduled {body['metadata']['name']} tolerating {body['spec']['tolerations'][0]['key']}")
        return SimpleNamespace(spec=SimpleNamespace(node_name=bound_to))

    monkeypatch.setattr(TAINTS, "admitted_and_scheduled", scheduled)
    wincon = SimpleNamespace(profile=None, api_client=None)
    CHECK(Kube(steps, refusal), wincon, "ns", 17763, lambda node, taint: steps.append(f"taint {node} {taint['value']}"))
    return steps


def test_the_tolerant_pod_is_waited_for_until_bound_and_the_other_until_refused(monkeypatch):
    assert run(monkeypatch, "0/4 nodes are available: 1 node(s) had untolerated taint {wincon.io/os: Win1809}") == [
        "taint win-0 Win1809",
        "create no-toleration",
        "scheduled with-toleration tolerating wincon.io/os",  # bound: its start is not waited for
        "wait no-toleration unschedulable",
        "event no-toleration FailedScheduling",
    ]


def test_a_refusal_for_another_reason_or_a_tolerant_pod_elsewhere_still_fails(monkeypatch):
    with pytest.raises(AssertionError, match="Insufficient cpu"):
        run(monkeypatch, "0/4 nodes are available: 1 Insufficient cpu.")
    with pytest.raises(AssertionError):
        run(monkeypatch, "1 node(s) had untolerated taint {wincon.io/os: Win1809}", bound_to="win-1")
