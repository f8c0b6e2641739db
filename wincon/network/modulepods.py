"""A module's shared pods (netservers, client, the node's own host pod) per OS, created together and awaited
together (issue 22, item 3).

The check that first needs one of them starts, besides it, every other of these pods that same check needs and
that has not started yet: all are created before any is waited for, so their starts overlap (on real Windows
nodes, where a pod takes tens of seconds to start, one wait instead of one per kind in a row: a node-side check's
HostProcess pod and the netservers, a dial's client and servers). Each pod is still waited for and checked to
have run where pinned on its own, and each fixture raises only its own pods' error: a client-only check does not
error because a netserver failed to start. Where that check needs only one kind, only that one starts, as before
(the others when a later check needs them): the run starts no pod it did not start before. A kind whose creation
is refused (a HostProcess pod the cluster's policy does not allow: a skip) keeps that outcome for every check
that asks; where it is the kind the check asked for first, nothing else is created for that check.

Ahead (issue 44, item 2): when a check starts its pods, the pods of the other OS that the module's later checks on
this worker need (``later``: a Linux control's Windows twins') are created too, and awaited by the first check that
needs each, so the Windows pods start while the Linux controls run. They are the same shared pods, made sooner: a
pod made for checks that then do not run here (skipped, or stolen by another worker) goes with the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, TypeVar

import pytest

from wincon.clusterinfo.nodes import LINUX, target_os
from wincon.clusterinfo.profile import NodeProfile

T = TypeVar("T")

# The fixtures through which an item needs the netservers / the client / the node's host pod of its own OS
# (``target_os``) or of a named OS. Names an item reaches only through ``request.getfixturevalue`` count as the
# fixture that asks.
OWN_SERVERS = frozenset(
    {"servers", "local_server", "remote_server", "server_service", "server_headless", "server_nodeport", "server_alias"}
)
WINDOWS_SERVERS = frozenset({"netservers", "local_netserver", "remote_netserver", "netserver_service",
                             "headless_service", "nodeport_service", "alias_service"})  # fmt: skip
LINUX_SERVERS = frozenset({"linux_netservers", "linux_service", "linux_headless_service", "linux_nodeport_service",
                           "linux_alias_service"})  # fmt: skip
OWN_CLIENT = frozenset({"client", "local_server", "remote_server"})
WINDOWS_CLIENT = frozenset({"windows_client", "local_netserver", "remote_netserver"})
LINUX_CLIENT = frozenset({"linux_client"})
OWN_HOST = frozenset({"host"})
WINDOWS_HOST = frozenset({"windows_host"})
LINUX_HOST = frozenset({"linux_host"})

KINDS = (
    ("servers", OWN_SERVERS, WINDOWS_SERVERS, LINUX_SERVERS),
    ("client", OWN_CLIENT, WINDOWS_CLIENT, LINUX_CLIENT),
    ("host", OWN_HOST, WINDOWS_HOST, LINUX_HOST),
)

# What a fixture raises that is the outcome of its pods (an error, a skip, a failure), never an interrupt.
OUTCOMES: tuple[type[BaseException], ...] = (Exception, pytest.skip.Exception, pytest.fail.Exception)


def needs(item: pytest.Item) -> set[tuple[str, str]]:
    """What of the module's shared pods ``item`` uses: ('servers'|'client'|'host', os)."""
    names = set(getattr(item, "fixturenames", ()))
    own = target_os(item)
    wanted: set[tuple[str, str]] = set()
    for kind, mine, windows, linux in KINDS:
        if names & mine:
            wanted.add((kind, own))
        if names & windows:
            wanted.add((kind, "windows"))
        if names & linux:
            wanted.add((kind, LINUX))
    return wanted


class Plan(NamedTuple):
    """The pods of one kind and OS: their manifests, how to make the fixture's value from name -> pod, and how
    to create each (None: the module's ordinary create)."""

    manifests: list[dict[str, Any]]
    make: Callable[[dict[str, Any]], Any]
    create: Callable[[dict[str, Any]], Any] | None = None


