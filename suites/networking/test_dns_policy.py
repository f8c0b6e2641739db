"""dnsPolicy ClusterFirst and Default on Windows pods ("Test cases needed for dnsPolicy: Default, ClusterFirst,
None", 003_414b2f1c5dd978a2.txt; None is test_dns.py's): ClusterFirst points the pod's resolver at the cluster
DNS and resolves Services; Default gives the pod the node's resolvers instead, which resolve outside names.
The pods are created and placed for real everywhere; the resolver checks pass the ``data_plane`` gate."""

from __future__ import annotations

import pytest

from wincon.cluster import waves
from wincon.clusterinfo import capabilities
from wincon.commandline.errors import expect_deviation
from wincon.network.pods import resolver_config
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.dns]


@pytest.fixture(scope="module")
def external_host(wincon):
    """``--external-host``, else the local cluster's simulated external host, else the public default."""
    return conn.check_host(wincon.external_host)


@pytest.mark.test_id("58d804a8-abb1-488c-ba98-cf9926f6e6a0")
@pytest.mark.requires("cluster-dns")
@pytest.mark.dataplane
@pytest.mark.documents("kep-windows-node-support", "Test Approach")
@pytest.mark.windows_form(forms.AGNHOST_DNS, forms.NSLOOKUP_OUTPUT, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
@waves.pod("client", "dns-cluster-first", dnsPolicy="ClusterFirst")  # started with the module's wave
def test_dns_policy_cluster_first_resolves_services_through_cluster_dns(
    checks, make_client, os_prefix, cluster_dns, kubernetes_service
):
    """ "Test cases needed for dnsPolicy: Default, ClusterFirst, None" (003_414b2f1c5dd978a2.txt, Test Approach): with dnsPolicy ClusterFirst the pod's resolver is the cluster DNS and a Service's name resolves to its cluster IP."""
    capabilities.require_read("cluster-dns", cluster_dns=cluster_dns.ip or "")  # the plan's rule (requires)
    pod = make_client(f"{os_prefix}dns-cluster-first", dnsPolicy="ClusterFirst")
    config = resolver_config(checks, pod)
    assert cluster_dns.ip in config.nameservers, f"cluster DNS {cluster_dns.ip} not among {config.nameservers}"
    name = kubernetes_service.fqdn
    lookup = checks.lookup(pod, conn.absolute(name), tool="nslookup")  # the same command on both OSes
    assert lookup.ok, f"{name} did not resolve: {lookup.error}"
    assert kubernetes_service.cluster_ip in lookup.addresses, f"{name} -> {lookup.addresses}"


@pytest.mark.test_id("96fb9c5b-5f65-40c8-ab2a-5078c688f372")
@pytest.mark.dataplane
@pytest.mark.limitation("dns-config-via-cni")
@pytest.mark.documents("kep-windows-node-support", "Test Approach")
@pytest.mark.windows_form(forms.AGNHOST_DNS, forms.NSLOOKUP_OUTPUT, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
@waves.pod("client", "dns-default", dnsPolicy="Default")  # started with the module's wave
def test_dns_policy_default_gives_the_pod_the_nodes_resolvers(
    checks, make_client, os_prefix, cluster_dns, external_host
):
    """ "Test cases needed for dnsPolicy: Default, ClusterFirst, None" (003_414b2f1c5dd978a2.txt, Test Approach): with dnsPolicy Default the pod inherits the node's resolvers, not the cluster DNS, and they resolve an outside name."""
    pod = make_client(f"{os_prefix}dns-default", dnsPolicy="Default")
    config = resolver_config(checks, pod)
    lookup = checks.lookup(pod, conn.absolute(external_host), tool="nslookup")  # the same command on both OSes
    # The deviation's own form: the pod's resolver configuration, read, still names the cluster DNS (the CNI did
    # not apply dnsPolicy Default). No server at all, or a failed look-up with the node's servers, is not it.
    with expect_deviation(
        "dns-config-via-cni",
        accepts=lambda: bool(cluster_dns.ip) and cluster_dns.ip in config.nameservers,
        deviation="the cluster DNS among the pod's nameservers",
    ):
        assert config.nameservers, "the pod has no DNS server at all"
        assert not cluster_dns.ip or cluster_dns.ip not in config.nameservers, (
            f"dnsPolicy Default still points at the cluster DNS {cluster_dns.ip}: {config.nameservers}"
        )
        assert lookup.ok, f"{external_host} did not resolve through the node's resolvers: {lookup.error}"
