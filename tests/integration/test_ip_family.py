"""``wincon cluster up --ip-family dual`` on the local cluster: pods get both families, pods talk over IPv6 across
nodes, an IPv6 ClusterIP answers, the cluster DNS answers AAAA with it, the host rejects the IPv6 ranges, and ``down`` leaves nothing.

The cluster is started by this module (two real nodes, so that IPv6 crosses the node network) under the name
``$WINCON_IPFAMILY_CLUSTER`` (default: a fresh ``ipf-test-<hex>``) and removed by its last test. Traffic is
observed from inside the cluster: agnhost netexec's ``/dial`` on the first pod, reached through the API
server's ``pods/proxy``, dials the target and answers with what the target said (its hostname).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.clusters import netexec_on_each_real_node, own_cluster
from tests.support.waits import eventually
from wincon.localcluster import cluster, dataplane, hints, ipfamily, netns, paths
from wincon.localcluster.topology import Topology

pytestmark = pytest.mark.xdist_group("ip-family")  # one worker: the tests share one cluster, the last removes it

PORT = 9080
WAIT = 90.0
DUAL = Topology(windows_nodes=1, windows_versions=["ltsc2022"], cni="none", real_nodes=2, ip_family="dual")


def _wait(what: str, probe: Any, timeout: float = WAIT) -> Any:
    return eventually(what, probe, timeout, errors=(ApiException, requests.RequestException, ValueError))


@pytest.fixture(scope="module")
def name(localcluster_binaries: Path) -> Iterator[str]:
    with own_cluster("ipf-test", DUAL, env="WINCON_IPFAMILY_CLUSTER") as (name, _):
        yield name


@pytest.fixture(scope="module")
def kubeconfig(name: str) -> Path:
    """This module's own cluster is the cluster under test (conftest's ``api`` and ``core`` follow)."""
    return cluster.kubeconfig_path(name)


@pytest.fixture(scope="module")
def served(api: Any) -> Iterator[tuple[str, list[Any]]]:
    """A netexec pod on each real node (their Pod objects once running)."""
    core = client.CoreV1Api(api)
    ns = f"wincon-ipf-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        names = netexec_on_each_real_node(core, ns, "ipf", hints.images(hints.read(api))["agnhost"], PORT)
        assert len(names) == 2, names
        pods = [
            _wait(f"pod {pod} to run", lambda pod=pod: _running(core.read_namespaced_pod(pod, ns))) for pod in names
        ]
        yield ns, pods
    finally:
        with contextlib.suppress(ApiException, urllib3.exceptions.HTTPError):  # gone with the cluster (the last test)
            core.delete_namespace(ns)


def _running(pod: Any) -> Any:
    return pod if pod.status.phase == "Running" and pod.status.pod_ips else None


def _dial(api: Any, ns: str, pod: str, host: str, port: int) -> dict[str, Any]:
    """netexec's /dial on ``pod`` (through pods/proxy): what ``host:port`` answered to ``hostname``."""
    cfg = api.configuration
    url = f"{cfg.host}/api/v1/namespaces/{ns}/pods/{pod}:{PORT}/proxy/dial"
    params = {"request": "hostname", "protocol": "http", "host": host, "port": str(port), "tries": "1"}
    response = requests.get(url, params=params, cert=(cfg.cert_file, cfg.key_file), verify=cfg.ssl_ca_cert, timeout=30)
    response.raise_for_status()
    return json.loads(response.text)


def test_pods_get_an_address_of_each_family_from_their_node_s_subnets(name, served):
    plan = dataplane.Plan.from_dict(cluster._read_record(name)["dataplane"])
    subnets = {n.name: (n.pod_cidr, ipfamily.pod_cidr6(n.pod_cidr)) for n in plan.nodes}
    _, pods = served
    for pod in pods:
        v4, v6 = subnets[pod.spec.node_name]
        addresses = [ipaddress.ip_address(p.ip) for p in pod.status.pod_ips]
        assert [a.version for a in addresses] == [4, 6], (pod.metadata.name, addresses)
        assert addresses[0] in ipaddress.ip_network(v4) and addresses[1] in ipaddress.ip_network(v6), addresses


def test_a_pod_reaches_a_pod_on_the_other_node_over_ipv6(api, served):
    ns, (first, second) = served
    target = next(p.ip for p in second.status.pod_ips if ipaddress.ip_address(p.ip).version == 6)
    answer = _wait(
        f"{first.metadata.name} to reach [{target}]:{PORT}",
        lambda: _dial(api, ns, first.metadata.name, target, PORT).get("responses"),
    )
    assert answer == [second.metadata.name]


@pytest.fixture(scope="module")
def dual_service(api: Any, served: tuple[str, list[Any]]) -> Any:
    """A RequireDualStack Service ``ipf`` over the second pod, in ``served``'s namespace (gone with it)."""
    ns, (_, second) = served
    spec = {
        "ipFamilyPolicy": "RequireDualStack",
        "selector": {"app": second.metadata.name},
        "ports": [{"port": 80, "targetPort": PORT}],
    }
    return client.CoreV1Api(api).create_namespaced_service(ns, {"metadata": {"name": "ipf"}, "spec": spec})


def test_an_ipv6_cluster_ip_answers(api, served, dual_service):
    ns, (first, second) = served
    service = dual_service
    assert service.spec.ip_families == ["IPv4", "IPv6"]
    v6 = next(ip for ip in service.spec.cluster_ips if ipaddress.ip_address(ip).version == 6)
    assert ipaddress.ip_address(v6) in ipaddress.ip_network(ipfamily.SERVICE_RANGE6)
    answer = _wait(
        f"{first.metadata.name} to reach the Service at [{v6}]:80",
        lambda: _dial(api, ns, first.metadata.name, v6, 80).get("responses"),
    )
    assert answer == [second.metadata.name]


