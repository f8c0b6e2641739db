"""Node -> pod over UDP (upstream networking.go "should function for node-pod communication: udp"), from the
Windows node itself (a HostProcess pod) to the netserver on that node, and from a Linux node to a Windows pod
(each with its Linux control, target_os: the same from a hostNetwork pod on a Linux node); and egress by DNS name from a Linux pod beside the Windows ones (upstream hybrid_network.go "should
provide Internet connection for Linux containers using DNS"). One check function serves both OSes: the
command lines come from wincon/checks/node.py and wincon/windows/connectivity.py."""

from __future__ import annotations

import pytest

from wincon.checks.node import WARM_UP_SECONDS, consistently, udp_send_command
from wincon.network import pods
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]


@pytest.fixture(scope="module")
def external_host(wincon):
    """``--external-host``, else the local cluster's simulated external host, else the public default."""
    return conn.check_host(wincon.external_host)


def node_reaches_pod_over_udp(checks, host, target):
    """Send 'hostname' to the target's netexec UDP port from ``host``; its pod name must come back."""
    if host.os == "windows":  # a PowerShell UdpClient prints the reply
        command = udp_send_command(host.os, target.ip, conn.NETSERVER_UDP_PORT)

        def answered(r):
            return r.ok and r.stdout.strip().lower() == target.name.lower()
    else:  # busybox nc has no UDP: the node's own netexec (its hostNetwork pod) sends it, upstream's dial
        port = pods.host_dial_port(checks.kube.namespace, host.name)
        command = conn.dial_command(host.os, host.ip, target.ip, conn.NETSERVER_UDP_PORT, "udp", client_port=port)

        def answered(r):
            # netexec's /dial answered (exit 0) with something that is not its JSON: UnreadableOutput, the suite's
            # gap, as conn.collect_dial rules; counted as a silent try it would read as the node not answering.
            return r.ok and target.name.lower() in {a.lower() for a in conn.parse_dial(r.stdout).responses}

    return checks.until(host, command, answered, tries=5, container=host.tool_container)


@pytest.mark.test_id("3d9a6ddb-a7d2-4291-b5d9-7da66f9eabcd")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_node_reaches_pod_on_itself_over_udp(checks, host, servers):
    """ "Node -> Pod" is a supported flow "for TCP/UDP traffic" (002_8a7e76f95009f44f.txt, Supported Functionality > Networking): the node sends a UDP datagram to a pod on it and the pod answers."""
    target = next(p for p in servers if p.node == host.node)
    ok, result = node_reaches_pod_over_udp(checks, host, target)
    assert ok, (
        f"{host.node} -> {target.name} ({target.ip}) UDP {conn.NETSERVER_UDP_PORT}: {result.stdout!r} {result.stderr!r}"
    )


@pytest.mark.test_id("15852278-2a94-42f3-8899-468a56499da5")
@pytest.mark.dataplane
@pytest.mark.hybrid
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_linux_node_reaches_windows_pod_over_udp(checks, linux_host, servers):
    """The Linux control of node -> pod over UDP, "for TCP/UDP traffic" (002_8a7e76f95009f44f.txt, Supported Functionality > Networking): a Linux node's datagram to a Windows pod is answered."""
    target = next((p for p in servers if p.node != linux_host.node), servers[0])  # across the network
    ok, result = node_reaches_pod_over_udp(checks, linux_host, target)
    assert ok, f"Linux node {linux_host.node} -> {target.name} ({target.ip}) UDP: {result.stdout!r} {result.stderr!r}"


@pytest.mark.test_id("12fb03b5-0013-44b6-9c8f-ff6dcd1be0d6")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.hybrid
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(no_command="its commands run in a Linux pod only")
def test_linux_pod_beside_windows_reaches_external_host_by_name(checks, linux_client, external_host):
    """ "Pod -> External (DNS)" is a supported flow (002_8a7e76f95009f44f.txt, Supported Functionality > Networking), for the Linux pods of a hybrid cluster too (upstream hybrid_network.go, Internet connection for Linux containers using DNS)."""
    url = f"http://{conn.host_port(external_host, 80)}/"
    ok, result = checks.until(
        linux_client,
        conn.tcp_reach_command(linux_client.os, url),
        lambda r: r.ok,
        tries=3,
        container=linux_client.tool_container,
    )
    assert ok, (
        f"TCP to {external_host}:80 from {linux_client.name}: {conn.curl_failure(result.exit_code)}: {result.stderr}"
    )


# Upstream's external check (hybrid_network.go:86-95, 109-111): within the 30 s warm-up, then every poll of a 10 s
# window, each poll up to 10 tries (externalMaxTries); curl's --fail: an HTTP answer below 400.
EXTERNAL_TRIES = 10


def answered_below_400(result) -> bool:
    code = result.stdout.strip()
    return result.ok and code.isdigit() and 100 <= int(code) < 400


@pytest.mark.test_id("41472dac-b20e-4a3b-8009-4bca5a0c11e9")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_external_host_by_name_and_keeps_reaching_it(checks, client, external_host, target_os):
    """ "Pod -> External (DNS)" is a supported flow (002_8a7e76f95009f44f.txt, Supported Functionality > Networking): a Windows pod resolves the external host's name and gets an HTTP answer below 400 (curl's --fail), within the warm-up and then at every poll of a 10 s window (upstream hybrid_network.go:86, "Internet connection and DNS for Windows containers"; its Linux control: the same from a Linux pod). Only --external-host is ever asked: on the local cluster its simulated external host."""
    url = f"http://{conn.host_port(external_host, 80)}/"
    command = conn.tcp_reach_command(client.os, url)
    warm_up = int(WARM_UP_SECONDS / conn.DIAL_RETRY_DELAY_SECONDS)  # tries that span the warm-up
    ok, result = checks.until(client, command, answered_below_400, tries=warm_up, container=client.tool_container)
    assert ok, f"{url} from {client.name}: {conn.curl_failure(result.exit_code)}: {result.stdout!r} {result.stderr}"

    def poll() -> str | None:
        ok, result = checks.until(
            client, command, answered_below_400, tries=EXTERNAL_TRIES, container=client.tool_container
        )
        return None if ok else f"{conn.curl_failure(result.exit_code)}: {result.stdout!r} {result.stderr}"

    unstable = consistently(poll)
    assert unstable is None, f"{url} from {client.name} did not hold (upstream's Consistently): {unstable}"
