"""Fixtures shared by the unit tests."""

from __future__ import annotations

import time

import pytest


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A fake clock for the suite's polls (wincon.checks.pods.eventually, tenacity): time.sleep advances it, no
    real sleep; time.monotonic reads it. The list's one item is the seconds slept so far."""
    now = [0.0]
    monkeypatch.setattr(time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    monkeypatch.setattr(time, "monotonic", lambda: 100.0 + now[0])
    return now
