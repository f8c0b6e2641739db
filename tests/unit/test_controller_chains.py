"""The controllers suite's predicates that let a check go on before every Windows pod has started (issue 22): the
Deployment's first pods made (not yet running) before its scale-up, and the first ready replica as the victim of
the replacement check, the replacement recognised by a uid the controller had not made before."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support import suites

deployment_suite = suites.load("suites/controllers/test_deployment.py")
replication_suite = suites.load("suites/controllers/test_replication.py")


def controller(generation: int, observed: int | None, replicas: int, ready: int = 0) -> Any:
    status = SimpleNamespace(observed_generation=observed, replicas=replicas, ready_replicas=ready)
    return SimpleNamespace(metadata=SimpleNamespace(generation=generation), status=status)


def pod(name: str, uid: str, phase: str = "Running", ready: bool = True) -> Any:
    conditions = [SimpleNamespace(type="Ready", status="True" if ready else "False")]
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name, uid=uid, deletion_timestamp=None),
        status=SimpleNamespace(phase=phase, conditions=conditions, container_statuses=[]),
    )


def test_pods_created_needs_the_spec_observed_and_the_pods_made() -> None:
    done = deployment_suite.pods_created(2)
    assert done(controller(generation=1, observed=1, replicas=2))  # made, none available yet: enough
    assert not done(controller(generation=1, observed=1, replicas=1))
    assert not done(controller(generation=2, observed=1, replicas=2))  # the counts are of an older spec
    assert not done(SimpleNamespace(metadata=SimpleNamespace(generation=1), status=None))


def test_created_with_one_ready_waits_for_all_pods_made_and_one_ready() -> None:
    done = replication_suite.created_with_one_ready(3)
    assert done(controller(generation=1, observed=1, replicas=3, ready=1))
    assert not done(controller(generation=1, observed=1, replicas=3, ready=0))
    assert not done(controller(generation=1, observed=1, replicas=2, ready=2))
    assert not done(controller(generation=2, observed=1, replicas=3, ready=3))


def test_first_ready_is_the_first_running_and_ready_pod_by_name() -> None:
    pods = [pod("rs-c", "c"), pod("rs-a", "a", phase="Pending", ready=False), pod("rs-b", "b")]
    assert replication_suite.first_ready(pods).metadata.name == "rs-b"
    assert replication_suite.first_ready([pod("rs-a", "a", phase="Pending", ready=False)]) is None


def test_replacements_are_the_pods_with_a_uid_the_controller_had_not_made_before() -> None:
    replacements = replication_suite.replacements
    originals = {"a", "b", "c"}
    made = replacements([pod("x", "b"), pod("y", "c"), pod("z", "d", phase="Pending", ready=False)], originals)
    assert [p.metadata.name for p in made] == ["z"]  # made, not yet running: its start is a setup wait of its own
    # the victim still listed, or only the two survivors: nothing made yet
    assert replacements([pod("w", "a"), pod("x", "b"), pod("y", "c")], originals) is None
    assert replacements([pod("x", "b"), pod("y", "c")], originals) is None


statefulset_suite = suites.load("suites/controllers/test_statefulset.py")


def test_the_order_check_still_fails_when_a_member_starts_before_its_predecessor_is_ready() -> None:
    """The StatefulSet order check keeps its 3 members and its two ways to fail (issue 22 left it unchanged)."""
    in_order = [
        ("ADDED", "web-0", False),
        ("MODIFIED", "web-0", True),
        ("ADDED", "web-1", False),
        ("MODIFIED", "web-1", True),
        ("ADDED", "web-2", False),
        ("MODIFIED", "web-2", True),
    ]
    assert statefulset_suite.started_out_of_order(in_order, "web", 3) == []
    burst = [("ADDED", "web-0", False), ("ADDED", "web-1", False), ("ADDED", "web-2", False)]
    burst += [("MODIFIED", f"web-{i}", True) for i in range(3)]
    assert statefulset_suite.started_out_of_order(burst, "web", 3) == [
        "web-1 was created before web-0 was Ready",
        "web-2 was created before web-1 was Ready",
    ]
    two_pending = SimpleNamespace(status=SimpleNamespace(replicas=2, ready_replicas=0))
    assert statefulset_suite.at_most_one_unready(two_pending) == "2 pods existed while only 0 were ready"
    assert (
        statefulset_suite.at_most_one_unready(SimpleNamespace(status=SimpleNamespace(replicas=2, ready_replicas=1)))
        is None
    )
