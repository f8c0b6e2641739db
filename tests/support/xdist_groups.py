"""``--dist loadgroup`` under pytest 9.2: keep each ``xdist_group`` on one worker.

pytest-xdist (3.8) sends the tests of one group to one worker by renaming each marked item on the workers,
``<nodeid>@<group>``, through ``item._nodeid``; the controller schedules by that suffix. pytest 9.2 reads an
item's node id from ``item._id`` (a structured ``NodeId``) instead, so the renaming no longer shows and every test
is scheduled alone: the fault modules, meant to run one at a time on one worker against one shared cluster, ran on
both workers at once (measured: tests/faults' 25 tests split 13/12 between gw0 and gw1). This hook, run after
xdist's, gives the marked items the suffix xdist meant them to have when theirs did not take; it does nothing
where xdist's own renaming worked (an older pytest) or without ``--dist loadgroup``.
"""

from __future__ import annotations

import pytest


def group_of(item: pytest.Item) -> str | None:
    """The item's xdist group as xdist names it (its groups sorted and joined by ``_``), or None."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    for item in items:
        group = group_of(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        from _pytest.nodeid import NodeId  # pytest >= 9.2, the only versions that reach this line

        item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


def renaming_works() -> bool:
    """Whether xdist's own renaming (``item._nodeid``) still shows in ``item.nodeid``: before pytest 9.2."""
    try:
        import _pytest.nodeid  # noqa: F401  (pytest 9.2's structured node ids)
    except ImportError:
        return True
    return False
