"""Fixtures the storage, probes, lifecycle, controllers, scheduling and api suites share.

Each suite's conftest imports them, so there is one definition of each.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from wincon.cluster.client import call


def release_pods(api_client: client.ApiClient, namespace: str) -> None:
    """Ask for every pod of ``namespace`` to be deleted now (gracefully), without waiting for the
    namespace controller, which may take many seconds to reach a deleted namespace's pods."""
    core = client.CoreV1Api(api_client)
    try:
        call(core.delete_collection_namespaced_pod, namespace, _request_timeout=15)
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def namespace(request: pytest.FixtureRequest, fresh_namespace: str) -> Iterator[str]:
    """A namespace per test (not per module), its pods released as soon as the test ends: a long run
    never piles up more pods than a Windows node takes (30 on AKS and on the local cluster)."""
    yield fresh_namespace
    release_pods(request.getfixturevalue("wincon").api_client, fresh_namespace)


def build_for(nodeid: str, builds: list[int]) -> int | None:
    """The Windows build a test pins to: one of ``builds``, fixed per test id, spread over all of them."""
    if not builds:
        return None
    return builds[zlib.crc32(nodeid.encode()) % len(builds)]


@pytest.fixture
def build(request: pytest.FixtureRequest, profile: Any) -> int | None:
    """The Windows build this test pins its pods to: each test gets one of the Ready nodes' builds, so
    a run covers every build and spreads its pods over the Windows nodes."""
    builds = sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
    return build_for(request.node.nodeid, builds)
