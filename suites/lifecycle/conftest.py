"""Fixtures of the lifecycle suite: whether the API server keeps ``lifecycle.stopSignal`` (the
ContainerStopSignals feature gate), decided once per run, so that `wincon plan` and the run agree: where the
server drops the field, the stop-signal tests are marked skipped at collection with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks.api_rules import submit_pod
from wincon.checks.pods import windows_pod
from wincon.context import get_context

GATE_OFF = "the API server dropped lifecycle.stopSignal: the ContainerStopSignals feature gate is off"
_KEPT = pytest.StashKey[bool]()


def stop_signal_kept(context: Any, namespace: str) -> bool:
    """A server-side dry run of a Windows pod stopping with SIGTERM: does the stored pod keep the field?"""
    probe = windows_pod(context, "stop-signal-probe", None)
    probe["spec"]["containers"][0]["lifecycle"] = {"stopSignal": "SIGTERM"}
    created, rejection = submit_pod(context.api_client, namespace, probe)
    if rejection is not None:
        raise AssertionError(f"a Windows pod stopping with SIGTERM was refused: {rejection.describe()}")
    containers = (created or {}).get("spec", {}).get("containers") or [{}]
    return (containers[0].get("lifecycle") or {}).get("stopSignal") == "SIGTERM"


def _kept(config: pytest.Config, context: Any, namespace: str) -> bool:
    if _KEPT not in config.stash:
        config.stash[_KEPT] = stop_signal_kept(context, namespace)
    return config.stash[_KEPT]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against a live cluster (not a profile file, not lint), mark the stop-signal tests skipped where the
    server drops the field. A failed probe leaves the decision to the fixture, which fails or skips itself."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    needing = [item for item in items if "stop_signals" in getattr(item, "fixturenames", ())]
    if not needing:
        return
    try:
        kept = _kept(config, context, "default")
    except Exception:
        return
    if not kept:
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=GATE_OFF))


@pytest.fixture
def stop_signals(request: pytest.FixtureRequest, wincon: Any, namespace: str) -> None:
    """Skip unless the API server keeps lifecycle.stopSignal; a refused SIGTERM fails the test."""
    if not _kept(request.config, wincon, namespace):
        pytest.skip(GATE_OFF)
