"""Deployments of Windows pods: create, scale, rolling update, rollout status, history and undo."""

from __future__ import annotations

import pytest

from wincon.checks.controllers import (
    CHANGE_CAUSE,
    REVISION,
    REVISION_HISTORY,
    Invariant,
    history,
    pinned,
    scale,
    set_image,
    undo,
)
from wincon.checks.pods import assert_all_ran_on
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import deployment_available, deployment_failure, wait_for

pytestmark = [pytest.mark.controllers]

IIS_PORT = 80
IIS_REPLICAS = 1


def wait_rolled_out(kube, name, done=deployment_available, behaviour=False, describe=""):
    """`kubectl rollout status`: generation observed, every replica updated and available, no old ones left.

    A setup wait by default (the pods' starts are the nodes'); ``behaviour=True`` where ``done`` is the controller's
    own work, which running out of time shows not to hold (a failure, see wincon/cluster/waits.py)."""
    apps = kube.apps
    return wait_for(
        apps.list_namespaced_deployment,
        name,
        done,
        deployment_failure,
        kube.pod_start_timeout,
        describe=describe or f"rollout of deployment {kube.namespace}/{name}",
        behaviour=behaviour,
        namespace=kube.namespace,
    )


def pods_created(want):
    """The controller has observed the Deployment's spec and made ``want`` pods (running or not): its status counts
    the live pods of its ReplicaSets."""

    def done(dep):
        status = dep.status
        if not status or (status.observed_generation or 0) < (dep.metadata.generation or 0):
            return False
        return (status.replicas or 0) == want

    return done


def template_taken_up(dep):
    """The controller has observed the Deployment's current pod template and made a pod of it: the rollout (or the
    undo) has started, whatever the node does with that pod."""
    status = dep.status
    if not status or (status.observed_generation or 0) < (dep.metadata.generation or 0):
        return False
    return (status.updated_replicas or 0) >= 1


def running_images(kube, name):
    return {c.image for p in kube.pods({"app": name}) for c in p.spec.containers}


def agnhost_deployment(wincon, build: int | None, name: str, replicas: int, args: list[str]) -> dict:
    image = wincon.catalog.image("agnhost", "windows", build)
    (manifest,) = pinned("deployment", build, name=name, replicas=replicas, container="main", image=image, port=8080)
    manifest["spec"]["template"]["spec"]["containers"][0]["args"] = args
    return manifest


def web_deployment(wincon, build: int | None) -> dict:
    return agnhost_deployment(wincon, build, "web", 3, ["netexec", "--http-port=8080"])


@pytest.mark.test_id("2181ad08-4842-438e-8308-400e8a6d5544")
@pytest.mark.documents("k8s-windows-guide", "Controllers")
@waves.ahead(web_deployment)
def test_deployment_runs_its_replicas_on_windows_nodes(kube, wincon, build, profile):
    """Deployments are among "the following workload controllers ... supported with Windows containers" (002_8a7e76f95009f44f.txt, Controllers): every replica runs on a Windows node."""
    kube.create(web_deployment(wincon, build))
    dep = wait_rolled_out(kube, "web")
    pods = kube.pods({"app": "web"})
    assert len(pods) == 3 and dep.status.available_replicas == 3
    assert_all_ran_on(pods, profile, "windows", build)


def scaled_deployment(wincon, build: int | None) -> dict:
    return agnhost_deployment(wincon, build, "scaled", 2, ["pause"])


@pytest.mark.test_id("5214dfb7-002d-4cf0-88dc-5e98f2ff9e65")
@pytest.mark.documents("k8s-windows-guide", "Controllers")
@waves.ahead(scaled_deployment)
def test_deployment_scales_up_and_down(kube, wincon, namespace, build, profile):
    """ "Kubernetes controllers handle the desired state of Pods" (002_8a7e76f95009f44f.txt, Controllers): scaling a Windows Deployment to 4 and back to 1 is followed."""
    kube.create(scaled_deployment(wincon, build))
    # The scale-up starts once the controller has made the first 2 pods, not once they run: on Windows nodes the
    # 2 starts then overlap the 2 the scale-up adds (one pod start's wait instead of two in a row). That the
    # 2 first pods become available is test_deployment_runs_its_replicas_on_windows_nodes' evidence; here all 4
    # must be, the 2 first kept (a scale-up adds pods, it replaces none).
    wait_rolled_out(kube, "scaled", done=pods_created(2))
    first = {p.metadata.uid for p in kube.pods({"app": "scaled"})}
    assert len(first) == 2, f"the Deployment reported 2 pods but {len(first)} exist"
    kept = first
    for replicas in (4, 1):
        scale(wincon.api_client, namespace, "Deployment", "scaled", replicas)
        # A behaviour wait: the controller making (or deleting) pods to the new count is the scaling the check
        # observes, so a count never reached is the behaviour not holding (a failure), not the cluster's error.
        # Scaled down: the controller's status counts no terminating pod, so the wait ends once it has deleted
        # them (deletionTimestamp set), not once a Windows node has finished removing them.
        wait_rolled_out(
            kube, "scaled", done=pods_created(replicas), behaviour=True, describe=f"deployment scaled to {replicas}"
        )
        # The added pods' starts are the nodes': a setup wait (an image, a crash: the cluster's own reason).
        dep = wait_rolled_out(kube, "scaled")
        assert dep.spec.replicas == replicas and dep.status.available_replicas == replicas
        pods = kube.pods({"app": "scaled"})  # the live ones: a pod being deleted is not listed
        assert len(pods) == replicas, [p.metadata.name for p in pods]
        uids = {p.metadata.uid for p in pods}
        if replicas > len(kept):
            assert kept <= uids, f"scaling up to {replicas} replaced pods it had: {sorted(kept - uids)}"
        else:
            assert uids <= kept, f"scaling down to {replicas} started new pods: {sorted(uids - kept)}"
        kept = uids
        assert_all_ran_on(pods, profile, "windows", build)


