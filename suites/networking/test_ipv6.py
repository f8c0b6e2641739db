"""IPv6 from Windows pods: dual-stack pod-to-pod and pod-to-Service dials over IPv6, and IPv6 single-stack.

000_4130a90def37a825.txt (IPv6): "Kubernetes on Windows does not support single-stack "IPv6-only" networking.
However, dual-stack IPv4/IPv6 networking for pods and nodes with single-family services is supported."
Each check skips with the reason where the cluster is not of the kind it needs.
"""

from __future__ import annotations

import ipaddress

import pytest
from kubernetes.utils import FailToCreateError

from wincon.checks.api_rules import rejection_of
from wincon.cluster.waits import WaitTimeout
from wincon.commandline.errors import expect_deviation
from wincon.network.evidence import DIAL_UNANSWERED, dial_unanswered
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]


def ipv6_of(addresses):
    return next((a for a in addresses if ipaddress.ip_address(a).version == 6), None)


# Where the API server refuses a Service for the families it has (pkg/registry/core/service/storage/alloc.go at
# v1.37.2): RequireDualStack on a cluster of one family, a cause at spec.ipFamilyPolicy ("this cluster is not
# configured for dual-stack services"); a family it has no range for, a cause at spec.ipFamilies[i] ("not configured
# on this cluster").
FAMILY_FIELDS = ("spec.ipFamilyPolicy", "spec.ipFamilies")


def not_dual_stack(exc: FailToCreateError) -> str | None:
    """The API server's refusal of the dual-stack Service for the cluster's families: every refusal a 422 whose
    every cause is at ``FAMILY_FIELDS``, described; None for any other refusal (another field, a webhook's, a 422
    without causes), which is the check's error, not a cluster of one family."""
    said = []
    for error in exc.api_exceptions:
        rejection = rejection_of(error)
        fields = [str(c.get("field") or "") for c in rejection.causes]
        if rejection.status != 422 or not fields or not all(f.startswith(FAMILY_FIELDS) for f in fields):
            return None
        said.append(rejection.describe())
    return "; ".join(said) or None


@pytest.fixture(scope="module")
def dual_stack_service(net, server_selector, os_prefix):
    """A RequireDualStack Service over the netservers of the item's OS; skips where the API server refuses it for
    the cluster's families (``not_dual_stack``), before any pod is started for nothing; any other refusal raises."""
    try:
        return net.service("service-dualstack.yaml", None, name=f"{os_prefix}netserver-ds", select=server_selector)
    except FailToCreateError as exc:
        refusal = not_dual_stack(exc)
        if refusal is not None:
            pytest.skip(f"the cluster is not configured for IPv4/IPv6 dual-stack: {refusal}"[:400])
        raise


@pytest.mark.test_id("b7af3439-3dfc-4fe4-a168-8a5c9907ac10")
@pytest.mark.dataplane
@pytest.mark.limitation("ipv6-overlay-unsupported")
@pytest.mark.limitation("ipv6-l2bridge-l2tunnel-unsupported")
@pytest.mark.documents("k8s-windows-intro", "Networking")
@pytest.mark.requires("dual-stack")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pods_talk_over_ipv6_on_a_dual_stack_cluster(checks, dual_stack_service, client, servers):
    """ "Windows containers connected to l2bridge, l2tunnel, or overlay networks do not support communicating over the IPv6 stack" (000_4130a90def37a825.txt, Networking)."""
    target = next((p for p in servers if p.node != client.node), servers[0])
    command = conn.dial_command(client.os, client.ip, target.ip, conn.NETSERVER_HTTP_PORT)
    checks.gate(command, where=checks.where(client))
    address = ipv6_of(target.ips)
    assert address, f"{target.os} pod {target.name} got no IPv6 address on a dual-stack cluster: {target.ips}"
    outcome = checks.dial(client, address, conn.NETSERVER_HTTP_PORT, "http", {target.name})
    with expect_deviation(
        "ipv6-overlay-unsupported, ipv6-l2bridge-l2tunnel-unsupported",
        accepts=lambda: dial_unanswered(outcome),
        deviation=DIAL_UNANSWERED,
    ):
        assert outcome.reached_all, f"[{address}]: {outcome.describe()}"


@pytest.mark.test_id("b530f2a1-dc56-4a5f-95de-2e03ae81d631")
@pytest.mark.dataplane
@pytest.mark.limitation("ipv6-overlay-unsupported")
@pytest.mark.limitation("ipv6-l2bridge-l2tunnel-unsupported")
@pytest.mark.documents("k8s-windows-intro", "IPv6")
@pytest.mark.requires("dual-stack")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pod_reaches_ipv6_cluster_ip_on_a_dual_stack_cluster(checks, dual_stack_service, net, client, servers):
    """ "Dual-stack IPv4/IPv6 networking for pods and nodes with single-family services is supported" except on "l2bridge, l2tunnel, or overlay networks" (000_4130a90def37a825.txt, IPv6; Networking)."""
    net.wait_endpoints(dual_stack_service, servers)
    address = ipv6_of(dual_stack_service.raw.spec.cluster_ips or [])
    assert address, (
        f"dual-stack Service {dual_stack_service.name} got no IPv6 cluster IP: {dual_stack_service.raw.spec.cluster_ips}"
    )
    outcome = checks.dial(client, address, conn.SERVICE_HTTP_PORT, "http", {p.name for p in servers})
    with expect_deviation(
        "ipv6-overlay-unsupported, ipv6-l2bridge-l2tunnel-unsupported",
        accepts=lambda: dial_unanswered(outcome),
        deviation=DIAL_UNANSWERED,
    ):
        assert outcome.reached_all, f"[{address}]: {outcome.describe()}"


@pytest.mark.test_id("f17cbdfe-fce4-404b-97fe-9d583e54c15d")
@pytest.mark.dataplane
@pytest.mark.limitation("ipv6-single-stack-unsupported")
@pytest.mark.documents("k8s-windows-intro", "IPv6")
@pytest.mark.requires("ipv6-single-stack")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_windows_pods_talk_on_an_ipv6_single_stack_cluster(
    checks, net, kubernetes_service, os_nodes, target_os, os_prefix, make_client
):
    """ "Kubernetes on Windows does not support single-stack "IPv6-only" networking" (000_4130a90def37a825.txt, IPv6)."""
    families = list(kubernetes_service.raw.spec.ip_families or [])
    if families != ["IPv6"]:
        pytest.skip(f"the cluster is not IPv6 single-stack (default/kubernetes has families {families or ['IPv4']})")
    node, name = os_nodes[0], f"{os_prefix}v6-server"
    make = net.windows_netexec_manifest if target_os == "windows" else net.linux_netexec
    try:
        server = net.start([make(name, node)])[name]
        client = make_client(f"{os_prefix}v6-client")
    except WaitTimeout:
        # The pods never ran, so nothing about IPv6 was observed: an error (after the simulated-node gate).
        checks.gate(["agnhost", "netexec"], where=f"{target_os} node {node.name}")
        raise
    outcome = checks.dial(client, server.status.pod_ip, conn.NETSERVER_HTTP_PORT, "http", {name})
    with expect_deviation(
        "ipv6-single-stack-unsupported",
        accepts=lambda: dial_unanswered(outcome),
        deviation=DIAL_UNANSWERED,
    ):
        assert outcome.reached_all, outcome.describe()