def test_cluster_dns_answers_aaaa_with_the_ipv6_cluster_ip(api, served, dual_service):
    """CoreDNS (its kubernetes plugin) answers the Service's name with its IPv6 ClusterIP for an AAAA query,
    asked from a pod through the cluster DNS (busybox's nslookup, run by netexec's /shell)."""
    ns, (first, _) = served
    service = client.CoreV1Api(api).read_namespaced_service(dual_service.metadata.name, ns)
    v6 = next(ip for ip in service.spec.cluster_ips if ipaddress.ip_address(ip).version == 6)
    cfg = api.configuration
    url = f"{cfg.host}/api/v1/namespaces/{ns}/pods/{first.metadata.name}:{PORT}/proxy/shell"
    fqdn = f"ipf.{ns}.svc.cluster.local"
    params = {"cmd": f"nslookup -type=AAAA {fqdn}"}

    def looked_up() -> str | None:
        got = requests.get(url, params=params, cert=(cfg.cert_file, cfg.key_file), verify=cfg.ssl_ca_cert, timeout=30)
        output = json.loads(got.text).get("output", "")
        return output if v6 in output else None

    output = _wait(f"an AAAA answer for {fqdn}", looked_up)
    assert f"Address: {v6}" in output, output


@pytest.mark.parametrize("cidr", ipfamily.PROHIBITED6)
def test_the_host_rejects_the_ipv6_ranges(name, cidr):
    """The cluster's own prohibit route is there, and ``ip route get`` refuses (EACCES) the range's first,
    middle and last addresses: none of them leaves by the default route."""
    metric = netns.route_metric(name)
    listed = subprocess.run(
        ["ip", "-6", "route", "show", "type", "prohibit", "exact", cidr], capture_output=True, text=True, check=True
    ).stdout
    assert f"prohibit {cidr} dev lo metric {metric}" in listed, listed
    network = ipaddress.ip_network(cidr)
    for address in (network[1], network[network.num_addresses // 2], network[-2]):
        got = subprocess.run(["ip", "-6", "route", "get", str(address)], capture_output=True, text=True)
        assert got.returncode != 0 and "Permission denied" in got.stderr, (address, got.stdout, got.stderr)


def test_down_leaves_nothing(name):
    assert ipfamily.host_routes6(netns.run, netns.route_metric(name)), "the IPv6 routes were not there to remove"
    cluster.down(name)
    left = {k: v for k, v in dataplane.leftovers(name).items() if v}
    assert left == {}, f"cluster {name} left behind: {left}"
    assert ipfamily.host_routes6(netns.run, netns.route_metric(name)) == []
    assert cluster.cluster_pids(name) == []
    assert not paths.state_dir(name).exists()


# ------------------------------------------------------------------------------------------ ipv6 single-stack


def _http_code(name: str, url: str) -> str:
    """The HTTP status ``url`` answers from worker-0's namespace (curl's ``000`` when nothing connects)."""
    command = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3", url]
    got = subprocess.run(
        ["ip", "netns", "exec", netns.netns_name(name, "worker-0"), *command], capture_output=True, text=True
    )
    return got.stdout.strip()


IPV6 = Topology(windows_nodes=1, windows_versions=["ltsc2022"], cni="none", real_nodes=1, ip_family="ipv6")


def test_an_ipv6_single_stack_cluster_serves_its_pods_over_ipv6_and_down_leaves_nothing(localcluster_binaries):
    """The kubernetes and kube-dns Services are IPv6, CoreDNS runs on an IPv6 pod address and is Ready (its
    kubernetes plugin synced with the API server through the kubernetes Service, that is through the host's
    IPv6 forwarder, which status names, stops and restarts), and down removes the forwarder with the rest."""
    with own_cluster("ipf6-test", IPV6, env="WINCON_IPFAMILY_CLUSTER6") as (name, kubeconfig):
        with cluster._api_client(kubeconfig) as api:
            core = client.CoreV1Api(api)
            assert core.read_namespaced_service("kubernetes", "default").spec.cluster_ips == [
                ipfamily.KUBERNETES_SERVICE_IP6
            ]
            assert core.read_namespaced_service("kube-dns", "kube-system").spec.cluster_ips == [
                ipfamily.DNS_SERVICE_IP6
            ]
            dns = core.list_namespaced_pod("kube-system", label_selector="k8s-app=kube-dns").items
            assert dns and all(
                [ipaddress.ip_address(p.ip).version for p in pod.status.pod_ips] == [6]
                and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)
                for pod in dns
            ), [(p.status.pod_ips, p.status.conditions) for p in dns]
        forwarder = [p for p in cluster.status(name)["dataplane"] if p["name"] == ipfamily.FORWARDER]
        assert len(forwarder) == 1 and forwarder[0]["running"], forwarder
        # From a node's namespace the API server answers at the IPv6 gateway; with the forwarder stopped nothing
        # does; restarted as up started it, it answers again.
        plan = dataplane.Plan.from_dict(cluster._read_record(name)["dataplane"])
        url = f"https://[{ipfamily.gateway6(plan)}]:{cluster._api_port(kubeconfig)}/livez"
        assert _http_code(name, url) == "200"
        dataplane.stop_process(name, ipfamily.FORWARDER)
        assert _http_code(name, url) == "000"  # curl's code for no connection
        dataplane.restart_process(name, ipfamily.FORWARDER)
        assert _wait("the restarted forwarder to answer", lambda: _http_code(name, url) == "200", 15)
    left = {k: v for k, v in dataplane.leftovers(name).items() if v}
    assert left == {}, f"cluster {name} left behind: {left}"
    assert cluster.cluster_pids(name) == []
