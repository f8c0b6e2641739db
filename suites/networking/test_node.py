"""Nodes and pods: node to pod and pod to node, with the Flannel VXLAN rule (node to pod only for local pods);
NodePort and Service IPs seen from the node itself; host networking for an ordinary Windows pod.

Node-side checks run from a HostProcess pod on Windows (its commands run on the node, in the host network)
and a hostNetwork pod on Linux; they skip with the reason where HostProcess pods are not allowed.
"""

from __future__ import annotations

import zlib

import pytest

from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import InfrastructureError, expect_deviation
from wincon.network.evidence import dial_unanswered
from wincon.network.flows import FlowChecks, no_answer
from wincon.network.modulepods import start_own
from wincon.network.pods import PodRef, pod_names, pod_ref
from wincon.windows import connectivity as conn
from wincon.windows import forms

NO_ANSWER = "curl could not connect, timed out or got no reply"

pytestmark = [pytest.mark.networking]

HOST_NETWORK_PORT = 8090  # the first of HOST_NETWORK_PORTS
HOST_NETWORK_PORTS = 100  # the hostNetwork check's port is one of 8090-8189, picked by its namespace
LISTENING_MESSAGE = "wincon-hostnet-listening"  # what the hostNetwork pod's netexec echoes back to itself
LISTENING_TRIES = 3  # a Running pod's netexec may take a moment to listen: its own echo is asked this often


def host_network_port(namespace: str) -> int:
    """The node port the hostNetwork check's server takes: one of HOST_NETWORK_PORTS from 8090, picked by the
    check's namespace (unique per run and worker), so that two suite runs on one cluster at once (a nightly and a
    contributor's, or the flake benchmark's load run) do not both ask one node for the same host port: with one
    fixed port the second pod stayed Pending, "didn't have free ports for the requested pod ports" (bench_flakes,
    docs/local-cluster.md)."""
    return HOST_NETWORK_PORT + zlib.crc32(namespace.encode()) % HOST_NETWORK_PORTS


def listening_command(os_name: str, port: int) -> list[str]:
    """A GET of netexec's /echo on the pod's own loopback, run inside the pod: the body is the message itself
    (netexec's echoHandler writes it back alone: k8s.io/kubernetes@v1.37.2 test/images/agnhost/netexec/netexec.go:221,
    260-272), the same curl command as the Linux control's (curl.exe in a Windows pod's agnhost container)."""
    return conn.http_get_command(os_name, f"http://127.0.0.1:{port}/echo?msg={LISTENING_MESSAGE}")


def listens(result: ExecResult) -> bool:
    return result.ok and result.stdout.strip() == LISTENING_MESSAGE


def shown_listening(checks: FlowChecks, server: PodRef, port: int, when: str) -> None:
    """The hostNetwork pod's netexec answers its own /echo from inside the pod (``when``: just before or after the
    dial); else an error naming that. netexec exits at once when its port is taken (the clashes b3128ff and ffae51d
    found), and a dial of a dead server goes as unanswered as one of a server off the node's network: silence is
    the deviation only while the server is shown listening."""
    ok, result = checks.until(server, listening_command(server.os, port), listens, tries=LISTENING_TRIES)
    if not ok:
        raise InfrastructureError(
            f"the hostNetwork pod {server.name}'s netexec was not shown listening on its port {port} {when} "
            f"(GET /echo on 127.0.0.1 from inside the pod, {LISTENING_TRIES} tries: {failed(result)}): an unanswered "
            "dial of it tells nothing",
            f"see the logs of pod {server.name} (netexec exits when its port is taken)",
        )


def hostname_url(pod):
    return f"http://{conn.host_port(pod.ip, conn.NETSERVER_HTTP_PORT)}/hostname"


def failed(result):
    return f"{conn.curl_failure(result.exit_code)}: {result.stderr.strip()}{result.stdout.strip()}"


@pytest.mark.test_id("1c9faffe-a696-4ab2-b640-808df83afdc1")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.documents("k8s-windows-intro", "CNI Plugins")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_node_reaches_pod_on_itself(checks, host, servers):
    """ "Node -> Pod" is a supported flow; with Flannel VXLAN "it's only possible for local pods" (002_8a7e76f95009f44f.txt, Networking; 000_4130a90def37a825.txt, CNI Plugins)."""
    target = next(p for p in servers if p.node == host.node)
    ok, result = checks.http_get(host, hostname_url(target), {target.name})
    assert ok, f"{host.node} -> {target.name} ({target.ip}): {failed(result)}"


