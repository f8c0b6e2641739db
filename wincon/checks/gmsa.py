"""Whether the cluster has the GMSA pieces: the GMSACredentialSpec CRD and a GMSA mutating webhook (the "gmsa"
capability of wincon/clusterinfo/capabilities.py, read once per run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from wincon.cluster.client import call

GROUP = "windows.k8s.io"
PLURAL = "gmsacredentialspecs"
CRD = f"{PLURAL}.{GROUP}"


@dataclass(frozen=True)
class GmsaSupport:
    version: str | None  # the CRD's served version (v1 preferred), None where GMSA cannot be used
    reason: str = ""  # why not


def detect_gmsa(kube: Any) -> GmsaSupport:
    """The GMSACredentialSpec CRD and a mutating webhook whose name says GMSA: both, or the one missing."""
    try:
        crd = call(kube.apiextensions.read_custom_resource_definition, CRD)
    except ApiException as exc:
        if exc.status == 404:
            return GmsaSupport(
                None, f"no GMSACredentialSpec CRD ({CRD}): GMSA support (CRD and webhook) is not installed"
            )
        raise
    configs = call(kube.admissionregistration.list_mutating_webhook_configuration).items
    hooks = [
        hook.name
        for config in configs
        for hook in config.webhooks or []
        if "gmsa" in hook.name.lower() or "gmsa" in config.metadata.name.lower()
    ]
    if not hooks:
        return GmsaSupport(
            None, f"the {CRD} CRD exists but no GMSA mutating webhook is registered: specs are never resolved"
        )
    served = [v.name for v in crd.spec.versions if v.served]
    return GmsaSupport("v1" if "v1" in served else served[0])
