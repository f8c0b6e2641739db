"""Pod to pod on Windows nodes: by IP on the same node and across nodes, over TCP and UDP (upstream's agnhost
netexec dial check), ICMP inside the cluster network, and port-forward to a Windows pod.

002_8a7e76f95009f44f.txt (Supported Functionality > Networking): "For the node, pod, and service objects,
the following network flows are supported for TCP/UDP traffic: Pod -> Pod (IP) ...".
"""

from __future__ import annotations

import pytest

from wincon.commandline.errors import expect_deviation
from wincon.network.evidence import port_forward_refused
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]

PORTS = {"http": conn.NETSERVER_HTTP_PORT, "udp": conn.NETSERVER_UDP_PORT}


@pytest.mark.test_id("5dad21e1-a81f-474d-9436-5c29d3978d2b")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "Supported Functionality")
@pytest.mark.windows_form(no_command="compares the pods' IPs in the API (status.podIP against hostIP)")
def test_netserver_pods_run_on_every_windows_node_with_their_own_ip(checks, servers, client, os_nodes):
    """ "Windows containers have to be scheduled on Windows nodes" (000_4130a90def37a825.txt, Supported Functionality)."""
    assert {p.node for p in servers} == {n.name for n in os_nodes}, f"a {client.os} node got no netserver pod"
    assert client.node == os_nodes[0].name
    # Pod IPs come from the CNI on a real node; a simulated node makes them up, so they prove nothing there.
    checks.gate("compare each pod's status.podIP (from the CNI) with its node's IP", where="netserver pods")
    ips = [p.ip for p in [*servers, client]]
    assert len(set(ips)) == len(ips), f"two pods share an IP: {ips}"
    for pod in [*servers, client]:
        assert pod.ip != pod.host_ip, f"pod {pod.name} got its node's IP {pod.host_ip}, not a pod IP"


@pytest.mark.test_id("2722c3d6-1d46-407f-b195-151bab1315b8")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_pod_on_the_same_node_by_ip(protocol, checks, client, local_server):
    """ "Pod -> Pod (IP)" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Supported Functionality > Networking)."""
    outcome = checks.dial(client, local_server.ip, PORTS[protocol], protocol, {local_server.name})
    assert outcome.reached_all, outcome.describe()


@pytest.mark.test_id("f4138c2c-d7e3-4e2f-af67-ec3c007a8994")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_pod_on_another_node_by_ip(protocol, checks, client, remote_server):
    """ "Pod -> Pod (IP)" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Supported Functionality > Networking)."""
    outcome = checks.dial(client, remote_server.ip, PORTS[protocol], protocol, {remote_server.name})
    assert outcome.reached_all, outcome.describe()


@pytest.mark.test_id("f8634bf2-fa0e-4fb5-8229-59a80d5317fc")
@pytest.mark.dataplane
@pytest.mark.parametrize("where", ["same-node", "other-node"])
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.windows_form(*forms.PING_OUTPUTS)
def test_pod_pings_pod_in_the_cluster_network(where, request, checks, client):
    """ "ICMP packets directed to destinations within the same network (e.g. pod to pod communication via ping) work as expected and without any limitations" (000_4130a90def37a825.txt, Networking)."""
    target = request.getfixturevalue("local_server" if where == "same-node" else "remote_server")
    ok, result = checks.ping(client, target.ip)
    assert ok, f"no ICMP echo reply from {target.name} ({target.ip}):\n{result.stdout}{result.stderr}"


@pytest.mark.test_id("fbbfd967-7a60-4a08-b03a-f8613093f178")
@pytest.mark.dataplane
@pytest.mark.limitation("port-forward-unsupported")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(no_command="port-forward from the runner through the API server")
def test_port_forward_reaches_a_windows_pod(checks, local_server):
    """ "Features were added in Kubernetes v1.15: kubectl port-forward" (000_4130a90def37a825.txt, Networking; 003_414b2f1c5dd978a2.txt: not implemented before)."""
    body = checks.port_forward_get(local_server, conn.NETSERVER_HTTP_PORT, "/hostname")
    with expect_deviation(
        "port-forward-unsupported",
        accepts=lambda: port_forward_refused(body, conn.NETSERVER_HTTP_PORT),
        deviation="the kubelet's 'error forwarding port' on the port-forward's error stream",
    ):
        assert body.lower() == local_server.name, f"port-forward to {local_server.name} answered {body!r}"
