"""One pod per OS and build shared by a module's checks that only read their own volume (issue 22, item 3).

On real Windows nodes a pod takes tens of seconds to start, and checks that each start a pod of their own wait
for them one after another. Checks that only READ what a volume of theirs holds (a ConfigMap's key, a Secret's,
the downward API's, a projected volume's, the service-account token) lose nothing by reading it from one pod that
mounts every such volume: each still reads its own file, in a pod that ran on the OS and build it names.

The shared pod mounts only the volumes of the checks that will run (selected, not skipped at collection, of that
OS and build): a check that does not run adds nothing to it, and no shared pod starts unless such a check asks.
It starts once, when the first of those checks asks for it. If it cannot start (refused, never Ready, placed
wrong), no check is judged by that: each falls back to a pod of its own (``get`` answers None), so its verdict is
its own, as before sharing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import pytest

log = logging.getLogger(__name__)


class SharedPods:
    """Shared pods by key (e.g. (os, build)), each started on first use by ``start(key, part)``, which answers
    (pod, the parts it holds): the parts of the checks that will run with that key, and the asking one's."""

    def __init__(self, start: Callable[[Hashable, str], tuple[Any, set[str]]]) -> None:
        self._start = start
        self._pods: dict[Hashable, tuple[Any, set[str]]] = {}
        self.errors: dict[Hashable, Exception] = {}

    def get(self, key: Hashable, part: str) -> Any | None:
        """The shared pod of ``key`` if it holds ``part``, started on first use; None when it could not start
        (then and later) or does not hold ``part``: the caller falls back to a pod of its own. A skip raised by
        ``start`` is the asking check's skip, and is not kept (pytest's Skipped is no Exception)."""
        if key in self.errors:
            return None
        if key not in self._pods:
            try:
                self._pods[key] = self._start(key, part)
            except Exception as exc:  # noqa: BLE001 - no check is judged by the shared pod's failure
                log.warning("shared pod %s could not start, each check uses its own: %s", key, exc)
                self.errors[key] = exc
                return None
        pod, parts = self._pods[key]
        return pod if part in parts else None


def parts_to_run(
    items: Iterable[pytest.Item],
    part_of: Callable[[pytest.Item], str | None],
    key_of: Callable[[pytest.Item], Hashable],
    key: Hashable,
) -> set[str]:
    """The parts (volumes) the shared pod of ``key`` must hold: those of the items that will run with that key.
    ``part_of(item)`` is the part an item reads (None: the item reads none); an item skipped at collection runs
    no fixture, so it adds none."""
    parts: set[str] = set()
    for item in items:
        part = part_of(item)
        if part is None or item.get_closest_marker("skip") is not None:
            continue
        if key_of(item) == key:
            parts.add(part)
    return parts
