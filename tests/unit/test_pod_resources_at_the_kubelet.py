"""suites/api/test_pod_resources_at_the_kubelet.py on constructed pod statuses: the Windows kubelet's admission
refusal (Failed, PodLevelResourcesNotSupported, "Pod was rejected: pod-level resources are not supported on
Windows": k8s.io/kubernetes v1.35.4 pkg/kubelet/lifecycle/features_windows.go:32 and kubelet.go:2474-2476) is the
Windows outcome, Running the Linux one; each OS's check fails on the other's."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit.fakes import PodAnswerKube

SUITE = suites.load("suites/api/test_pod_resources_at_the_kubelet.py")

WINDOWS_REJECTION = NS(
    phase="Failed",
    reason="PodLevelResourcesNotSupported",
    message="Pod was rejected: pod-level resources are not supported on Windows",
)


def pod(status: Any, os_name: str = "windows") -> Any:
    return NS(metadata=NS(name="pod-resources-at-kubelet"), spec=NS(node_name=f"{os_name}-node"), status=status)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (WINDOWS_REJECTION, ("rejected", f"{SUITE.REJECTED_REASON}: {SUITE.REJECTED_MESSAGE}")),
        (NS(phase="Running", reason=None, message=None), ("running", "")),
        (NS(phase="Pending", reason=None, message=None), None),
        (NS(phase="Failed", reason=None, message=None), None),  # a container that failed: not an admission refusal
        (None, None),
    ],
    ids=["rejected", "running", "pending", "failed-without-reason", "no-status"],
)
def test_admission_outcome(status, outcome):
    assert SUITE.admission_outcome(pod(status)) == outcome


def run(monkeypatch, target_os: str, answer: Any, dropped: bool = False) -> PodAnswerKube:
    sent: list[dict] = []

    def create(api_client, namespace, body):
        sent.append(body)
        return {"spec": {k: v for k, v in body["spec"].items() if not (dropped and k == "resources")}}

    monkeypatch.setattr(SUITE, "create_or_reject", create)
    monkeypatch.setattr(SUITE, "assert_ran_on", lambda pod, profile, os_name, build: None)
    wincon = NS(
        api_client=None, profile=None, pod_start_timeout=4, catalog=NS(image=lambda key, os_name, build: "agnhost")
    )
    kube = PodAnswerKube(answer)
    SUITE.test_pod_level_resources_at_the_kubelet(kube, wincon, "ns", 20348, target_os)
    assert "os" not in sent[0]["spec"] and sent[0]["spec"]["resources"] == SUITE.POD_RESOURCES
    return kube


def test_windows_kubelet_rejecting_it_passes(monkeypatch):
    assert run(monkeypatch, "windows", pod(WINDOWS_REJECTION)).gated == ["windows-node"]


def test_windows_kubelet_running_it_fails(monkeypatch):
    with pytest.raises(AssertionError, match="windows kubelet: .* ended \\('running'"):
        run(monkeypatch, "windows", pod(NS(phase="Running", reason=None, message=None)))


def test_linux_kubelet_running_it_passes(monkeypatch):
    run(monkeypatch, "linux", pod(NS(phase="Running", reason=None, message=None), "linux"))


def test_linux_kubelet_rejecting_it_fails(monkeypatch):
    """A Linux kubelet with the gate off rejects it in its own words: the control fails."""
    off = NS(
        phase="Failed", reason="PodLevelResourcesNotSupported", message="PodLevelResources feature gate is disabled"
    )
    with pytest.raises(AssertionError, match="linux kubelet"):
        run(monkeypatch, "linux", pod(off, "linux"))


def test_dropped_field_skips(monkeypatch):
    with pytest.raises(pytest.skip.Exception, match="PodLevelResources is off"):
        run(monkeypatch, "windows", pod(WINDOWS_REJECTION), dropped=True)


def test_no_outcome_is_behaviour_not_observed(monkeypatch):
    from wincon.cluster.waits import BehaviourNotObserved

    with pytest.raises(BehaviourNotObserved, match="admitting or rejecting"):
        run(monkeypatch, "windows", pod(NS(phase="Pending", reason=None, message=None)))
