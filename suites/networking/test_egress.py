"""Windows pods to destinations outside the cluster: TCP to an external IP and to an external DNS name, which
work, and ICMP to the same external IP, documented to get no reply through win-overlay, win-bridge and
Azure-CNI.

The external target is `--external-ip` (default 8.8.8.8) and `--external-host` (default kubernetes.io), or on
the local cluster its simulated external host: point them at addresses a firewalled cluster may reach. TCP goes to port 80 over plain HTTP; any HTTP
answer proves the TCP flow.
"""

from __future__ import annotations

import pytest

from wincon.commandline.errors import expect_deviation
from wincon.network.flows import ping_unanswered
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]


@pytest.fixture(scope="module")
def external_ip(wincon):
    return conn.check_host(wincon.external_ip)


@pytest.fixture(scope="module")
def external_host(wincon):
    return conn.check_host(wincon.external_host)


def reach_over_tcp(checks, pod, target):
    url = f"http://{conn.host_port(target, 80)}/"
    return checks.until(pod, conn.tcp_reach_command(pod.os, url), lambda r: r.ok, tries=3, container=pod.tool_container)


@pytest.mark.test_id("f468f578-38d5-4b53-8c74-2fb1fc49f16d")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_external_ip_over_tcp(checks, client, external_ip):
    """ "Pod -> External (IP)" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Networking); "TCP/UDP packets work as expected" (000_4130a90def37a825.txt, Networking)."""
    ok, result = reach_over_tcp(checks, client, external_ip)
    assert ok, f"TCP to {external_ip}:80 from {client.name}: {conn.curl_failure(result.exit_code)}: {result.stderr}"


@pytest.mark.test_id("eea4227a-1a48-48b9-82cc-dfaf108f4972")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_pod_reaches_external_host_by_name_over_tcp(checks, client, external_host):
    """ "Pod -> External (DNS)" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Supported Functionality > Networking)."""
    ok, result = reach_over_tcp(checks, client, external_host)
    assert ok, f"TCP to {external_host}:80 from {client.name}: {conn.curl_failure(result.exit_code)}: {result.stderr}"


@pytest.mark.test_id("b21c692b-c67a-44af-935c-d6df3807efa9")
@pytest.mark.decided_at_run_time("the run skips where the external IP does not answer over TCP either")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress-through-vfp")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.windows_form(*forms.PING_OUTPUTS)
def test_pod_pings_external_ip(checks, client, external_ip):
    """ "ICMP packets directed to pass through a remote network (e.g. pod to external internet communication via ping) cannot be transposed and thus will not be routed back to their source" (000_4130a90def37a825.txt, Networking; 002_8a7e76f95009f44f.txt)."""
    reachable, result = reach_over_tcp(checks, client, external_ip)
    if not reachable:
        pytest.skip(
            f"{external_ip} is unreachable over TCP too ({conn.curl_failure(result.exit_code)}), so ICMP cannot be "
            "judged: set --external-ip to an address the cluster may reach"
        )
    ok, result = checks.ping(client, external_ip)
    with expect_deviation(
        "icmp-egress-through-vfp",
        accepts=lambda: ping_unanswered(client.os, result),
        deviation="ping's statistics with no echo reply",
    ):
        assert ok, f"no ICMP echo reply from {external_ip} although TCP reaches it:\n{result.stdout}{result.stderr}"
