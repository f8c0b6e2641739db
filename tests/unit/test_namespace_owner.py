"""A dead run's namespaces are reaped even when its pid was reused by another process (pids wrap quickly)."""

import os
import socket
import time
from types import SimpleNamespace

from wincon.cluster import namespaces as ns


def namespace(pid: int, start: str) -> SimpleNamespace:
    annotations = {
        ns.CREATED_AT: str(int(time.time())),
        ns.OWNER_HOST: socket.gethostname(),
        ns.OWNER_PID: str(pid),
        ns.OWNER_START: start,
    }
    labels = {ns.MANAGED_BY: ns.MANAGER, ns.RUN_ID: "other-run"}
    meta = SimpleNamespace(
        name=f"wincon-t-{pid}-{start}", labels=labels, annotations=annotations, creation_timestamp=None
    )
    return SimpleNamespace(metadata=meta, status=None)


def test_a_live_owner_keeps_its_namespace_and_a_reused_pid_does_not():
    me, started = os.getpid(), ns._start_time(os.getpid())
    assert started
    live = namespace(me, started)
    reused = namespace(me, str(int(started) + 1))  # same pid, another process: the owner is gone
    assert ns.stale([live, reused], ttl_seconds=3600, now=time.time()) == [reused.metadata.name]


def test_namespaces_record_their_owners_start_time():
    body = ns.namespace_body("wincon-x", "run", "w0")
    assert body["metadata"]["annotations"][ns.OWNER_START] == ns._start_time(os.getpid())


def cluster_object(name: str, run: str, age: float) -> SimpleNamespace:
    """A cluster-scoped object as the typed client lists it (no status, no owner annotations)."""
    created = SimpleNamespace(timestamp=lambda: time.time() - age)
    labels = {ns.MANAGED_BY: ns.MANAGER, ns.RUN_ID: run}
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name, labels=labels, annotations=None, creation_timestamp=created)
    )


def test_cleanup_reaps_the_cluster_scoped_objects_a_killed_run_left(monkeypatch):
    """A run killed before its teardown left a RuntimeClass and a ClusterTrustBundle (no namespace takes them
    along): past the TTL they are deleted; a young one, the current run's and a kind not served are left."""
    from kubernetes.client.exceptions import ApiException

    kept = {
        "RuntimeClass": [cluster_object("rc-old", "dead-run", 7200), cluster_object("rc-young", "dead-run", 60)],
        "ClusterTrustBundle": [cluster_object("ctb-old", "dead-run", 7200), cluster_object("ctb-now", "this", 7200)],
    }
    deleted: list[str] = []

    def kind(name: str):
        def listed(label_selector: str = "", **_: object) -> SimpleNamespace:
            assert label_selector == ns.SELECTOR
            if name not in kept:
                raise ApiException(status=404)
            return SimpleNamespace(items=kept[name])

        return name, listed, lambda obj, **_: deleted.append(f"{name}/{obj}")

    monkeypatch.setattr(
        ns, "_cluster_kinds", lambda api: [kind("RuntimeClass"), kind("PriorityClass"), kind("ClusterTrustBundle")]
    )
    # (no run here holds a Lease: the TTL decides, as for a run of a wincon older than Leases)
    assert ns.reap_cluster_objects(None, ttl_seconds=3600, current_run="this", runs={}) == [
        "RuntimeClass/rc-old",
        "ClusterTrustBundle/ctb-old",
    ]
    assert deleted == ["RuntimeClass/rc-old", "ClusterTrustBundle/ctb-old"]
