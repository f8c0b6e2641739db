"""Findings of issue 18 in suites/networking/test_dns.py and test_dns_policy.py, checked with fakes (no cluster).

- the resolver comparison looked up the single label ``kubernetes`` from its own namespace (NXDOMAIN for both
  resolvers everywhere but ``default``);
- the dotted-name deviation took any failed look-up (a timeout, a SERVFAIL) for NXDOMAIN;
- the DNS configuration is read with agnhost's dns-suffix / dns-server-list on both OSes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation, SuiteError
from wincon.network.pods import PodRef, resolver_config
from wincon.network.services import ServiceRef
from wincon.windows import connectivity as conn


def load(name: str):
    return suites.load(f"suites/networking/{name}.py")


test_dns = load("test_dns")

KUBERNETES = ServiceRef("kubernetes", "default", "ClusterIP", "10.96.0.1", {}, None)
NETSERVER = ServiceRef("netserver", "dns-a1b2", "ClusterIP", "10.96.0.50", {}, None)
CLIENT = PodRef("client", "10.1.0.5", ("10.1.0.5",), "win-1", "10.0.0.4", "windows", "netexec")
DNS = SimpleNamespace(domain="cluster.local", ip="10.96.0.10")


def resolvable_from(namespace: str, name: str, services: list[ServiceRef]) -> bool:
    """A name resolves from ``namespace`` as a single label of a Service there, or as a Service's FQDN."""
    return any(name == s.fqdn or (name == s.name and s.namespace == namespace) for s in services)


def test_the_compared_names_all_resolve_from_the_clients_namespace():
    names = test_dns.resolver_comparison_names(KUBERNETES, NETSERVER)
    assert names, "nothing compared"
    for name in names:
        assert resolvable_from(NETSERVER.namespace, name, [KUBERNETES, NETSERVER]), name


@dataclass
class FakeChecks:
    exec_result: ExecResult | None = None
    dial_result: conn.DialOutcome | None = None

    silent: ExecResult | None = None  # FlowChecks.resolver_still_silent's answer: None while no silence was seen

    def until(self, pod, command, ok, tries=5, container=None, resolver=None):
        assert command[:2] == ["/agnhost", "connect"] and container == "netexec" and resolver == "agnhost-connect"
        return ok(self.exec_result), self.exec_result

    def resolver_still_silent(self, pod, name, cluster_dns=None):
        return self.silent

    def dial(self, client, target, port, protocol, expected):
        return self.dial_result


def dotted_lookup(result: ExecResult) -> None:
    test_dns.test_service_name_resolves_with_namespace_and_svc(
        "with-namespace", NETSERVER, FakeChecks(exec_result=result), CLIENT, DNS
    )


def test_dotted_name_nxdomain_is_the_deviation():
    # agnhost connect's DNS line with Go's not-found error (connect.go prints "DNS: <err>").
    with pytest.raises(DeviationObserved):
        dotted_lookup(ExecResult(1, "", "DNS: lookup netserver.dns-a1b2 on 10.96.0.10:53: no such host\n"))


@pytest.mark.parametrize(
    "stderr",
    [
        "DNS: lookup netserver.dns-a1b2 on 10.96.0.10:53: read udp 10.1.0.5:3->10.96.0.10:53: i/o timeout\n",
        "DNS: lookup netserver.dns-a1b2 on 10.96.0.10:53: server misbehaving\n",
    ],
)
def test_dotted_name_timeout_or_servfail_is_not_the_deviation(stderr):
    # Failed before: any failed look-up inside the block became DeviationObserved (an xfail).
    with pytest.raises(NotTheDeviation):
        dotted_lookup(ExecResult(1, "", stderr))


def test_a_name_whose_resolver_is_still_silent_fails_with_the_look_up_it_saw_not_the_deviation():
    """After a look-up in the worker found no DNS server, one nslookup that finds none either is the answer: the
    check fails quoting it (never an xfail: silence is not NXDOMAIN), and agnhost connect does not run."""
    silent = ExecResult(1, ";; connection timed out; no servers could be reached\n", "")
    checks = FakeChecks(exec_result=None, silent=silent)
    with pytest.raises(NotTheDeviation, match="no servers could be reached"):
        test_dns.test_service_name_resolves_with_namespace_and_svc("with-namespace", NETSERVER, checks, CLIENT, DNS)


def test_dotted_name_that_resolves_passes_even_if_the_port_does_not_answer():
    dotted_lookup(ExecResult(1, "", "TIMEOUT\n"))  # connect times out only after the name resolved
    dotted_lookup(ExecResult(0, "", ""))


def test_unreadable_connect_output_is_a_suite_error():
    with pytest.raises(SuiteError, match="image agnhost"):
        dotted_lookup(ExecResult(1, "", 'exec: "/agnhost": file does not exist\n'))


