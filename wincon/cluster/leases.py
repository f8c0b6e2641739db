"""A run's Lease: proof that the run is alive, so that no other run's start reaps its namespaces by age.

Each run (its pytest controller) holds a ``coordination.k8s.io/v1`` Lease named ``wincon-run-<run id>`` in
``wincon-system`` (the namespace of the runner's RBAC, manifests/rbac/runner.yaml), renewed every
``RENEW_SECONDS`` by a thread of its own and deleted at the run's end. A start (and `wincon cleanup`) reaps a run's
namespaces only when its Lease has expired (``renewTime + leaseDurationSeconds`` passed), or when its holder is a
process of this host that is gone; a live run on another host is never reaped, however old
(wincon.cluster.namespaces.stale). The holder is recorded in annotations (host, pid, process start time) as the
namespaces record their owner.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import threading
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster.client import call
from wincon.cluster.namespaces import _pid_alive, _start_time

LEASE_NAMESPACE = "wincon-system"
LEASE_PREFIX = "wincon-run-"
DURATION_SECONDS = 120  # a killed run's namespaces wait at most this long for the next start to reap them
RENEW_SECONDS = 30  # four renewals per duration: one missed renewal (a slow API server) does not expire it
RUN_ID_LABEL = "wincon.io/run-id"
MANAGED_BY = "app.kubernetes.io/managed-by"
HOLDER_HOST = "wincon.io/holder-host"
HOLDER_PID = "wincon.io/holder-pid"
HOLDER_START = "wincon.io/holder-start"


def lease_name(run_id: str) -> str:
    clean = re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-")
    return (LEASE_PREFIX + clean)[:253].rstrip("-")


def _micro_time(when: dt.datetime) -> str:
    """A MicroTime as the API server parses it (RFC 3339 with exactly six fractional digits)."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_body(run_id: str, now: dt.datetime, duration: int = DURATION_SECONDS) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": lease_name(run_id),
            "namespace": LEASE_NAMESPACE,
            "labels": {MANAGED_BY: "wincon", RUN_ID_LABEL: re.sub(r"[^A-Za-z0-9_.-]", "-", run_id)[:63]},
            "annotations": {
                HOLDER_HOST: socket.gethostname(),
                HOLDER_PID: str(os.getpid()),
                HOLDER_START: _start_time(os.getpid()),
                RUN_ID_LABEL: run_id,
            },
        },
        "spec": {
            "holderIdentity": f"{socket.gethostname()}/{os.getpid()}",
            "leaseDurationSeconds": duration,
            "acquireTime": _micro_time(now),
            "renewTime": _micro_time(now),
        },
    }


@dataclass(frozen=True)
class RunLease:
    """What a reaper needs of a run's Lease: when it expires and who holds it."""

    run_id: str
    expires: float  # epoch seconds
    host: str = ""
    pid: str = ""
    start: str = ""

    def expired(self, now: float) -> bool:
        return now >= self.expires

    def holder_dead_here(self) -> bool:
        """The holder is a process of this host that is gone (or a reused pid): its run ended without a word."""
        return self.host == socket.gethostname() and self.pid.isdigit() and not _pid_alive(int(self.pid), self.start)


def _as_epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def from_lease(lease: Any) -> RunLease | None:
    """A typed-client Lease as a RunLease; None for one that is not a run's (no run id, no times)."""
    meta, spec = lease.metadata, lease.spec
    annotations = meta.annotations or {}
    run_id = annotations.get(RUN_ID_LABEL) or (meta.labels or {}).get(RUN_ID_LABEL)
    renewed = _as_epoch(getattr(spec, "renew_time", None)) or _as_epoch(getattr(spec, "acquire_time", None))
    duration = getattr(spec, "lease_duration_seconds", None)
    if not run_id or renewed is None or not duration:
        return None
    return RunLease(
        run_id=run_id,
        expires=renewed + float(duration),
        host=annotations.get(HOLDER_HOST, ""),
        pid=annotations.get(HOLDER_PID, ""),
        start=annotations.get(HOLDER_START, ""),
    )


def read_runs(api_client: Any) -> dict[str, RunLease]:
    """{run id: its Lease} of every run that holds one; {} where the namespace or the kind is not there.

    A Lease the runner may not read (403) is an error: without it a live run would be reaped by age."""
    api = client.CoordinationV1Api(api_client)
    try:
        items = call(api.list_namespaced_lease, LEASE_NAMESPACE, label_selector=f"{MANAGED_BY}=wincon").items
    except ApiException as exc:
        if exc.status == 404:
            return {}
        raise
    runs = {}
    for lease in items:
        run = from_lease(lease)
        if run is not None:
            runs[run.run_id] = run
    return runs


def delete_expired(api_client: Any, runs: dict[str, RunLease], now: float) -> list[str]:
    """Delete the Leases of runs that expired (their namespaces were just reaped, or none was left)."""
    api = client.CoordinationV1Api(api_client)
    deleted = []
    for run in runs.values():
        if run.expired(now) or run.holder_dead_here():
            try:
                call(api.delete_namespaced_lease, lease_name(run.run_id), LEASE_NAMESPACE, _request_timeout=15)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            deleted.append(lease_name(run.run_id))
    return deleted


class LeaseHolder:
    """Holds this run's Lease: created at the start (with wincon-system when it is missing), renewed by a daemon
    thread, deleted at :meth:`release`. A renewal that fails is retried at the next tick; the Lease expires only
    if every renewal of a whole duration fails."""

    def __init__(
        self, api_client: Any, run_id: str, duration: int = DURATION_SECONDS, renew_every: float = RENEW_SECONDS
    ) -> None:
        self.api = client.CoordinationV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.run_id = run_id
        self.name = lease_name(run_id)
        self.duration = duration
        self.renew_every = renew_every
        self.renewals = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        self._ensure_namespace()
        body = lease_body(self.run_id, dt.datetime.now(dt.UTC), self.duration)
        try:
            call(self.api.create_namespaced_lease, LEASE_NAMESPACE, body, _request_timeout=15)
        except ApiException as exc:
            if exc.status != 409:  # 409: a retried create whose first attempt arrived
                raise
        self._thread = threading.Thread(target=self._renew_loop, name="wincon-lease", daemon=True)
        self._thread.start()

    def _ensure_namespace(self) -> None:
        try:
            call(self.core.read_namespace, LEASE_NAMESPACE, _request_timeout=15)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
        try:  # no managed-by label: the reaper must never take the namespace of every run's Lease
            call(
                self.core.create_namespace,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}},
                _request_timeout=15,
            )
        except ApiException as exc:
            if exc.status != 409:
                raise

    def renew(self) -> None:
        patch = {"spec": {"renewTime": _micro_time(dt.datetime.now(dt.UTC))}}
        call(self.api.patch_namespaced_lease, self.name, LEASE_NAMESPACE, patch, _request_timeout=15)
        self.renewals += 1

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_every):
            try:
                self.renew()
            except Exception:  # the next tick tries again; a whole duration of failures lets it expire
                continue

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=20)
        try:
            call(self.api.delete_namespaced_lease, self.name, LEASE_NAMESPACE, _request_timeout=15)
        except ApiException as exc:
            if exc.status != 404:
                raise
