"""A namespace is handed to a check only once it has its ``default`` ServiceAccount.

Without kube-controller-manager (its ServiceAccount controller makes the account) the API server refuses every pod
of a new namespace ('error looking up service account <ns>/default'), and the checks read that refusal as the node
failing. NamespaceRegistry.create waits for the account as upstream's e2e framework does, up to 2 minutes, and says
the cluster's reason as an infrastructure error when it never comes. The clock is the unit tests' fake one
(tests/unit/conftest.py): no real sleep."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster import namespaces as ns
from wincon.commandline.errors import FrameworkFailure, InfrastructureError


class Cluster:
    """CoreV1Api as NamespaceRegistry uses it: namespaces are made at once; a namespace's default ServiceAccount is
    found from the ``appears_on``-th read on (never when None); ``refuse`` answers every read with that status."""

    def __init__(self, appears_on: int | None, refuse: int | None = None) -> None:
        self.appears_on, self.refuse = appears_on, refuse
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.reads: list[tuple[str, str]] = []

    def create_namespace(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.created.append(body["metadata"]["name"])
        return body

    def read_namespaced_service_account(self, name: str, namespace: str, **_: Any) -> client.V1ServiceAccount:
        self.reads.append((namespace, name))
        if self.refuse is not None:
            raise ApiException(status=self.refuse, reason="Forbidden")
        if self.appears_on is None or len(self.reads) < self.appears_on:
            raise ApiException(status=404, reason="Not Found")
        return client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name, namespace=namespace))

    def delete_namespace(self, name: str, **_: Any) -> None:
        self.deleted.append(name)


def registry(cluster: Cluster) -> ns.NamespaceRegistry:
    made = ns.NamespaceRegistry(client.ApiClient(client.Configuration()), "run1", "gw0")
    made.core = cluster  # type: ignore[assignment]
    return made


def test_the_namespace_is_handed_over_once_its_default_service_account_appears(clock: list[float]) -> None:
    cluster = Cluster(appears_on=4)
    namespaces = registry(cluster)
    name = namespaces.create("dns")
    assert cluster.created == [name] and namespaces.live == [name]
    assert cluster.reads == [(name, "default")] * 4
    assert clock[0] == 3 * ns.SERVICE_ACCOUNT_POLL  # three polls SERVICE_ACCOUNT_POLL apart


def test_an_account_already_there_costs_one_read_and_no_wait(clock: list[float]) -> None:
    cluster = Cluster(appears_on=1)
    registry(cluster).create("dns")
    assert len(cluster.reads) == 1 and clock[0] == 0


def test_no_default_service_account_in_2_minutes_is_an_infrastructure_error_naming_kcm(clock: list[float]) -> None:
    cluster = Cluster(appears_on=None)
    namespaces = registry(cluster)
    with pytest.raises(InfrastructureError) as error:
        namespaces.create("dns")
    assert not isinstance(error.value, (AssertionError, FrameworkFailure))  # never the node failing
    (name,) = cluster.created
    assert f"namespace {name} got no default ServiceAccount within 120 s" in error.value.message
    assert f"error looking up service account {name}/default" in error.value.message
    assert "ServiceAccount controller of kube-controller-manager" in error.value.fix
    assert "kube-controller-manager is likely down or not running that controller" in error.value.fix
    assert ns.SERVICE_ACCOUNT_TIMEOUT <= clock[0] < ns.SERVICE_ACCOUNT_TIMEOUT + ns.SERVICE_ACCOUNT_POLL
    assert len(cluster.reads) == int(ns.SERVICE_ACCOUNT_TIMEOUT / ns.SERVICE_ACCOUNT_POLL) + 1
    # Still registered: it exists, and goes at teardown with the others.
    assert namespaces.live == [name]
    assert namespaces.delete_all() == [name] and cluster.deleted == [name]


def test_a_read_the_api_server_refuses_is_not_waited_out(clock: list[float]) -> None:
    """A 403 (the runner's role cannot read ServiceAccounts) surfaces at once, as every other refused call does."""
    cluster = Cluster(appears_on=1, refuse=403)
    with pytest.raises(ApiException) as error:
        registry(cluster).create("dns")
    assert error.value.status == 403 and len(cluster.reads) == 1 and clock[0] == 0


def test_after_one_namespace_missed_its_account_the_next_waits_15_s_and_says_why(clock: list[float]) -> None:
    """A cluster that made no account in 2 minutes has shown its controller gone: the next namespace of the process
    waits SERVICE_ACCOUNT_TIMEOUT_AFTER_ONE_MISSED, naming the first; one whose account does come is still handed
    over (the shortened wait is not a verdict)."""
    cluster = Cluster(appears_on=None)
    namespaces = registry(cluster)
    with pytest.raises(InfrastructureError):
        namespaces.create("dns")
    first = cluster.created[0]
    started = clock[0]
    with pytest.raises(InfrastructureError) as error:
        namespaces.create("probes")
    assert 15 <= clock[0] - started < 15 + ns.SERVICE_ACCOUNT_POLL
    assert f"within 15 s (shortened: namespace {first} got none within 120 s)" in error.value.message
    assert "kube-controller-manager is likely down" in error.value.fix
    cluster.appears_on = len(cluster.reads) + 2  # the controller is back: the account comes on the second read
    name = namespaces.create("volumes")
    assert namespaces.live[-1] == name
