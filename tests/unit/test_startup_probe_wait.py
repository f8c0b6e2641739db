"""suites/probes/test_probes.py's startup-probe check with fakes: its wait for Ready ends once the kubelet has
restarted the container (its startup probe gave up), saying so with the kubelet's event, instead of waiting
its 120 s (the fault test's closed probe target: 121.7 and 122.2 s before)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster import waits
from wincon.cluster.waits import WorkloadFailed

probes = suites.load("suites/probes/test_probes.py")

REFUSED = (
    'Startup probe failed: Get "http://10.244.2.7:8080/healthz": dial tcp 10.244.2.7:8080: connect: connection refused'
)


def pod(restart_count: int) -> NS:
    return NS(
        metadata=NS(name="startup-httpget"),
        status=NS(container_statuses=[NS(name="main", restart_count=restart_count)]),
    )


@pytest.fixture
def events(monkeypatch):
    found: list[NS] = []
    monkeypatch.setattr(probes, "events_for", lambda api_client, namespace, name, reason: list(found))
    return found


def test_a_container_not_restarted_is_waited_on(events):
    events.append(NS(message=REFUSED, count=2))  # failures below the threshold: the kubelet still waits
    assert probes.startup_probe_gave_up(None, "ns")(pod(0)) is None


def test_a_restarted_container_ends_the_wait_as_a_failure_with_the_kubelets_word(events):
    events.extend([NS(message="Readiness probe failed: x", count=9), NS(message=REFUSED, count=3)])
    reason = probes.startup_probe_gave_up(None, "ns")(pod(1))
    assert reason == (
        "container main restarted 1 time(s) before it was ready: its startup probe gave up (the kubelet: "
        + REFUSED
        + ")"
    )
    # The wait raises it as the workload's failure (a test failure), not the cluster's error.
    with pytest.raises(WorkloadFailed, match="startup probe gave up"):
        waits._raise_for(reason, "pod ns/startup-httpget")


def test_without_the_event_it_still_says_what_it_saw(events):
    reason = probes.startup_probe_gave_up(None, "ns")(pod(2))
    assert reason == (
        "container main restarted 2 time(s) before it was ready: its startup probe gave up "
        "(no Startup probe failed event)"
    )
