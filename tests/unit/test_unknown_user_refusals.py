"""suites/api/test_run_as_user_name_at_runtime.py's start_outcome on constructed answers: the sandbox refusal of an
unknown pod-level runAsUserName counts in either wording upstream accepts from k8s.io/kubernetes v1.38.0-beta.0
(test/e2e/windows/security_context.go:71-80): ltsc2022's "The user name or password is incorrect." and ltsc2025's
"The specified domain either does not exist or could not be contacted.". Each event message is the kubelet's
"Failed to create pod sandbox: %v" (v1.37.2 pkg/kubelet/kuberuntime/kuberuntime_manager.go:1752) around the
runtime's error, here only the wording upstream matches; any other sandbox failure is not the refusal."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites

SUITE = suites.load("suites/api/test_run_as_user_name_at_runtime.py")


def kube_with(monkeypatch, *messages: str, statuses: list | None = None) -> NS:
    events = [NS(message=m) for m in messages]
    monkeypatch.setattr(SUITE, "events_for", lambda api_client, namespace, name, reason: events)
    pod = NS(status=NS(container_statuses=statuses or []))
    return NS(api_client=None, namespace="ns", core=NS(read_namespaced_pod=lambda name, namespace: pod))


@pytest.mark.parametrize(
    "wording",
    [
        "The user name or password is incorrect.",  # ltsc2022, ERROR_LOGON_FAILURE (1326)
        "The specified domain either does not exist or could not be contacted.",  # ltsc2025, ERROR_NO_SUCH_DOMAIN
    ],
    ids=["ltsc2022", "ltsc2025"],
)
def test_either_wording_of_the_sandbox_refusal_is_the_refusal(monkeypatch, wording):
    kube = kube_with(monkeypatch, f"Failed to create pod sandbox: {wording}")
    assert SUITE.start_outcome(kube, "unknown-user-pod") == f"refused: sandbox Failed to create pod sandbox: {wording}"


def test_another_sandbox_failure_is_not_the_refusal(monkeypatch):
    """A sandbox that failed for another reason (here the network) leaves the check waiting, not passed."""
    kube = kube_with(monkeypatch, "Failed to create pod sandbox: failed to setup network for sandbox")
    assert SUITE.start_outcome(kube, "unknown-user-pod") is None


def test_the_domain_wording_alone_was_not_the_refusal_before(monkeypatch):
    """The check before this change (WRONG_USER alone) waited out the ltsc2025 refusal: the new wording is needed."""
    kube = kube_with(monkeypatch, "Failed to create pod sandbox: " + SUITE.NO_SUCH_DOMAIN)
    monkeypatch.setattr(SUITE, "UNKNOWN_USER_REFUSALS", (SUITE.WRONG_USER,))
    assert SUITE.start_outcome(kube, "unknown-user-pod") is None


def test_a_container_that_ran_is_not_refused(monkeypatch):
    ran = NS(state=NS(terminated=NS(reason="Completed", exit_code=0, message=None), waiting=None))
    kube = kube_with(monkeypatch, statuses=[ran])
    assert SUITE.start_outcome(kube, "unknown-user-pod").startswith("ran:")
