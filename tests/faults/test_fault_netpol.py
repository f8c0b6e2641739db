"""Fault injection (issue 33): the NetworkPolicy engine stopped, the deny checks fail; back, they pass again.

Against a local cluster with real Linux nodes and kube-router's policy controller (wincon/localcluster/kuberouter.py),
the two NetworkPolicy controls (``suites/networking/test_network_policy.py``, their ``[linux]`` items) first run as
they are, where they must pass: each dials before the policy, then waits (60 s) for the policy to stop the dial.
Then kube-router is killed on every real node (SIGKILL, as a crash is) and the same controls run again: nothing
programs their new policies, the dial is never stopped, and each must fail, never pass, xfail or skip. The
engine is started again (``restart_process`` returns once each answers its health endpoint and has logged its
controller's start) and the controls run a third time: they pass again, so the failure was the engine's absence.

It runs on the fault modules' shared cluster (tests/faults/conftest.py), and restores what it stopped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import COMPONENTS, assert_broken, in_group, node_processes, run_checks, stopped
from wincon.localcluster import kuberouter

pytestmark = in_group(COMPONENTS)  # one worker, one cluster, one fault at a time (conftest)

POLICY = ("suites/networking/test_network_policy.py", "policy")


@pytest.fixture(scope="module")
def engine_cluster(fault_cluster: tuple[str, Path]) -> tuple[str, Path]:
    if kuberouter.binary() is None:
        pytest.skip("kube-router is not built (`wincon cluster build` builds it)")
    return fault_cluster


def test_stopped_policy_engine_fails_the_deny_checks_and_they_pass_once_it_is_back(engine_cluster, tmp_path):
    name, kubeconfig = engine_cluster
    before = run_checks(kubeconfig, POLICY, tmp_path)
    assert len(before.verdicts) == 2, before.verdicts  # the two [linux] controls
    with stopped(name, *node_processes(name, kuberouter.NAME)) as at:
        after = run_checks(kubeconfig, POLICY, tmp_path)
    assert_broken("kube-router stopped", before, after, allowed=("failed",), injected_at=at)
    unsaid = {k: m for k, m in after.messages.items() if "the policy stopping" not in m}
    assert not unsaid, f"these failures are not the policy's dial left open: {unsaid}"
    again = run_checks(kubeconfig, POLICY, tmp_path)
    assert set(again.verdicts.values()) == {"passed"}, f"with the engine back: {again.verdicts} {again.messages}"
