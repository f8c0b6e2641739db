"""A run's Lease against a real API server (issue 42): created, renewed and read back under the runner's own RBAC
(manifests/rbac/runner.yaml), a live one keeps another host's two-hour-old namespace from the reaper, and once it
is no longer renewed (its run killed) it expires and the namespace is reaped.

Only this test's own namespace and Lease are judged and deleted (the reaper's decision, wincon.cluster.namespaces
.stale, is asked about them alone): the cluster may be shared with other runs."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.integration.test_framework import runner_kubeconfig
from wincon.cluster import leases
from wincon.cluster import namespaces as ns
from wincon.cluster.client import load_api_client

OTHER_HOST = "another-host-of-the-lease-test"


def test_a_renewed_lease_keeps_an_old_run_and_an_expired_one_lets_it_be_reaped(kubeconfig, tmp_path):
    admin = load_api_client(str(kubeconfig))
    restricted, _ = runner_kubeconfig(Path(kubeconfig), tmp_path)
    api = load_api_client(str(restricted))  # the runner's identity: its RBAC must grant all of this
    core = client.CoreV1Api(admin)
    run = f"leasetest-{secrets.token_hex(3)}"
    name = f"wincon-lease-{run}"
    body = ns.namespace_body(name, run, "w0")
    body["metadata"]["annotations"].update(
        {ns.CREATED_AT: str(int(time.time() - 7200)), ns.OWNER_HOST: OTHER_HOST, ns.OWNER_PID: "4242"}
    )
    core.create_namespace(body)
    holder = leases.LeaseHolder(api, run, duration=6, renew_every=1)
    try:
        holder.acquire()
        lease_api = client.CoordinationV1Api(api)
        first = lease_api.read_namespaced_lease(holder.name, leases.LEASE_NAMESPACE)
        deadline = time.monotonic() + 10
        while holder.renewals < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        renewed = lease_api.read_namespaced_lease(holder.name, leases.LEASE_NAMESPACE)
        assert renewed.spec.renew_time > first.spec.renew_time, "the renewals must reach the API server"

        mine = [core.read_namespace(name)]
        runs = {run: leases.read_runs(api)[run]}
        assert not runs[run].expired(time.time())
        assert ns.stale(mine, 3600, time.time(), "another-run", runs) == [], "a live run is never reaped by age"

        holder._stop.set()  # killed: its renewals stop, its Lease stays
        assert holder._thread is not None
        holder._thread.join(timeout=5)
        time.sleep(7)
        runs = {run: leases.read_runs(api)[run]}
        assert runs[run].expired(time.time())
        assert ns.stale(mine, 3600, time.time(), "another-run", runs) == [name]
        assert leases.delete_expired(api, runs, time.time()) == [holder.name]
    finally:
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        try:
            client.CoordinationV1Api(admin).delete_namespaced_lease(holder.name, leases.LEASE_NAMESPACE)
        except ApiException as exc:
            if exc.status != 404:
                raise
