"""Fixtures of the integration tests: a Kubernetes cluster to run against.

``kubeconfig`` (session): the kubeconfig path of the cluster under test. A module that starts a cluster of its
own (tests/support/clusters.py) overrides it with that cluster's, and the fixtures below follow.
``api`` / ``core`` (module): a client of that cluster (closed after the module) and its CoreV1Api.
``local_hints`` / ``linux_api`` (module): the cluster's wincon hints and ``api``, both skipping the module's tests
unless the cluster has wincon's real Linux data plane.

- ``WINCON_TEST_KUBECONFIG`` set: that file, as is (the cluster is not started nor stopped).
- otherwise: the local simulated cluster named ``$WINCON_CLUSTER_NAME`` (default ``wincon-test``),
  started with the default topology if it does not run (reused if it does), and stopped at the end of
  the session only if this session started it. Under pytest-xdist the workers share the one cluster
  (the first starts it, the others wait and reuse it) and the controller stops it after the last test.

Tests that need the local cluster's binaries are skipped, with the reason and the command that fixes
it, when ``wincon cluster build`` has not been run: building takes long enough (tens of minutes the
first time) that a test run must not start it behind the user's back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import shared_use
from tests.support.clusters import START_WITHIN
from wincon.localcluster import build, cluster, hints, paths

DEFAULT_TEST_CLUSTER = "wincon-test"
SESSION_ENV = "WINCON_TEST_SESSION"  # set by the controller (tests/conftest.py), inherited by xdist workers
STARTED_MARKER = "started-by-test-session"


def _skip_reason() -> str | None:
    missing = build.missing()
    if missing:
        return (
            f"the local cluster's binaries are not built ({', '.join(missing)} missing in {paths.bin_dir()}): "
            "run `wincon cluster build`, or set WINCON_TEST_KUBECONFIG to test another cluster"
        )
    return None


def session_cluster_name() -> str:
    """The name of the local cluster the session uses."""
    return os.environ.get("WINCON_CLUSTER_NAME") or DEFAULT_TEST_CLUSTER


@pytest.fixture(scope="session")
def localcluster_binaries() -> Path:
    """The directory of the built binaries; skips the test when they are not built."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    return paths.bin_dir()


@pytest.fixture(scope="session")
def kubeconfig() -> Path:
    """The kubeconfig of the cluster under test (see the module docstring)."""
    given = os.environ.get("WINCON_TEST_KUBECONFIG")
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            pytest.fail(f"WINCON_TEST_KUBECONFIG={given} is not a file", pytrace=False)
        return path
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    name = session_cluster_name()
    started_here = cluster.status(name)["state"] != "running"
    path = cluster.up(name, timeout=START_WITHIN)
    if started_here:
        (paths.state_dir(name) / STARTED_MARKER).write_text(os.environ.get(SESSION_ENV, "") + "\n")
    return path


def cluster_name_of(kubeconfig: Path) -> str | None:
    """The name of the local cluster behind ``kubeconfig``, or None when it is another cluster."""
    root = paths.cache_root() / "clusters"
    resolved = kubeconfig.resolve()
    if resolved.name == cluster.KUBECONFIG_FILE and resolved.parent.parent == root.resolve():
        return resolved.parent.name
    return None


@pytest.fixture(scope="session")
def local_cluster_name(kubeconfig: Path) -> str | None:
    """The name of the local cluster behind ``kubeconfig``, or None when it is another cluster."""
    return cluster_name_of(kubeconfig)


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> Iterator[Any]:
    """An API client of the cluster under test, closed after the module."""
    api_client = cluster._api_client(kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def core(api: Any) -> Any:
    """The CoreV1Api of ``api``."""
    from kubernetes import client

    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def local_hints(api: Any) -> dict[str, str]:
    """The hints wincon's local cluster leaves on the API (hints.py); skips without its real Linux data plane."""
    found = hints.read(api)
    if found.get("dataplane") != "linux":
        pytest.skip("the cluster under test has no wincon real Linux data plane (start it with --dataplane linux)")
    return found


@pytest.fixture(scope="module")
def linux_api(api: Any, local_hints: dict[str, str]) -> Any:
    """``api`` of a cluster with wincon's real Linux data plane (skips on any other)."""
    return api


@pytest.fixture
def exclusive_cluster(local_cluster_name: str | None) -> Iterator[str | None]:
    """``local_cluster_name``, with no other test using the shared cluster meanwhile (tests/support/shared_use.py):
    for a test that stops one of its processes."""
    if local_cluster_name is None:  # another cluster: such tests skip there, and stop nothing
        yield None
        return
    with shared_use.holding(paths.state_dir(local_cluster_name) / shared_use.LOCK_FILE, exclusive=True):
        yield local_cluster_name


@pytest.fixture(autouse=True)
def _shared_cluster_use(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test of the shared cluster holds a share of its use lock, so that a test that stops one of its
    processes (``exclusive_cluster``) runs alone on it."""
    names = request.fixturenames
    if "kubeconfig" not in names or "exclusive_cluster" in names:
        yield
        return
    # A module that overrides ``kubeconfig`` with a cluster of its own (ip-family, local storage) shares nothing.
    name = cluster_name_of(request.getfixturevalue("kubeconfig"))
    if name is None or name != session_cluster_name():
        yield
        return
    with shared_use.holding(paths.state_dir(name) / shared_use.LOCK_FILE, exclusive=False):
        yield
