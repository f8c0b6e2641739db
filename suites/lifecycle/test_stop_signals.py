"""Container stop signals (``lifecycle.stopSignal``, the ContainerStopSignals feature): a Windows pod may name
SIGTERM or SIGKILL, the two a Windows container can be stopped with; any other signal is refused by API
validation at ``spec.containers[0].lifecycle.stopSignal``. The Linux control: the same signals on a Linux pod
are accepted. Upstream: test/e2e/windows/container_stop_signals.go. Everything here runs against the real API
server (server-side dry runs); where the feature gate is off the server drops the field, and the checks skip
with that reason (the "stop-signals" capability, decided at collection where a cluster is reachable)."""

from __future__ import annotations

import pytest

from wincon.checks.pods import windows_pod
from wincon.workloads.deploy import container, pod_manifest

pytestmark = [pytest.mark.lifecycle, pytest.mark.requires("stop-signals")]

FIELD = "spec.containers[0].lifecycle.stopSignal"
CASES = [("SIGTERM", True), ("SIGKILL", True), ("SIGQUIT", False), ("SIGUSR1", False)]


def with_stop_signal(body: dict, signal: str) -> dict:
    body["spec"]["containers"][0]["lifecycle"] = {"stopSignal": signal}
    return body


def stored_signal(created: dict | None) -> str | None:
    containers = ((created or {}).get("spec") or {}).get("containers") or [{}]
    return (containers[0].get("lifecycle") or {}).get("stopSignal")


@pytest.mark.test_id("7bc04f23-9f14-4571-9359-e48268d1d237")
@pytest.mark.parametrize(("signal", "accepted"), CASES, ids=[f"{s}-{'accepted' if a else 'refused'}" for s, a in CASES])
@pytest.mark.documents("k8s-windows-guide", "Limitations > Compute")
def test_windows_pod_stop_signal_is_sigterm_or_sigkill(kube, wincon, build, stop_signals, signal, accepted):
    """ "Signals - Windows interactive apps handle termination differently" (002_8a7e76f95009f44f.txt, Limitations > Compute): a Windows container can only be stopped with SIGTERM or SIGKILL, so API validation accepts those two stop signals and refuses the others (upstream container_stop_signals.go)."""
    body = with_stop_signal(windows_pod(wincon, f"stop-{signal.lower()}", build), signal)
    created, rejection = kube.submit(body)
    if accepted:
        assert rejection is None, f"stopSignal {signal} was refused for a Windows pod: {rejection.describe()}"
        assert stored_signal(created) == signal, f"the server stored stopSignal {stored_signal(created)!r}"
        return
    assert rejection is not None, f"stopSignal {signal} was accepted for a Windows pod"
    assert rejection.status == 422, rejection.describe()
    assert rejection.cause(FIELD) is not None, f"no cause at {FIELD}: {rejection.describe()}"


@pytest.mark.test_id("16554e3b-006c-41de-84c9-30df3389fa67")
@pytest.mark.parametrize("signal", ["SIGQUIT", "SIGUSR1"])
@pytest.mark.documents("k8s-windows-guide", "Limitations > Compute, Signals")
def test_linux_pod_may_stop_with_other_signals(kube, wincon, build, stop_signals, signal):
    """The Linux control of the stop-signal rule: the signals refused for Windows pods are accepted for a Linux pod, so the refusal is the Windows rule (002_8a7e76f95009f44f.txt, Limitations > Compute, Signals)."""
    image = wincon.catalog.image("agnhost", "linux")
    body = pod_manifest(f"linux-stop-{signal.lower()}", [container("main", image, args=["pause"])], os_name="linux")
    created, rejection = kube.submit(with_stop_signal(body, signal))
    assert rejection is None, f"stopSignal {signal} was refused for a Linux pod: {rejection.describe()}"
    assert stored_signal(created) == signal, f"the server stored stopSignal {stored_signal(created)!r}"
