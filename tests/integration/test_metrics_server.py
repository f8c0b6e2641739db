"""metrics-server on the local cluster (wincon/localcluster/metrics.py): the resource metrics API, for real.

Against the session cluster: the aggregated APIService is Available (how the suite detects the metrics API on
any cluster), ``/apis/metrics.k8s.io/v1beta1/nodes`` reports CPU and memory usage of every real node scraped from
its kubelet, ``cluster status`` names the process, and with the process stopped the API answers with the
aggregator's error instead of metrics, then recovers once it runs again.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from tests.support.clusters import real_nodes
from wincon.localcluster import cluster, dataplane, metrics

WAIT = 120.0


@pytest.fixture(scope="module", autouse=True)
def metrics_server_built(linux_api: Any) -> None:
    if metrics.binary() is None:
        pytest.skip("metrics-server is not built: run `wincon cluster build`")


def _node_metrics(api: Any) -> dict[str, dict[str, str]]:
    found = client.CustomObjectsApi(api).list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    return {item["metadata"]["name"]: item["usage"] for item in found["items"]}


def _wait_metrics(api: Any, nodes: set[str]) -> dict[str, dict[str, str]]:
    deadline = time.monotonic() + WAIT
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = _node_metrics(api)
            if nodes <= set(last):
                return last
        except ApiException as exc:
            last = exc
        time.sleep(1)
    pytest.fail(f"no metrics of {sorted(nodes)} after {WAIT:.0f} s (last answer: {last})")


def _real_nodes(api: Any) -> set[str]:
    return {n.metadata.name for n in real_nodes(client.CoreV1Api(api))}


def test_the_metrics_apiservice_is_available(api):
    service = client.ApiregistrationV1Api(api).read_api_service(metrics.APISERVICE)
    available = [c for c in service.status.conditions or [] if c.type == "Available"]
    assert available and available[0].status == "True", available
    assert service.spec.service.name == metrics.NAME


def test_every_real_node_reports_cpu_and_memory_usage(api):
    nodes = _real_nodes(api)
    usage = _wait_metrics(api, nodes)
    for node in nodes:
        assert parse_quantity(usage[node]["cpu"]) > 0, usage[node]
        assert parse_quantity(usage[node]["memory"]) > 0, usage[node]


def test_status_names_metrics_server_and_its_loss_is_the_apis_answer(api, exclusive_cluster):
    if exclusive_cluster is None:
        pytest.skip("the process is known only for a local cluster")
    status = cluster.status(exclusive_cluster)
    assert status["addons"]["metrics-server"]["apiservice"] == metrics.APISERVICE
    assert status["addons"]["metrics-server"]["process"]["running"] is True
    nodes = _real_nodes(api)
    _wait_metrics(api, nodes)
    dataplane.stop_process(exclusive_cluster, metrics.NAME)
    try:
        with pytest.raises(ApiException) as failed:
            _node_metrics(api)
        assert failed.value.status == 503, failed.value
    finally:
        dataplane.restart_process(exclusive_cluster, metrics.NAME)
    assert nodes <= set(_wait_metrics(api, nodes))
