"""The plugin's fixtures: the run context, namespaces, the data-plane gate, and ``kube`` with its factories.

``wincon.plugin`` imports them, so they are available wherever the plugin is (suites, pytester runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.kube import Kube
from wincon.clusterinfo import nodes
from wincon.clusterinfo.nodes import build_for
from wincon.clusterinfo.profile import ClusterProfile
from wincon.session.collection import APPLIED_KEY
from wincon.session.context import NAMESPACES_KEY, WinconContext, get_context
from wincon.session.verdicts import COMMAND, SIMULATED_REASON, SIMULATED_SKIP

__all__ = ["build_for"]  # suites pin to a build through the fixtures' module; wincon.clusterinfo.nodes decides it


def _context(request: pytest.FixtureRequest) -> WinconContext:
    context = get_context(request.config)
    if context is None:
        pytest.skip("not a wincon suite run: run the suites (pytest suites/ or `wincon run`) to check a cluster")
    return context


@pytest.fixture(scope="session")
def wincon(request: pytest.FixtureRequest) -> WinconContext:
    """The run's context: profile, API client, image catalog, namespaces, timeouts."""
    return _context(request)


@pytest.fixture(scope="session")
def profile(wincon: WinconContext) -> ClusterProfile:
    return wincon.profile


@pytest.fixture(scope="session")
def api_client(wincon: WinconContext) -> Any:
    return wincon.api_client


def make_namespace(request: pytest.FixtureRequest, wincon: WinconContext, prefix: str) -> Iterator[str]:
    """Create a namespace (unique across workers, labelled with the run id), record it on the requesting
    node for failure diagnostics, and delete it when the fixture ends."""
    yield from own_namespace(request, wincon, wincon.namespaces.create(prefix))


def own_namespace(request: pytest.FixtureRequest, wincon: WinconContext, name: str) -> Iterator[str]:
    """Namespace ``name`` (created already), recorded on the requesting node for failure diagnostics and deleted
    when the fixture ends."""
    request.node.stash.setdefault(NAMESPACES_KEY, []).append(name)
    try:
        yield name
    finally:
        wincon.namespaces.delete(name)


