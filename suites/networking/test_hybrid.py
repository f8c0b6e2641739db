"""Hybrid clusters: Linux pod to Windows pod and back, and pod to Service across operating systems.

002_8a7e76f95009f44f.txt (Services): "You can use services for cross-operating system connectivity";
003_414b2f1c5dd978a2.txt (What works today): "Cross operating system service connectivity". Skipped with
the reason where the cluster has no Linux worker. Each flow's Linux control replaces its Windows end by a
Linux pod (on another node), so it checks the same flow between Linux pods.
"""

from __future__ import annotations

import pytest

from wincon.checks.node import WARM_UP_SECONDS, consistently
from wincon.network.pods import pod_names
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking, pytest.mark.hybrid]

POD_PORTS = {"http": conn.NETSERVER_HTTP_PORT, "udp": conn.NETSERVER_UDP_PORT}
SERVICE_PORTS = {"http": conn.SERVICE_HTTP_PORT, "udp": conn.SERVICE_UDP_PORT}


# Upstream's stable-networking check (hybrid_network.go:53-72): within the warm-up, then every poll of a
# 10 s window; 3 tries per poll (internalMaxTries). WARM_UP_TRIES dial tries span the warm-up.
WARM_UP_TRIES = int(WARM_UP_SECONDS / conn.DIAL_RETRY_DELAY_SECONDS)
POLL_TRIES = 3


def stays_reachable(checks, source, target, protocol: str) -> str | None:
    """Once ``target`` answered, it must answer every poll of upstream's 10 s window (Consistently)."""

    def poll() -> str | None:
        outcome = checks.dial(source, target.ip, POD_PORTS[protocol], protocol, {target.name}, max_tries=POLL_TRIES)
        return None if outcome.reached_all else outcome.describe()

    return consistently(poll)


def across(targets, source):
    """A target on another node than ``source``'s where there is one: in a Linux control both ends are Linux
    pods, and the flow stays one across the network, as between the operating systems."""
    return next((p for p in targets if p.node != source.node), targets[0])


@pytest.mark.test_id("c557bca0-8037-45f0-9fe3-ad720f01232d")
@pytest.mark.documents("k8s-windows-intro", "Supported Functionality")
@pytest.mark.documents("k8s-windows-guide", "Services")
def test_pods_of_both_operating_systems_back_their_services(
    netserver_service, linux_service, netservers, linux_netservers, linux_workers, windows_nodes
):
    """ "Windows containers have to be scheduled on Windows nodes, Linux containers on Linux nodes" (000_4130a90def37a825.txt, Supported Functionality); "You can use services for cross-operating system connectivity" (002_8a7e76f95009f44f.txt)."""
    assert {p.node for p in linux_netservers} == {n.name for n in linux_workers}, "a Linux worker got no netserver"
    assert {p.node for p in netservers} <= {n.name for n in windows_nodes}
    assert netserver_service.cluster_ip != linux_service.cluster_ip
    windows_ips, linux_ips = {p.ip for p in netservers}, {p.ip for p in linux_netservers}
    assert not windows_ips & linux_ips, f"a Windows and a Linux pod share an IP: {windows_ips & linux_ips}"


@pytest.mark.test_id("14113dc4-6441-485e-ab61-b36765a7930c")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_linux_pod_reaches_windows_pod_by_ip(protocol, checks, linux_client, servers):
    """ "You can use services for cross-operating system connectivity" (002_8a7e76f95009f44f.txt, Services); "Pod -> Pod (IP)" for TCP/UDP (002, Networking); as upstream hybrid_network.go:53, the flow must then hold for 10 s."""
    target = across(servers, linux_client)
    outcome = checks.dial(
        linux_client, target.ip, POD_PORTS[protocol], protocol, {target.name}, max_tries=WARM_UP_TRIES
    )
    assert outcome.reached_all, outcome.describe()
    unstable = stays_reachable(checks, linux_client, target, protocol)
    assert unstable is None, f"{linux_client.name} -> {target.name} did not hold (upstream's Consistently): {unstable}"


@pytest.mark.test_id("2aceda24-75a6-4481-a540-b775b199dae1")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pod_reaches_linux_pod_by_ip(protocol, checks, client, linux_netservers):
    """ "You can use services for cross-operating system connectivity" (002_8a7e76f95009f44f.txt, Services); "Pod -> Pod (IP)" for TCP/UDP (002, Networking); as upstream hybrid_network.go:53, the flow must then hold for 10 s."""
    target = across(linux_netservers, client)
    outcome = checks.dial(client, target.ip, POD_PORTS[protocol], protocol, {target.name}, max_tries=WARM_UP_TRIES)
    assert outcome.reached_all, outcome.describe()
    unstable = stays_reachable(checks, client, target, protocol)
    assert unstable is None, f"{client.name} -> {target.name} did not hold (upstream's Consistently): {unstable}"


@pytest.mark.test_id("077a2b8e-bc7a-4ff1-ba19-244b9779f19c")
@pytest.mark.dataplane
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pod_reaches_linux_pod_with_curl(checks, client, linux_netservers):
    """Upstream's hybrid check `curl.exe <ip> --connect-timeout 10 --fail` from a Windows pod to a Linux pod ("Cross operating system service connectivity", 003_414b2f1c5dd978a2.txt)."""
    target = across(linux_netservers, client)
    url = f"http://{conn.host_port(target.ip, conn.NETSERVER_HTTP_PORT)}/hostname"
    ok, result = checks.http_get(client, url, {target.name})
    assert ok, f"{url}: {conn.curl_failure(result.exit_code)}: {result.stderr}{result.stdout}"


@pytest.mark.test_id("cc2f5783-9aa0-46d3-a040-8404e81954c7")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pod_reaches_service_of_linux_pods(protocol, checks, client, linux_service, linux_netservers):
    """ "Cross operating system service connectivity" works (003_414b2f1c5dd978a2.txt, What works today; 002_8a7e76f95009f44f.txt, Services)."""
    outcome = checks.dial(
        client, linux_service.cluster_ip, SERVICE_PORTS[protocol], protocol, pod_names(linux_netservers)
    )
    assert outcome.reached_all, outcome.describe()


@pytest.mark.test_id("79a5ddf7-1041-459e-ac40-e31c20aa793d")
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_linux_pod_reaches_service_of_windows_pods(protocol, checks, linux_client, server_service, servers):
    """ "Cross operating system service connectivity" works (003_414b2f1c5dd978a2.txt, What works today; 002_8a7e76f95009f44f.txt, Services)."""
    outcome = checks.dial(
        linux_client, server_service.cluster_ip, SERVICE_PORTS[protocol], protocol, pod_names(servers)
    )
    assert outcome.reached_all, outcome.describe()
