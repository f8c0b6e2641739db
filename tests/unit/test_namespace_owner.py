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
