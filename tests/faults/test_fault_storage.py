"""Fault injection (issue 21, item 4): the default StorageClass's provisioner stopped, the claim control never passes.

Against a local cluster with real Linux nodes and rancher/local-path-provisioner (storage.py), the Linux control
of ``test_persistent_volume_claim_of_the_default_storage_class`` (``suites/storage/test_volume_types.py``) first
runs as it is, where it must pass (a claim of the default class is provisioned, written and read back); then the
provisioner is killed (SIGKILL, as a crash is) and the same control runs again: nothing provisions the claim, it
stays Pending and its pod never runs, so the control must end in an error (the cluster could not run the check)
with the cluster's reason (the claim Pending, the PV controller's event naming the provisioner it waits for), or
fail; never pass, xfail or skip. The provisioner is started again afterwards.

It runs on the fault modules' shared cluster (tests/faults/conftest.py: a fresh ``faults-<hex>``, or the one
``WINCON_FAULT_CLUSTER=<name>`` names), and restores what it stopped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.conftest import DATA_PATH, assert_broken, in_group, run_checks, stopped
from wincon.localcluster import dataplane, procs, storage

pytestmark = in_group(DATA_PATH)  # one worker, one cluster, one fault at a time (conftest)

PVC = ("suites/storage/test_volume_types.py", "persistent_volume_claim_of_the_default_storage_class")


@pytest.fixture(scope="module")
def storage_cluster(fault_cluster: tuple[str, Path]) -> tuple[str, Path]:
    if storage.binary() is None:
        pytest.skip("local-path-provisioner is not built (`wincon cluster build` builds it)")
    return fault_cluster


def provisioner_pid(name: str) -> int | None:
    """The provisioner's pid while it runs, else None."""
    pid = int((dataplane.root(name) / "pids" / f"{storage.NAME}.pid").read_text().strip())
    cmdline = procs.cmdline(pid)
    return pid if cmdline and dataplane.marker(name) in cmdline else None


def test_stopped_provisioner_makes_the_claim_control_error_or_fail_never_pass(storage_cluster, tmp_path):
    name, kubeconfig = storage_cluster
    before = run_checks(kubeconfig, PVC, tmp_path)
    with stopped(name, storage.NAME) as at:
        assert provisioner_pid(name) is None, "the provisioner still runs after SIGKILL"
        after = run_checks(kubeconfig, PVC, tmp_path)
    for nodeid, message in after.messages.items():
        print(f"[{storage.NAME} stopped] {nodeid}: {message[:600]}")
    assert_broken(f"{storage.NAME} stopped", before, after, allowed=("error", "failed"), injected_at=at)
    # The cluster's reason: the claim stayed Pending, the PV controller waiting for the provisioner by name.
    reason = ("claim data Pending", storage.PROVISIONER)
    unsaid = {
        k: m
        for k, m in after.messages.items()
        if after.verdicts[k] == "error" and not all(r in (m or "") for r in reason)
    }
    assert not unsaid, f"these errors do not say the claim stayed Pending for {storage.PROVISIONER}: {unsaid}"
    assert provisioner_pid(name) is not None, "the provisioner did not start again"
