"""Whether the API server keeps ``lifecycle.stopSignal`` (the ContainerStopSignals feature gate): the
"stop-signals" capability of wincon/clusterinfo/capabilities.py, read once per run."""

from __future__ import annotations

from typing import Any

from wincon.checks.api_rules import submit_pod
from wincon.checks.pods import windows_pod

GATE_OFF = "the API server dropped lifecycle.stopSignal: the ContainerStopSignals feature gate is off"


def stop_signal_kept(context: Any, namespace: str) -> bool:
    """A server-side dry run of a Windows pod stopping with SIGTERM: does the stored pod keep the field?"""
    probe = windows_pod(context, "stop-signal-probe", None)
    probe["spec"]["containers"][0]["lifecycle"] = {"stopSignal": "SIGTERM"}
    created, rejection = submit_pod(context.api_client, namespace, probe)
    if rejection is not None:
        raise AssertionError(f"a Windows pod stopping with SIGTERM was refused: {rejection.describe()}")
    containers = (created or {}).get("spec", {}).get("containers") or [{}]
    return (containers[0].get("lifecycle") or {}).get("stopSignal") == "SIGTERM"
