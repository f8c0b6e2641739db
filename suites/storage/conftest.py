"""Fixtures of the storage suite. What the checks need of the cluster's StorageClasses (a default class, a
block-capable class, one allowing expansion) and of the API server (the certificates.k8s.io/v1 resources of the
projected certificate checks) are capabilities (wincon/clusterinfo/capabilities.py, ``requires``), decided once per run so
that `wincon plan` and the run agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.storage import block_capable


@pytest.fixture(scope="session")
def block_capable_class() -> Callable[[Any], bool]:
    """The suite's one rule for a block-capable StorageClass (wincon.checks.storage.block_capable), for the check's
    own look-up."""
    return block_capable
