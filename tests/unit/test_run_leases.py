"""Live runs are never reaped by age alone (issue 42): each run holds a Lease (wincon.cluster.leases) renewed while it
runs, and a start reaps a run's namespaces only once that Lease expired, or its holder is a dead process of this host.

Before this change a start reaped every wincon namespace older than the TTL whatever its owner
(``dead_owner or now - created > ttl_seconds``): a nightly run from another host that had gone on for over an hour
lost its namespaces to a contributor's start. Here the namespaces and Leases are as the typed client returns them
(V1Namespace, V1Lease), the clock is given, and the Lease's life (create, renew, delete) runs against a fake API
that keeps what it was sent."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster import leases
from wincon.cluster import namespaces as ns

HOUR = 3600.0
NOW = 1_800_000_000.0


def namespace(name: str, run: str, created: float, host: str = "nightly-runner-7", pid: int = 4242) -> Any:
    return client.V1Namespace(
        metadata=client.V1ObjectMeta(
            name=name,
            labels={ns.MANAGED_BY: ns.MANAGER, ns.RUN_ID: run},
            annotations={ns.CREATED_AT: str(int(created)), ns.OWNER_HOST: host, ns.OWNER_PID: str(pid)},
        ),
        status=client.V1NamespaceStatus(phase="Active"),
    )


def lease(run: str, renewed: float, duration: int = leases.DURATION_SECONDS, host: str = "nightly-runner-7") -> Any:
    """A Lease as the typed client reads it back (MicroTimes parsed into datetimes)."""
    body = leases.lease_body(run, dt.datetime.fromtimestamp(renewed, dt.UTC), duration)
    body["metadata"]["annotations"][leases.HOLDER_HOST] = host
    body["metadata"]["annotations"][leases.HOLDER_PID] = "4242"
    return client.V1Lease(
        metadata=client.V1ObjectMeta(**{k: v for k, v in body["metadata"].items() if k != "namespace"}),
        spec=client.V1LeaseSpec(
            holder_identity=body["spec"]["holderIdentity"],
            lease_duration_seconds=duration,
            acquire_time=dt.datetime.fromtimestamp(renewed, dt.UTC),
            renew_time=dt.datetime.fromtimestamp(renewed, dt.UTC),
        ),
    )


def runs(*items: Any) -> dict[str, leases.RunLease]:
    out = {}
    for item in items:
        run = leases.from_lease(item)
        assert run is not None
        out[run.run_id] = run
    return out


def test_a_live_run_on_another_host_is_left_alone_however_old():
    """The nightly run started 2 hours ago on another host and renewed its Lease 10 s ago: a start beside it
    (TTL one hour) leaves its namespaces; without a Lease (an older wincon) the TTL still reaps them."""
    nightly = namespace("wincon-dns-nightly-w0-ab12", "nightly", NOW - 2 * HOUR)
    held = runs(lease("nightly", NOW - 10))
    assert ns.stale([nightly], ttl_seconds=int(HOUR), now=NOW, current_run="mine", runs=held) == []
    assert ns.stale([nightly], ttl_seconds=int(HOUR), now=NOW, current_run="mine", runs={}) == [nightly.metadata.name]


def test_a_killed_run_is_reaped_once_its_lease_expires_and_not_before():
    """Killed at NOW: its Lease was last renewed then. A start 60 s later leaves its namespaces (the Lease may
    still be renewed); one after the duration reaps them, young as they are."""
    killed = namespace("wincon-probes-killed-w1-cd34", "killed", NOW - 300)
    held = runs(lease("killed", NOW))
    assert ns.stale([killed], int(HOUR), NOW + 60, "mine", held) == []
    assert ns.stale([killed], int(HOUR), NOW + leases.DURATION_SECONDS + 1, "mine", held) == [killed.metadata.name]


def test_a_lease_held_by_a_dead_process_of_this_host_is_not_waited_for():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = lease("local", NOW)
    mine.metadata.annotations[leases.HOLDER_HOST] = socket.gethostname()
    mine.metadata.annotations[leases.HOLDER_PID] = str(dead.pid)
    mine.metadata.annotations[leases.HOLDER_START] = "1"  # another start time: a reused pid is not the holder
    left = namespace("wincon-x-local-w0-ef56", "local", NOW - 30, host=socket.gethostname(), pid=dead.pid)
    assert ns.stale([left], int(HOUR), NOW + 5, "mine", runs(mine)) == [left.metadata.name]


def test_cleanup_all_takes_other_hosts_runs_but_never_a_live_process_of_this_host():
    other = namespace("wincon-a-other-w0-0001", "other", NOW - 60)
    started = ns._start_time(os.getpid())
    here = namespace("wincon-a-here-w0-0002", "here", NOW - 2 * HOUR, host=socket.gethostname(), pid=os.getpid())
    here.metadata.annotations[ns.OWNER_START] = started
    held = runs(lease("other", NOW - 5))
    assert ns.stale([other, here], int(HOUR), NOW, "mine", held, force=True) == [other.metadata.name]


def test_the_lease_body_is_what_the_api_server_parses():
    body = leases.lease_body("20261128-143432-17a30b", dt.datetime(2026, 11, 28, 14, 34, 32, tzinfo=dt.UTC))
    assert body["spec"]["renewTime"] == "2026-11-28T14:34:32.000000Z"  # six fractional digits, always
    assert body["metadata"]["name"] == "wincon-run-20261128-143432-17a30b"
    assert body["metadata"]["namespace"] == leases.LEASE_NAMESPACE == "wincon-system"
    back = leases.from_lease(lease("r1", NOW - 10))
    assert back is not None and back.expires == NOW - 10 + leases.DURATION_SECONDS


class FakeApi:
    """CoordinationV1Api and CoreV1Api in one: keeps the Leases it was sent, counts renewals."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.namespaces: set[str] = set()
        self.patches = 0

    def read_namespace(self, name: str, **_: Any) -> Any:
        if name not in self.namespaces:
            raise ApiException(status=404)
        return name

    def create_namespace(self, body: dict[str, Any], **_: Any) -> None:
        self.namespaces.add(body["metadata"]["name"])

    def create_namespaced_lease(self, namespace: str, body: dict[str, Any], **_: Any) -> None:
        assert namespace in self.namespaces, "the Lease's namespace must exist first"
        self.leases[body["metadata"]["name"]] = body

    def patch_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> None:
        self.leases[name]["spec"].update(body["spec"])
        self.patches += 1

    def delete_namespaced_lease(self, name: str, namespace: str, **_: Any) -> None:
        if self.leases.pop(name, None) is None:
            raise ApiException(status=404)