def iis_deployment(wincon, build: int | None) -> dict:
    # One replica, as upstream's RollingUpdate conformance test has it (k8s.io/kubernetes v1.34.4,
    # test/e2e/apps/deployment.go:749): each rollout is then one Windows pod start (maxSurge 1, maxUnavailable 0:
    # the new pod first, the old one deleted once it is available), not one per replica in a row.
    v1 = wincon.catalog.image("iis", "windows", build)
    (manifest,) = pinned(
        "deployment", build, name="iisn", replicas=IIS_REPLICAS, container="iis-container", image=v1, port=IIS_PORT
    )
    return manifest


@pytest.mark.test_id("825b1a7e-229a-4a25-a93c-4ab3a40ebdbb")
@pytest.mark.documents("k8s-windows-intro", "IIS Upgrade/Rollback")
@waves.ahead(iis_deployment)
def test_iis_rolling_update_history_and_undo(kube, wincon, namespace, build, profile):
    """ "kubectl --record ... set image deployment.v1.apps/iisn iis-container=...", "kubectl rollout history", "kubectl rollout undo" (000_4130a90def37a825.txt, IIS Upgrade/Rollback): each step holds for Windows pods."""
    v1 = wincon.catalog.image("iis", "windows", build)
    v2 = wincon.catalog.image("iis-v2", "windows", build)
    kube.create(iis_deployment(wincon, build))
    wait_rolled_out(kube, "iisn")
    assert running_images(kube, "iisn") == {v1}

    # Upgrade: set image with --record; rollout status; at no point fewer than IIS_REPLICAS available
    # (maxUnavailable 0: the old pod goes only once the new one is available).
    cause = f"kubectl set image deployment.v1.apps/iisn iis-container={v2} --record=true"
    set_image(wincon.api_client, namespace, "iisn", "iis-container", v2, change_cause=cause)

    def unavailable(d):
        if d.status and d.status.observed_generation and (d.status.available_replicas or 0) < IIS_REPLICAS:
            return f"only {d.status.available_replicas or 0} of {IIS_REPLICAS} replicas available during the rollout"
        return None

    # A behaviour wait: the controller taking up the new template (a v2 pod made) is the rollout the check observes;
    # never taken up is the behaviour not holding (a failure). The v2 pod's start is the node's: a setup wait.
    # Both watch the availability rule, so every status of the rollout is checked against it.
    started = Invariant(template_taken_up, unavailable)
    wait_rolled_out(kube, "iisn", done=started, behaviour=True, describe="deployment iisn taking up the v2 template")
    availability = Invariant(deployment_available, unavailable, started.violations)
    dep = wait_rolled_out(kube, "iisn", done=availability)
    assert dep.metadata.annotations[REVISION] == "2"
    assert not availability.violations, availability.violations
    assert running_images(kube, "iisn") == {v2}
    assert_all_ran_on(kube.pods({"app": "iisn"}), profile, "windows", build)

    # Rollout history: revision 1 (v1, no cause) and 2 (v2, the recorded command); the old ReplicaSet is kept at 0.
    revisions = history(wincon.api_client, namespace, "iisn")
    assert [(r.number, r.images, r.change_cause) for r in revisions] == [(1, (v1,), None), (2, (v2,), cause)]
    assert revisions[0].replicas == 0 and revisions[1].replicas == IIS_REPLICAS

    # Rollback: undo to the previous revision, as soon as the rollout is observed complete (the old pod's removal
    # is not awaited: a Deployment does not wait for it either); the v1 ReplicaSet becomes revision 3.
    restored = undo(wincon.api_client, namespace, "iisn")
    assert restored == 1
    # As for the upgrade: the controller taking up the restored template is the behaviour, the pod's start is setup.
    wait_rolled_out(kube, "iisn", done=template_taken_up, behaviour=True, describe="deployment iisn rolled back")
    dep = wait_rolled_out(kube, "iisn")
    assert running_images(kube, "iisn") == {v1}
    assert dep.spec.template.spec.containers[0].image == v1
    assert CHANGE_CAUSE not in (dep.metadata.annotations or {}), "undo copies the v1 ReplicaSet's annotations"
    after = history(wincon.api_client, namespace, "iisn")
    assert [(r.number, r.images) for r in after] == [(2, (v2,)), (3, (v1,))]
    assert after[1].uid == revisions[0].uid, "undo must reuse the revision-1 ReplicaSet, not create a new one"
    apps = kube.apps
    reused = call(apps.read_namespaced_replica_set, after[1].replicaset, namespace)
    assert (reused.metadata.annotations or {}).get(REVISION_HISTORY) == "1"
    assert_all_ran_on(kube.pods({"app": "iisn"}), profile, "windows", build)
