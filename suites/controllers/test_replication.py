"""ReplicaSet and ReplicationController keep their number of Windows pods, replacing lost ones."""

from __future__ import annotations

import pytest

from wincon.checks.controllers import pinned, replicas_ready, scale
from wincon.checks.pods import assert_all_ran_on, eventually
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running_ready, wait_for

pytestmark = [pytest.mark.controllers]

KINDS = {
    "ReplicaSet": ("replicaset", lambda kube: kube.apps.list_namespaced_replica_set),
    "ReplicationController": (
        "replicationcontroller",
        lambda kube: kube.core.list_namespaced_replication_controller,
    ),
}


def wait_replicas(kube, kind, name, want, behaviour=False):
    _, lister = KINDS[kind]
    return wait_for(
        lister(kube),
        name,
        replicas_ready(want),
        None,
        kube.pod_start_timeout,
        describe=f"{kind} {kube.namespace}/{name} with {want} ready replicas",
        behaviour=behaviour,
        namespace=kube.namespace,
    )


def created_with_one_ready(want):
    """ReplicaSet or ReplicationController: generation observed, ``want`` pods made, at least one of them ready."""

    def done(obj):
        status = obj.status
        if not status or (status.observed_generation or 0) < (obj.metadata.generation or 0):
            return False
        return (status.replicas or 0) == want and (status.ready_replicas or 0) >= 1

    return done


def first_ready(pods):
    """The first pod (by name) that is Running and Ready, or None."""
    return next((p for p in sorted(pods, key=lambda p: p.metadata.name) if pod_running_ready(p)), None)


def replacements(pods, originals):
    """The pods the controller made after the deletion (uids not among ``originals``), or None while it made none."""
    return [p for p in pods if p.metadata.uid not in originals] or None


def described(pods, originals) -> str:
    """The live pods as the replacement wait saw them last, each original or new, with its phase."""
    listed = [
        f"{p.metadata.name} ({'original' if p.metadata.uid in originals else 'new'}, {p.status.phase})" for p in pods
    ]
    return "live pods: " + (", ".join(listed) or "none")


def replicated(wincon, build: int | None, kind: str) -> dict:
    template, _ = KINDS[kind]
    image = wincon.catalog.image("agnhost", "windows", build)
    (manifest,) = pinned(template, build, name=template[:11], replicas=3, image=image)
    return manifest


@pytest.mark.test_id("ab93f2ee-cbff-4682-82bd-e07178161891")
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.documents("k8s-windows-guide", "Controllers")
@waves.ahead(replicated)
def test_replica_controller_replaces_a_deleted_windows_pod_and_scales(kube, wincon, namespace, build, profile, kind):
    """ReplicaSet and ReplicationController are "supported with Windows containers" (002_8a7e76f95009f44f.txt, Controllers): a deleted pod is replaced, and scaling to 1 is followed."""
    template, _ = KINDS[kind]
    name = template[:11]
    kube.create(replicated(wincon, build, kind))
    # The victim is the first of the 3 pods to run: the controller replaces a lost pod whatever its siblings are
    # doing, so the others' starts need not be awaited before the deletion (they overlap the replacement's).
    _, lister = KINDS[kind]
    wait_for(
        lister(kube),
        name,
        created_with_one_ready(3),
        None,
        kube.pod_start_timeout,
        describe=f"{kind} {namespace}/{name} with 3 pods, one of them ready",
        namespace=namespace,
    )
    first = kube.pods({"app": name})
    assert len(first) == 3, [p.metadata.name for p in first]
    victim = first_ready(first)
    assert victim is not None, "the controller reported a ready replica but no pod is Running and Ready"
    assert_all_ran_on([victim], profile, "windows", build)
    core = kube.core
    call(core.delete_namespaced_pod, victim.metadata.name, namespace, grace_period_seconds=0)

    originals = {p.metadata.uid for p in first}
    # A behaviour wait: the controller making a pod to replace the lost one is what the check observes, so none
    # within the wait is the behaviour observed not to hold (a failure saying which pods it saw), not the cluster's
    # error. The replacement's start is the node's: a setup wait (an image, a crash, Unschedulable: an error with
    # the cluster's own reason), as is the controller's count of 3 ready replicas after it.
    (replacement, *_) = eventually(
        lambda: replacements(kube.pods({"app": name}), originals),
        wincon.pod_start_timeout,
        f"{kind} {name} making a pod to replace the deleted {victim.metadata.name}",
        behaviour=True,
        seen=lambda: described(kube.pods({"app": name}), originals),
    )
    kube.wait_pod(replacement.metadata.name, done=pod_running_ready, failure=pod_failure)
    wait_replicas(kube, kind, name, 3)
    after = kube.pods({"app": name})
    uids = {p.metadata.uid for p in after}
    assert len(after) == 3 and victim.metadata.uid not in uids, "the deleted pod must be replaced by a new one"
    assert uids - originals, "none of the 3 pods is new: the deleted one was not replaced"
    assert_all_ran_on(after, profile, "windows", build)

    scale(wincon.api_client, namespace, kind, name, 1)
    # A behaviour wait: scaling down is the controller's alone (it deletes 2 pods; its count leaves out those being
    # deleted, and the one kept is ready already), so a count that never reaches 1 is the behaviour not holding.
    wait_replicas(kube, kind, name, 1, behaviour=True)
    assert len(kube.pods({"app": name})) == 1
