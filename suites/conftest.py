"""What every suite shares: a namespace per test whose pods are released at once, the Windows build a test
pins to, and the next checks' objects made ahead as each check starts. The networking suite overrides `namespace`
with one namespace per module (its conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from wincon.clusterinfo.profile import ClusterProfile
from wincon.session.context import WinconContext
from wincon.session.fixtures import build_of, make_next_checks_ahead, release_pods


@pytest.fixture(autouse=True)
def next_checks_made_ahead(request: pytest.FixtureRequest) -> None:
    """As each check that uses the cluster starts, this worker's next checks that declared ``waves.ahead`` get
    their objects made, whether or not this check has a namespace of its own (``make_next_checks_ahead``)."""
    make_next_checks_ahead(request)


@pytest.fixture
def namespace(wincon: WinconContext, fresh_namespace: str) -> Iterator[str]:
    """A namespace per test (not per module), its pods released as soon as the test ends: a long run
    never piles up more pods than a Windows node takes (30 on AKS and on the local cluster)."""
    yield fresh_namespace
    release_pods(wincon.api_client, fresh_namespace)


@pytest.fixture
def build(request: pytest.FixtureRequest, profile: ClusterProfile) -> int | None:
    """The Windows build this test pins its pods to: each test gets one of the Ready nodes' builds, so
    a run covers every build and spreads its pods over the Windows nodes."""
    return build_of(request.node.nodeid, profile)
