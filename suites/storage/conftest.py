"""Fixtures of the storage suite: which StorageClasses the cluster has, decided once per run, so that `wincon plan`
and the run agree: a check (and its Linux control) needing a StorageClass the cluster lacks is marked skipped at
collection, with the reason the test itself gives when it finds none. Likewise the projected certificate checks
where the API server does not serve their certificates.k8s.io/v1 resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks import certificates
from wincon.cluster.client import call
from wincon.context import get_context
from wincon.kube import Kube

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

# Provisioners of file systems (network shares), which cannot hand a pod a raw block device although their names
# say "csi": the production drivers listed with "Read/Write Multiple Pods" and no "Raw Block" among their
# features in the Kubernetes CSI project's driver table (https://kubernetes-csi.github.io/docs/drivers.html,
# kubernetes-csi/docs book/src/drivers.md: Azure file, AWS Elastic File System, AWS FSx for Lustre, Google Cloud
# Filestore, CephFS, OpenStack Manila), GKE's name of the Filestore driver, and the SMB, NFS and Azure Blob drivers
# (kubernetes-csi/csi-driver-smb, kubernetes-csi/csi-driver-nfs, kubernetes-sigs/blob-csi-driver), which mount
# shares.
FILE_ONLY_PROVISIONERS = frozenset(
    {
        "file.csi.azure.com",
        "efs.csi.aws.com",
        "fsx.csi.aws.com",
        "com.google.csi.filestore",
        "filestore.csi.storage.gke.io",
        "cephfs.csi.ceph.com",
        "manila.csi.openstack.org",
        "smb.csi.k8s.io",
        "nfs.csi.k8s.io",
        "blob.csi.azure.com",
    }
)
# In-tree disk plugins whose names say neither "csi" nor "disk" (EKS's gp2 and GKE's older standard class); with
# CSI migration their volumes are the EBS / GCE PD CSI drivers', listed there with "Raw Block".
IN_TREE_BLOCK_PROVISIONERS = frozenset({"kubernetes.io/aws-ebs", "kubernetes.io/gce-pd"})


def block_capable(storage_class: Any) -> bool:
    """True when ``storage_class``'s provisioner can provision a raw block volume (volumeMode: Block): a disk
    plugin, or a CSI driver that is not one of the file-only ones above."""
    provisioner = str(storage_class.provisioner or "")
    if provisioner in FILE_ONLY_PROVISIONERS:
        return False
    return provisioner in IN_TREE_BLOCK_PROVISIONERS or "csi" in provisioner or "disk" in provisioner


@pytest.fixture(scope="session")
def block_capable_class() -> Callable[[Any], bool]:
    """The suite's one rule for a block-capable StorageClass (``block_capable``), for the check's own look-up."""
    return block_capable


# test function -> (the StorageClass it needs, the reason its own look-up skips with)
NEEDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "test_persistent_volume_claim_of_the_default_storage_class": (
        lambda c: (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true",
        "the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned",
    ),
    "test_raw_block_volume_is_attached_as_a_device": (
        block_capable,
        "no StorageClass of a block-capable (disk) provisioner",
    ),
    "test_expanded_claim_grows_the_filesystem_the_pod_sees": (
        lambda c: bool(c.allow_volume_expansion),
        "no StorageClass allows volume expansion",
    ),
}

_CLASSES = pytest.StashKey[list]()
_CERTIFICATE_APIS = pytest.StashKey[set]()
# test function -> the capability it requires (its requires marker), whose APIs it needs served
CERTIFICATE_CHECKS = {
    "test_cluster_trust_bundles_are_projected_into_the_pod": "cluster-trust-bundles",
    "test_pod_certificate_is_issued_and_projected_into_the_pod": "pod-certificates",
}


def skip_unserved_certificate_apis(config: pytest.Config, context: Any, items: list[pytest.Item]) -> None:
    """The projected certificate checks (CERTIFICATE_CHECKS) where the API server
    does not serve their certificates.k8s.io/v1 resources: skipped with the reason the check itself gives
    (wincon.checks.certificates.skip_reason on the same discovery read). A failed read leaves it to the check."""
    needing = [
        (item, CERTIFICATE_CHECKS[name])
        for item in items
        if (name := getattr(item, "originalname", item.name)) in CERTIFICATE_CHECKS
    ]
    if not needing:
        return
    if _CERTIFICATE_APIS not in config.stash:
        try:
            config.stash[_CERTIFICATE_APIS] = certificates.served_resources(context.api_client)
        except Exception:
            return
    for item, capability in needing:
        reason = certificates.skip_reason(config.stash[_CERTIFICATE_APIS], capability)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against a live cluster (not a profile file, not lint), mark the tests needing a missing StorageClass
    skipped. A failed look-up leaves the decision to the test."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    skip_unserved_certificate_apis(config, context, items)
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
