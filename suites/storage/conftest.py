"""Fixtures of the storage suite: which StorageClasses the cluster has, decided once per run, so that `wincon plan`
and the run agree: a check (and its Linux control) needing a StorageClass the cluster lacks is marked skipped at
collection, with the reason the test itself gives when it finds none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.cluster.client import call
from wincon.context import get_context
from wincon.kube import Kube

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

# test function -> (the StorageClass it needs, the reason its own look-up skips with)
NEEDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "test_persistent_volume_claim_of_the_default_storage_class": (
        lambda c: (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true",
        "the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned",
    ),
    "test_raw_block_volume_is_attached_as_a_device": (
        lambda c: "csi" in c.provisioner or "disk" in c.provisioner,
        "no StorageClass of a block-capable (disk) provisioner",
    ),
    "test_expanded_claim_grows_the_filesystem_the_pod_sees": (
        lambda c: bool(c.allow_volume_expansion),
        "no StorageClass allows volume expansion",
    ),
}

_CLASSES = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against a live cluster (not a profile file, not lint), mark the tests needing a missing StorageClass
    skipped. A failed look-up leaves the decision to the test."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    needing = [item for item in items if getattr(item, "originalname", item.name) in NEEDS]
    if not needing:
        return
    if _CLASSES not in config.stash:
        try:
            kube = Kube(context, "default")  # cluster-scoped reads only; no gate, no exec
            config.stash[_CLASSES] = call(kube.storage.list_storage_class).items
        except Exception:
            return
    classes = config.stash[_CLASSES]
    for item in needing:
        wanted, reason = NEEDS[getattr(item, "originalname", item.name)]
        if not any(wanted(c) for c in classes):
            item.add_marker(pytest.mark.skip(reason=reason))
