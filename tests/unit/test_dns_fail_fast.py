"""Fail fast when the cluster DNS is down (issue 22, item 5): after a look-up in the worker found no DNS server,
later look-ups stop at their first try that again finds none; a first look-up, and one after any answer, keeps
its full bound; a look-up that gets an answer (even an NXDOMAIN) keeps retrying as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.network import flows
from wincon.network.pods import PodRef
from wincon.windows import connectivity as c

OUTPUTS = Path(__file__).resolve().parents[1] / "data" / "windows-outputs"
# Recorded on the local cluster with the Service rules removed (kube-proxy stopped, KUBE-SERVICES flushed),
# agnhost 2.56 in a Linux pod: busybox nslookup, Go's resolver (agnhost connect), curl.
BUSYBOX_NO_SERVER = ExecResult(1, ";; connection timed out; no servers could be reached\n\n", "")
GO_NO_SERVER = ExecResult(
    1,
    "",
    "DNS: lookup kubernetes.default.svc.cluster.local on 10.0.0.10:53: read udp 10.244.3.2:39250->10.0.0.10:53: "
    "i/o timeout\n",
)
CURL_RESOLVING_TIMED_OUT = ExecResult(28, "000", "curl: (28) Resolving timed out after 10000 milliseconds\n")
CURL_COULD_NOT_RESOLVE = ExecResult(6, "", "curl: (6) Could not resolve host: kubernetes\n")
NXDOMAIN = ExecResult(1, (OUTPUTS / "nslookup-busybox-nxdomain.txt").read_text(), "")
ANSWER = ExecResult(
    0,
    "Server:\t\t10.0.0.10\nAddress:\t10.0.0.10:53\n\nName:\tkubernetes.default.svc.cluster.local\nAddress: 10.0.0.1\n",
    "",
)
# The recording without its first line, the terminal's prompt and typed command ("PS C:\> nslookup ..."): not
# nslookup's output, which an exec never holds.
WINDOWS_TIMEOUT = ExecResult(1, (OUTPUTS / "nslookup-windows-timeout.txt").read_text().split("\n", 1)[1], "")

LINUX = PodRef("client", "10.244.1.9", ("10.244.1.9",), "worker-0", "", "linux", "netexec")


class Kube(fakes.ExecKube):
    """Answers each exec from ``answers`` (the last one repeats); records the commands. With ``policy``, its pods'
    spec has that dnsPolicy (FlowChecks.resolver_key reads it); without, there is no spec to read."""

    namespace = "wincon-mod"

    def __init__(self, *answers: ExecResult, policy: str | None = None, nameservers: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.answers = list(answers)
        if policy is not None:
            self.core = fakes.pod_dns_api(policy, nameservers)

    def respond(self, command: list[str]) -> ExecResult:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes.fresh_worker(monkeypatch)


def test_the_tools_own_words_for_no_server_and_for_an_answer() -> None:
    assert flows.resolver_silent("nslookup", BUSYBOX_NO_SERVER)
    assert flows.resolver_silent("nslookup", WINDOWS_TIMEOUT)  # recorded nslookup.exe, all its queries timed out
    assert flows.resolver_silent("agnhost-connect", GO_NO_SERVER)
    assert flows.resolver_silent("curl", CURL_RESOLVING_TIMED_OUT)
    # an NXDOMAIN, an address, "server misbehaving" (SERVFAIL) are answers, never silence
    for tool, answered in [
        ("nslookup", NXDOMAIN),
        ("nslookup", ANSWER),
        ("agnhost-connect", ExecResult(1, "", "DNS: lookup x on 10.0.0.10:53: server misbehaving\n")),
        ("agnhost-connect", ExecResult(1, "", "DNS: lookup x on 10.0.0.10:53: no such host\n")),
        ("curl", ExecResult(7, "", "curl: (7) Failed to connect to x port 80 after 3 ms: Connection refused")),
    ]:
        assert not flows.resolver_silent(tool, answered) and flows.resolver_answered(tool, answered), answered
    # curl's exit 6 cannot tell a silent server from NXDOMAIN: neither evidence of silence nor of an answer
    assert not flows.resolver_silent("curl", CURL_COULD_NOT_RESOLVE)
    assert not flows.resolver_answered("curl", CURL_COULD_NOT_RESOLVE)
    # a missing tool shows nothing either way
    missing = ExecResult(127, "", 'exec: "nslookup": executable file not found in $PATH')
    assert not flows.resolver_silent("nslookup", missing) and not flows.resolver_answered("nslookup", missing)


def test_a_first_look_up_keeps_its_full_bound_and_the_next_one_stops_at_its_first_silent_try() -> None:
    kube = Kube(BUSYBOX_NO_SERVER)
    first = flows.FlowChecks(kube).lookup(LINUX, "kubernetes.default.svc.cluster.local.", tool="nslookup")
    assert len(kube.commands) == 3  # every try of a healthy cluster's first look-up
    assert not first.ok and "no servers could be reached" in (first.error or "")
    kube.commands.clear()
    second = flows.FlowChecks(kube).lookup(LINUX, "lin-netserver.ns.svc.cluster.local.", tool="nslookup")
    assert len(kube.commands) == 1  # one short try: the resolver was seen silent and is silent again
    assert not second.ok and "no servers could be reached" in (second.error or "")  # fails with what it saw


def test_a_look_up_that_succeeds_restores_the_full_bound() -> None:
    silent = Kube(BUSYBOX_NO_SERVER)
    flows.FlowChecks(silent).lookup(LINUX, "a.", tool="nslookup")
    assert flows.FlowChecks.silent_resolver
    assert flows.FlowChecks(Kube(ANSWER)).lookup(LINUX, "kubernetes.default.svc.cluster.local.", tool="nslookup").ok
    assert not flows.FlowChecks.silent_resolver
    silent.commands.clear()
    flows.FlowChecks(silent).lookup(LINUX, "b.", tool="nslookup")
    assert len(silent.commands) == 3


def test_a_server_that_answers_nxdomain_keeps_every_try_after_silence() -> None:
    """A new Service's record may need a moment: its NXDOMAIN is an answer, retried in full, never cut short."""
    flows.FlowChecks(Kube(BUSYBOX_NO_SERVER)).lookup(LINUX, "a.", tool="nslookup")
    kube = Kube(NXDOMAIN, NXDOMAIN, ANSWER)
    assert flows.FlowChecks(kube).lookup(LINUX, "new-svc.ns.svc.cluster.local.", tool="nslookup").ok
    assert len(kube.commands) == 3 and not flows.FlowChecks.silent_resolver


