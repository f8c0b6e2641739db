"""The memory checks of suites/scheduling/test_compute_limitations.py (issue 18 finding), with fakes.

Before: the Windows pod ran ``$b=[byte[]]::new(400MB); ...; 'allocated'`` and its outcome was 'allocated'
as soon as the log said so; an OutOfMemoryException stops only that statement, so 'allocated' printed
exactly when Windows enforced the limit, and the check failed as a Windows deviation. Now the Windows pod runs
testlimit in upstream's resource-consumer image, and the outcome reads what the pod holds in the kubelet's
stats/summary, as for the Linux control.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import suites
from wincon.checks import memory
from wincon.checks.memory import Peak

compute = suites.load("suites/scheduling/test_compute_limitations.py")

MIB = 1024 * 1024


def pod(phase="Running", terminated=None, annotations=None, reason=None):
    state = SimpleNamespace(terminated=terminated)
    return SimpleNamespace(
        metadata=SimpleNamespace(name="over-limit", annotations=annotations),
        spec=SimpleNamespace(node_name="win-1"),
        status=SimpleNamespace(phase=phase, reason=reason, container_statuses=[SimpleNamespace(state=state)]),
    )


class FakeCore:
    def __init__(self, the_pod, log="allocated\n"):
        self.the_pod, self.log = the_pod, log

    def read_namespaced_pod(self, name, namespace, **_):
        return self.the_pod

    def read_namespaced_pod_log(self, name, namespace, **_):
        return self.log


def kube_with(the_pod):
    return SimpleNamespace(core=FakeCore(the_pod), namespace="sched-x", api_client=object())


@pytest.fixture
def summary(monkeypatch):
    held = {"bytes": 0}

    def kubelet_json(api_client, node, path, timeout=60.0):
        assert path == "stats/summary"
        entry = {
            "podRef": {"name": "over-limit", "namespace": "sched-x"},
            "containers": [{"memory": {"workingSetBytes": held["bytes"]}}],
        }
        return {"pods": [entry]}, 0.01

    monkeypatch.setattr(memory, "kubelet_json", kubelet_json)  # what working_set reads
    return held


def test_a_log_saying_allocated_is_not_an_allocation(summary):
    # Failed before: 'allocated' in the log was the outcome, whatever the pod held.
    summary["bytes"] = 120 * MIB
    assert compute.outcome(kube_with(pod(annotations={"wincon.io/commit-mib": "400"})), "over-limit") is None


def test_what_the_pod_holds_is_the_allocation(summary):
    summary["bytes"] = 399 * MIB
    assert compute.outcome(kube_with(pod(annotations={compute.COMMIT_MIB: "400"})), "over-limit") == "allocated"


def test_the_reading_outcome_takes_is_counted_by_the_checks_peak(summary):
    """The beyond-allocatable check reads stats/summary once a poll: outcome's own reading, counted into its Peak."""
    summary["bytes"] = 120 * MIB
    peak = Peak(None, "win-1", "over-limit", "sched-x")
    assert compute.outcome(kube_with(pod(annotations={compute.COMMIT_MIB: "400"})), "over-limit", peak) is None
    assert peak.bytes == 120 * MIB and peak.readings == 1


def test_an_ended_container_is_its_outcome(summary):
    ended = SimpleNamespace(reason="OOMKilled", exit_code=137)
    result = compute.outcome(kube_with(pod(terminated=ended, annotations={compute.COMMIT_MIB: "400"})), "over-limit")
    assert result == "terminated: OOMKilled (exit 137)"


def test_the_windows_memory_pod_runs_testlimit_in_resource_consumer(monkeypatch):
    seen = {}

    def windows_pod(wincon, name, build, image_key="agnhost", command=None, **kwargs):
        seen.update(image_key=image_key, command=command)
        return {"metadata": {"name": name}, "spec": {}}

    monkeypatch.setattr(compute, "windows_pod", windows_pod)
    body = compute.memory_pod(None, "over-limit", 20348, "win-1", 400, limit="200Mi", request="200Mi")
    assert seen["image_key"] == "resource-consumer"
    assert seen["command"] == ["/bin/testlimit.exe", "-accepteula", "-d", "400", "-e", "0", "300", "-c", "1"]
    assert body["metadata"]["annotations"][compute.COMMIT_MIB] == "400"
    assert not any("allocated" in part for part in seen["command"])