@pytest.mark.test_id("f1478d35-1466-479c-bfc2-a0e439bd50e5")
@pytest.mark.dataplane
@pytest.mark.limitation("flannel-vxlan-node-to-remote-pod")
@pytest.mark.documents("k8s-windows-intro", "CNI Plugins")
@pytest.mark.documents("k8s-windows-guide", "CNI Plugins")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_node_reaches_pod_on_another_node(checks, host, servers):
    """ "Node-pod connectivity isn't possible by design. It's only possible for local pods with Flannel v0.12.0 (or higher)" (000_4130a90def37a825.txt, CNI Plugins; 002_8a7e76f95009f44f.txt)."""
    target = next((p for p in servers if p.node != host.node), None)
    if target is None:
        pytest.skip(f"the check needs two Ready {host.os.capitalize()} nodes; the cluster has one")
    ok, result = checks.http_get(host, hostname_url(target), {target.name})
    with expect_deviation("flannel-vxlan-node-to-remote-pod", accepts=lambda: no_answer(result), deviation=NO_ANSWER):
        assert ok, f"{host.node} -> {target.name} on {target.node} ({target.ip}): {failed(result)}"


@pytest.mark.test_id("ad1bf749-7c86-4b10-aa7a-996bfe140e9b")
@pytest.mark.dataplane
@pytest.mark.hybrid
@pytest.mark.documents("k8s-windows-guide", "Getting Started")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_linux_node_reaches_windows_pod(checks, linux_host, servers):
    """ "Node-to-pod communication across the network, curl port 80 of your pod IPs from the Linux master" (002_8a7e76f95009f44f.txt, Getting Started)."""
    # Across the network: the control's target is a Linux pod on another node than the Linux node's.
    target = next((p for p in servers if p.node != linux_host.node), servers[0])
    ok, result = checks.http_get(linux_host, hostname_url(target), {target.name})
    assert ok, f"Linux node {linux_host.node} -> {target.name} ({target.ip}): {failed(result)}"


@pytest.mark.test_id("7864ab4f-b0e6-4d84-b0d2-8bbe2fb3826e")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_its_windows_node(checks, client):
    """ "Pod -> Node" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Supported Functionality > Networking): the kubelet's port answers."""
    url = f"https://{conn.host_port(client.host_ip, conn.KUBELET_PORT)}/healthz"
    ok, result = checks.until(
        client, conn.tcp_reach_command(client.os, url), lambda r: r.ok, tries=3, container=client.tool_container
    )
    assert ok, f"{client.name} -> its node {client.host_ip}:{conn.KUBELET_PORT}: {failed(result)}"


@pytest.mark.test_id("e5d703cd-b3c2-4526-a232-fb8d0e9f38f0")
@pytest.mark.dataplane
@pytest.mark.limitation("nodeport-from-own-node")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_nodeport_answers_on_the_node_itself(checks, host, server_nodeport, servers):
    """ "Local NodePort access from the node itself fails (works for other nodes or external clients)" (000_4130a90def37a825.txt, Networking; 002_8a7e76f95009f44f.txt)."""
    url = f"http://{conn.host_port(host.host_ip, server_nodeport.node_ports['http'])}/hostname"
    ok, result = checks.http_get(host, url, pod_names(servers))
    with expect_deviation("nodeport-from-own-node", accepts=lambda: no_answer(result), deviation=NO_ANSWER):
        assert ok, f"{url} from {host.node} itself: {failed(result)}"


@pytest.mark.test_id("155b9efe-ae4a-4678-9854-178e60045b87")
@pytest.mark.dataplane
@pytest.mark.limitation("service-vip-from-node")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.documents("k8s-handbook-windows", "Other Known Issues")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_node_reaches_service_cluster_ip(checks, host, server_service, servers):
    """ "Accessing service VIPs from nodes will be available with a future release of Windows Server" (000_4130a90def37a825.txt, Networking; 002_8a7e76f95009f44f.txt; 001_feb1108140134f87.txt)."""
    url = f"http://{conn.host_port(server_service.cluster_ip, conn.SERVICE_HTTP_PORT)}/hostname"
    ok, result = checks.http_get(host, url, pod_names(servers))
    with expect_deviation("service-vip-from-node", accepts=lambda: no_answer(result), deviation=NO_ANSWER):
        assert ok, f"{url} from {host.node}: {failed(result)}"


