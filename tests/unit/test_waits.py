"""Waits: fail fast with the cluster's own reason (controllers included), and the two kinds of timeout."""

from __future__ import annotations

import time
from types import SimpleNamespace as NS

import pytest

from wincon.cluster import waits
from wincon.cluster.waits import BehaviourNotObserved, WaitTimeout, WorkloadFailed, hint_for, wait_for
from wincon.commandline.errors import InfrastructureError


def deployment(ready: int = 0, want: int = 2) -> NS:
    return NS(
        metadata=NS(name="web", generation=1),
        spec=NS(replicas=want, selector=NS(match_labels={"app": "web"})),
        status=NS(
            observed_generation=1,
            updated_replicas=want,
            available_replicas=ready,
            replicas=want,
            conditions=[],
            phase=None,
            container_statuses=None,
        ),
    )


def pod(name: str, *, unschedulable: str = "", waiting: str = "", phase: str = "Pending") -> NS:
    conditions = (
        [NS(type="PodScheduled", status="False", reason="Unschedulable", message=unschedulable)]
        if unschedulable
        else []
    )
    statuses = (
        [NS(name="main", state=NS(waiting=NS(reason=waiting, message="back-off"), terminated=None))] if waiting else []
    )
    return NS(
        metadata=NS(name=name, deletion_timestamp=None),
        status=NS(
            phase=phase,
            reason=None,
            message=None,
            conditions=conditions,
            init_container_statuses=None,
            container_statuses=statuses,
        ),
    )


class FakeApps:
    def __init__(self, obj: NS) -> None:
        self.api_client = object()
        self.obj = obj

    def list_namespaced_deployment(self, namespace: str, **kwargs: object) -> NS:
        return NS(items=[self.obj], metadata=NS(resource_version="1"))


class QuietWatch:
    """A watch whose stream ends at once with no event, as a watch on an object that does not change."""

    def stream(self, *args: object, **kwargs: object) -> list:
        time.sleep(0.01)
        return []

    def stop(self) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch):
    pods: list[NS] = []
    core = NS(list_namespaced_pod=lambda namespace, label_selector="": NS(items=list(pods)))
    monkeypatch.setattr(waits.client, "CoreV1Api", lambda api_client: core)
    monkeypatch.setattr(waits.watch, "Watch", QuietWatch)
    return pods


def test_a_rollout_with_an_unschedulable_replica_fails_at_once_with_the_schedulers_message(cluster):
    """It used to wait the whole pod start timeout, then blame image pulls."""
    cluster.append(pod("web-1", unschedulable="0/3 nodes are available: 3 node(s) had untolerated taint {gpu: x}"))
    apps = FakeApps(deployment())
    start = time.monotonic()
    with pytest.raises(InfrastructureError, match="pod web-1: Unschedulable: 0/3 nodes.*untolerated taint") as err:
        wait_for(apps.list_namespaced_deployment, "web", waits.deployment_available, timeout=600, namespace="ns")
    assert time.monotonic() - start < 5
    assert "untaint" in err.value.fix and "prepull" not in err.value.fix


def test_a_rollout_whose_replica_cannot_pull_names_the_image_fix(cluster):
    cluster.append(pod("web-0", waiting="ImagePullBackOff"))
    with pytest.raises(InfrastructureError, match="ImagePullBackOff in container main") as err:
        wait_for(FakeApps(deployment()).list_namespaced_deployment, "web", waits.deployment_available, namespace="ns")
    assert "--image-repo-list" in err.value.fix


def test_a_rollout_whose_replica_crashes_is_a_workload_failure(cluster):
    cluster.append(pod("web-0", waiting="CrashLoopBackOff", phase="Running"))
    with pytest.raises(WorkloadFailed, match="CrashLoopBackOff"):
        wait_for(FakeApps(deployment()).list_namespaced_deployment, "web", waits.deployment_available, namespace="ns")


def test_a_pod_whose_post_start_hook_failed_ends_its_wait_at_once():
    """The kubelet's waiting reason while it kills a container whose hook failed: before, the wait went on
    until CrashLoopBackOff or, where the hook's dial hung, until the timeout (an infrastructure error)."""
    hooked = pod("hooked", waiting="PostStartHookError", phase="Running")
    assert "PostStartHookError" in (waits.pod_failure(hooked) or "")
    with pytest.raises(WorkloadFailed, match="PostStartHookError"):
        waits._raise_for(waits.pod_failure(hooked) or "", "pod ns/hooked")


