"""MetalLB on the local cluster (wincon/localcluster/lb.py): LoadBalancer addresses on the node network, for real.

Against the session cluster: the probe Service has an address of the pool and the profile finds the provider by
it (as on any cluster); a LoadBalancer Service over an agnhost pod on a real node gets an address of the pool,
which the external host (a namespace on the cluster's bridge, like any machine of the node network) reaches by
ARP alone: its neighbour entry is the MAC of a real node's eth0, whose speaker announced it, and the pod
answers; each MetalLB process runs in a real node's network namespace, never the host's; ``cluster status``
names them; with the controller stopped a new Service stays without an address, and gets one once it runs again.
"""

from __future__ import annotations

import ipaddress
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.support.waits import eventually
from wincon.localcluster import cluster, dataplane, hints, lb, netns

WAIT = 60.0


def wait_for(what: str, probe: Any, timeout: float = WAIT) -> Any:
    return eventually(what, probe, timeout)


@pytest.fixture(scope="module", autouse=True)
def metallb_built(linux_api: Any) -> None:
    if None in lb.binaries():
        pytest.skip("MetalLB is not built: run `wincon cluster build`")


@pytest.fixture(scope="module")
def plan(api: Any, local_cluster_name: str | None) -> dataplane.Plan:
    if local_cluster_name is None:
        pytest.skip("the node network is known only for a local cluster")
    record = cluster._read_record(local_cluster_name) or {}
    return dataplane.Plan.from_dict(record["dataplane"])


@pytest.fixture(scope="module")
def ns(api: Any) -> Iterator[str]:
    core = client.CoreV1Api(api)
    name = f"wincon-lb-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _in_pool(plan: dataplane.Plan, address: str) -> bool:
    first, last = (ipaddress.ip_address(a) for a in lb.pool_range(plan).split("-"))
    return first <= ipaddress.ip_address(address) <= last


def _ingress(core: Any, ns: str, name: str) -> str | None:
    svc = core.read_namespaced_service(name, ns)
    ingress = (svc.status.load_balancer and svc.status.load_balancer.ingress) or []
    return ingress[0].ip if ingress else None


def _lb_service(core: Any, ns: str, name: str, selector: dict[str, str] | None = None) -> None:
    spec: dict[str, Any] = {"type": "LoadBalancer", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    if selector:
        spec["selector"] = selector
    core.create_namespaced_service(ns, {"metadata": {"name": name}, "spec": spec})


@pytest.fixture(scope="module")
def web(api: Any, ns: str, plan: dataplane.Plan) -> tuple[str, str]:
    """An agnhost netexec pod on the last real node behind a LoadBalancer Service: (pod name, address)."""
    core = client.CoreV1Api(api)
    image = hints.images(hints.read(api))["agnhost"]
    pod = {
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "nodeName": plan.nodes[-1].name,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": image, "args": ["netexec", "--http-port=8080"]}],
        },
    }
    core.create_namespaced_pod(ns, pod)
    _lb_service(core, ns, "web", {"app": "web"})
    wait_for(
        "pod web to be Ready",
        lambda: any(
            c.type == "Ready" and c.status == "True"
            for c in core.read_namespaced_pod("web", ns).status.conditions or []
        ),  # fmt: skip
    )
    return "web", wait_for("an ingress address for Service web", lambda: _ingress(core, ns, "web"))


def test_the_probe_service_has_a_pool_address_and_the_profile_finds_the_provider_by_it(api, plan, kubeconfig):
    from wincon.cluster.client import connect
    from wincon.clusterinfo import capabilities
    from wincon.clusterinfo.profile import discover

    address = lb.probe_address(api)
    assert address and _in_pool(plan, address), (address, lb.pool_range(plan))
    profile = discover(connect(str(kubeconfig)))
    assert f"{lb.NAMESPACE}/{lb.PROBE} {address}" in (profile.load_balancers or [])
    assert capabilities.has(profile, "load-balancer") is True


def test_the_external_host_reaches_the_pod_at_the_address_a_real_node_announces(api, plan, web):
    pod, address = web
    assert _in_pool(plan, address), (address, lb.pool_range(plan))
    ext = netns.netns_name(plan.cluster, "ext")

    def answer() -> str | None:
        out = netns.run(["curl", "-sS", "-m", "3", f"http://{address}/hostname"], netns=ext, check=False)
        return out.strip() or None

    assert wait_for(f"http://{address}/hostname from the external host", answer) == pod
    neighbour = netns.run(["ip", "neigh", "show", address], netns=ext).split()
    assert "lladdr" in neighbour, neighbour
    mac = neighbour[neighbour.index("lladdr") + 1]
    macs = {
        node.name: netns.run(
            ["cat", f"/sys/class/net/{lb.INTERFACE}/address"], netns=netns.netns_name(plan.cluster, node.name)
        ).strip()  # fmt: skip
        for node in plan.nodes
    }
    assert mac in macs.values(), f"{address} resolved to {mac}, the eth0 of no real node ({macs})"


def test_metallb_processes_run_in_the_nodes_namespaces_never_the_hosts(plan, local_cluster_name, api):
    status = cluster.status(local_cluster_name)["addons"][lb.NAME]
    assert status["controller"]["running"] is True
    speakers = {s["name"]: s for s in status["speakers"]}
    assert set(speakers) == {f"{n.name}-{lb.SPEAKER}" for n in plan.nodes}, speakers
    host = os.readlink("/proc/self/ns/net")
    for proc in [status["controller"], *speakers.values()]:
        assert proc["running"] is True, proc
        assert os.readlink(f"/proc/{proc['pid']}/ns/net") != host, f"{proc['name']} runs in the host's network namespace"  # fmt: skip


def test_a_new_service_waits_for_the_controller(api, ns, exclusive_cluster):
    if exclusive_cluster is None:
        pytest.skip("MetalLB's controller process is known only for a local cluster")
    core = client.CoreV1Api(api)
    dataplane.stop_process(exclusive_cluster, lb.NAME)
    try:
        _lb_service(core, ns, "late")
        time.sleep(5)
        assert _ingress(core, ns, "late") is None, "an address was given with MetalLB's controller stopped"
    finally:
        dataplane.restart_process(exclusive_cluster, lb.NAME)
    assert wait_for("an ingress address for Service late", lambda: _ingress(core, ns, "late"))
