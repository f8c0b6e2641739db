"""The shared test cluster's use lock: tests share it, a test that stops one of the cluster's processes waits
until it is alone, and keeps the others out meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared_use import holding


def test_shares_coexist(tmp_path: Path) -> None:
    lock = tmp_path / "use.lock"
    with holding(lock, exclusive=False, wait=0.5), holding(lock, exclusive=False, wait=0.5):
        assert lock.is_file()


def test_exclusive_use_waits_for_every_share_and_keeps_shares_out(tmp_path: Path) -> None:
    lock = tmp_path / "use.lock"
    with holding(lock, exclusive=False, wait=0.5):
        with pytest.raises(TimeoutError, match="no exclusive use of the shared test cluster within 0 s"):
            with holding(lock, exclusive=True, wait=0.3):
                pass
    with holding(lock, exclusive=True, wait=0.5):
        with pytest.raises(TimeoutError, match="no shared use"):
            with holding(lock, exclusive=False, wait=0.3):
                pass
    with holding(lock, exclusive=True, wait=0.5):  # released by both blocks above
        pass