def test_finished_controller_pods_do_not_end_the_wait(cluster):
    """A Job's failed attempt is the controller's business: the wait goes on to its own end."""
    cluster.append(pod("job-0", phase="Failed"))
    with pytest.raises(WaitTimeout):
        wait_for(
            FakeApps(deployment()).list_namespaced_deployment,
            "web",
            waits.deployment_available,
            timeout=0.2,
            namespace="ns",
        )


def test_a_setup_wait_times_out_as_an_infrastructure_error_and_a_behaviour_wait_as_a_failure(cluster):
    apps = FakeApps(deployment(ready=1))
    with pytest.raises(WaitTimeout):
        wait_for(apps.list_namespaced_deployment, "web", waits.deployment_available, timeout=0.2, namespace="ns")
    with pytest.raises(BehaviourNotObserved, match="scaling up: not observed within 0s"):
        wait_for(
            apps.list_namespaced_deployment,
            "web",
            waits.deployment_available,
            timeout=0.2,
            describe="scaling up",
            behaviour=True,
            namespace="ns",
        )
    assert not issubclass(WaitTimeout, AssertionError)


@pytest.mark.parametrize(
    ("reason", "fix"),
    [
        ("Unschedulable: 0/2 nodes are available", "untaint"),
        ("ErrImagePull in container main: not found", "--image-repo-list"),
        ("ProgressDeadlineExceeded: ReplicaSet has timed out", "rollout stalled"),
    ],
)
def test_each_reason_gets_its_own_fix(reason, fix):
    assert fix in hint_for(reason)


class RecordingWatch:
    """A quiet watch that records the window each stream asked the API server for."""

    windows: list[int] = []

    def stream(self, *args: object, **kwargs: object) -> list:
        RecordingWatch.windows.append(int(kwargs["timeout_seconds"]))  # type: ignore[call-overload]
        return []

    def stop(self) -> None:
        pass


def test_a_failure_outside_the_object_is_seen_within_the_recheck_not_the_watchs_minute(monkeypatch):
    """The HPA's wait: its failure also reads the metrics APIService, which goes unavailable without an event on
    the HPA. Before ``recheck`` the watch on an unchanged HPA ran its full 60 s before the failure was read again
    (the metrics-server fault errored in 61 s)."""
    hpa = NS(metadata=NS(name="loaded"), spec=NS(), status=NS(conditions=[]))
    outside = {"available": True}
    RecordingWatch.windows = []
    monkeypatch.setattr(waits.watch, "Watch", RecordingWatch)
    monkeypatch.setattr(waits, "_controller_pods_check", lambda list_fn, namespace: None)

    def list_hpa(namespace: str, **kwargs: object) -> NS:
        if len(RecordingWatch.windows) == 2:
            outside["available"] = False  # the component behind the object dies while the wait goes on
        return NS(items=[hpa], metadata=NS(resource_version="1"))

    def failure(obj: NS) -> str | None:
        return None if outside["available"] else "the APIService v1beta1.metrics.k8s.io is not available"

    with pytest.raises(InfrastructureError, match="scaling up: the APIService .* is not available"):
        wait_for(list_hpa, "loaded", lambda h: False, failure, 300, "scaling up", True, recheck=10, namespace="ns")
    assert RecordingWatch.windows == [10, 10]
    # Without it, the same wait asks for the watch's minute each time (the window nothing could see through).
    RecordingWatch.windows, outside["available"] = [], True
    with pytest.raises(InfrastructureError):
        wait_for(list_hpa, "loaded", lambda h: False, failure, 300, "scaling up", True, namespace="ns")
    assert RecordingWatch.windows == [60, 60]


CAPACITY = "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector."
CLAIM = '0/4 nodes are available: persistentvolumeclaim "data" not found.'


@pytest.fixture
def capacity(monkeypatch):
    """A short grace, and no pod remembered from another test."""
    monkeypatch.setattr(waits, "_capacity_since", {})
    monkeypatch.setattr(waits, "CAPACITY_GRACE", 0.3)
    RecordingWatch.windows = []
    monkeypatch.setattr(waits.watch, "Watch", RecordingWatch)


