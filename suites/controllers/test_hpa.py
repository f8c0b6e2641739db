"""HorizontalPodAutoscaler on a Deployment of Windows pods."""

from __future__ import annotations

import pytest

from wincon.checks.controllers import metrics_api_available, metrics_api_installed, pinned
from wincon.checks.pods import assert_all_ran_on
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import BehaviourNotObserved, wait_for, wait_for_deployment
from wincon.commandline.errors import InfrastructureError, expect_deviation

pytestmark = [pytest.mark.controllers]

CONSUMER_PORT = 8080
SCALE_UP_SECONDS = 300
LOAD_MILLICORES = 300  # above the 200m request and limit: at the limit, 100 % utilisation against a 50 % target
LOAD_SECONDS = 240
TARGET_UTILIZATION = 50  # averageUtilization in manifests/controllers/hpa.yaml
# The scale-up wait reads the metrics APIService again this often: it goes unavailable without an event on the
# HPA, which otherwise was read again only when the watch's minute ran out (the metrics-server fault: 61 s).
METRICS_RECHECK_SECONDS = 10


def hpa_condition(hpa, kind):
    return next((c for c in (hpa.status.conditions if hpa.status else None) or [] if c.type == kind), None)


def consumer_deployment(catalog, name: str, build: int | None, target_os: str = "windows") -> dict:
    build = build if target_os == "windows" else None
    image = catalog.image("resource-consumer", target_os, build)
    (manifest,) = pinned(
        "deployment",
        build,
        name=name,
        replicas=1,
        container="main",
        image=image,
        port=CONSUMER_PORT,
        target_os=target_os,
    )
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "200m", "memory": "128Mi"},
        "limits": {"cpu": "200m", "memory": "128Mi"},
    }
    return manifest


def consumer(wincon, build: int | None) -> dict:
    return consumer_deployment(wincon.catalog, "consumer", build)


def deploy_consumer(kube, manifest):
    kube.create(manifest)
    name = manifest["metadata"]["name"]
    return wait_for_deployment(kube.api_client, kube.namespace, name, kube.pod_start_timeout)


def require_metrics_api(kube):
    """Skip where the cluster does not register the resource metrics API; where it registers it but the API is
    not Available, the check cannot run: an infrastructure error with the APIService's own condition."""
    missing = metrics_api_available(kube)
    if missing is None:
        return
    if not metrics_api_installed(kube):
        pytest.skip(f"HPA scaling needs the resource metrics API: {missing}")
    raise InfrastructureError(
        f"HPA scaling needs the resource metrics API: {missing}",
        "see the metrics-server pods and logs (kubectl -n kube-system logs -l k8s-app=metrics-server)",
    )


def metrics_api_failed(kube, hpa):
    """While the HPA waits: where it cannot read the CPU metrics (ScalingActive False, FailedGetResourceMetric)
    and the metrics API is not Available either, the cluster failed under the check: both reasons. An HPA that
    merely has no sample of a new pod yet reads the same condition while the API stays Available: wait on."""
    active = hpa_condition(hpa, "ScalingActive")
    if active is None or active.status != "False" or active.reason != "FailedGetResourceMetric":
        return None
    missing = metrics_api_available(kube)
    if missing is None:
        return None
    return f"{missing}; the HPA says {active.reason}: {active.message}"


def consume_cpu_path():
    return f"ConsumeCPU?millicores={LOAD_MILLICORES}&durationSec={LOAD_SECONDS}"


def consume_cpu(kube, namespace, service):
    """POST ConsumeCPU to ``service`` through the API server's services/proxy, its arguments as query
    parameters (as upstream's autoscaling_utils.go sendConsumeCPURequest sets them with Param); return the
    consumer's answer. The generated ``connect_post_namespaced_service_proxy_with_path`` escapes a ``?`` in its
    path, so the consumer saw one path ``/ConsumeCPU?millicores=...`` and answered 404 unknown function."""
    api = kube.api_client
    method, url, headers, body, post = api.param_serialize(
        "POST",
        "/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}",
        path_params={"namespace": namespace, "name": f"{service}:{CONSUMER_PORT}", "path": "ConsumeCPU"},
        query_params=[("millicores", str(LOAD_MILLICORES)), ("durationSec", str(LOAD_SECONDS))],
        header_params={"Accept": "*/*"},
        auth_settings=["BearerToken"],
    )

    def post_once():
        response = api.call_api(method, url, header_params=headers, body=body, post_params=post, _request_timeout=60)
        response.read()
        return api.response_deserialize(response, {"200": "str"}).data

    return call(post_once)


