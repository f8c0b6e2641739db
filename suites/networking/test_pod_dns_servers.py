"""Configurable pod DNS servers as upstream test/e2e/windows/dns.go:43 (v1.34.4) checks them: a pod with
dnsPolicy None and two nameservers in dnsConfig has both, a wrong name does not resolve (the negative control
upstream runs first), and the kubernetes Service's short name resolves through the dnsConfig search path.

Upstream's second nameserver is 1.1.1.1; no check here may name an outside address, so the second one is the
external target's IP (``--external-ip``; on the local cluster its simulated external host). Its Linux control
(``target_os``) runs the same commands in a Linux pod.
"""

from __future__ import annotations

import pytest

from wincon.clusterinfo import capabilities
from wincon.commandline.errors import expect_deviation
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]

BOGUS = "kubernetezzzzzzzz"  # upstream dns.go:104


def curl_https(os_name: str, name: str) -> list[str]:
    """Upstream's ``curl.exe -k https://<name>:443`` (dns.go:104 and :118): any HTTPS answer, certificate
    unchecked; exit 6 when the name does not resolve."""
    return [
        conn.curl_binary(os_name),
        "-k",
        "-s",
        "-S",
        "--max-time",
        str(conn.MAX_TIME_SECONDS),
        f"https://{name}:443",
    ]


@pytest.mark.test_id("3ff7f3d1-6825-451f-9d5d-9ff856ba23ef")
@pytest.mark.requires("cluster-dns")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-config-via-cni")
@pytest.mark.documents("kep-windows-node-support", "Custom DNS updates for CNI plugins")
@pytest.mark.windows_form(forms.IPCONFIG, forms.IPCONFIG_OUTPUT, forms.CURL_EXE, forms.NSLOOKUP_TIMEOUT_OUTPUT)
def test_pod_dns_config_with_two_nameservers_resolves_real_names_only(
    checks, make_client, os_prefix, cluster_dns, wincon, target_os
):
    """ "Pod.Spec.DNSPolicy = DNSNone ... DNSConfig.Nameservers, and DNSConfig.Searches were set correctly based on the Pod spec" (003_414b2f1c5dd978a2.txt, Custom DNS updates for CNI plugins): with dnsPolicy None, nameservers [the cluster DNS, a second address] and the search path default.svc.<domain>, the pod's resolver lists both servers, `kubernetezzzzzzzz` does not resolve, and `kubernetes` does (upstream dns.go:43)."""
    capabilities.require_read("cluster-dns", cluster_dns=cluster_dns.ip or "")  # the plan's rule (requires)
    second = conn.check_host(wincon.external_ip)
    search = f"default.svc.{cluster_dns.domain}"
    pod = make_client(
        f"{os_prefix}dns-servers",
        dnsPolicy="None",
        dnsConfig={"nameservers": [cluster_dns.ip, second], "searches": [search]},
    )
    # agnhost dns-server-list prints only resolv.conf's first nameserver line on Linux (its dns/dns.go:47-55):
    # read the whole configuration, `ipconfig /all` on Windows as upstream (dns.go:88), resolv.conf on Linux.
    shown = checks.run(pod, conn.dns_config_command(pod.os), container=pod.tool_container)
    assert shown.ok, f"{' '.join(conn.dns_config_command(pod.os))} in {pod.name}: {shown.stderr}"
    config = conn.parse_dns_config(pod.os, shown.stdout)
    # The deviation's own form: a configuration that was read and names DNS servers, without what dnsConfig set
    # (its two nameservers, or its search path: the CNI applied neither before the fix the seed documents).
    with expect_deviation(
        "dns-config-via-cni",
        accepts=lambda: bool(config.nameservers),
        deviation="the resolver configuration read back lacks dnsConfig's nameservers or its search path",
    ):
        assert cluster_dns.ip in config.nameservers and second in config.nameservers, (
            f"dnsConfig nameservers {cluster_dns.ip}, {second} not both in {config.nameservers}"
        )
        assert search in config.searches, f"dnsConfig search {search} not in {config.searches}"
    # After a look-up through the cluster DNS in this worker found no server: one nslookup of the name asking the
    # cluster DNS itself first (FlowChecks.resolver_still_silent); curl's exit 6 below cannot tell "no such name"
    # from "no server answered", and `kubernetes` resolves only through the cluster DNS.
    silent = checks.resolver_still_silent(pod, BOGUS, cluster_dns=cluster_dns.ip)
    assert silent is None, (
        f"the cluster DNS {cluster_dns.ip} answered nothing in {pod.name}: nslookup {BOGUS} {cluster_dns.ip}: "
        f"{silent.stdout} {silent.stderr}"
    )
    bogus = checks.run(pod, curl_https(pod.os, BOGUS), container=pod.tool_container)
    assert conn.curl_could_not_resolve(bogus.exit_code, bogus.stderr, BOGUS), (
        f"{BOGUS} was expected not to resolve (curl exit 6, 'Could not resolve host: {BOGUS}'): "
        f"exit {bogus.exit_code}, {bogus.stdout} {bogus.stderr}"
    )
    ok, result = checks.until(
        pod, curl_https(pod.os, "kubernetes"), lambda r: r.ok, tries=3, container=pod.tool_container
    )
    with expect_deviation(
        "dns-config-via-cni",
        accepts=lambda: conn.curl_could_not_resolve(result.exit_code, result.stderr, "kubernetes"),
        deviation="the short name not resolved (curl exit 6, 'Could not resolve host: kubernetes')",
    ):
        assert ok, (
            f"kubernetes through the search path {search}: {conn.curl_failure(result.exit_code)}: {result.stderr}"
        )
