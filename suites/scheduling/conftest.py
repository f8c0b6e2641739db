"""Fixtures of the scheduling suite."""

from __future__ import annotations

import pytest

from wincon.checks.workloads import target_build


@pytest.fixture(scope="session")
def build(profile) -> int | None:
    """The newest Windows build among the Ready Windows nodes."""
    return target_build(profile)
