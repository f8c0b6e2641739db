"""Fixtures of the API-rules suite: the Windows build to pin to and a factory of plain Windows pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.workloads import target_build, windows_pod


@pytest.fixture(scope="session")
def build(profile) -> int | None:
    """The newest Windows build among the Ready Windows nodes: real creates are pinned to it."""
    return target_build(profile)


@pytest.fixture(scope="session")
def make_pod(wincon, build) -> Callable[..., dict[str, Any]]:
    """``make_pod(name, **spec_extra)``: an agnhost pod pinned to Windows and the target build."""

    def factory(name: str, **kwargs: Any) -> dict[str, Any]:
        return windows_pod(wincon, name, build, **kwargs)

    return factory