@pytest.fixture
def host_network_pod(request, net, os_nodes, os_prefix, target_os):
    """The check's own ordinary (not HostProcess) netexec pod with hostNetwork on the first node of the item's
    OS, and the module's client: the pod is created, then awaited and checked to run where pinned while the
    client is asked for (created and awaited where this is the worker's first check needing it;
    wincon.network.modulepods.start_own), so the two starts overlap (issue 22, item 3). A refusal by the
    kubelet is the documented deviation, not an infrastructure error: the pod is waited for to any end state
    (Running or Failed)."""
    node, name = os_nodes[0], f"{os_prefix}hostnet"
    make = net.windows_netexec_manifest if target_os == "windows" else net.linux_netexec
    port = host_network_port(net.kube.namespace)
    # Its UDP server on the same number (another protocol, no clash with its HTTP port): netexec always runs one
    # (without --udp-port on UDP 8081; with -1 none, and then /healthz, which needs it, answers 412 for ever:
    # k8s.io/kubernetes@v1.37.2 test/images/agnhost/netexec/netexec.go:146, :191-198, :356-363, :655), and on the
    # node's network UDP 8081 was taken by the load run's copy of this check in every run of the flake benchmark:
    # the server exited and "nothing answered ... connection refused".
    manifest = make(name, node, http_port=port, udp_port=port, labels={"app": name}, hostNetwork=True)
    client, started = start_own(
        net.kube.create_pod,
        lambda ms: net.await_each(ms, done=lambda p: bool(p.status and p.status.phase in ("Running", "Failed"))),
        [manifest],
        lambda: request.getfixturevalue("client"),
    )
    pod = started[name]
    if isinstance(pod, BaseException):
        raise pod
    return pod, client, node


@pytest.mark.test_id("5ae144d8-aac0-4c6b-ae38-06788819cc5e")
@pytest.mark.dataplane
@pytest.mark.limitation("hostnetwork-unsupported")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.documents("k8s-windows-guide", "V1.Pod.hostNetwork")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_ordinary_windows_pod_with_host_network_shares_the_node_network(checks, host_network_pod):
    """ "Host networking mode is not available for Windows pods" (000_4130a90def37a825.txt, Networking; 002_8a7e76f95009f44f.txt, V1.Pod.hostNetwork)."""
    pod, client, node = host_network_pod
    port = host_network_port(pod.metadata.namespace)
    command = conn.dial_command(client.os, client.ip, pod.status.host_ip, port)
    checks.gate(command, where=checks.where(client))
    # The deviation's form at v1.34.4: the kubelet gives an ordinary Windows pod's sandbox no host-network option
    # (kuberuntime_sandbox.go:237-262; the WindowsHostNetwork gate is deprecated and read nowhere in pkg/kubelet),
    # yet reports the node's IPs as every hostNetwork pod's IPs (kubelet_pods.go:1994-2001) and never reads its
    # sandbox's (kuberuntime_manager.go:1369-1374). So the pod runs and the API shows the node's IP; the server
    # is not on the node's network, and nothing answers there. A pod that did not run or shows another IP is not
    # that form: an ordinary failure.
    assert pod.status.phase == "Running", (
        f"hostNetwork pod ended {pod.status.phase}: {pod.status.reason} {pod.status.message}"
    )
    assert pod.status.pod_ip == pod.status.host_ip, (
        f"hostNetwork pod got IP {pod.status.pod_ip}, not its node's {pod.status.host_ip}: it does not share the host network"
    )
    # The server is shown listening, from inside its pod, just before the dial and (where nothing answered it)
    # just after: an unanswered dial is the deviation only while the server was listening all along.
    server = pod_ref(pod, client.os, "netexec")
    shown_listening(checks, server, port, "just before the dial")
    outcome = checks.dial(client, pod.status.host_ip, port, "http", {node.name}, max_tries=5)
    if not outcome.responses:
        shown_listening(checks, server, port, "just after the dial")
    with expect_deviation(
        "hostnetwork-unsupported",
        accepts=lambda: dial_unanswered(outcome),
        deviation="the client's netexec answered, its own server listened, and nothing answered on the node's IP",
    ):
        assert outcome.responses, f"nothing answered on the node's {pod.status.host_ip}:{port}: {outcome.describe()}"
