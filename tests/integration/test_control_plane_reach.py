"""The control plane reaches pods and Services on the local cluster, and nothing of their ranges leaves the machine.

The API server runs on the host, where the pod, Service and simulated-node ranges are rejected (``prohibit``
routes, shared by every local cluster on the machine); its ``cluster`` egress goes through the egress proxy in
the first real node's namespace (wincon/localcluster/egress.py). Observed here: ``pods/proxy`` and
``services/proxy`` answer with the pod's own hostname, ``nodes/proxy`` reads a real kubelet, the egress proxy is
named in ``cluster status`` and, stopped, makes those requests fail with its reason; on the host, no address of
the ranges routes out of the default route (``ip route get`` per range).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from tests.support.clusters import netexec_on_each_real_node
from tests.support.waits import eventually
from wincon.localcluster import cluster, dataplane, hints, netns

pytestmark = [
    pytest.mark.usefixtures("local_hints"),  # every check needs the real Linux data plane
    pytest.mark.xdist_group("control-plane-reach"),  # one worker: the module's pods are set up once, not per worker
]

WAIT = 90.0
PORT = 9080


def _wait(what: str, probe: Any, timeout: float = WAIT) -> Any:
    return eventually(what, probe, timeout, errors=(ApiException,))


@pytest.fixture(scope="module")
def served(core: Any, local_hints: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """A namespace with an agnhost netexec pod on each real node and a Service in front of the first."""
    ns = f"wincon-reach-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        pods = netexec_on_each_real_node(core, ns, "reach", hints.images(local_hints)["agnhost"], PORT)
        assert pods, "the cluster has no real Linux node"
        service = {"selector": {"app": pods[0]}, "ports": [{"port": 80, "targetPort": PORT}]}
        core.create_namespaced_service(ns, {"metadata": {"name": "reach"}, "spec": service})
        for pod in pods:
            _wait(f"pod {pod} to run", lambda pod=pod: core.read_namespaced_pod(pod, ns).status.pod_ip)
        yield ns, pods
    finally:
        core.delete_namespace(ns)


def test_pods_proxy_answers_with_the_pods_hostname_on_every_real_node(core, served):
    ns, pods = served
    for pod in pods:
        answer = _wait(
            f"pods/{pod}:{PORT}/proxy/hostname to answer",
            lambda pod=pod: core.connect_get_namespaced_pod_proxy_with_path(f"{pod}:{PORT}", ns, "hostname"),
        )
        assert answer == pod


def test_services_proxy_answers_through_the_service_address(core, served):
    ns, pods = served
    answer = _wait(
        "services/reach:80/proxy/hostname to answer",
        lambda: core.connect_get_namespaced_service_proxy_with_path("reach:80", ns, "hostname"),
    )
    assert answer == pods[0]


def test_nodes_proxy_reads_a_real_kubelet(core, served):
    node = core.read_namespaced_pod(served[1][0], served[0]).spec.node_name
    configz = json.loads(core.connect_get_node_proxy_with_path(node, "configz", _preload_content=False).data)
    assert configz["kubeletconfig"]["address"] == next(
        a.address for a in core.read_node(node).status.addresses if a.type == "InternalIP"
    )


def test_the_egress_proxy_is_named_by_status_and_its_loss_is_the_reason_pods_are_unreachable(
    core, served, exclusive_cluster
):
    if exclusive_cluster is None:
        pytest.skip("the egress proxy is known only for a local cluster")
    ns, pods = served
    entries = [p for p in cluster.status(exclusive_cluster)["dataplane"] if p["name"] == dataplane.EGRESS_PROCESS]
    assert len(entries) == 1 and entries[0]["running"], entries
    dataplane.stop_process(exclusive_cluster, dataplane.EGRESS_PROCESS)
    try:
        with pytest.raises(ApiException) as failed:
            core.connect_get_namespaced_pod_proxy_with_path(f"{pods[0]}:{PORT}", ns, "hostname")
        assert str(dataplane.egress_socket(exclusive_cluster)) in str(failed.value.body), failed.value.body
    finally:
        dataplane.restart_process(exclusive_cluster, dataplane.EGRESS_PROCESS)
    answer = _wait(
        "the pod to answer again once the egress proxy runs",
        lambda: core.connect_get_namespaced_pod_proxy_with_path(f"{pods[0]}:{PORT}", ns, "hostname"),
    )
    assert answer == pods[0]


def _default_route_devices() -> set[str]:
    routes = json.loads(subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True, text=True).stdout)
    return {r["dev"] for r in routes if "dev" in r}


@pytest.mark.parametrize("cidr", [dataplane.POD_RANGE, dataplane.SERVICE_RANGE, dataplane.SIMULATED_NODE_RANGE])
def test_no_address_of_the_cluster_ranges_routes_out_of_the_default_route(cidr, core, local_cluster_name):
    """The host answers ``ip route get`` for the range's first, middle and last address with the prohibit route's
    refusal (EACCES), so none of them leaves by the default route; this cluster's own prohibit route is there."""
    if local_cluster_name is None:
        pytest.skip("the host's routes are known only for a local cluster")
    assert cidr in netns.PROHIBITED
    network = ipaddress.ip_network(cidr)
    metric = netns.route_metric(local_cluster_name)
    listed = subprocess.run(
        ["ip", "route", "show", "type", "prohibit", "exact", cidr], capture_output=True, text=True, check=True
    ).stdout
    assert f"prohibit {cidr} metric {metric}" in listed, listed
    devices = _default_route_devices()
    for address in (network[1], network[network.num_addresses // 2], network[-2]):
        got = subprocess.run(["ip", "route", "get", str(address)], capture_output=True, text=True)
        assert got.returncode != 0 and "Permission denied" in got.stderr, (address, got.stdout, got.stderr)
        assert not any(f"dev {dev}" in got.stdout for dev in devices), (address, got.stdout)