def create_hpa(kube, name, target, max_replicas=3):
    from wincon.workloads.render import render

    (manifest,) = render("controllers/hpa.yaml", name=name, target=target, max_replicas=max_replicas)
    kube.create(manifest)


@pytest.mark.test_id("f6b9e10b-af3a-437e-9f5d-26aeb20055d6")
@pytest.mark.documents("kep-windows-node-support", "What works today")
@waves.ahead(consumer)
def test_hpa_object_is_accepted_and_taken_up_by_the_controller(kube, wincon, namespace, build, profile):
    """ "Horizontal Pod Autoscaling using all metrics" works for Windows (003_414b2f1c5dd978a2.txt, What works today): the HPA controller takes up an HPA on a Windows Deployment."""
    deploy_consumer(kube, consumer(wincon, build))
    assert_all_ran_on(kube.pods({"app": "consumer"}), profile, "windows", build)
    create_hpa(kube, "consumer", "consumer")
    autoscaling = kube.autoscaling
    hpa = wait_for(
        autoscaling.list_namespaced_horizontal_pod_autoscaler,
        "consumer",
        lambda h: hpa_condition(h, "AbleToScale") is not None,
        None,
        120,
        describe=f"HPA {namespace}/consumer taken up by the controller",
        behaviour=True,
        namespace=namespace,
    )
    able = hpa_condition(hpa, "AbleToScale")
    assert able.status == "True", f"the HPA cannot reach its target: {able.reason}: {able.message}"
    assert hpa.spec.scale_target_ref.name == "consumer" and hpa.status.current_replicas == 1


@pytest.mark.test_id("48cc0c94-9ca9-4011-a4f4-bde5d4369573")
@pytest.mark.dataplane
@pytest.mark.slow
@pytest.mark.limitation("hpa-unsupported-pre-1-14")
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(same_as_control=True)
@pytest.mark.requires("resource-consumer-image", "metrics-api")
def test_hpa_scales_a_windows_deployment_under_cpu_load(kube, namespace, build, profile, data_plane, target_os):
    """ "Horizontal Pod Autoscaler support" (002_8a7e76f95009f44f.txt, Supported Functionality): CPU load above the target adds Windows replicas."""
    require_metrics_api(kube)
    deploy_consumer(kube, consumer_deployment(kube.catalog, "loaded", build, target_os))
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "loaded"},
        "spec": {"selector": {"app": "loaded"}, "ports": [{"port": CONSUMER_PORT, "targetPort": CONSUMER_PORT}]},
    }
    kube.create(service)
    create_hpa(kube, "loaded", "loaded", max_replicas=3)
    data_plane(f"POST services/loaded:{CONSUMER_PORT}/proxy/{consume_cpu_path()}", where=f"namespace {namespace}")
    answer = consume_cpu(kube, namespace, "loaded")
    # resource-consumer's own answer (resource_consumer_handler.go handleConsumeCPU): the load has started.
    assert answer.split() == ["ConsumeCPU", str(LOAD_MILLICORES), "millicores", str(LOAD_SECONDS), "durationSec"], (
        f"resource-consumer did not take the ConsumeCPU request: {answer!r}"
    )
    autoscaling = kube.autoscaling
    # A behaviour wait: an HPA that never scales up under load is the deviation the limitation documents.
    with expect_deviation(
        "hpa-unsupported-pre-1-14",
        accepts=BehaviourNotObserved,
        deviation="the HPA never scaled the Windows Deployment up within the wait",
    ):
        hpa = wait_for(
            autoscaling.list_namespaced_horizontal_pod_autoscaler,
            "loaded",
            lambda h: bool(h.status and (h.status.desired_replicas or 0) > 1),
            lambda h: metrics_api_failed(kube, h),
            SCALE_UP_SECONDS,
            describe=f"HPA {namespace}/loaded scaling up under {LOAD_MILLICORES} millicores of load",
            behaviour=True,
            recheck=METRICS_RECHECK_SECONDS,
            namespace=namespace,
        )
    assert hpa.status.desired_replicas > 1
    # It scaled on the metrics it read: the CPU utilisation the HPA recorded is above its 50 % target.
    read = [m.resource.current.average_utilization for m in hpa.status.current_metrics or [] if m.resource]
    assert read and read[0] > TARGET_UTILIZATION, f"the HPA scaled without reading CPU above its target: {read}"
    # The replicas it added run, each on the intended OS: waited for first (a replica that cannot start is the
    # cluster's error), since the pods the scale-up just created are not scheduled yet when the HPA says so.
    wait_for_deployment(kube.api_client, kube.namespace, "loaded", kube.pod_start_timeout)
    assert_all_ran_on(kube.pods({"app": "loaded"}), profile, target_os, build if target_os == "windows" else None)
