"""suites/api/test_resize_at_the_kubelet.py on constructed pod statuses: the Windows kubelet's PodResizePending
condition (reason Infeasible, "In-place pod resize is not supported on Windows", k8s.io/kubernetes v1.35.4
pkg/kubelet/allocation/features_windows.go:25 and allocation_manager.go:573) is the Windows outcome, a container
status reporting the new request the Linux one; each OS's check fails on the other's outcome."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit.fakes import PodAnswerKube

SUITE = suites.load("suites/api/test_resize_at_the_kubelet.py")

INFEASIBLE = NS(type="PodResizePending", reason="Infeasible", message="In-place pod resize is not supported on Windows")
DEFERRED = NS(type="PodResizePending", reason="Deferred", message="Node didn't have enough capacity")
IN_PROGRESS = NS(type="PodResizeInProgress", reason="", message="")


def pod(cpu: str = "100m", *conditions: Any, os_name: str = "windows") -> Any:
    status = NS(name="main", resources=NS(requests={"cpu": cpu, "memory": "64Mi"}))
    return NS(
        metadata=NS(name="resize-at-kubelet"),
        spec=NS(node_name=f"{os_name}-node"),
        status=NS(conditions=[NS(type="Ready", reason=None, message=None), *conditions], container_statuses=[status]),
    )


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (pod("100m", INFEASIBLE), ("infeasible", "In-place pod resize is not supported on Windows")),
        (pod("150m"), ("applied", "150m")),
        (pod("100m"), None),  # the kubelet has not acted yet
        (pod("150m", IN_PROGRESS), None),  # accepted, still being applied
        (pod("100m", DEFERRED), None),  # the node may take it later
    ],
    ids=["infeasible", "applied", "pending", "in-progress", "deferred"],
)
def test_resize_outcome(answer, outcome):
    assert SUITE.resize_outcome(answer) == outcome


def run(monkeypatch, target_os: str, answer: Any, rejection: Any = None) -> PodAnswerKube:
    monkeypatch.setattr(SUITE, "create_or_reject", lambda api_client, namespace, body: body)
    monkeypatch.setattr(SUITE, "assert_ran_on", lambda pod, profile, os_name, build: None)
    monkeypatch.setattr(SUITE, "resize_pod", lambda api_client, namespace, name, patch: (None, rejection))
    wincon = NS(
        api_client=None, profile=None, pod_start_timeout=4, catalog=NS(image=lambda key, os_name, build: "agnhost")
    )
    kube = PodAnswerKube(answer)
    SUITE.test_resize_that_reaches_the_kubelet(kube, wincon, "ns", 20348, target_os)
    return kube


def test_windows_kubelet_marking_it_infeasible_passes(monkeypatch):
    kube = run(monkeypatch, "windows", pod("100m", INFEASIBLE))
    assert kube.gated == ["windows-node"]


def test_windows_kubelet_applying_it_fails(monkeypatch):
    with pytest.raises(AssertionError, match="windows kubelet: resize of pod resize-at-kubelet ended \\('applied'"):
        run(monkeypatch, "windows", pod("150m"))


def test_linux_kubelet_applying_it_passes(monkeypatch):
    run(monkeypatch, "linux", pod("150m", os_name="linux"))


def test_linux_kubelet_refusing_it_fails(monkeypatch):
    """A Linux kubelet with the gate off says Infeasible too, in its own words: the control fails."""
    off = NS(type="PodResizePending", reason="Infeasible", message="InPlacePodVerticalScaling is disabled")
    with pytest.raises(AssertionError, match="linux kubelet"):
        run(monkeypatch, "linux", pod("100m", off, os_name="linux"))


def test_api_refusing_the_resize_fails(monkeypatch):
    refused = NS(describe=lambda: "422 Invalid: []: Forbidden: windows pods cannot be resized")
    with pytest.raises(AssertionError, match="refused the resize"):
        run(monkeypatch, "windows", pod("100m"), rejection=refused)


def test_no_outcome_is_behaviour_not_observed(monkeypatch):
    """Neither outcome within the wait (here 4 s): a failure saying what was seen, not a pass."""
    from wincon.cluster.waits import BehaviourNotObserved

    with pytest.raises(BehaviourNotObserved, match="applying or refusing the resize"):
        run(monkeypatch, "windows", pod("100m"))