def test_the_holder_creates_renews_and_deletes_its_lease(monkeypatch):
    api = FakeApi()
    monkeypatch.setattr(client, "CoordinationV1Api", lambda _: api)
    monkeypatch.setattr(client, "CoreV1Api", lambda _: api)
    holder = leases.LeaseHolder(None, "run-42", duration=3, renew_every=0.05)
    holder.acquire()
    assert "wincon-system" in api.namespaces
    first = api.leases["wincon-run-run-42"]["spec"]["renewTime"]
    deadline = time.monotonic() + 5
    while api.patches < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert api.patches >= 3 and api.leases["wincon-run-run-42"]["spec"]["renewTime"] >= first
    holder.release()
    assert api.leases == {}
    patches = api.patches
    time.sleep(0.2)
    assert api.patches == patches, "no renewal after release"


def test_a_renewal_that_fails_is_tried_again(monkeypatch):
    api = FakeApi()
    failures = {"left": 2}
    patch = api.patch_namespaced_lease

    def flaky(*args: Any, **kwargs: Any) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise ApiException(status=500)
        patch(*args, **kwargs)

    api.patch_namespaced_lease = flaky  # type: ignore[method-assign]
    monkeypatch.setattr(client, "CoordinationV1Api", lambda _: api)
    monkeypatch.setattr(client, "CoreV1Api", lambda _: api)
    holder = leases.LeaseHolder(None, "run-43", duration=3, renew_every=0.05)
    holder.acquire()
    deadline = time.monotonic() + 10
    while api.patches < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    holder.release()
    assert api.patches >= 1


@pytest.mark.parametrize("status", [403])
def test_a_cluster_that_refuses_the_lease_is_said_in_the_header(monkeypatch, status):
    from wincon.session import context

    api = FakeApi()

    def refuse(*_: Any, **__: Any) -> None:
        raise ApiException(status=status, reason="Forbidden")

    api.create_namespaced_lease = refuse  # type: ignore[method-assign]
    monkeypatch.setattr(client, "CoordinationV1Api", lambda _: api)
    monkeypatch.setattr(client, "CoreV1Api", lambda _: api)

    class Config:
        stash: dict[Any, Any] = {}

    ctx = context.WinconContext.__new__(context.WinconContext)
    ctx.config, ctx._api_client, ctx._lease = Config(), object(), None  # type: ignore[assignment]
    ctx.hold_lease()
    assert ctx._lease is None
    assert "no Lease for this run (403 Forbidden in wincon-system)" in Config.stash[context.LEASE_NOTE_KEY]


def test_cleanup_counts_as_live_only_the_runs_it_left_alone(monkeypatch, capsys):
    """A killed run of this host (its holder gone, its Lease not yet expired) is reaped, not counted live."""
    from wincon.cli import main

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = lease("killed", time.time())
    killed.metadata.annotations[leases.HOLDER_HOST] = socket.gethostname()
    killed.metadata.annotations[leases.HOLDER_PID] = str(dead.pid)
    killed.metadata.annotations[leases.HOLDER_START] = "1"
    held = runs(killed, lease("nightly", time.time()))
    monkeypatch.setattr("wincon.cluster.client.connect", lambda *a: None)
    monkeypatch.setattr(leases, "read_runs", lambda api: held)
    monkeypatch.setattr(ns, "reap", lambda *a, **k: [])
    monkeypatch.setattr(ns, "reap_cluster_objects", lambda *a, **k: [])
    monkeypatch.setattr(leases, "delete_expired", lambda api, r, now: [leases.lease_name("killed")])
    assert main(["cleanup"]) == 0
    assert "1 live runs (their Leases renewed) left alone" in capsys.readouterr().out
