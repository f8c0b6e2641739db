"""Namespaces: one per test module (or test), unique across xdist workers, always cleaned up.

Each namespace is labelled with the run id and worker and annotated with its creation time and owner
(host and pid), so leftovers of a dead run are found and reaped: at the start of the next run, and by
`wincon cleanup`. A run that holds a Lease (wincon.cluster.leases) is reaped only once its Lease expired (or its
holder died on this host), never by age.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from wincon.cluster.client import call
from wincon.commandline.errors import InfrastructureError

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "wincon"
RUN_ID = "wincon.io/run-id"
WORKER = "wincon.io/worker"
CREATED_AT = "wincon.io/created-at"
OWNER_HOST = "wincon.io/owner-host"
OWNER_PID = "wincon.io/owner-pid"
# The owner's start time (clock ticks since boot, /proc/<pid>/stat): a pid reused by another process after the
# owner died does not keep its namespaces alive (pids wrap quickly on a busy node: pid_max is often 32768).
OWNER_START = "wincon.io/owner-start"
SELECTOR = f"{MANAGED_BY}={MANAGER}"
DEFAULT_TTL_SECONDS = 3600

# A new namespace's "default" ServiceAccount: the API server admits no pod that names no ServiceAccount (every pod of
# the checks) in a namespace until the ServiceAccount controller of kube-controller-manager has made it. Upstream's e2e
# framework waits for it after creating each test namespace (test/e2e/framework/util.go: CreateTestingNS calls
# WaitForDefaultServiceAccountInNamespace), for up to ServiceAccountProvisionTimeout, 2 * time.Minute. Upstream
# watches the ServiceAccount, and so sees it the moment it is made; it is read here every 0.5 s (the framework's
# Poll of 2 s would hold back every fresh namespace, whose account usually comes within a second, by up to 2 s).
DEFAULT_SERVICE_ACCOUNT = "default"
SERVICE_ACCOUNT_TIMEOUT = 120.0
SERVICE_ACCOUNT_POLL = 0.5
# Once one namespace of this process got none in SERVICE_ACCOUNT_TIMEOUT, the cluster has shown its controller is
# gone: each later one is given this long (a controller back at work makes an account within a second or two), so
# a run against such a cluster ends with its errors in minutes, not two minutes per check module.
SERVICE_ACCOUNT_TIMEOUT_AFTER_ONE_MISSED = 15.0


def namespace_name(prefix: str, run_id: str, worker: str) -> str:
    """A DNS-1123 name unique per run, worker and call: wincon-<prefix>-<run>-<worker>-<random>."""
    clean = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")[:24].strip("-") or "t"
    run = re.sub(r"[^a-z0-9]", "", run_id.lower())[-8:]
    name = f"wincon-{clean}-{run}-{worker}-{secrets.token_hex(2)}"
    return name[:63].rstrip("-")


def namespace_body(name: str, run_id: str, worker: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {MANAGED_BY: MANAGER, RUN_ID: run_id, WORKER: worker, **(labels or {})},
            "annotations": {
                CREATED_AT: str(int(time.time())),
                OWNER_HOST: socket.gethostname(),
                OWNER_PID: str(os.getpid()),
                OWNER_START: _start_time(os.getpid()),
            },
        },
    }


class NamespaceRegistry:
    """The namespaces this process created; deleted at teardown, Ctrl-C and SIGTERM."""

    def __init__(self, api_client: client.ApiClient, run_id: str, worker: str, keep: bool = False) -> None:
        self.core = client.CoreV1Api(api_client)
        self.run_id = run_id
        self.worker = worker
        self.keep = keep
        self.live: list[str] = []
        self.missed_service_account = ""  # the first namespace that got no default ServiceAccount in time

    def create(self, prefix: str, labels: dict[str, str] | None = None) -> str:
        name = namespace_name(prefix, self.run_id, self.worker)
        # Registered before the call returns: an interrupt between create and register leaks nothing.
        self.live.append(name)
        call(self.core.create_namespace, namespace_body(name, self.run_id, self.worker, labels))
        timeout, because = SERVICE_ACCOUNT_TIMEOUT, ""
        if self.missed_service_account:
            timeout = SERVICE_ACCOUNT_TIMEOUT_AFTER_ONE_MISSED
            because = f"namespace {self.missed_service_account} got none within {SERVICE_ACCOUNT_TIMEOUT:.0f} s"
        # Still registered when the wait raises: it exists, and goes at teardown as every other one.
        try:
            wait_for_default_service_account(self.core, name, timeout, because=because)
        except InfrastructureError:
            self.missed_service_account = self.missed_service_account or name
            raise
        return name

    def delete(self, name: str) -> None:
        if self.keep:
            return
        delete_namespace(self.core, name)
        if name in self.live:
            self.live.remove(name)

    def delete_all(self) -> list[str]:
        if self.keep:
            return []
        deleted = []
        for name in list(self.live):
            try:
                self.delete(name)
                deleted.append(name)
            except Exception:  # best effort at exit; the reaper finds what is left
                continue
        return deleted


def has_service_account(core: client.CoreV1Api, namespace: str, name: str = DEFAULT_SERVICE_ACCOUNT) -> bool:
    """Whether ServiceAccount ``namespace/name`` exists (a 404 says it does not yet)."""
    try:
        call(core.read_namespaced_service_account, name, namespace, _request_timeout=15)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def wait_for_default_service_account(
    core: client.CoreV1Api,
    namespace: str,
    timeout: float = SERVICE_ACCOUNT_TIMEOUT,
    interval: float = SERVICE_ACCOUNT_POLL,
    because: str = "",
) -> None:
    """Return once ``namespace`` has its ``default`` ServiceAccount (read every ``interval`` s, tenacity).

    None within ``timeout`` s: an InfrastructureError naming kube-controller-manager, whose ServiceAccount controller
    makes it. Without it every pod a check creates there is refused ('error looking up service account
    <ns>/default'), which is the cluster's failure, never the node's. ``because``: why ``timeout`` is shorter than
    SERVICE_ACCOUNT_TIMEOUT, said in the error."""
    retrying = Retrying(
        retry=retry_if_result(lambda found: not found), stop=stop_after_delay(timeout), wait=wait_fixed(interval)
    )
    try:
        retrying(has_service_account, core, namespace)
    except RetryError as exc:
        shortened = f" (shortened: {because})" if because else ""
        raise InfrastructureError(
            f"namespace {namespace} got no {DEFAULT_SERVICE_ACCOUNT} ServiceAccount within {timeout:.0f} s{shortened}, "
            f"so the API server would refuse every pod of the check there ('error looking up service account "
            f"{namespace}/{DEFAULT_SERVICE_ACCOUNT}')",
            "the ServiceAccount controller of kube-controller-manager makes it: kube-controller-manager is likely "
            "down or not running that controller (see its --controllers); check it and its log",
        ) from exc


def delete_namespace(core: client.CoreV1Api, name: str) -> None:
    try:
        call(core.delete_namespace, name, propagation_policy="Background", _request_timeout=15)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot, or "" where /proc does not tell."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _pid_alive(pid: int, start: str = "") -> bool:
    """Whether process ``pid`` lives and, when its start time was recorded, is still the same process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not start or _start_time(pid) in ("", start)


def stale(
    namespaces: Iterable[Any],
    ttl_seconds: int,
    now: float,
    current_run: str = "",
    runs: dict[str, Any] | None = None,
    force: bool = False,
) -> list[str]:
    """Names of wincon namespaces (or cluster-scoped objects) left by dead runs.

    ``runs`` ({run id: wincon.cluster.leases.RunLease}) decides for every run that holds a Lease: its namespaces are
    stale once the Lease expired or its holder is a process of this host that is gone, never by age (a live run on
    another host keeps them however long it runs). A namespace whose run holds no Lease (a run of an older wincon, or
    one whose Lease could not be created) is stale when its owner is a dead process of this host, or past
    ``ttl_seconds``. ``force`` (`wincon cleanup --all`): every one except those of a live process or Lease holder of
    this host."""
    host = socket.gethostname()
    runs = runs or {}
    result = []
    for ns in namespaces:
        meta = ns.metadata
        labels = meta.labels or {}
        if labels.get(MANAGED_BY) != MANAGER or labels.get(RUN_ID) == current_run:
            continue
        status = getattr(ns, "status", None)  # cluster-scoped objects (reap_cluster_objects) may have none
        if status is not None and getattr(status, "phase", None) == "Terminating":
            continue
        annotations = meta.annotations or {}
        created = float(
            annotations.get(CREATED_AT) or (meta.creation_timestamp.timestamp() if meta.creation_timestamp else now)
        )
        owner_pid = annotations.get(OWNER_PID, "")
        local_owner = annotations.get(OWNER_HOST) == host and owner_pid.isdigit()
        dead_owner = local_owner and not _pid_alive(int(owner_pid), annotations.get(OWNER_START, ""))
        lease = runs.get(labels.get(RUN_ID, ""))
        if force:
            live_here = (local_owner and not dead_owner) or (
                lease is not None and lease.host == host and not lease.holder_dead_here() and not lease.expired(now)
            )
            if not live_here:
                result.append(meta.name)
        elif lease is not None:
            if lease.expired(now) or lease.holder_dead_here():
                result.append(meta.name)
        elif dead_owner or now - created > ttl_seconds:
            result.append(meta.name)
    return result


def reap(
    api_client: client.ApiClient,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    current_run: str = "",
    *,
    runs: dict[str, Any],
    force: bool = False,
) -> list[str]:
    """Delete the namespaces dead runs left behind (:func:`stale`; ``runs``: wincon.cluster.leases.read_runs);
    returns their names."""
    core = client.CoreV1Api(api_client)
    items = call(core.list_namespace, label_selector=SELECTOR).items
    names = stale(items, ttl_seconds, time.time(), current_run, runs, force)
    for name in names:
        delete_namespace(core, name)
    return names


def _cluster_kinds(api_client: client.ApiClient) -> list[tuple[str, Any, Any]]:
    """(kind, list, delete) of the cluster-scoped kinds the checks create with the wincon label: a run killed
    before its teardown leaves them behind, where its namespaces go with reap."""
    node, scheduling = client.NodeV1Api(api_client), client.SchedulingV1Api(api_client)
    certificates = client.CertificatesV1Api(api_client)
    return [
        ("RuntimeClass", node.list_runtime_class, node.delete_runtime_class),
        ("PriorityClass", scheduling.list_priority_class, scheduling.delete_priority_class),
        ("ClusterTrustBundle", certificates.list_cluster_trust_bundle, certificates.delete_cluster_trust_bundle),
    ]


def reap_cluster_objects(
    api_client: client.ApiClient,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    current_run: str = "",
    *,
    runs: dict[str, Any],
    force: bool = False,
) -> list[str]:
    """Delete the cluster-scoped objects dead runs left behind (wincon's label; stale as namespaces are, by their
    run's Lease, else past the TTL or of a dead owner); returns them as ``Kind/name``. A kind the API server does
    not serve is passed over."""
    deleted = []
    for kind, list_fn, delete_fn in _cluster_kinds(api_client):
        try:
            items = call(list_fn, label_selector=SELECTOR).items
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        for name in stale(items, ttl_seconds, time.time(), current_run, runs, force):
            try:
                call(delete_fn, name, _request_timeout=15)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            deleted.append(f"{kind}/{name}")
    return deleted
