"""The eviction check's greedy pod may be evicted before a watch sees it Running (suites/node/test_eviction.py,
``running_or_evicted``): that ends its start wait as done, not as the cluster failing to run it (before: "pod failed:
Evicted", an error, although eviction is the behaviour the check waits for); any other failure still ends the wait
as before, and the check still asserts the Evicted event."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster.waits import _check
from wincon.commandline.errors import InfrastructureError

EVICTION = suites.load("suites/node/test_eviction.py")


def pod(phase: str, reason: str | None = None) -> NS:
    return NS(
        status=NS(
            phase=phase, reason=reason, message="The node was low on resource: memory.", conditions=[],
            init_container_statuses=[], container_statuses=[],
        )
    )  # fmt: skip


def test_an_evicted_greedy_pod_ends_its_start_as_done() -> None:
    assert EVICTION.running_or_evicted(pod("Running"))
    assert EVICTION.running_or_evicted(pod("Failed", "Evicted"))
    _check(pod("Failed", "Evicted"), EVICTION.running_or_evicted, EVICTION.pod_failure, "pod pod2")  # no raise


def test_any_other_end_of_the_greedy_pod_is_not_done_and_still_ends_the_wait() -> None:
    assert not EVICTION.running_or_evicted(pod("Pending"))
    assert not EVICTION.running_or_evicted(pod("Failed", "OutOfmemory"))
    with pytest.raises(InfrastructureError, match="pod failed: OutOfmemory"):
        _check(pod("Failed", "OutOfmemory"), EVICTION.running_or_evicted, EVICTION.pod_failure, "pod pod2")
