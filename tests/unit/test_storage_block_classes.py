"""The storage suite's block-capable StorageClass rule (wincon/checks/storage.py, block_capable) over the
StorageClasses AKS, GKE and EKS clusters show: a file-only CSI driver does not count, so the raw-block check and
its control skip there instead of failing on a claim that cannot be a device."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.checks import storage

ROOT = Path(__file__).resolve().parents[2]
BLOCK_CHECK = "test_raw_block_volume_is_attached_as_a_device"


def load_conftest() -> Any:
    """The rule's home (the storage conftest's fixture hands the check the same function)."""
    return storage


def sc(name: str, provisioner: str, default: bool = False, expansion: bool = True) -> Any:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return NS(
        metadata=NS(name=name, annotations=annotations), provisioner=provisioner, allow_volume_expansion=expansion
    )


# The classes each managed service creates (names and provisioners as `kubectl get storageclass` lists them).
AKS = [
    sc("default", "disk.csi.azure.com", default=True),
    sc("managed-csi", "disk.csi.azure.com"),
    sc("managed-csi-premium", "disk.csi.azure.com"),
    sc("azurefile", "file.csi.azure.com"),
    sc("azurefile-csi", "file.csi.azure.com"),
    sc("azurefile-csi-premium", "file.csi.azure.com"),
]
GKE = [
    sc("standard-rwo", "pd.csi.storage.gke.io", default=True),
    sc("premium-rwo", "pd.csi.storage.gke.io"),
    sc("standard", "kubernetes.io/gce-pd"),
    sc("standard-rwx", "filestore.csi.storage.gke.io"),
    sc("enterprise-rwx", "filestore.csi.storage.gke.io"),
]
EKS = [
    sc("gp2", "kubernetes.io/aws-ebs", default=True),
    sc("gp3", "ebs.csi.aws.com"),
    sc("efs-sc", "efs.csi.aws.com"),
]
FILE_ONLY = {"file.csi.azure.com", "filestore.csi.storage.gke.io", "efs.csi.aws.com"}


@pytest.mark.parametrize("classes", [AKS, GKE, EKS], ids=["aks", "gke", "eks"])
def test_disk_classes_are_block_capable_and_file_share_classes_are_not(classes):
    conftest = load_conftest()
    decided = {c.metadata.name: conftest.block_capable(c) for c in classes}
    assert decided == {c.metadata.name: c.provisioner not in FILE_ONLY for c in classes}
    assert any(decided.values())  # each service's disk classes still run the check


@pytest.mark.parametrize(
    "provisioner",
    ["file.csi.azure.com", "efs.csi.aws.com", "filestore.csi.storage.gke.io", "smb.csi.k8s.io", "nfs.csi.k8s.io"],
)
def test_a_cluster_with_only_file_share_classes_skips_the_block_check(provisioner):
    """Before this rule, each of these counted as block-capable ("csi" in the name) and the check ran."""
    wanted, reason = storage.CLASS_NEEDS["block-storage-class"]
    only = [sc("files", provisioner, default=True)]
    assert "csi" in provisioner  # what the old name rule went by
    assert not any(wanted(c) for c in only)
    assert reason == "no StorageClass of a block-capable (disk) provisioner"


def test_the_local_clusters_local_path_class_is_not_block_capable_and_in_tree_disks_are():
    conftest = load_conftest()
    assert not conftest.block_capable(sc("standard", "rancher.io/local-path", default=True))
    assert conftest.block_capable(sc("gp2", "kubernetes.io/aws-ebs"))
    assert conftest.block_capable(sc("managed", "kubernetes.io/azure-disk"))
    assert not conftest.block_capable(sc("azurefile", "kubernetes.io/azure-file"))


def test_the_check_and_collection_use_the_same_rule():
    """The check's own look-up takes the rule from the conftest's fixture, so plan and run decide alike."""
    assert storage.CLASS_NEEDS["block-storage-class"][0] is storage.block_capable
    assert suites.load("suites/storage/conftest.py").block_capable is storage.block_capable
    check = getattr(suites.load("suites/storage/test_volume_limitations.py"), BLOCK_CHECK)
    assert [m.args for m in check.pytestmark if m.name == "requires"] == [("block-storage-class",)]
    source = (ROOT / "suites" / "storage" / "test_volume_limitations.py").read_text()
    assert "storage_class_where(kube, block_capable_class)" in source
