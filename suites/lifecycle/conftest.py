"""Fixtures of the lifecycle suite.

Whether the API server keeps ``lifecycle.stopSignal`` (the ContainerStopSignals feature gate) is the
"stop-signals" capability (wincon/clusterinfo/capabilities.py), read once per run, so that `wincon plan` and the run agree:
where the server drops the field, the stop-signal tests (``requires("stop-signals")``) are skipped with the reason.

The recorder pods the hook and signal checks report to (issue 22, item 3): agnhost netexec logs every request it
gets, and each check looks in that log for a message only it sends (``msg=prestop-exec``, ``msg=grace-step-N``,
...). A check only reads the log, so one recorder per OS (and Windows build) serves a module's checks instead of
one each: on real Windows nodes each recorder was a pod start (tens of seconds) before the check's own pod could
be created, since the hooks need the recorder's IP. When the first check asks, the recorders of every key the
module's checks that will run need are created, and only the asked one is waited for; the others start while
the checks before them run. A recorder that cannot start is each of its checks' error, with its own reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from wincon.checks.pods import create_or_reject, os_pod
from wincon.cluster import waves
from wincon.clusterinfo import capabilities
from wincon.clusterinfo.nodes import target_os as os_of
from wincon.session.fixtures import build_of, make_namespace
from wincon.workloads.deploy import await_pod, read_ready


@pytest.fixture
def stop_signals(request: pytest.FixtureRequest) -> None:
    """Skip unless the API server keeps lifecycle.stopSignal (the "stop-signals" capability's answer, read once
    per run); a refused SIGTERM fails the test."""
    capabilities.require_live(request.node, "stop-signals")


NETEXEC = ["netexec", "--http-port=8080", "--udp-port=8081"]


@dataclass(frozen=True)
class Recorder:
    """A running recorder pod as a check uses it. Its fields make it a ``wincon.clusterinfo.nodes.PlacedPod``, so the
    data-plane gate of every check handed it counts its node (not only the check during which it started)."""

    name: str
    namespace: str
    node: str
    os: str
    ip: str


RecorderKey = tuple[str, int | None]


def recorder_key(target_os: str, build: int | None) -> RecorderKey:
    """One recorder per OS, and per build on Windows (as each check's own recorder was: of the check's build)."""
    return (target_os, build if target_os == "windows" else None)


def recorder_name(key: RecorderKey) -> str:
    os_name, build = key
    return f"recorder-{os_name}" + (f"-{build}" if build else "")


def keys_to_run(items: Iterable[pytest.Item], key_of: Callable[[pytest.Item], RecorderKey]) -> list[RecorderKey]:
    """The recorder keys of ``items`` that take the ``recorder`` fixture and will run (an item skipped at
    collection runs no fixture), in the order they come."""
    keys: list[RecorderKey] = []
    for item in items:
        if "recorder" not in getattr(item, "fixturenames", ()) or item.get_closest_marker("skip") is not None:
            continue
        key = key_of(item)
        if key not in keys:
            keys.append(key)
    return keys


class Recorders:
    """The module's recorders by key. ``get(key)`` creates, on the first call, the recorder of every key in
    ``wanted()`` (and ``key``), then waits for ``key``'s alone; each later key is waited for when first asked.
    A recorder that was refused or never ran raises the same error for every check that asks for it."""

    def __init__(
        self,
        create: Callable[[RecorderKey], dict[str, Any]],
        wait: Callable[[dict[str, Any]], Any],
        wanted: Callable[[], Iterable[RecorderKey]],
        peek: Callable[[dict[str, Any]], Any] = lambda body: None,
    ) -> None:
        self._create, self._wait, self._wanted, self._peek = create, wait, wanted, peek
        self._bodies: dict[RecorderKey, dict[str, Any]] = {}
        self._created: dict[RecorderKey, Exception | None] = {}
        self._running: dict[RecorderKey, Recorder] = {}
        self._errors: dict[RecorderKey, Exception] = {}

    def _start(self, key: RecorderKey) -> None:
        if key in self._created:
            return
        try:
            self._bodies[key] = self._create(key)
            self._created[key] = None
        except Exception as exc:  # noqa: BLE001 - the asking check raises it (below), with its own reason
            self._created[key] = exc

    def get(self, key: RecorderKey) -> Recorder:
        if key in self._running:
            return self._running[key]
        if key in self._errors:
            raise self._errors[key]
        if not self._created:  # the first ask: every recorder the module's checks will use starts now
            for wanted in [key, *self._wanted()]:
                self._start(wanted)
        self._start(key)
        try:
            refused = self._created[key]
            if refused is not None:
                raise refused
            pod = self._wait(self._bodies[key])
        except Exception as exc:
            self._errors[key] = exc
            raise
        self._running[key] = self._recorder(key, pod)
        return self._running[key]

    @staticmethod
    def _recorder(key: RecorderKey, pod: Any) -> Recorder:
        return Recorder(
            name=pod.metadata.name, namespace=pod.metadata.namespace, node=pod.spec.node_name, os=key[0],
            ip=pod.status.pod_ip,
        )  # fmt: skip

    def ready(self, key: RecorderKey) -> Recorder:
        """The recorder of ``key`` where it is there without waiting: asked for already, or created and now
        running and ready (``peek``: one read); ``waves.NotYet`` otherwise (not created yet, still starting, or
        failed: its checks meet that error themselves). Only for what is made ahead (the builders' ``recorder``):
        a check's own ``get`` still waits for it and checks where it runs."""
        if key in self._running:
            return self._running[key]
        if key in self._errors or self._created.get(key, RuntimeError()) is not None:
            raise waves.NotYet(f"recorder {recorder_name(key)} not created, or refused")
        pod = self._peek(self._bodies[key])
        if pod is None:
            raise waves.NotYet(f"recorder {recorder_name(key)} still starting")
        return self._recorder(key, pod)


@pytest.fixture(scope="module")
def recorder_namespace(request: pytest.FixtureRequest, wincon: Any) -> Iterator[str]:
    """The namespace of the module's recorder pods (made only when a check asks for a recorder)."""
    yield from make_namespace(request, wincon, "lifecycle-recorders")


@pytest.fixture(scope="module")
def recorders(
    request: pytest.FixtureRequest, wincon: Any, recorder_namespace: str, made_ahead: waves.Ahead
) -> Iterator[Recorders]:
    """The module's recorders (see the module's docstring), created in ``recorder_namespace``. Builders declared
    in ``waves.ahead`` that take ``recorder`` get it once it runs (``Recorders.ready``), so the checks after the
    first that asked have their pods made ahead with its IP."""

    def key_of(item: pytest.Item) -> RecorderKey:
        return recorder_key(os_of(item), build_of(item.nodeid, wincon.profile))

    def create(key: RecorderKey) -> dict[str, Any]:
        os_name, build = key
        body = os_pod(wincon, recorder_name(key), os_name, build, args=NETEXEC)
        create_or_reject(wincon.api_client, recorder_namespace, body)
        return body

    def wanted() -> list[RecorderKey]:
        mine = [item for item in request.session.items if getattr(item, "module", None) is request.module]
        return keys_to_run(mine, key_of)

    def peek(body: dict[str, Any]) -> Any:
        try:
            return read_ready(wincon.api_client, recorder_namespace, body)
        except Exception:  # noqa: BLE001 - not there yet for what is made ahead; the check's own get() meets it
            return None

    made = Recorders(create, lambda body: await_pod(wincon, recorder_namespace, body), wanted, peek)
    made_ahead.provide("recorder", lambda item: made.ready(key_of(item)), request.module)
    yield made
    made_ahead.withdraw("recorder")


@pytest.fixture
def recorder(request: pytest.FixtureRequest, recorders: Recorders, build: int | None) -> Recorder:
    """The recorder of the check's OS and build: a Windows pod, or a Linux pod for a Linux control (a test
    taking ``target_os``). Each check looks in its log for a message only it sends."""
    target_os = request.getfixturevalue("target_os") if "target_os" in request.fixturenames else "windows"
    return recorders.get(recorder_key(target_os, build))
