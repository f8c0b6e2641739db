"""The controllers checks on fakes: where the controller's own work never happens (no replacement made, a scale never
followed, a new template never taken up, no next StatefulSet member made), the check fails (BehaviourNotObserved);
where the node's part (a pod's start) never ends, it stays the cluster's error (WaitTimeout). Before, every one of
these waits was a setup wait: the controller not doing its work ended as an infrastructure error.

The fake ``wait_for`` ends as the real one does (wincon/cluster/waits.py, tested in test_waits.py): the first known
state of the object that ``done`` accepts, else BehaviourNotObserved for a behaviour wait and WaitTimeout for a setup
wait; it records which kind each wait was."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.cluster.waits import BehaviourNotObserved, WaitTimeout

REPLICATION = suites.load("suites/controllers/test_replication.py")
DEPLOYMENT = suites.load("suites/controllers/test_deployment.py")
STATEFULSET = suites.load("suites/controllers/test_statefulset.py")


def pod(name: str, uid: str, ready: bool = True, image: str = "agnhost") -> Any:
    return NS(
        metadata=NS(name=name, uid=uid, deletion_timestamp=None, creation_timestamp=uid),
        spec=NS(node_name="win-0", hostname=name, subdomain=name.rsplit("-", 1)[0], containers=[NS(image=image)]),
        status=NS(
            phase="Running" if ready else "Pending",
            conditions=[NS(type="Ready", status="True" if ready else "False")],
            container_statuses=[],
        ),
    )


def controller(generation: int, replicas: int, ready: int, updated: int | None = None, spec: int | None = None):
    status = NS(
        observed_generation=generation,
        replicas=replicas,
        ready_replicas=ready,
        available_replicas=ready,
        updated_replicas=replicas if updated is None else updated,
        conditions=[],
    )
    return NS(
        metadata=NS(generation=generation, annotations={}),
        spec=NS(replicas=replicas if spec is None else spec),
        status=status,
    )


class Cluster:
    """The fakes' shared state: the controller's known states and the live pods (each a list, or a function of the
    steps so far), the waits asked for (name, behaviour), the steps taken."""

    def __init__(self, states, pods, pod_states: dict[str, list[Any]] | None = None) -> None:
        self.states, self.live, self.pod_states = states, pods, pod_states or {}
        self.waits: list[tuple[str, bool]] = []
        self.steps: list[str] = []

    def wait_for(self, list_fn, name, done, failure=None, timeout=300.0, describe="", behaviour=False, **kw):
        self.waits.append((describe or name, behaviour))
        for state in self.states(self.steps) if callable(self.states) else self.states:
            if done(state):
                return state
        if behaviour:
            raise BehaviourNotObserved(f"{describe or name}: not observed")
        raise WaitTimeout(f"{describe or name} did not become ready")


class Kube:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.namespace, self.pod_start_timeout = "ns", 300
        self.apps = NS(
            list_namespaced_replica_set="rs", list_namespaced_deployment="dep", list_namespaced_stateful_set="sts"
        )
        self.core = NS(
            list_namespaced_replication_controller="rc", delete_namespaced_pod="delete", read_namespaced_pod="read"
        )

    def create(self, body: dict) -> None:
        self.cluster.steps.append(f"create {body['metadata']['name']}")

    def pods(self, labels: dict[str, str]) -> list[Any]:
        return self.cluster.live(self.cluster.steps)

    def wait_pod(self, name, done, failure=None, timeout=None, behaviour=False, describe=""):
        self.cluster.waits.append((describe or f"pod {name}", behaviour))
        for state in self.cluster.pod_states.get(name, []):
            if done(state):
                return state
        if behaviour:
            raise BehaviourNotObserved(f"{describe}: not observed")
        raise WaitTimeout(f"pod {name} did not become ready")


def manifest(name: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"template": {"spec": {"containers": [{}]}}}}


def wincon() -> Any:
    return NS(catalog=NS(image=lambda key, os_name, build: key), api_client=None, pod_start_timeout=6, profile=None)


# --------------------------------------------------------------------------- ReplicaSet / ReplicationController


def replication(monkeypatch, states: list[Any], after_delete: list[Any], pod_states=None) -> Cluster:
    originals = [pod("replicaset-a", "a"), pod("replicaset-b", "b"), pod("replicaset-c", "c")]

    def live(steps):
        if "scale 1" in steps:
            return [originals[1]]
        return after_delete if "delete replicaset-a" in steps else originals

    cluster = Cluster(states, live, pod_states)
    monkeypatch.setattr(REPLICATION, "wait_for", cluster.wait_for)
    monkeypatch.setattr(REPLICATION, "assert_all_ran_on", lambda pods, profile, os_name, build: None)
    monkeypatch.setattr(REPLICATION, "call", lambda fn, name, namespace, **kw: cluster.steps.append(f"{fn} {name}"))
    monkeypatch.setattr(REPLICATION, "scale", lambda api, namespace, kind, name, n: cluster.steps.append(f"scale {n}"))
    monkeypatch.setattr(REPLICATION, "pinned", lambda template, build, **kw: (manifest(template),))
    REPLICATION.test_replica_controller_replaces_a_deleted_windows_pod_and_scales(
        Kube(cluster), wincon(), "ns", 17763, None, "ReplicaSet"
    )
    return cluster


REPLACED = [pod("replicaset-b", "b"), pod("replicaset-c", "c"), pod("replicaset-d", "d", ready=False)]


def test_a_replacement_made_then_awaited_to_run_then_the_scale_down_observed(monkeypatch, clock):
    cluster = replication(
        monkeypatch,
        [controller(1, 3, 3), controller(2, 1, 1)],
        REPLACED,
        {"replicaset-d": [pod("replicaset-d", "d")]},
    )
    assert [behaviour for _, behaviour in cluster.waits] == [False, False, False, True]
    assert cluster.waits[1] == ("pod replicaset-d", False)  # the replacement's start: the node's, a setup wait
    assert cluster.steps[-1] == "scale 1"


def test_no_replacement_made_is_the_behaviour_not_holding(monkeypatch, clock):
    """Before: the replacement wait was a setup wait, InfrastructureError ('not observed within 6s')."""
    survivors = REPLACED[:2]
    with pytest.raises(BehaviourNotObserved, match=r"live pods: replicaset-b \(original, Running\), replicaset-c"):
        replication(monkeypatch, [controller(1, 3, 3)], survivors)


def test_a_replacement_that_never_runs_stays_the_clusters_error(monkeypatch, clock):
    with pytest.raises(WaitTimeout, match="replicaset-d"):
        replication(monkeypatch, [controller(1, 3, 3)], REPLACED, {"replicaset-d": [REPLACED[2]]})


def test_a_scale_down_never_followed_is_the_behaviour_not_holding(monkeypatch, clock):
    """Before: the scale-down wait was a setup wait (WaitTimeout, an error)."""
    with pytest.raises(BehaviourNotObserved, match="1 ready replicas"):
        replication(monkeypatch, [controller(1, 3, 3)], REPLACED, {"replicaset-d": [pod("replicaset-d", "d")]})


# --------------------------------------------------------------------------- Deployment: scale and rolling update


def deployment_scale(monkeypatch, *states: list[Any]) -> Cluster:
    """``states[n]``: the Deployment's states after the n-th scale."""
    two = [pod("scaled-a", "a"), pod("scaled-b", "b")]
    four = two + [pod("scaled-c", "c"), pod("scaled-d", "d")]

    def scales(steps):
        return sum(step.startswith("scale") for step in steps)

    cluster = Cluster(lambda steps: states[scales(steps)], lambda steps: [two, four, two[:1]][scales(steps)])
    monkeypatch.setattr(DEPLOYMENT, "wait_for", cluster.wait_for)
    monkeypatch.setattr(DEPLOYMENT, "assert_all_ran_on", lambda pods, profile, os_name, build: None)
    monkeypatch.setattr(DEPLOYMENT, "scale", lambda api, namespace, kind, name, n: cluster.steps.append(f"scale {n}"))
    monkeypatch.setattr(DEPLOYMENT, "pinned", lambda template, build, **kw: (manifest(kw["name"]),))
    DEPLOYMENT.test_deployment_scales_up_and_down(Kube(cluster), wincon(), "ns", 17763, None)
    return cluster


