"""Fixtures of the GMSA suite. Whether the cluster has the GMSA pieces (the GMSACredentialSpec CRD and a GMSA
mutating webhook) is the "gmsa" capability (wincon/clusterinfo/capabilities.py), read once per run: the checks needing them
declare ``requires("gmsa")``, so `wincon plan` says the same skip the fixture gives."""

from __future__ import annotations

import pytest

from wincon.clusterinfo import capabilities


@pytest.fixture
def gmsa_version(request: pytest.FixtureRequest) -> str:
    """The served version of the GMSACredentialSpec CRD, once the CRD and a GMSA webhook are both present (the
    capability's answer; skips with its reason where either is missing)."""
    return str(capabilities.require_live(request.node, "gmsa").version)
