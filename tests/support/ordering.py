"""The heaviest of the project's own tests start first: ``pytest.mark.weight(seconds)``.

Under ``make test`` (``-n 4 --dist loadgroup --no-loadscope-reorder``) pytest-xdist hands work out in the collection
order, one scope (an xdist_group, or a test alone) at a time as each worker runs low. A long test that happens to be
collected late starts late and ends the run alone: the data-plane integration test (about 600 s) came after every
fault module. A test (or module, through ``pytestmark``) marked ``weight(seconds)``, its time in a recent
``make test`` (``--durations``), is moved ahead of the unmarked ones, the heaviest first; a group's place is its
heaviest test's. The sort is stable: tests of equal weight, the unmarked ones included, keep the collection order,
so the tests of one module (or group) that rely on their order keep it. A weight is a scheduling hint, never a
bound: nothing asserts it.

The marker also registers ``measures_cpu``: the tests that measure how much CPU a container is given (the CPU-limit
checks' runs). ``make test`` runs them after every other test, alone on the machine: on two cores another test's
load starves the unlimited twin those checks need to see exceed the limit (tests/support/shared_use.py).
"""

from __future__ import annotations

import pytest

MARKERS = (
    "weight(seconds): the test's time in a recent make test; the heaviest start first (tests/support/ordering.py)",
    "measures_cpu: measures a container's CPU use; make test runs these last, alone (tests/support/ordering.py)",
)


def weight_of(item: pytest.Item) -> float:
    """The item's ``weight`` marker (the closest: a test's own over its module's), 0 when unmarked."""
    marker = item.get_closest_marker("weight")
    if marker is None:
        return 0.0
    seconds = marker.args[0] if marker.args else marker.kwargs.get("seconds")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise pytest.UsageError(f"{item.nodeid}: weight takes the test's seconds (a number >= 0), not {seconds!r}")
    return float(seconds)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Heaviest first; equal weights in the collection order (``sorted`` is stable)."""
    items[:] = sorted(items, key=lambda item: -weight_of(item))