def test_the_scaling_is_a_behaviour_wait_and_the_added_pods_start_a_setup_wait(monkeypatch):
    cluster = deployment_scale(monkeypatch, [controller(1, 2, 0)], [controller(2, 4, 4)], [controller(3, 1, 1)])
    assert [behaviour for _, behaviour in cluster.waits] == [False, True, False, True, False]


def test_a_scale_up_never_followed_is_the_behaviour_not_holding(monkeypatch):
    """Before: only the rollout wait (a setup wait) followed the scale: WaitTimeout, an error."""
    with pytest.raises(BehaviourNotObserved, match="deployment scaled to 4"):
        deployment_scale(monkeypatch, [controller(1, 2, 0)], [controller(2, 2, 2, spec=4)])


def test_added_pods_that_never_start_stay_the_clusters_error(monkeypatch):
    with pytest.raises(WaitTimeout, match="rollout of deployment"):
        deployment_scale(monkeypatch, [controller(1, 2, 0)], [controller(2, 4, 2)])


def test_a_new_template_never_taken_up_is_the_behaviour_not_holding(monkeypatch):
    """Before: the rollout after set image was a setup wait only (WaitTimeout, an error)."""
    rollout = [controller(2, 1, 1, updated=0)]  # generation 2 observed, no pod of it made
    cluster = Cluster(
        lambda steps: rollout if "set image" in steps else [controller(1, 1, 1)],
        lambda steps: [pod("iisn-a", "a", image="iis")],
    )
    monkeypatch.setattr(DEPLOYMENT, "wait_for", cluster.wait_for)
    monkeypatch.setattr(DEPLOYMENT, "set_image", lambda *a, **kw: cluster.steps.append("set image"))
    monkeypatch.setattr(DEPLOYMENT, "pinned", lambda template, build, **kw: (manifest(kw["name"]),))
    with pytest.raises(BehaviourNotObserved, match="taking up the v2 template"):
        DEPLOYMENT.test_iis_rolling_update_history_and_undo(Kube(cluster), wincon(), "ns", 17763, None)
    assert cluster.steps == ["create iisn", "set image"]


