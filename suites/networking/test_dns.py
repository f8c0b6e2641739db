"""Name resolution from Windows pods: Service names in every documented form, headless Services, pod
hostname/subdomain names, ExternalName, and the pod DNS policies (None with dnsConfig, ClusterFirstWithHostNet).

000_4130a90def37a825.txt (DNS): "On a Windows pod, you can resolve both kubernetes.default.svc.cluster.local
and kubernetes, but not the in-betweens, like kubernetes.default or kubernetes.default.svc."
Look-ups use Resolve-DnsName on Windows, "recommended" by the same section, where the nettools image is in
the catalog, and nslookup otherwise.
"""

from __future__ import annotations

import pytest

from wincon.cluster import waves
from wincon.clusterinfo import capabilities
from wincon.commandline.errors import SuiteError, expect_deviation
from wincon.network.pods import pod_names, resolver_config
from wincon.windows import connectivity as conn
from wincon.windows import forms

pytestmark = [pytest.mark.networking]

FORMS_THAT_RESOLVE = ["single-label", "fqdn"]
# An FQDN is looked up with `nslookup name.` on both OSes (the same command and parser as the Linux control); a
# name that needs the search list with the OS's own resolver (Resolve-DnsName or nslookup on Windows, the C
# library's on Linux), whose Windows forms carry recorded outputs.
FQDN_FORM = pytest.mark.windows_form(forms.NSLOOKUP_OUTPUT, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
# A name that needs the search list (a single label, a dotted name) is resolved as applications resolve it, by
# Go's resolver in `/agnhost connect` on both OSes (the system's GetAddrInfoW on Windows).
RESOLVER_FORM = pytest.mark.windows_form(forms.AGNHOST_CONNECT, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
# A check by name runs one `nslookup name` first when a look-up earlier in the worker found no DNS server
# (FlowChecks.resolver_still_silent): the same command on both OSes, whose Windows no-server form is recorded.
BY_NAME_FORM = pytest.mark.windows_form(forms.CURL_EXE, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
DOTTED_FORMS = ["with-namespace", "with-namespace-svc"]


@pytest.fixture(params=["kubernetes", "netserver"])
def service(request):
    """default/kubernetes (the documentation's own example) and this module's Service over the item's OS's pods."""
    return request.getfixturevalue("kubernetes_service" if request.param == "kubernetes" else "server_service")


def service_name(svc, form, cluster_dns):
    return conn.service_names(svc.name, svc.namespace, cluster_dns.domain)[form]


def service_port(svc) -> int:
    """The TCP port the Service serves: 443 for default/kubernetes, the netserver Services' HTTP port else."""
    return 443 if (svc.namespace, svc.name) == ("default", "kubernetes") else conn.SERVICE_HTTP_PORT


def resolve(
    checks, pod, name: str, port: int, connect: bool = False, tries: int = 5, cluster_dns: str | None = None
) -> conn.Resolution:
    """``name`` resolved by Go's resolver in the pod's agnhost container (conn.resolve_command), retried while the
    resolver fails (a new Service's record may need a moment) and, with ``connect``, until the connection to
    ``name:port`` is made too (the data plane may need a moment to program a new Service); SuiteError when
    agnhost's answer is unreadable. After a look-up in this worker found no DNS server, one nslookup of the
    name first: when it finds none either, the resolver's silence is the answer (Go's resolver would spend 50 s
    on it), quoted as the error. ``cluster_dns``: the pod's dnsConfig names the cluster DNS (this address) as
    its only nameserver, so that nslookup asks it, after a look-up through the cluster DNS found no server."""
    command = conn.resolve_command(name, port)
    silent = checks.resolver_still_silent(pod, name, cluster_dns=cluster_dns)
    if silent is not None:
        output = (silent.stdout + silent.stderr).strip()[:300]
        return conn.Resolution(False, False, False, f"no DNS server answered nslookup {name}: {output}")

    def done(result) -> bool:
        return result.exit_code == 0 or (
            not connect and not (result.stderr or result.stdout).lstrip().startswith("DNS:")
        )

    _, result = checks.until(pod, command, done, tries, container=pod.container, resolver="agnhost-connect")
    try:
        return conn.parse_resolve(result.exit_code, result.stdout, result.stderr)
    except ValueError as exc:
        raise SuiteError(str(exc), image="agnhost", tool=" ".join(command), output=result.stderr) from exc


@pytest.mark.test_id("03f3695f-584f-4df1-9cfc-5d1ea410306f")
@pytest.mark.dns
@pytest.mark.dataplane
# A single label is relative to the pod's own namespace (the search list's first entry): default/kubernetes
# answers to it only from the default namespace, which the documentation's example assumes; the module's
# own Service stands in for it from the module's namespace.
@pytest.mark.parametrize(
    ("service", "form"),
    [
        pytest.param("kubernetes", "fqdn", marks=FQDN_FORM),
        pytest.param("netserver", "single-label", marks=RESOLVER_FORM),
        pytest.param("netserver", "fqdn", marks=FQDN_FORM),
    ],
    indirect=["service"],
)
@pytest.mark.documents("k8s-windows-intro", "DNS")
def test_service_name_resolves_as_single_label_and_fqdn(form, service, checks, client, cluster_dns):
    """ "On a Windows pod, you can resolve both kubernetes.default.svc.cluster.local and kubernetes" (000_4130a90def37a825.txt, DNS)."""
    name = service_name(service, form, cluster_dns)
    if form == "single-label":  # the search list: Go's resolver, as applications resolve (the same on both OSes)
        resolution = resolve(checks, client, name, service_port(service), connect=True)
        assert resolution.resolved and resolution.connected, f"{name} from {client.name}: {resolution.error}"
        return
    # An FQDN: the same `nslookup name.` on both OSes, and the address it names.
    lookup = checks.lookup(client, conn.absolute(name), tool="nslookup")
    assert lookup.ok, f"{name} did not resolve in {client.name}: {lookup.error}"
    assert service.cluster_ip in lookup.addresses, f"{name} resolved to {lookup.addresses}, not {service.cluster_ip}"


@pytest.mark.test_id("11e66659-5502-48ad-abfe-d0bb8c83163e")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-dotted-pqdn-unresolved")
@pytest.mark.parametrize("form", DOTTED_FORMS)
@pytest.mark.documents("k8s-windows-intro", "DNS")
@pytest.mark.documents("k8s-windows-guide", "DNS limitations")
@RESOLVER_FORM
def test_service_name_resolves_with_namespace_and_svc(form, service, checks, client, cluster_dns):
    """ "... but not the in-betweens, like kubernetes.default or kubernetes.default.svc" (000_4130a90def37a825.txt, DNS; 002_8a7e76f95009f44f.txt, DNS limitations)."""
    name = service_name(service, form, cluster_dns)
    resolution = resolve(checks, client, name, service_port(service))
    # The deviation is NXDOMAIN (Windows "treats all names with a '.' as a FQDN"), Go's "no such host": a timeout,
    # a SERVFAIL ("server misbehaving") or an unreadable output is not it.
    with expect_deviation(
        "dns-dotted-pqdn-unresolved", accepts=lambda: resolution.not_found, deviation="NXDOMAIN (no such host)"
    ):
        assert resolution.resolved, f"{name} did not resolve in {client.name}: {resolution.error}"


@pytest.mark.test_id("7d708d59-06b7-4ff6-8e1b-060e99b3594f")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.parametrize("form", FORMS_THAT_RESOLVE)
@pytest.mark.documents("k8s-windows-guide", "Networking")
@BY_NAME_FORM
def test_pod_reaches_service_by_single_label_name_and_fqdn(
    form, protocol, checks, client, server_service, servers, cluster_dns
):
    """ "Pod -> Service (PQDN, but only if there are no '.')" and "Pod -> Service (FQDN)" are supported flows for TCP/UDP (002_8a7e76f95009f44f.txt, Networking)."""
    name = service_name(server_service, form, cluster_dns)
    port = conn.SERVICE_HTTP_PORT if protocol == "http" else conn.SERVICE_UDP_PORT
    outcome = checks.dial(client, name, port, protocol, pod_names(servers))
    assert outcome.reached_all, f"{name}: {outcome.describe()}"


@pytest.mark.test_id("d51b6ef2-f263-48ff-a4a3-f90f1a8e19a4")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-dotted-pqdn-unresolved")
@pytest.mark.parametrize("form", DOTTED_FORMS)
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.documents("k8s-windows-intro", "DNS")
@BY_NAME_FORM
def test_pod_reaches_service_by_name_with_namespace(form, checks, client, server_service, servers, cluster_dns):
    """ "Pod -> Service (PQDN, but only if there are no '.')" (002_8a7e76f95009f44f.txt, Networking): Windows "treats all names with a '.' as a FQDN" (000_4130a90def37a825.txt, DNS)."""
    name = service_name(server_service, form, cluster_dns)
    outcome = checks.dial(client, name, conn.SERVICE_HTTP_PORT, "http", pod_names(servers))
    # The deviation: netexec's resolver (Go's; GetAddrInfoW on Windows) said "no such host" and nothing answered.
    with expect_deviation(
        "dns-dotted-pqdn-unresolved",
        accepts=lambda: not outcome.responses and any(conn.go_not_found(e) for e in outcome.errors),
        deviation="NXDOMAIN (no such host)",
    ):
        assert outcome.reached_all, f"{name}: {outcome.describe()}"


@pytest.mark.test_id("d8f919c4-6dfa-4dfc-ab75-e9ecaab10f04")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.documents("kep-windows-node-support", "What works today")
@FQDN_FORM
def test_headless_service_name_resolves_to_every_pod_ip(checks, client, server_headless, servers, cluster_dns):
    """Windows "services can utilize ... Headless services" (002_8a7e76f95009f44f.txt, Services; 003_414b2f1c5dd978a2.txt: "headless services work")."""
    name = conn.service_fqdn(server_headless.name, server_headless.namespace, cluster_dns.domain)
    # Every A record counts here: on Linux nslookup lists them all (the C library's resolver names one), and
    # the name is fully qualified, so no search list is involved. A partial answer is judged only once the
    # Service's EndpointSlices list every pod ready (CoreDNS serves what it has seen of them).
    lookup = checks.lookup(client, conn.absolute(name), tool="nslookup", every=[p.ip for p in servers])
    assert lookup.ok, f"{name} did not resolve: {lookup.error}"
    assert set(lookup.addresses) == {p.ip for p in servers}, f"{name} resolved to {lookup.addresses}"


@pytest.mark.test_id("396aa7f8-dc6a-4e72-a8fb-bc1e6b71ef57")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.parametrize("protocol", ["http", "udp"])
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality > Networking")
@BY_NAME_FORM
def test_pod_reaches_pod_by_hostname_and_subdomain(
    protocol, checks, client, server_headless, remote_or_local_server, cluster_dns
):
    """ "Pod -> Pod (Name)" is a supported flow for TCP/UDP traffic (002_8a7e76f95009f44f.txt, Supported Functionality > Networking)."""
    target = remote_or_local_server
    name = f"{target.name}.{server_headless.name}.{server_headless.namespace}.svc.{cluster_dns.domain}"
    port = conn.NETSERVER_HTTP_PORT if protocol == "http" else conn.NETSERVER_UDP_PORT
    outcome = checks.dial(client, name, port, protocol, {target.name})
    assert outcome.reached_all, f"{name}: {outcome.describe()}"


@pytest.fixture
def remote_or_local_server(servers, client):
    """A netserver on another node where there is one, else on the client's node."""
    return next((p for p in servers if p.node != client.node), servers[0])


@pytest.mark.test_id("66a42eda-b18e-4e5c-8fd7-43d2f6fcfe70")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@pytest.mark.documents("kep-windows-node-support", "What works today")
@FQDN_FORM
def test_externalname_service_resolves_to_its_target(checks, client, server_alias, server_service):
    """Windows "services can utilize ... ExternalName" (002_8a7e76f95009f44f.txt, Services; 003_414b2f1c5dd978a2.txt, What works today)."""
    lookup = checks.lookup(client, conn.absolute(server_alias.fqdn), tool="nslookup")
    assert lookup.ok, f"{server_alias.fqdn} did not resolve: {lookup.error}"
    assert server_service.cluster_ip in lookup.addresses, (
        f"{server_alias.fqdn} (CNAME of {server_service.fqdn}) resolved to {lookup.addresses}"
    )


@pytest.mark.test_id("11319d0b-9245-4183-a4e1-d247a600dc64")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Services")
@BY_NAME_FORM
def test_pod_reaches_service_through_externalname(checks, client, server_alias, servers):
    """Windows "services can utilize ... ExternalName" (002_8a7e76f95009f44f.txt, Services)."""
    outcome = checks.dial(client, server_alias.fqdn, conn.SERVICE_HTTP_PORT, "http", pod_names(servers))
    assert outcome.reached_all, f"{server_alias.fqdn}: {outcome.describe()}"


@pytest.mark.test_id("d28d6457-624b-4a09-8e63-3d173641522d")
@pytest.mark.requires("cluster-dns")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-config-via-cni")
@pytest.mark.documents("kep-windows-node-support", "Custom DNS updates for CNI plugins")
@pytest.mark.windows_form(forms.AGNHOST_DNS, forms.AGNHOST_CONNECT, forms.NSLOOKUP_TIMEOUT_OUTPUT, same_as_control=True)
def test_dns_policy_none_applies_dns_config(checks, make_client, os_prefix, server_service, cluster_dns, namespace):
    """ "Pod.Spec.DNSPolicy = DNSNone. Hostname, Subdomain, and DNSConfig.Nameservers, and DNSConfig.Searches were set correctly based on the Pod spec" (003_414b2f1c5dd978a2.txt, Custom DNS updates for CNI plugins)."""
    capabilities.require_read("cluster-dns", cluster_dns=cluster_dns.ip or "")  # the plan's rule (requires)
    searches = [f"{namespace}.svc.{cluster_dns.domain}", "wincon.example"]
    pod = make_client(
        f"{os_prefix}dns-none", dnsPolicy="None", dnsConfig={"nameservers": [cluster_dns.ip], "searches": searches}
    )
    config = resolver_config(checks, pod)
    assert cluster_dns.ip in config.nameservers, f"dnsConfig nameserver {cluster_dns.ip} not in {config.nameservers}"
    assert set(searches) <= set(config.searches), f"dnsConfig searches {searches} not in {config.searches}"
    # Where the pod's configuration names the cluster DNS alone (agnhost lists every server on Windows, resolv.conf's
    # first line on Linux, where dnsPolicy None writes dnsConfig's alone), its resolver is the cluster DNS: after a
    # look-up through that one found no server, one nslookup asks it first (as the two-nameserver check does).
    alone = cluster_dns.ip if set(config.nameservers) == {cluster_dns.ip} else None
    resolution = resolve(checks, pod, server_service.name, conn.SERVICE_HTTP_PORT, connect=True, cluster_dns=alone)
    with expect_deviation("dns-config-via-cni", accepts=lambda: resolution.not_found, deviation="NXDOMAIN"):
        assert resolution.resolved and resolution.connected, (
            f"{server_service.name} through the dnsConfig search list: {resolution.error}"
        )


@pytest.mark.test_id("38e11a76-6f89-4000-9bfd-969342cde049")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-cluster-first-with-host-net")
@pytest.mark.documents("k8s-windows-intro", "DNS")
@pytest.mark.documents("k8s-windows-guide", "V1.Pod.dnsPolicy")
@FQDN_FORM
@waves.pod("host", "dns-hostnet", dnsPolicy="ClusterFirstWithHostNet")  # started with the module's wave
def test_host_network_pod_with_cluster_first_with_host_net_resolves_services(
    checks, make_host, os_prefix, server_service
):
    """ "ClusterFirstWithHostNet is not supported for DNS" (000_4130a90def37a825.txt, DNS; 002_8a7e76f95009f44f.txt, V1.Pod.dnsPolicy)."""
    host = make_host(f"{os_prefix}dns-hostnet", dnsPolicy="ClusterFirstWithHostNet")
    lookup = checks.lookup(host, conn.absolute(server_service.fqdn), tool="nslookup")
    # The deviation: the pod gets the node's resolvers, which do not know the cluster's names (NXDOMAIN).
    with expect_deviation(
        "dns-cluster-first-with-host-net",
        accepts=lambda: lookup.not_found,
        deviation="NXDOMAIN from the node's resolvers",
    ):
        assert lookup.ok, f"{server_service.fqdn} did not resolve on the host network: {lookup.error}"
        assert server_service.cluster_ip in lookup.addresses, f"{server_service.fqdn}: {lookup.addresses}"


@pytest.mark.test_id("11abc00f-ac27-4bb0-b2e3-7a3a542f502b")
@pytest.mark.dns
@pytest.mark.dataplane
@pytest.mark.limitation("dns-resolvers-differ")
@pytest.mark.windows_only(
    "compares Windows' two resolvers (Resolve-DnsName and nslookup); Linux has no Resolve-DnsName"
)
@pytest.mark.documents("k8s-windows-intro", "DNS")
@pytest.mark.windows_form(forms.NSLOOKUP_OUTPUT, forms.RESOLVE_DNSNAME_OUTPUT)
def test_nslookup_and_resolve_dnsname_give_the_same_answer(
    checks, windows_client, netserver_service, kubernetes_service, cluster_dns
):
    """ "There are multiple DNS resolvers that can be used. These come with slightly different behaviors" (000_4130a90def37a825.txt, DNS)."""
    if windows_client.tools is None:
        pytest.skip("the image catalog has no nettools image for this Windows build: no Resolve-DnsName to compare")
    names_ = resolver_comparison_names(kubernetes_service, netserver_service)
    differ = {}
    answered_differently = []  # names both resolvers answered (addresses or NXDOMAIN), with different answers
    for name in names_:
        native = checks.lookup(windows_client, name, tool="resolve-dnsname")
        nslookup = checks.lookup(windows_client, name, tool="nslookup")
        # Two resolvers that both fail agree on nothing: that is a broken lookup, not the same answer.
        assert native.ok or nslookup.ok, f"neither resolver answered for {name}: {native.error}; {nslookup.error}"
        if not (native.ok and nslookup.ok) or set(native.addresses) != set(nslookup.addresses):
            differ[name] = (native.addresses or native.error, nslookup.addresses or nslookup.error)
            if all(lookup.ok or lookup.not_found for lookup in (native, nslookup)):
                answered_differently.append(name)
    # The deviation's own form: both resolvers answered a name, differently (other addresses, or one NXDOMAIN).
    # A timeout or an error of one of them is not a different behaviour of the resolvers (an unreadable output
    # is the suite's error: the parsers raise UnreadableOutput).
    with expect_deviation(
        "dns-resolvers-differ",
        accepts=lambda: bool(answered_differently),
        deviation="both resolvers answered, differently",
    ):
        assert not differ, f"Resolve-DnsName and nslookup disagree: {differ}"


def resolver_comparison_names(kubernetes_service, netserver_service) -> list[str]:
    """Names that must resolve from the client's namespace (the module's): its own Service as a single label
    and as an FQDN, and default/kubernetes as an FQDN (as a single label it resolves only from ``default``)."""
    return [netserver_service.name, netserver_service.fqdn, kubernetes_service.fqdn]