def module_prefix(request: pytest.FixtureRequest) -> str:
    """``test_dns`` -> ``dns``: the namespace prefix of a test module."""
    return str(request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_"))


@pytest.fixture(scope="module")
def namespace(request: pytest.FixtureRequest, wincon: WinconContext) -> Iterator[str]:
    """A namespace for this test module, unique across workers, deleted at teardown.

    ``suites/conftest.py`` narrows it to one namespace per test; the networking suite keeps it per module.
    """
    yield from make_namespace(request, wincon, module_prefix(request))


def build_of(nodeid: str, profile: ClusterProfile) -> int | None:
    """The Windows build check ``nodeid`` pins its pods to (the ``build`` fixture of suites/conftest.py): one of the
    Ready nodes' builds, so that a run covers every build and spreads its pods over the Windows nodes."""
    builds = sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
    return build_for(nodeid, builds)


@pytest.fixture(scope="session")
def made_ahead(wincon: WinconContext) -> Iterator[waves.Ahead]:
    """The checks whose objects are made ahead on this worker (``wincon.cluster.waves.ahead``): each check's
    namespace and what it declared it creates first, made while the checks before it run, in its module or the
    one before."""

    def arguments(item: pytest.Item) -> dict[str, Any]:
        callspec = getattr(item, "callspec", None)
        params = dict(callspec.params) if callspec is not None else {}
        return {"wincon": wincon, "build": build_of(item.nodeid, wincon.profile), **params}

    made = waves.Ahead(
        reserve=lambda item: wincon.namespaces.create(item.name),
        make=make_ahead(wincon.api_client),
        arguments=arguments,
        release=wincon.namespaces.delete,
        room=windows_room(wincon.api_client, [n.name for n in wincon.profile.ready_windows_nodes]),
    )
    try:
        yield made
    finally:
        made.close()


ENDED_PHASES = ("Succeeded", "Failed")


def windows_room(api_client: Any, node_names: list[str]) -> Callable[[], int | None]:
    """``room()``: the pods the fullest of ``node_names`` (the Ready Windows nodes) still takes, its allocatable
    pods (read once) less the pods bound to it that have not ended, terminating ones too (the scheduler counts a pod
    until it is gone); None where there is no such node or a read fails (then only ``AHEAD_PODS`` limits what is
    made ahead)."""
    core = client.CoreV1Api(api_client)
    allocatable: dict[str, int] = {}

    def room() -> int | None:
        if not node_names:
            return None
        try:
            rooms = []
            for name in node_names:
                if name not in allocatable:
                    node = call(core.read_node, name)
                    allocatable[name] = int((node.status.allocatable or {}).get("pods", 0))
                bound = call(core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={name}")
                held = [p for p in bound.items if (p.status.phase if p.status else None) not in ENDED_PHASES]
                rooms.append(allocatable[name] - len(held))
        except Exception:  # noqa: BLE001 - an unreadable room limits nothing more than AHEAD_PODS does
            return None
        return min(rooms)

    return room


def make_ahead(api_client: Any) -> Callable[[str, dict[str, Any]], Any]:
    """How an object is made ahead: as its check creates it (a pod by ``submit_pod``, anything else by
    ``deploy.apply``), so that adopting it returns what the check's own create would have."""
    from wincon.checks.api_rules import submit_pod
    from wincon.workloads.deploy import apply

    def make(namespace: str, manifest: dict[str, Any]) -> Any:
        if waves.kind_of(manifest) == "Pod":
            return submit_pod(api_client, namespace, manifest, dry_run=False)
        return apply(api_client, namespace, manifest)

    return make


TOPPED_UP_KEY = pytest.StashKey[bool]()


def top_up_ahead(item: pytest.Item, made_ahead: waves.Ahead) -> None:
    """This worker's next checks that declared ``waves.ahead`` (``waves.upcoming``: of any module) get their
    namespace now, with what they create first made in it; those no longer coming are dropped. Once per check: a
    suite check's autouse fixture and its ``fresh_namespace`` both ask, and a top-up reads the Windows nodes' room."""
    if item.stash.get(TOPPED_UP_KEY, False):
        return
    item.stash[TOPPED_UP_KEY] = True
    coming = waves.upcoming(item)
    made_ahead.drop_passed(coming)
    made_ahead.top_up(coming)


def make_next_checks_ahead(request: pytest.FixtureRequest) -> bool:
    """``top_up_ahead`` for the check whose setup asks, where it uses the cluster (takes ``wincon``, so that the
    session's ``made_ahead`` is there without a cluster of its own); False, nothing done, for a check that does not.
    suites/conftest.py calls it for every check (autouse): a networking module's checks share their module's
    namespace and never ask for ``fresh_namespace``, so before, while one ran nothing was made for the checks after
    it."""
    if "wincon" not in request.fixturenames:
        return False
    top_up_ahead(request.node, request.getfixturevalue("made_ahead"))
    return True


@pytest.fixture
def fresh_namespace(request: pytest.FixtureRequest, wincon: WinconContext, made_ahead: waves.Ahead) -> Iterator[str]:
    """A namespace for this test alone, for checks that must not share state. The next checks are made ahead
    (``top_up_ahead``); this check takes its own namespace where it got one so."""
    top_up_ahead(request.node, made_ahead)
    reserved = made_ahead.namespace_for(request.node)
    yield from own_namespace(request, wincon, reserved or wincon.namespaces.create(request.node.name))


def data_plane_gate(node: pytest.Item, profile: ClusterProfile) -> Callable[..., None]:
    """The gate of one test: records the check's exact command and the nodes of its pods on the test (the pod
    it runs in, ``pod_node``, and the pods its fixtures hand it), and skips where one of those nodes has no
    data plane, or, before any pod ran, where the nodes it would land on are simulated (saying what would have
    run and, if a limitation applies, what would be expected)."""

    def gate(command: str | list[str], where: str = "", pod_node: str | None = None) -> None:
        text = command if isinstance(command, str) else " ".join(command)
        text = f"{where}: {text}" if where else text
        if (COMMAND, text) not in node.user_properties:  # a check that retries records its command once
            node.user_properties.append((COMMAND, text))
        for name in [pod_node, *nodes.fixture_pod_nodes(node)]:
            if name:
                nodes.lookup(profile, name)  # a node the profile did not know is read now (an API error says so)
            nodes.record_node(node, name)
        if not nodes.data_plane_for(node, profile):
            node.user_properties.append((SIMULATED_SKIP, "true"))
            would = [lim.id for lim, _ in node.stash.get(APPLIED_KEY, [])]
            suffix = f"; on a real cluster with this profile: expected to fail ({', '.join(would)})" if would else ""
            on = nodes.without_data_plane(node, profile)
            reason = f"{SIMULATED_REASON} (its pods ran on {', '.join(on)})" if on else SIMULATED_REASON
            pytest.skip(f"{reason}; would run: {text}{suffix}")

    return gate


@pytest.fixture
def data_plane(request: pytest.FixtureRequest, wincon: WinconContext) -> Callable[..., None]:
    """``data_plane(command, where="", pod_node=None)`` records the exact check command (and the node of the pod
    it runs in), and skips where the test's pods sit on a node without a data plane (simulated).

    Call it after the objects are created and scheduled for real, right before the check itself
    (``kube.exec`` calls it for you).
    """
    return data_plane_gate(request.node, wincon.profile)


@pytest.fixture
def kube(wincon: WinconContext, namespace: str, data_plane: Callable[..., None]) -> Iterator[Kube]:
    """The client bound to this test's namespace (``wincon.cluster.kube.Kube``): typed API handles, create with
    cleanup, waits, exec through the data-plane gate, logs. What it created cluster-wide is deleted at
    teardown."""
    kube = Kube(wincon, namespace, data_plane)
    try:
        yield kube
    finally:
        kube.close()


@pytest.fixture
def taint_node(kube: Kube) -> Callable[[str, dict[str, str]], None]:
    """``taint_node(node, {"key", "value", "effect"})``: taint a node now; the taint is removed at teardown."""
    return kube.taint


@pytest.fixture
def make_runtime_class(kube: Kube) -> Callable[..., str]:
    """``make_runtime_class(handler, node_selector=None, tolerations=None)`` -> name; deleted at teardown."""
    return kube.runtime_class


@pytest.fixture
def make_priority_class(kube: Kube) -> Callable[..., str]:
    """``make_priority_class(value, name=None, preemption=None)`` -> name; deleted at teardown."""
    return kube.priority_class


# ----------------------------------------------------------------------------- what suites/conftest.py wires


def release_pods(api_client: client.ApiClient, namespace: str) -> None:
    """Ask for every pod of ``namespace`` to be deleted now (gracefully), without waiting for the
    namespace controller, which may take many seconds to reach a deleted namespace's pods."""
    core = client.CoreV1Api(api_client)
    try:
        call(core.delete_collection_namespaced_pod, namespace, _request_timeout=15)
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
