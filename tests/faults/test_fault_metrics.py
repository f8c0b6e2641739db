"""Fault injection (issue 21, item 4b): metrics-server stopped, the HPA scaling control errors with the reason.

Against a local cluster with real Linux nodes, metrics-server and upstream's resource-consumer image, the HPA
scaling control (``suites/controllers/test_hpa.py``, its Linux control) first runs as it is, where it must pass
(the HPA scales up on the CPU metrics metrics-server serves); then metrics-server is killed (SIGKILL, as a
crash is) and the same control runs again at once: it must end in an error (the cluster could not run the
check) naming the resource metrics API's APIService, never pass, xfail or skip. Each affected check's time to
fail is printed. metrics-server is started again afterwards and the APIService waited for.

It runs on the fault modules' shared cluster (tests/faults/conftest.py: a fresh ``faults-<hex>``, or the one
``WINCON_FAULT_CLUSTER=<name>`` names), and restores what it stopped.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.conftest import COMPONENTS, assert_broken, in_group, run_checks, stopped
from wincon.localcluster import cluster, consumer, metrics

pytestmark = in_group(COMPONENTS)  # one worker, one cluster, one fault at a time (conftest)

HPA = ("suites/controllers/test_hpa.py", "hpa_scales_a_windows_deployment_under_cpu_load")
APISERVICE_SECONDS = 120.0


@pytest.fixture(scope="module")
def metrics_cluster(fault_cluster: tuple[str, Path]) -> tuple[str, Path]:
    if metrics.binary() is None or consumer.binaries() is None:
        pytest.skip("metrics-server or resource-consumer is not built (`wincon cluster build` builds both)")
    return fault_cluster


def apiservice_available(kubeconfig: Path) -> bool:
    api = cluster._api_client(kubeconfig)
    try:
        return bool(metrics.available(api))
    finally:
        api.close()


def wait_apiservice_available(kubeconfig: Path) -> float:
    """Seconds until the aggregator says the metrics APIService is Available again."""
    start = time.monotonic()
    while not apiservice_available(kubeconfig):
        if time.monotonic() - start > APISERVICE_SECONDS:
            pytest.fail(
                f"the APIService {metrics.APISERVICE} was not Available {APISERVICE_SECONDS:.0f} s after a restart"
            )
        time.sleep(1)
    return time.monotonic() - start


def test_stopped_metrics_server_makes_the_hpa_control_error_with_the_reason(metrics_cluster, tmp_path):
    name, kubeconfig = metrics_cluster
    before = run_checks(kubeconfig, HPA, tmp_path)
    try:
        with stopped(name, metrics.NAME) as at:
            after = run_checks(kubeconfig, HPA, tmp_path)
            still_available = apiservice_available(kubeconfig)
    finally:
        back = wait_apiservice_available(kubeconfig)
    for nodeid, message in after.messages.items():
        print(f"[metrics-server stopped] {nodeid}: {message[:600]}")
    print(f"[metrics-server restarted] APIService {metrics.APISERVICE} Available again after {back:.1f} s")
    assert_broken("metrics-server stopped", before, after, allowed=("error",), injected_at=at)
    assert not still_available, f"the APIService {metrics.APISERVICE} still said Available with metrics-server killed"
    unsaid = {k: m for k, m in after.messages.items() if metrics.APISERVICE not in m}
    assert not unsaid, f"these errors do not name the resource metrics API ({metrics.APISERVICE}): {unsaid}"