def test_template_taken_up_needs_the_new_generation_observed_and_a_pod_of_it():
    done = DEPLOYMENT.template_taken_up
    assert done(controller(2, 2, 1, updated=1))
    assert not done(controller(2, 1, 1, updated=0))
    stale = controller(2, 1, 1, updated=1)
    stale.metadata.generation = 3  # a spec the controller has not observed yet
    assert not done(stale)


# --------------------------------------------------------------------------- StatefulSet


class History:
    def __init__(self, *args) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def events(self, until):
        return [(kind, f"web-{i}", ready) for i in range(3) for kind, ready in (("ADDED", False), ("MODIFIED", True))]


def statefulset_order(monkeypatch, made: list[Any]) -> None:
    cluster = Cluster([], lambda steps: made)
    monkeypatch.setattr(STATEFULSET, "wait_for", cluster.wait_for)
    monkeypatch.setattr(STATEFULSET, "PodHistory", History)
    monkeypatch.setattr(STATEFULSET, "pinned", lambda template, build, **kw: [manifest(kw["name"])])
    STATEFULSET.test_statefulset_starts_pods_in_order_with_stable_names(Kube(cluster), wincon(), "ns", 17763, None)


def test_no_next_member_made_after_the_others_are_ready_is_the_behaviour_not_holding(monkeypatch):
    """Before: the ordered start's wait ran out as WaitTimeout whatever the StatefulSet had done."""
    with pytest.raises(BehaviourNotObserved, match="made only web-0, web-1, all Running and Ready, and no web-2"):
        statefulset_order(monkeypatch, [pod("web-0", "0"), pod("web-1", "1")])