def test_a_dial_by_name_runs_one_nslookup_first_only_after_silence() -> None:
    expected = ["netserver-0"]
    answering = Kube(ExecResult(0, '{"responses": ["netserver-0"]}', ""))
    assert flows.FlowChecks(answering).dial(LINUX, "lin-netserver", 80, "http", expected).reached_all
    assert len(answering.commands) == 1 and answering.commands[0][0] == "curl"  # no look-up first
    flows.FlowChecks(Kube(GO_NO_SERVER)).until(LINUX, ["/agnhost", "connect", "x:80"], lambda r: r.ok, 5,
                                               resolver="agnhost-connect")  # fmt: skip
    assert flows.FlowChecks.silent_resolver
    silent = Kube(BUSYBOX_NO_SERVER)
    outcome = flows.FlowChecks(silent).dial(LINUX, "lin-netserver", 80, "http", expected)
    assert silent.commands == [["nslookup", "lin-netserver"]]  # one short try, no dial of 30 s
    assert not outcome.reached_all and outcome.tries == 0
    assert "no servers could be reached" in outcome.describe() and "no DNS server" in outcome.describe()
    # by address: no look-up, its own bounds
    by_ip = Kube(ExecResult(0, '{"responses": ["netserver-0"]}', ""))
    assert flows.FlowChecks(by_ip).dial(LINUX, "10.0.0.5", 80, "http", expected).reached_all
    assert len(by_ip.commands) == 1
    # the look-up answers: the dial runs in full, and the resolver is no longer taken for silent
    recovered = Kube(ANSWER, ExecResult(0, '{"responses": ["netserver-0"]}', ""))
    assert flows.FlowChecks(recovered).dial(LINUX, "lin-netserver", 80, "http", expected).reached_all
    assert [cmd[0] for cmd in recovered.commands] == ["nslookup", "curl"] and not flows.FlowChecks.silent_resolver


def test_curl_by_name_gets_one_try_after_silence_and_every_try_before() -> None:
    command = c.http_get_command("linux", "https://kubernetes:443")
    kube = Kube(CURL_COULD_NOT_RESOLVE)
    ok, result = flows.FlowChecks(kube).until(LINUX, command, lambda r: r.ok, tries=3)
    assert not ok and len(kube.commands) == 3 and result.exit_code == 6
    flows.FlowChecks(Kube(BUSYBOX_NO_SERVER)).lookup(LINUX, "a.", tool="nslookup")
    kube.commands.clear()
    ok, result = flows.FlowChecks(kube).until(LINUX, command, lambda r: r.ok, tries=3)
    assert not ok and len(kube.commands) == 1 and "Could not resolve host" in result.stderr
    # curl's own "Resolving timed out" is silence: it marks the resolver silent by itself
    flows.FlowChecks.silent_resolver.clear()
    flows.FlowChecks(Kube(CURL_RESOLVING_TIMED_OUT)).until(LINUX, command, lambda r: r.ok, tries=3)
    assert flows.FlowChecks.silent_resolver
    # a curl by address never counts as a look-up
    by_ip = Kube(ExecResult(7, "", "curl: (7) Failed to connect"))
    flows.FlowChecks(by_ip).until(LINUX, c.http_get_command("linux", "http://10.0.0.5:80/"), lambda r: r.ok, 3)
    assert len(by_ip.commands) == 3


