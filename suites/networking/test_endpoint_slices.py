"""EndpointSlices of a Service over Windows pods (operational readiness Core.Network: "Ability to route services
from pods from the EndpointSlice API", "delete and recreate services in such a way that load balancing rules
for pods are recovered"): the slices list each Windows pod with its node and port, a Service deleted and
created again gets its endpoints back, and the endpoints follow pods going down and coming up.

The pods, Services and slices are the control plane's work and are checked for real on any cluster; the
traffic through the Service passes the ``data_plane`` gate first (``checks.dial``).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from wincon.checks.pods import eventually
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.clusterinfo.nodes import target_os as target_os_of
from wincon.network.modulepods import start_own
from wincon.network.pods import pod_names
from wincon.windows import connectivity as conn
from wincon.windows import forms

APP_LABEL = "app"


class Backend(NamedTuple):
    """What the checks need of a backend pod, once it runs where it was pinned."""

    name: str
    ip: str
    node: str


def backend(pod) -> Backend:
    return Backend(pod.metadata.name, pod.status.pod_ip, pod.spec.node_name)


pytestmark = [pytest.mark.networking]


class Backends(NamedTuple):
    prefix: str
    manifests: list
    pods: list[Backend]
    client: object  # the module's client of the item's OS (a PodRef)


def backend_manifests(net, nodes, os_name: str, prefix: str) -> list:
    """A check's two backends: ``<prefix>-0`` and ``-1``, netservers labelled app=<prefix>, spread over ``nodes``."""
    make = net.windows_netexec_manifest if os_name == "windows" else net.linux_netexec
    return [make(f"{prefix}-{i}", nodes[i % len(nodes)], labels={APP_LABEL: prefix}) for i in range(2)]


def prefix_of(test_name: str, os_prefix: str) -> str:
    """The name prefix (and app label) of a check's backends, from its test's name."""
    return os_prefix + test_name.split("[")[0].removeprefix("test_")[:20].rstrip("_").replace("_", "-")


@pytest.fixture(scope="module")
def backend_wave(request, net) -> waves.Wave:
    """The module's wave of backends (``wincon.cluster.waves``, issue 44): the two backends of each of the
    module's checks still to run here, for each OS, created together when the module's first check starts, none
    awaited; each check takes its own two (``backends``). Where an OS has no node, its checks skip in their own
    setup, as before."""
    wave = waves.Wave(create=net.kube.create_pod, wait=waves.one_at_a_time(net.await_each))
    for item in waves.module_items(request):
        if "backends" not in getattr(item, "fixturenames", ()):
            continue
        os_name = target_os_of(item)
        try:
            nodes = request.getfixturevalue("windows_nodes" if os_name == "windows" else "linux_workers")
        except pytest.skip.Exception:
            continue
        prefix = prefix_of(item.name, "" if os_name == "windows" else "lin-")
        for manifest in backend_manifests(net, nodes, os_name, prefix):
            name = manifest["metadata"]["name"]
            wave.add(name, waves.PodDecl("backend", name), manifest, lambda pod: pod)
    wave.start()
    return wave


@pytest.fixture
def backends(request, net, os_nodes, target_os, os_prefix, backend_wave):
    """Two netexec pods of this test alone on the item's OS (on two nodes where there are two), labelled
    app=<prefix>, and the module's client of that OS. The two are taken from the module's ``backend_wave``: created
    when the module started, they started while the checks before this one ran, and are awaited here (each checked
    to run where pinned) after the client is asked for. Where the wave does not hold them (a check the wave did not
    see), they are created, then awaited while the client is asked for (wincon.network.modulepods.start_own). The
    checks take the client from here. A backend that does not start is this fixture's error; the client's error is
    the client's."""
    prefix = prefix_of(request.node.name, os_prefix)
    manifests = backend_manifests(net, os_nodes, target_os, prefix)
    names = [m["metadata"]["name"] for m in manifests]
    if all(name in backend_wave.names() for name in names):
        client = request.getfixturevalue("client")
        started = {name: backend_wave.take(name, request.node.nodeid) for name in names}
        return Backends(prefix, manifests, [backend(started[name]) for name in names], client)
    client, started = start_own(
        net.kube.create_pod, net.await_each, manifests, lambda: request.getfixturevalue("client")
    )
    failed = next((p for p in started.values() if isinstance(p, BaseException)), None)
    if failed is not None:
        raise failed
    return Backends(prefix, manifests, [backend(started[m["metadata"]["name"]]) for m in manifests], client)


def slices_of(kube, service: str) -> list:
    discovery = kube.discovery
    selector = f"kubernetes.io/service-name={service}"
    return call(discovery.list_namespaced_endpoint_slice, kube.namespace, label_selector=selector).items