def test_a_member_still_starting_when_the_wait_ran_out_stays_the_clusters_error(monkeypatch):
    with pytest.raises(WaitTimeout):
        statefulset_order(monkeypatch, [pod("web-0", "0"), pod("web-1", "1", ready=False)])


def statefulset_recreate(monkeypatch, db0: list[Any]) -> Cluster:
    cluster = Cluster([controller(1, 1, 1)], lambda steps: [], {"db-0": db0})
    monkeypatch.setattr(STATEFULSET, "wait_for", cluster.wait_for)
    monkeypatch.setattr(STATEFULSET, "assert_all_ran_on", lambda pods, profile, os_name, build: None)
    old = pod("db-0", "old")
    monkeypatch.setattr(STATEFULSET, "call", lambda fn, name, namespace, **kw: old)
    monkeypatch.setattr(STATEFULSET, "pinned", lambda template, build, **kw: [manifest(kw["name"])])
    STATEFULSET.test_statefulset_recreates_a_deleted_pod_under_the_same_name(Kube(cluster), wincon(), "ns", 17763, None)
    return cluster


def test_a_member_made_anew_is_a_behaviour_wait_and_its_start_a_setup_wait(monkeypatch):
    cluster = statefulset_recreate(monkeypatch, [pod("db-0", "old"), pod("db-0", "new")])
    assert [behaviour for _, behaviour in cluster.waits] == [False, True, False]


def test_no_member_made_anew_is_the_behaviour_not_holding(monkeypatch):
    """Before: one setup wait for a new, running db-0: WaitTimeout, an error."""
    with pytest.raises(BehaviourNotObserved, match="db-0 made anew"):
        statefulset_recreate(monkeypatch, [pod("db-0", "old")])


def test_a_member_made_anew_that_never_runs_stays_the_clusters_error(monkeypatch):
    with pytest.raises(WaitTimeout):
        statefulset_recreate(monkeypatch, [pod("db-0", "old"), pod("db-0", "new", ready=False)])


# --------------------------------------------------------------------------- CronJob

JOBS = suites.load("suites/controllers/test_jobs.py")


def cronjob(monkeypatch, states: list[Any]) -> Cluster:
    cluster = Cluster(states, lambda steps: [])
    monkeypatch.setattr(JOBS, "wait_for", cluster.wait_for)
    kube = Kube(cluster)
    kube.batch = NS(list_namespaced_cron_job="cron")
    JOBS.test_cronjob_fires_on_schedule_and_its_job_completes(
        kube, wincon(), "ns", lambda template, **kw: (manifest(kw["name"]),), 17763, None, no_gate, "windows"
    )
    return cluster


def no_gate(what, where=None, pod_node=None):
    pass


def cron(scheduled: str | None, succeeded: str | None) -> Any:
    return NS(status=NS(last_schedule_time=scheduled, last_successful_time=succeeded))


def test_a_cronjob_that_never_fires_is_the_behaviour_not_holding(monkeypatch):
    """Before: one setup wait for the firing and the Job's completion together: WaitTimeout, an error."""
    with pytest.raises(BehaviourNotObserved, match="every-minute firing"):
        cronjob(monkeypatch, [cron(None, None)])


def test_a_fired_cronjob_whose_job_never_completes_stays_the_clusters_error(monkeypatch):
    with pytest.raises(WaitTimeout, match="started, complete"):
        cronjob(monkeypatch, [cron("12:00:00", None)])
