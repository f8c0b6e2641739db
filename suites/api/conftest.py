"""Fixtures of the API-rules suite: the Windows build to pin to and a factory of plain Windows pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.pods import windows_pod


@pytest.fixture
def make_pod(wincon, build) -> Callable[..., dict[str, Any]]:
    """``make_pod(name, **spec_extra)``: an agnhost pod pinned to Windows and the target build."""

    def factory(name: str, **kwargs: Any) -> dict[str, Any]:
        return windows_pod(wincon, name, build, **kwargs)

    return factory