class ModulePods:
    """The module's shared pods per kind and OS, started on first use, together with what the asking check
    needs besides (``wanted(item)``)."""

    def __init__(
        self,
        create: Callable[[dict[str, Any]], Any],
        await_each: Callable[[list[dict[str, Any]]], dict[str, Any]],
        wanted: Callable[[Any], Iterable[tuple[str, str]]],
        plans: dict[str, Callable[[str], Plan]],
        later: Callable[[Any], Iterable[tuple[str, str]]] | None = None,
    ) -> None:
        """``create(manifest)`` creates one pod; ``await_each(manifests)`` waits for each (side by side) and
        checks where it ran: name -> pod, or the exception its wait or placement check raised. ``wanted(item)``:
        the (kind, os) the asking check needs; ``plans[kind](os)``: that kind's Plan. ``later(item)``: the (kind, os)
        the module's checks after the asking one need (the other OS's), created when the asking check's own are
        started and awaited only by the check that first needs each (issue 44, item 2)."""
        self._create, self._await_each, self._wanted, self._plans = create, await_each, wanted, plans
        self._later = later
        self._done: dict[tuple[str, str], Any] = {}
        self._created: dict[tuple[str, str], Plan] = {}  # created ahead, not yet awaited

    def get(self, kind: str, os_name: str, item: Any = None) -> Any:
        """The fixture value of ``kind`` of ``os_name``, started on first use together with every other kind the
        asking check (``item``) needs and that has not started yet."""
        key = (kind, os_name)
        if key not in self._done:
            others = {k for k in (self._wanted(item) if item is not None else ()) if k[0] in self._plans}
            self._start([key, *sorted(others - {key} - set(self._done))])
            if self._later is not None and item is not None:
                self.ahead([k for k in sorted(set(self._later(item))) if k[0] in self._plans])
        value = self._done[key]
        if isinstance(value, BaseException):
            raise value
        return value.value

    def ahead(self, keys: Iterable[tuple[str, str]]) -> None:
        """Create the pods of ``keys`` not yet created, awaiting none: the check that first needs one awaits it (a
        creation's error or skip is kept for the checks that ask, as ``_start`` keeps it)."""
        for key in keys:
            if key in self._done or key in self._created:
                continue
            try:
                plan = self._plans[key[0]](key[1])
                create = plan.create or self._create
                for manifest in plan.manifests:
                    create(manifest)
            except OUTCOMES as exc:  # this kind's outcome (a refusal, a skip), for each check that asks
                self._done[key] = exc
                continue
            self._created[key] = plan

    def _start(self, keys: list[tuple[str, str]]) -> None:
        """Create every pod of ``keys`` (the asked one first) not created ahead, then wait for all of them at
        once."""
        plans: dict[tuple[str, str], Plan] = {}
        for key in keys:
            self.ahead([key])  # created now, unless it was ahead
            if key not in self._created:  # its creation's outcome is kept in _done
                if key == keys[0]:
                    return  # the asking check stops here: nothing else is started for it
                continue
            plans[key] = self._created.pop(key)
        started = self._await_each([m for plan in plans.values() for m in plan.manifests])
        for key, plan in plans.items():
            mine = {m["metadata"]["name"]: started[m["metadata"]["name"]] for m in plan.manifests}
            failed = next((v for v in mine.values() if isinstance(v, BaseException)), None)
            if failed is None:
                try:
                    self._done[key] = _Made(plan.make(mine))
                except Exception as exc:  # noqa: BLE001 - e.g. a running pod without an IP: this kind's error
                    self._done[key] = exc
            else:
                self._done[key] = failed


def start_own(
    create: Callable[[dict[str, Any]], Any],
    await_each: Callable[[list[dict[str, Any]]], dict[str, Any]],
    manifests: list[dict[str, Any]],
    meanwhile: Callable[[], T],
) -> tuple[T, dict[str, Any]]:
    """A check's own pods beside a module pod it needs: ``manifests`` are created, then awaited (``await_each``:
    name -> pod, or the exception its wait or placement check raised) in a thread of their own while
    ``meanwhile()`` runs here (the module fixture asked for: its pods created, if not yet, and awaited): their
    starts and waits overlap. The own pods' waits end before this returns, also where ``meanwhile`` raises
    (its exception then goes on: the module pod's error is the check's, its own pods' errors are handed back)."""
    for manifest in manifests:
        create(manifest)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="own-pods") as pool:
        waiting = pool.submit(await_each, manifests)
        value = meanwhile()
        return value, waiting.result()


class _Made:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def nodes_for_servers(nodes: list[NodeProfile]) -> list[NodeProfile]:
    """At least two netservers, one per node in turn (k/k's netserver-N per node)."""
    count = max(2, len(nodes))
    return [nodes[i % len(nodes)] for i in range(count)]
