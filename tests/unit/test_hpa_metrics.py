"""suites/controllers/test_hpa.py with fakes: the resource metrics API missing (skip), registered but down (error
with its condition, at the start or while the HPA waits), and the ConsumeCPU request's query parameters."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from kubernetes import client

from tests.support import suites
from wincon.commandline.errors import InfrastructureError

hpa_suite = suites.load("suites/controllers/test_hpa.py")

DOWN = NS(type="Available", status="False", reason="FailedDiscoveryCheck", message="connection refused")
UP = NS(type="Available", status="True", reason="Passed", message="all checks passed")


class Registration:
    def __init__(self, condition=None, exists=True):
        self.condition, self.exists, self.reads = condition, exists, 0

    def read_api_service(self, name, **_):
        self.reads += 1
        if not self.exists:
            raise client.ApiException(status=404, reason="Not Found")
        return NS(status=NS(conditions=[self.condition]))


def kube(condition=None, exists=True):
    return NS(apiregistration=Registration(condition, exists))


def hpa(*conditions):
    return NS(status=NS(conditions=list(conditions)))


def test_no_apiservice_skips():
    with pytest.raises(pytest.skip.Exception, match="metrics-server is not installed"):
        hpa_suite.require_metrics_api(kube(exists=False))


def test_a_registered_api_that_is_not_available_is_an_error_with_its_condition():
    with pytest.raises(InfrastructureError, match="not available \\(FailedDiscoveryCheck: connection refused\\)"):
        hpa_suite.require_metrics_api(kube(DOWN))


def test_an_available_api_lets_the_check_run():
    assert hpa_suite.require_metrics_api(kube(UP)) is None


FAILED_METRIC = NS(
    type="ScalingActive",
    status="False",
    reason="FailedGetResourceMetric",
    message="the HPA was unable to compute the replica count: unable to get metrics for resource cpu",
)


def test_the_wait_ends_in_both_reasons_when_the_hpa_cannot_read_metrics_and_the_api_is_down():
    reason = hpa_suite.metrics_api_failed(kube(DOWN), hpa(FAILED_METRIC))
    assert reason.startswith("the APIService v1beta1.metrics.k8s.io is not available (FailedDiscoveryCheck")
    assert "the HPA says FailedGetResourceMetric: the HPA was unable to compute" in reason


def test_a_new_pod_without_a_sample_yet_is_waited_on_while_the_api_is_available():
    assert hpa_suite.metrics_api_failed(kube(UP), hpa(FAILED_METRIC)) is None


def test_an_hpa_that_reads_its_metrics_never_asks_the_api():
    fake = kube(DOWN)
    active = NS(type="ScalingActive", status="True", reason="ValidMetricFound", message="")
    assert hpa_suite.metrics_api_failed(fake, hpa(active)) is None
    assert hpa_suite.metrics_api_failed(fake, NS(status=None)) is None
    assert fake.apiregistration.reads == 0


def test_consume_cpu_sends_its_arguments_as_query_parameters():
    """The request as the API server receives it: the path ends in ConsumeCPU and the arguments are a query
    (the generated connect_post_..._proxy_with_path escaped '?', and the consumer answered 404)."""
    api = client.ApiClient(client.Configuration(host="https://apiserver.test"))
    sent = {}

    def call_api(method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        sent.update(method=method, url=url)
        return NS(read=lambda: None, data=b"", status=200)

    api.call_api = call_api
    api.response_deserialize = lambda response, types: NS(data="ConsumeCPU\n300 millicores\n240 durationSec\n")
    answer = hpa_suite.consume_cpu(NS(api_client=api), "ns-1", "loaded")
    assert sent["method"] == "POST"
    assert sent["url"] == (
        "https://apiserver.test/api/v1/namespaces/ns-1/services/loaded%3A8080/proxy/ConsumeCPU"
        "?millicores=300&durationSec=240"
    )
    assert answer.split()[:3] == ["ConsumeCPU", "300", "millicores"]
