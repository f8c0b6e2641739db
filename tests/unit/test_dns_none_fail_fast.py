"""The dnsPolicy None check (suites/networking/test_dns.py ``test_dns_policy_none_applies_dns_config``) under a
silent cluster DNS: where the pod's configuration names the cluster DNS alone and a look-up through the cluster DNS
earlier in the worker found no server, one nslookup asks the cluster DNS itself first (FlowChecks.
resolver_still_silent, as the two-nameserver check does) and the check fails quoting it, instead of Go's resolver
running its full bound (31 s under "Service rules removed"). No silence seen, the cluster DNS answering now, or
another server in the pod's configuration: the check resolves in full as before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.network import flows
from wincon.network.pods import PodRef

CLUSTER_DNS = SimpleNamespace(ip="10.0.0.10", domain="cluster.local")
NAMESPACE = "wincon-dns"
# Recorded on the local cluster with the Service rules removed (busybox nslookup and Go's resolver in agnhost 2.56)
BUSYBOX_NO_SERVER = ExecResult(1, ";; connection timed out; no servers could be reached\n\n", "")
GO_NO_SERVER = ExecResult(
    1, "", "DNS: lookup lin-netserver on 10.0.0.10:53: read udp 10.244.3.2:39250->10.0.0.10:53: i/o timeout\n"
)
ANSWER = ExecResult(0, "Server:\t\t10.0.0.10\nAddress:\t10.0.0.10:53\n\nName:\tx\nAddress: 10.0.0.60\n", "")
LINUX = PodRef("lin-dns-none", "10.244.1.9", ("10.244.1.9",), "worker-0", "", "linux", "netexec")


class Kube(fakes.ExecKube):
    """A pod with dnsPolicy ``policy`` whose agnhost prints ``servers`` and the check's search list; each
    nslookup answers ``nslookup``, each agnhost connect ``connect``. Records the commands."""

    namespace = NAMESPACE

    def __init__(self, policy: str, servers: str, nslookup: ExecResult, connect: ExecResult) -> None:
        super().__init__()
        self.outputs = {
            "dns-server-list": ExecResult(0, servers + "\n", ""),
            "dns-suffix": ExecResult(0, f"{NAMESPACE}.svc.cluster.local,wincon.example\n", ""),
            "nslookup": nslookup,
            "connect": connect,
        }
        self.core = fakes.pod_dns_api(policy, servers.split(",") if policy == "None" else ())

    def respond(self, command: list[str]) -> ExecResult:
        return self.outputs[command[0] if command[0] == "nslookup" else command[1]]

    def ran(self, tool: str) -> int:
        return sum(1 for cmd in self.commands if tool in cmd[:2])


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes.fresh_worker(monkeypatch)


@pytest.fixture(scope="module")
def module():
    return suites.load("suites/networking/test_dns.py")


def silence_seen_through_the_cluster_dns() -> None:
    client = PodRef("lin-client", "10.244.1.8", ("10.244.1.8",), "worker-0", "", "linux", "netexec")
    kube = Kube("ClusterFirst", "10.0.0.10", BUSYBOX_NO_SERVER, GO_NO_SERVER)
    flows.FlowChecks(kube).lookup(client, "a.", tool="nslookup")
    assert set(flows.FlowChecks.silent_resolver) == {"cluster-dns"}


def run_check(module, kube: Kube) -> None:
    module.test_dns_policy_none_applies_dns_config(
        flows.FlowChecks(kube),
        lambda *a, **k: LINUX,
        "lin-",
        SimpleNamespace(name="lin-netserver"),
        CLUSTER_DNS,
        NAMESPACE,
    )


def test_a_silent_cluster_dns_named_alone_fails_the_check_after_one_nslookup_to_it(module) -> None:
    silence_seen_through_the_cluster_dns()
    kube = Kube("None", "10.0.0.10", BUSYBOX_NO_SERVER, GO_NO_SERVER)
    with pytest.raises(AssertionError, match="no DNS server answered nslookup lin-netserver: .*no servers could be"):
        run_check(module, kube)
    # the configuration read, then one nslookup to the cluster DNS itself; Go's resolver never ran (was 5 tries)
    assert kube.commands[2:] == [["nslookup", "lin-netserver", "10.0.0.10"]] and kube.ran("connect") == 0


def test_no_silence_seen_keeps_the_full_resolution(module) -> None:
    kube = Kube("None", "10.0.0.10", BUSYBOX_NO_SERVER, GO_NO_SERVER)
    with pytest.raises(AssertionError, match="through the dnsConfig search list: .*i/o timeout"):
        run_check(module, kube)
    assert kube.ran("nslookup") == 0 and kube.ran("connect") == 5


def test_a_cluster_dns_that_answers_now_keeps_the_full_resolution(module) -> None:
    silence_seen_through_the_cluster_dns()
    kube = Kube("None", "10.0.0.10", ANSWER, ExecResult(0, "", ""))
    run_check(module, kube)  # resolved and connected: passes
    assert kube.ran("nslookup") == 1 and kube.ran("connect") == 1
    assert not flows.FlowChecks.silent_resolver  # the cluster DNS answered: its bound is restored


def test_another_server_in_the_pods_configuration_keeps_the_full_resolution(module) -> None:
    # Another resolver could answer where the cluster DNS does not: only Go's resolver, in full, tells
    silence_seen_through_the_cluster_dns()
    kube = Kube("None", "10.0.0.10,172.30.0.254", BUSYBOX_NO_SERVER, GO_NO_SERVER)
    with pytest.raises(AssertionError, match="through the dnsConfig search list"):
        run_check(module, kube)
    assert kube.ran("nslookup") == 0 and kube.ran("connect") == 5