@pytest.mark.test_id("8cb7698e-7e3d-4cd4-b4b4-46590120777f")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_endpoint_slices_list_each_windows_pod_with_its_node_and_port(kube, wincon, namespace, net, backends, checks):
    """ "In Windows, services can utilize the following types ... ClusterIP" and "Endpoints / vNICs" are supported (002_8a7e76f95009f44f.txt, Services; Networking): the EndpointSlices of a Service over Windows pods name each pod, its node and the target ports, and the Service answers from them."""
    prefix, _, pods, client = backends
    service = net.service("service.yaml", pods, name=prefix, type="ClusterIP", select={APP_LABEL: prefix})
    slices = slices_of(kube, service.name)
    assert slices, f"no EndpointSlice carries kubernetes.io/service-name={service.name}"
    by_pod = {}
    for endpoint_slice in slices:
        ports = {(p.name, p.port, p.protocol) for p in endpoint_slice.ports or []}
        assert ("http", conn.NETSERVER_HTTP_PORT, "TCP") in ports, f"slice {endpoint_slice.metadata.name}: {ports}"
        for ep in endpoint_slice.endpoints or []:
            if ep.target_ref and ep.target_ref.kind == "Pod":
                by_pod[ep.target_ref.name] = ep
    for pod in pods:
        ep = by_pod.get(pod.name)
        assert ep is not None, f"no endpoint names pod {pod.name}: {sorted(by_pod)}"
        assert pod.ip in ep.addresses, f"endpoint of {pod.name} has {ep.addresses}, not {pod.ip}"
        assert ep.node_name == pod.node, f"endpoint of {pod.name} is on {ep.node_name}, the pod on {pod.node}"
        assert ep.conditions and ep.conditions.ready, f"endpoint of {pod.name} is not ready: {ep.conditions}"
    outcome = checks.dial(client, service.cluster_ip, conn.SERVICE_HTTP_PORT, "http", pod_names(pods))
    assert outcome.reached_all, f"{service.name} ({service.cluster_ip}): {outcome.describe()}"


@pytest.mark.test_id("708f0ce2-6851-4192-8400-ebd6fb0a9682")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.documents("windows-operational-readiness", "Core.Network")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_service_deleted_and_created_again_serves_its_windows_pods(kube, wincon, namespace, net, backends, checks):
    """ "Ability to delete and recreate services in such a way that load balancing rules for pods are recovered by whatever chosen service proxy is being utilized" (windows-operational-readiness Core.Network; 002_8a7e76f95009f44f.txt, Services): the recreated Service gets the pods' endpoints back and answers from each."""
    prefix, _, pods, client = backends
    first = net.service("service.yaml", pods, name=prefix, type="ClusterIP", select={APP_LABEL: prefix})
    core = kube.core
    call(core.delete_namespaced_service, prefix, namespace)

    def gone() -> bool:
        return prefix not in {s.metadata.name for s in call(core.list_namespaced_service, namespace).items}

    eventually(gone, 60, f"Service {prefix} deleted")
    again = net.service("service.yaml", pods, name=prefix, type="ClusterIP", select={APP_LABEL: prefix})
    assert again.raw.metadata.uid != first.raw.metadata.uid, "the Service was not created anew"
    outcome = checks.dial(client, again.cluster_ip, conn.SERVICE_HTTP_PORT, "http", pod_names(pods))
    assert outcome.reached_all, f"recreated {prefix} ({again.cluster_ip}): {outcome.describe()}"


@pytest.mark.test_id("f324b6ed-bbb3-4055-a990-bfcd8d22dad8")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.documents("windows-operational-readiness", "Core.Network")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_endpoints_follow_windows_pods_going_down_and_up(kube, wincon, namespace, net, backends, checks):
    """ "Ability to delete and recreate pods ... which preserve their ability to serve as routed endpoints for services" (windows-operational-readiness Core.Network; 002_8a7e76f95009f44f.txt, Services): a deleted Windows pod leaves the Service's endpoints, its replacement joins them and answers."""
    prefix, manifests, pods, client = backends
    service = net.service("service.yaml", pods, name=prefix, type="ClusterIP", select={APP_LABEL: prefix})
    core = kube.core
    down = pods[1]
    # The order is the behaviour: the endpoint leaves with the pod, and only then its replacement is created
    # (the same name, once the old pod is gone) and must join: its start cannot overlap the backends' own.
    call(core.delete_namespaced_pod, down.name, namespace, grace_period_seconds=0)
    net.wait_endpoints(service, [pods[0]])
    eventually(
        lambda: down.name not in {p.metadata.name for p in call(core.list_namespaced_pod, namespace).items},
        120,
        f"pod {down.name} deleted",
    )
    replacement = backend(net.start([manifests[1]])[down.name])
    net.wait_endpoints(service, [pods[0], replacement])
    outcome = checks.dial(client, service.cluster_ip, conn.SERVICE_HTTP_PORT, "http", pod_names(pods))
    assert outcome.reached_all, f"{prefix} after {down.name} came back ({replacement.ip}): {outcome.describe()}"
