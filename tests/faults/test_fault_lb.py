"""Fault injection (issue 21): MetalLB's controller stopped, the LoadBalancer control errors with the reason.

Against a local cluster with real Linux nodes and MetalLB, the LoadBalancer control
(``suites/networking/test_services.py``, ``test_loadbalancer_service_reaches_windows_pods[linux]``) first runs as
it is, where it must pass; then MetalLB's controller is killed (SIGKILL, as a crash is) and the same control runs
again: its Service gets no address, and, since the profile saw the provider serve the cluster (the probe Service's
address), it must end in an error saying the provider did not provision it, never pass, xfail or skip. The
controller is started again afterwards.

Stopping the speakers instead breaks nothing this control sees: kube-proxy translates a LoadBalancer address for
the cluster's own pods without any ARP (the in-cluster path every kube-proxy takes); the external host's path,
which needs the speakers, is checked by tests/integration/test_loadbalancer.py.

It runs on the fault modules' shared cluster (tests/faults/conftest.py: a fresh ``faults-<hex>``, or the one
``WINCON_FAULT_CLUSTER=<name>`` names), and restores what it stopped.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.test_faults import SERVICES, assert_broken, run_checks
from wincon.localcluster import dataplane, lb

pytestmark = pytest.mark.xdist_group("faults")  # one worker, one cluster, one fault at a time

LOADBALANCER = (SERVICES, "loadbalancer_service_reaches_windows_pods")


@pytest.fixture(scope="module")
def lb_cluster(fault_cluster: tuple[str, Path]) -> tuple[str, Path]:
    if None in lb.binaries():
        pytest.skip("MetalLB is not built (`wincon cluster build` builds it)")
    return fault_cluster


def test_stopped_metallb_controller_makes_the_loadbalancer_control_error_with_the_reason(lb_cluster, tmp_path):
    name, kubeconfig = lb_cluster
    before = run_checks(kubeconfig, LOADBALANCER, tmp_path)
    messages: dict[str, str] = {}
    stopped_at = time.monotonic()
    dataplane.stop_process(name, lb.NAME)
    try:
        after = run_checks(kubeconfig, LOADBALANCER, tmp_path, messages=messages)
        since_stop = time.monotonic() - stopped_at
    finally:
        dataplane.restart_process(name, lb.NAME)
    for nodeid, verdict in after.items():
        print(f"[MetalLB controller stopped] {nodeid}: {verdict}; {since_stop:.1f} s from the stop to the run's end")
    assert_broken(before, after, allowed=("error",))
    unsaid = {k: m for k, m in messages.items() if "did not provision" not in m}
    assert not unsaid, f"these errors do not say the provider did not provision the Service: {unsaid}"
