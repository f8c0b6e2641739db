"""The retry policy and a create whose answer was lost: the object the lost attempt stored is the result."""

from __future__ import annotations

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from wincon.cluster import client as wclient
from wincon.cluster.client import call


def already_exists() -> ApiException:
    exc = ApiException(status=409, reason="Conflict")
    exc.body = '{"kind":"Status","reason":"AlreadyExists","message":"configmaps \\"c4\\" already exists"}'
    return exc


class FakeCore:
    """create_namespaced_config_map stores the object, then fails as scripted; read returns what is stored."""

    def __init__(self, failures: list[BaseException]) -> None:
        self.failures = failures
        self.stored: dict[tuple[str, str], dict] = {}
        self.reads = 0

    def create_namespaced_config_map(self, namespace: str, body: dict) -> dict:
        key = (namespace, body["metadata"]["name"])
        if key in self.stored:
            raise already_exists()
        self.stored[key] = body
        if self.failures:
            raise self.failures.pop(0)  # stored, but the answer never came back
        return body

    def read_namespaced_config_map(self, name: str, namespace: str) -> dict:
        self.reads += 1
        return self.stored[(namespace, name)]


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    fast = wclient.retrying

    monkeypatch.setattr(wclient, "retrying", lambda attempts=3, seconds=5.0: fast(attempts=3, seconds=5.0))
    monkeypatch.setattr(wclient, "wait_exponential_jitter", lambda **_: lambda state: 0)


def test_a_create_whose_answer_was_lost_returns_the_stored_object():
    """Before: the retry heard 409 AlreadyExists until the retries ran out, and the check errored (seen in CI,
    with the API server killed while it answered a create)."""
    core = FakeCore([urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError())])
    body = {"metadata": {"name": "c4"}}
    assert call(core.create_namespaced_config_map, "ns", body) == body
    assert core.reads == 1


def test_already_exists_without_a_lost_answer_is_still_an_error():
    core = FakeCore([])
    core.stored[("ns", "c4")] = {"metadata": {"name": "c4"}, "old": True}
    with pytest.raises(ApiException) as raised:
        call(core.create_namespaced_config_map, "ns", {"metadata": {"name": "c4"}})
    assert raised.value.status == 409 and core.reads == 0


class RefusingFirst(FakeCore):
    """The first attempt's connection is refused before anything is sent."""

    def create_namespaced_config_map(self, namespace: str, body: dict) -> dict:
        if not self.failures:
            return super().create_namespaced_config_map(namespace, body)
        raise self.failures.pop(0)


def test_a_refused_connection_sent_nothing_so_already_exists_stays_an_error():
    core = RefusingFirst([urllib3.exceptions.NewConnectionError(None, "Connection refused")])
    core.stored[("ns", "c4")] = {"metadata": {"name": "c4"}, "old": True}
    with pytest.raises(ApiException) as raised:
        call(core.create_namespaced_config_map, "ns", {"metadata": {"name": "c4"}})
    assert raised.value.status == 409 and core.reads == 0
