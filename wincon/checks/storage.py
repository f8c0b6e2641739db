"""What the storage checks need of the cluster's StorageClasses: the default class, a block-capable class, a class
allowing expansion. The capabilities (wincon/clusterinfo/capabilities.py) decide them at collection and the checks look the
class up themselves by the same rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def is_default(storage_class: Any) -> bool:
    return (storage_class.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"


def expandable(storage_class: Any) -> bool:
    return bool(storage_class.allow_volume_expansion)


# capability -> (the StorageClass it needs, why the cluster lacks it: the reason the check's own look-up skips with)
CLASS_NEEDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "default-storage-class": (
        is_default,
        "the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned",
    ),
    "block-storage-class": (block_capable, "no StorageClass of a block-capable (disk) provisioner"),
    "expandable-storage-class": (expandable, "no StorageClass allows volume expansion"),
}


def lacking_class(classes: list[Any], capability: str) -> str | None:
    """Why none of ``classes`` gives what ``capability`` needs, or None where one does."""
    wanted, reason = CLASS_NEEDS[capability]
    return None if any(wanted(c) for c in classes) else reason
