"""ReplicaSet and ReplicationController keep their number of Windows pods, replacing lost ones."""

from __future__ import annotations

import pytest

from wincon.checks.controllers import replicas_ready, scale
from wincon.checks.pods import assert_all_ran_on, eventually
from wincon.cluster.client import call
from wincon.cluster.waits import wait_for

pytestmark = [pytest.mark.controllers]

KINDS = {
    "ReplicaSet": ("replicaset", lambda kube: kube.apps.list_namespaced_replica_set),
    "ReplicationController": (
        "replicationcontroller",
        lambda kube: kube.core.list_namespaced_replication_controller,
    ),
}


def wait_replicas(kube, kind, name, want):
    _, lister = KINDS[kind]
    return wait_for(
        lister(kube),
        name,
        replicas_ready(want),
        None,
        kube.pod_start_timeout,
        describe=f"{kind} {kube.namespace}/{name} with {want} ready replicas",
        namespace=kube.namespace,
    )


@pytest.mark.test_id("ab93f2ee-cbff-4682-82bd-e07178161891")
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.documents("k8s-windows-guide", "Controllers")
def test_replica_controller_replaces_a_deleted_windows_pod_and_scales(
    kube, wincon, namespace, pinned, build, profile, kind
):
    """ReplicaSet and ReplicationController are "supported with Windows containers" (002_8a7e76f95009f44f.txt, Controllers): a deleted pod is replaced, and scaling to 1 is followed."""
    template, _ = KINDS[kind]
    name = template[:11]
    image = wincon.catalog.image("agnhost", "windows", build)
    (manifest,) = pinned(template, name=name, replicas=3, image=image)
    kube.create(manifest)
    wait_replicas(kube, kind, name, 3)
    pods = kube.pods({"app": name})
    assert len(pods) == 3
    assert_all_ran_on(pods, profile, "windows", build)

    victim = pods[0]
    core = kube.core
    call(core.delete_namespaced_pod, victim.metadata.name, namespace, grace_period_seconds=0)

    def replaced():
        pods = kube.pods({"app": name})
        fresh = [p for p in pods if p.metadata.uid != victim.metadata.uid]
        return pods if len(fresh) == 3 and all(p.status.phase == "Running" for p in fresh) else None

    eventually(replaced, wincon.pod_start_timeout, f"{kind} {name} replacing pod {victim.metadata.name}")
    wait_replicas(kube, kind, name, 3)
    after = kube.pods({"app": name})
    uids = {p.metadata.uid for p in after}
    assert len(after) == 3 and victim.metadata.uid not in uids, "the deleted pod must be replaced by a new one"
    assert_all_ran_on(after, profile, "windows", build)

    scale(wincon.api_client, namespace, kind, name, 1)
    wait_replicas(kube, kind, name, 1)
    assert len(kube.pods({"app": name})) == 1
