"""Fixtures of the GMSA suite: whether the cluster has the GMSA pieces (the GMSACredentialSpec CRD and a GMSA
mutating webhook), decided once per run, so that `wincon plan` and the run agree: where they are missing, the
tests that need them are marked skipped at collection, with the same reason the fixture would give."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from wincon.cluster.client import call
from wincon.context import get_context
from wincon.kube import ApiException, Kube

GROUP = "windows.k8s.io"
PLURAL = "gmsacredentialspecs"
CRD = f"{PLURAL}.{GROUP}"


@dataclass(frozen=True)
class GmsaSupport:
    version: str | None  # the CRD's served version (v1 preferred), None where GMSA cannot be used
    reason: str = ""  # why not


def detect_gmsa(kube: Kube) -> GmsaSupport:
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


_SUPPORT = pytest.StashKey[GmsaSupport]()


def _support(config: pytest.Config, kube: Kube) -> GmsaSupport:
    if _SUPPORT not in config.stash:
        config.stash[_SUPPORT] = detect_gmsa(kube)
    return config.stash[_SUPPORT]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against a live cluster (not a profile file, not lint), mark the tests needing GMSA skipped where it is
    missing, so the plan says what the run will do. A failed look-up leaves the decision to the fixture."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    needing = [item for item in items if "gmsa_version" in getattr(item, "fixturenames", ())]
    if not needing:
        return
    try:
        support = _support(config, Kube(context, "default"))  # cluster-scoped reads only; no gate, no exec
    except Exception:
        return
    if support.version is None:
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=support.reason))


@pytest.fixture
def gmsa_version(request: pytest.FixtureRequest, kube: Any) -> str:
    """The served version of the GMSACredentialSpec CRD, once the CRD and a GMSA webhook are both present."""
    support = _support(request.config, kube)
    if support.version is None:
        pytest.skip(support.reason)
    return support.version