def test_a_failure_after_the_name_resolved_keeps_every_try() -> None:
    flows.FlowChecks(Kube(BUSYBOX_NO_SERVER)).lookup(LINUX, "a.", tool="nslookup")
    kube = Kube(ExecResult(7, "", "curl: (7) Failed to connect to kubernetes port 443: Connection refused"))
    flows.FlowChecks(kube).until(LINUX, c.http_get_command("linux", "https://kubernetes:443"), lambda r: r.ok, 3)
    assert len(kube.commands) == 3 and not flows.FlowChecks.silent_resolver  # it resolved: the server answered


def test_the_two_nameserver_check_fails_on_a_silent_resolver_without_taking_curls_exit_6_for_nxdomain() -> None:
    """After silence was seen, the negative control (kubernetezzzzzzzz does not resolve) first asks one nslookup:
    curl's exit 6 cannot tell NXDOMAIN from no server, so a silent resolver fails the check, quoting nslookup."""
    from types import SimpleNamespace

    from tests.support import suites

    module = suites.load("suites/networking/test_pod_dns_servers.py")
    client = PodRef("lin-client", "10.244.1.8", ("10.244.1.8",), "worker-0", "", "linux", "netexec")
    flows.FlowChecks(Kube(BUSYBOX_NO_SERVER, policy="ClusterFirst")).lookup(client, "a.", tool="nslookup")
    assert set(flows.FlowChecks.silent_resolver) == {"cluster-dns"}
    config = ExecResult(0, "nameserver 10.0.0.10\nnameserver 172.30.0.254\nsearch default.svc.cluster.local\n", "")
    kube = Kube(
        config, BUSYBOX_NO_SERVER, CURL_COULD_NOT_RESOLVE, policy="None", nameservers=("10.0.0.10", "172.30.0.254")
    )
    checks = flows.FlowChecks(kube)
    with pytest.raises(AssertionError, match="no servers could be reached"):
        module.test_pod_dns_config_with_two_nameservers_resolves_real_names_only(
            checks,
            lambda *a, **k: LINUX,
            "lin-",
            SimpleNamespace(ip="10.0.0.10", domain="cluster.local"),
            SimpleNamespace(external_ip="172.30.0.254"),
            "linux",
        )
    # no curl (5 s, not 20 + 20): the question went to the cluster DNS itself, which the dnsConfig names first
    assert kube.commands[1:] == [["nslookup", "kubernetezzzzzzzz", "10.0.0.10"]] and kube.commands[0][0] == "cat"


def test_an_unreadable_look_up_output_is_the_suites_error_not_a_silent_resolver() -> None:
    from wincon.commandline.errors import UnreadableOutput

    missing = ExecResult(127, "", 'exec: "nslookup": executable file not found in $PATH')
    with pytest.raises(UnreadableOutput, match="nslookup"):
        flows.FlowChecks(Kube(missing)).lookup(LINUX, "a.", tool="nslookup")
    assert not flows.FlowChecks.silent_resolver


def test_each_resolver_keeps_its_own_state_and_the_cluster_dns_is_shared_by_its_pods() -> None:
    """A Default-policy pod whose node resolvers answer does not restore the cluster DNS's full bound, and a pod
    of another module resolving through the cluster DNS gets the short try at once."""
    other = PodRef("other-client", "10.244.2.9", ("10.244.2.9",), "worker-1", "", "linux", "netexec")
    node_pod = PodRef("dns-default", "10.244.2.10", ("10.244.2.10",), "worker-1", "", "linux", "netexec")
    flows.FlowChecks(Kube(BUSYBOX_NO_SERVER, policy="ClusterFirst")).lookup(LINUX, "a.", tool="nslookup")
    assert flows.FlowChecks(Kube(ANSWER, policy="Default")).lookup(node_pod, "external.example.", tool="nslookup").ok
    assert set(flows.FlowChecks.silent_resolver) == {"cluster-dns"}  # the node's answer is not the cluster DNS's
    kube = Kube(BUSYBOX_NO_SERVER, policy="ClusterFirst")
    kube.namespace = "wincon-other-module"
    flows.FlowChecks(kube).lookup(other, "b.", tool="nslookup")
    assert len(kube.commands) == 1
    assert flows.FlowChecks.resolver_keys == {
        ("wincon-mod", "client"): "cluster-dns",
        ("wincon-mod", "dns-default"): "node:worker-1",
        ("wincon-other-module", "other-client"): "cluster-dns",
    }