def pod_listing(states: list[NS]):
    """A pod list function returning the next state each time (the last one for ever)."""

    def list_pod(namespace: str, **kwargs: object) -> NS:
        current = states.pop(0) if len(states) > 1 else states[0]
        return NS(items=[current], metadata=NS(resource_version="1"))

    list_pod.__name__ = "list_namespaced_pod"
    return list_pod


def scheduled(name: str) -> NS:
    placed = pod(name, phase="Running")
    placed.spec = NS(node_name="worker-0")
    return placed


@pytest.mark.parametrize(
    "message",
    [
        CAPACITY,
        "0/2 nodes are available: 2 Too many pods.",
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) had untolerated taint {os: windows}.",
    ],
)
def test_an_unschedulable_pod_waiting_only_for_capacity_is_given_the_grace_first(capacity, message):
    """Another run's pods on the same cluster hold a node's CPU for a while (the flake benchmark: the CPU check's
    pod, pinned to a node the load run had filled, erred at once "1 Insufficient cpu")."""
    waiting = pod("pinned", unschedulable=message)
    waiting.spec = NS(node_name=None)
    assert waits.pod_failure(waiting) is None  # within the grace
    time.sleep(0.35)
    reason = waits.pod_failure(waiting) or ""
    assert reason.startswith("Unschedulable for 0 s") and "still held by other pods" in reason and message in reason
    assert "untaint" in hint_for(reason)


@pytest.mark.parametrize("message", ["capacity", "claim"])
def test_a_pod_waiting_for_capacity_or_its_claim_is_read_again_every_few_seconds_and_scheduled_once_it_can_be(
    capacity, message
):
    """The claim: make fresh-check at cd05e04, where the PVC check created its claim, then its pod, and the scheduler
    had not seen the claim yet: the wait ended at once as an infrastructure error. The scheduler tries again once it
    sees the claim."""
    waiting = pod("pinned", unschedulable=CAPACITY if message == "capacity" else CLAIM)
    waiting.spec = NS(node_name=None)
    placed = scheduled("pinned")
    got = wait_for(
        pod_listing([waiting, waiting, placed]), "pinned", waits.pod_running, waits.pod_failure, 60, namespace="ns"
    )
    assert got is placed
    assert RecordingWatch.windows == [waits.CAPACITY_RECHECK, waits.CAPACITY_RECHECK]


def test_a_pod_that_never_gets_the_capacity_ends_after_the_grace_with_the_schedulers_message(capacity):
    waiting = pod("pinned", unschedulable=CAPACITY)
    waiting.spec = NS(node_name=None)
    start = time.monotonic()
    with pytest.raises(InfrastructureError, match="pod ns/pinned: Unschedulable for .* s.*1 Insufficient cpu") as err:
        wait_for(
            pod_listing([waiting]), "pinned", waits.pod_running, waits.pod_failure, 60, "pod ns/pinned", namespace="ns"
        )
    assert 0.3 <= time.monotonic() - start < 5
    assert not isinstance(err.value, WaitTimeout)


def test_an_unschedulable_pod_for_any_other_reason_ends_its_wait_at_once(capacity):
    """Taints, selectors and affinity free nothing by waiting: the first Unschedulable ends the wait, as before."""
    waiting = pod(
        "no-such-build", unschedulable="0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
    )
    waiting.spec = NS(node_name=None)
    with pytest.raises(InfrastructureError, match="Unschedulable: 0/4 nodes"):
        wait_for(pod_listing([waiting]), "no-such-build", waits.pod_running, waits.pod_failure, 60, namespace="ns")
    assert RecordingWatch.windows == []


def test_a_claim_that_never_appears_still_ends_the_wait_with_the_schedulers_message(capacity, monkeypatch):
    """The counter-case of the claim's grace: after CLAIM_GRACE the same message is the reason, as it was at once."""
    monkeypatch.setattr(waits, "CLAIM_GRACE", 0.3)
    waiting = pod("pvc-user", unschedulable=CLAIM)
    waiting.spec = NS(node_name=None)
    assert waits.pod_failure(waiting) is None  # within the grace
    time.sleep(0.35)
    reason = waits.pod_failure(waiting) or ""
    assert reason.startswith("Unschedulable for 0 s, its claim still not found") and CLAIM in reason
    assert "untaint" in hint_for(reason)
    with pytest.raises(InfrastructureError, match="its claim still not found by the scheduler"):
        wait_for(pod_listing([waiting]), "pvc-user", waits.pod_running, waits.pod_failure, 60, namespace="ns")
