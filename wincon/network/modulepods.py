"""A module's shared netservers and client of one OS, created together and awaited together (issue 22, item 3).

Where the check that first needs the netservers of an OS or its client needs both, the first of the two fixtures
creates every one of those pods before it waits for any, so their starts overlap: on real Windows nodes, where a
pod takes tens of seconds to start, one wait instead of two in a row. Each pod is still waited for and checked to
have run where pinned on its own, and each fixture raises only its own pods' error: a client-only check does not
error because a netserver failed to start. Where that check needs only one of the two, only that one starts, as
before (the other when a later check needs it): the run starts no pod it did not start before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from wincon.nodes import LINUX, target_os
from wincon.profile import NodeProfile

# The fixtures through which an item needs the netservers / the client of its own OS (``target_os``) or of a
# named OS. Names an item reaches only through ``request.getfixturevalue`` count as the fixture that asks.
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


def needs(item: pytest.Item) -> set[tuple[str, str]]:
    """What of the module's shared pods ``item`` uses: ('servers'|'client', os)."""
    names = set(getattr(item, "fixturenames", ()))
    own = target_os(item)
    wanted: set[tuple[str, str]] = set()
    for kind, mine, windows, linux in (
        ("servers", OWN_SERVERS, WINDOWS_SERVERS, LINUX_SERVERS),
        ("client", OWN_CLIENT, WINDOWS_CLIENT, LINUX_CLIENT),
    ):
        if names & mine:
            wanted.add((kind, own))
        if names & windows:
            wanted.add((kind, "windows"))
        if names & linux:
            wanted.add((kind, LINUX))
    return wanted


def together(items: Iterable[pytest.Item], os_name: str) -> bool:
    """True when the items need both the netservers and the client of ``os_name``: then they are started
    together. Asked of the check that first needs either (so a worker that runs only a module's server-only
    checks never starts its client: no pod is started that the run did not start before)."""
    wanted: set[tuple[str, str]] = set()
    for item in items:
        if item.get_closest_marker("skip") is None:
            wanted |= needs(item)
    return {("servers", os_name), ("client", os_name)} <= wanted


class ModulePods:
    """The module's netservers and client per OS, started on first use, together where ``joint(os)``."""

    def __init__(
        self,
        start_each: Callable[[list[dict[str, Any]]], dict[str, Any]],
        joint: Callable[[str, Any], bool],
        servers: Callable[[str], tuple[list[dict[str, Any]], Callable[[dict[str, Any]], Any]]],
        client: Callable[[str], tuple[list[dict[str, Any]], Callable[[dict[str, Any]], Any]]],
    ) -> None:
        """``start_each(manifests)`` creates every pod, then waits for each: name -> pod, or the exception its
        wait or placement check raised. ``servers(os)`` / ``client(os)`` give the manifests and how to make the
        fixture's value from name -> pod."""
        self._start_each, self._joint = start_each, joint
        self._plans = {"servers": servers, "client": client}
        self._done: dict[tuple[str, str], Any] = {}

    def get(self, kind: str, os_name: str, item: Any = None) -> Any:
        """The fixture value of ``kind`` ('servers' | 'client') of ``os_name``, started on first use, together
        with the other kind where ``joint(os_name, item)`` (``item``: the check that asks)."""
        key = (kind, os_name)
        if key not in self._done:
            kinds = ["servers", "client"] if self._joint(os_name, item) else [kind]
            plans = {k: self._plans[k](os_name) for k in kinds if (k, os_name) not in self._done}
            started = self._start_each([m for manifests, _ in plans.values() for m in manifests])
            for k, (manifests, make) in plans.items():
                mine = {m["metadata"]["name"]: started[m["metadata"]["name"]] for m in manifests}
                failed = next((v for v in mine.values() if isinstance(v, BaseException)), None)
                if failed is None:
                    try:
                        self._done[(k, os_name)] = _Made(make(mine))
                    except Exception as exc:  # noqa: BLE001 - e.g. a running pod without an IP: this kind's error
                        self._done[(k, os_name)] = exc
                else:
                    self._done[(k, os_name)] = failed
        value = self._done[key]
        if isinstance(value, BaseException):
            raise value
        return value.value


class _Made:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def nodes_for_servers(nodes: list[NodeProfile]) -> list[NodeProfile]:
    """At least two netservers, one per node in turn (k/k's netserver-N per node)."""
    count = max(2, len(nodes))
    return [nodes[i % len(nodes)] for i in range(count)]