def dotted_dial(errors: list[str], responses: set[str]) -> None:
    outcome = conn.DialOutcome(frozenset({"netserver-0"}), set(responses), errors, tries=10)
    test_dns.test_pod_reaches_service_by_name_with_namespace(
        "with-namespace", FakeChecks(dial_result=outcome), CLIENT, NETSERVER, [SimpleNamespace(name="netserver-0")], DNS
    )


def test_dotted_name_dial_no_such_host_is_the_deviation():
    error = 'Get "http://netserver.dns-a1b2:80/hostname": dial tcp: lookup netserver.dns-a1b2: no such host'
    with pytest.raises(DeviationObserved):
        dotted_dial([error], set())


def test_dotted_name_dial_timeout_is_not_the_deviation():
    error = 'Get "http://netserver.dns-a1b2:80/hostname": dial tcp 10.96.0.50:80: i/o timeout'
    with pytest.raises(NotTheDeviation):
        dotted_dial([error], set())


class FakeRun:
    def __init__(self, results: dict[str, ExecResult]) -> None:
        self.results, self.commands = results, []

    def run(self, pod, command, container=None):
        self.commands.append((tuple(command), container))
        return self.results[command[1]]


def test_resolver_config_runs_agnhost_in_the_agnhost_container_on_both_oses():
    for os_name in ("windows", "linux"):
        pod = PodRef("p", "10.1.0.6", ("10.1.0.6",), "n", "10.0.0.4", os_name, "netexec", tools="tools")
        checks = FakeRun(
            {
                "dns-suffix": ExecResult(0, "ns.svc.cluster.local,svc.cluster.local,cluster.local\n", ""),
                "dns-server-list": ExecResult(0, "10.96.0.10\n", ""),
            }
        )
        config = resolver_config(checks, pod)
        assert config == conn.DnsConfig(("10.96.0.10",), ("ns.svc.cluster.local", "svc.cluster.local", "cluster.local"))
        assert checks.commands == [
            (("/agnhost", "dns-suffix"), "netexec"),
            (("/agnhost", "dns-server-list"), "netexec"),
        ]


def test_resolver_config_without_a_search_line_is_an_empty_list():
    panic = "panic: Could not find DNS search list!\n\ngoroutine 1 [running]:"
    checks = FakeRun({"dns-suffix": ExecResult(2, "", panic), "dns-server-list": ExecResult(0, "10.0.0.2\n", "")})
    pod = PodRef("p", "10.1.0.6", ("10.1.0.6",), "n", "10.0.0.4", "linux", "netexec")
    assert resolver_config(checks, pod) == conn.DnsConfig(("10.0.0.2",), ())


def test_resolver_config_when_agnhost_fails_otherwise_is_a_suite_error():
    missing = 'exec: "/agnhost": stat /agnhost: no such file or directory'
    checks = FakeRun({"dns-suffix": ExecResult(127, "", missing), "dns-server-list": ExecResult(0, "", "")})
    pod = PodRef("p", "10.1.0.6", ("10.1.0.6",), "n", "10.0.0.4", "linux", "netexec")
    with pytest.raises(SuiteError, match="image agnhost"):
        resolver_config(checks, pod)


class ComparingChecks:
    """lookup() answers per tool: Resolve-DnsName's and nslookup's Lookup for every name."""

    def __init__(self, native: conn.Lookup, nslookup: conn.Lookup) -> None:
        self.answers = {"resolve-dnsname": native, "nslookup": nslookup}

    def lookup(self, pod, name, tries=3, tool=None):
        return self.answers[tool]


def compare(native: conn.Lookup, nslookup: conn.Lookup) -> None:
    client = PodRef("client", "10.1.0.5", ("10.1.0.5",), "win-1", "10.0.0.4", "windows", "netexec", tools="tools")
    test_dns.test_nslookup_and_resolve_dnsname_give_the_same_answer(
        ComparingChecks(native, nslookup), client, NETSERVER, KUBERNETES, DNS
    )


def test_resolvers_that_both_answer_differently_are_the_deviation():
    with pytest.raises(DeviationObserved):
        compare(conn.Lookup("netserver", ("10.96.0.50",)), conn.Lookup("netserver", ("10.96.0.51",)))
    with pytest.raises(DeviationObserved):  # one NXDOMAIN is an answer too
        compare(conn.Lookup("netserver", ("10.96.0.50",)), conn.Lookup(None, (), (), "can't find", not_found=True))


def test_a_resolver_that_timed_out_or_printed_no_answer_is_not_the_deviation():
    # Failed before: any difference, whatever its cause, was taken for the deviation (an xfail).
    with pytest.raises(NotTheDeviation):
        compare(
            conn.Lookup("netserver", ("10.96.0.50",)), conn.Lookup(None, (), (), "*** Request to UnKnown timed-out")
        )
    with pytest.raises(NotTheDeviation):
        compare(conn.Lookup(None, (), (), "no address in the answer"), conn.Lookup("netserver", ("10.96.0.50",)))
    compare(conn.Lookup("netserver", ("10.96.0.50",)), conn.Lookup("netserver", ("10.96.0.50",)))  # the same: passes
