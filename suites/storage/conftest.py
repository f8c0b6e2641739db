"""Fixtures of the storage suite: the build to pin to, and a checker that runs commands in a pod."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wincon.cluster.exec import ExecResult, exec_in_pod


@pytest.fixture
def run_in(wincon, namespace, data_plane) -> Callable[..., ExecResult]:
    """``run_in(pod, command, container=None)``: pass the data-plane gate, then exec the command."""

    def run(pod: str, command: list[str], container: str | None = None) -> ExecResult:
        data_plane(command, where=f"pod {pod}" + (f" container {container}" if container else ""))
        return exec_in_pod(wincon.api_client, namespace, pod, command, container=container)

    return run
