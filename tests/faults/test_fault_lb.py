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

from pathlib import Path

import pytest

from tests.faults.conftest import DATA_PATH, assert_broken, in_group, run_checks, stopped
from wincon.localcluster import lb

# In DATA_PATH, beside the address the checks' traffic goes to, though MetalLB's controller is a component: it
# evens the two groups' times (conftest's GROUP_SECONDS).
pytestmark = in_group(DATA_PATH)  # one worker, one cluster, one fault at a time (conftest)

LOADBALANCER = ("suites/networking/test_services.py", "loadbalancer_service_reaches_windows_pods")


@pytest.fixture(scope="module")
def lb_cluster(fault_cluster: tuple[str, Path]) -> tuple[str, Path]:
    if None in lb.binaries():
        pytest.skip("MetalLB is not built (`wincon cluster build` builds it)")
    return fault_cluster


def test_stopped_metallb_controller_makes_the_loadbalancer_control_error_with_the_reason(lb_cluster, tmp_path):
    name, kubeconfig = lb_cluster
    before = run_checks(kubeconfig, LOADBALANCER, tmp_path)
    with stopped(name, lb.NAME) as at:
        after = run_checks(kubeconfig, LOADBALANCER, tmp_path)
    assert_broken("MetalLB controller stopped", before, after, allowed=("error",), injected_at=at)
    unsaid = {k: m for k, m in after.messages.items() if "did not provision" not in m}
    assert not unsaid, f"these errors do not say the provider did not provision the Service: {unsaid}"
