"""Fail fast when a node's Service proxying is down (issue 22, item 5): a first dial to a Service VIP keeps its full
bound; only after a VIP dialled from a pod on a node ran its full bound with no answer AND the `kubernetes` Service
(default/kubernetes, read from the API), asked with the check's own command from the same client, answered nothing
either, do later Service-VIP dials from that node stop at their first silent try. Any answer of a Service from that
node restores the full bound; a record older than PROXY_DOWN_FRESH_SECONDS is checked again with the `kubernetes`
Service first (its answer lets the dial go on with its full bound)."""

from __future__ import annotations

import json

import pytest

from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.network import flows
from wincon.network.pods import PodRef
from wincon.windows import connectivity as c

KUBERNETES_IP = "10.0.0.1"
VIP_A, VIP_B, VIP_C = "10.0.0.50", "10.0.0.60", "10.0.0.70"
POD_IP = "10.244.2.7"  # a netserver by its pod IP: never a Service VIP
SILENT_DIAL = json.dumps({"errors": ['Get "http://10.0.0.50:80/hostname": dial tcp: connect: no route to host']})
# What netexec's dialHTTP returns for the API server's plain-HTTP reply on its TLS port (Go's net/http answers
# "400 Bad Request" with this body to an HTTP request on an HTTPS listener): an answer.
KUBERNETES_ANSWER = json.dumps({"responses": ["Client sent an HTTP request to an HTTPS server."]})
CURL_SILENT = ExecResult(7, "", "curl: (7) Failed to connect to 10.0.0.50 port 80: Could not connect to server")
CURL_HTTP_400 = ExecResult(22, "", "curl: (22) The requested URL returned error: 400")

CLIENT = PodRef("lin-client", "10.244.1.9", ("10.244.1.9",), "lin-worker-0", "192.168.7.10", "linux", "netexec")
OTHER_CLIENT = PodRef("lin-client", "10.244.1.10", ("10.244.1.10",), "lin-worker-0", "192.168.7.10", "linux", "netexec")
ELSEWHERE = PodRef("lin-client", "10.244.3.9", ("10.244.3.9",), "lin-worker-1", "192.168.7.11", "linux", "netexec")
HOST = PodRef("lin-node", "192.168.7.10", ("192.168.7.10",), "lin-worker-0", "192.168.7.10", "linux", "agnhost")
WINDOWS = PodRef("client", "10.244.5.9", ("10.244.5.9",), "win-0", "192.168.7.20", "windows", "netexec")


class Kube(fakes.ServiceKube):
    """A namespace with Services (cluster IPs ``vips``) and default/kubernetes at 10.0.0.1:443; each exec answers by
    the address it dials (``silent``: nothing answers it). Records every command and the API's Service lists."""

    def __init__(self, namespace: str, vips: tuple[str, ...], silent: set[str]) -> None:
        super().__init__(namespace, vips, (KUBERNETES_IP,))
        self.silent = silent

    def dial(self, target: str) -> ExecResult:
        if target in self.silent:
            return ExecResult(0, SILENT_DIAL, "")
        return ExecResult(0, KUBERNETES_ANSWER if target == KUBERNETES_IP else fakes.netexec_answer("s-0"), "")

    def curl(self, target: str) -> ExecResult:
        if target in self.silent:
            return CURL_SILENT
        return CURL_HTTP_400 if target == KUBERNETES_IP else ExecResult(0, "s-0", "")

    def asked_kubernetes(self) -> int:
        return sum(
            1 for cmd in self.commands if f"host={KUBERNETES_IP}&" in cmd[-1] or f"//{KUBERNETES_IP}:" in " ".join(cmd)
        )


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes.fresh_worker(monkeypatch)
    monkeypatch.setattr(flows, "clock", NOW.__call__)
    NOW.now = 1000.0


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


NOW = Clock()


def later(seconds: float) -> None:
    NOW.now += seconds


def dial(kube: Kube, client: PodRef, target: str, protocol: str = "http") -> c.DialOutcome:
    return flows.FlowChecks(kube).dial(client, target, 80 if protocol == "http" else 90, protocol, ["s-0"])


def test_a_dial_that_answers_never_asks_the_kubernetes_service_nor_the_api() -> None:
    kube = Kube("mod-a", (VIP_A,), silent=set())
    outcome = dial(kube, CLIENT, VIP_A)
    assert outcome.reached_all and outcome.tries == 1
    assert kube.asked_kubernetes() == 0 and kube.lists == 0 and not flows.FlowChecks.proxy_down


def test_a_first_silent_dial_to_a_vip_keeps_its_full_bound_when_the_kubernetes_service_answers() -> None:
    kube = Kube("mod-a", (VIP_A, VIP_B), silent={VIP_A, VIP_B})
    first = dial(kube, CLIENT, VIP_A)
    assert first.tries == c.DIAL_SILENT_TRIES and not first.reached_all
    assert kube.asked_kubernetes() == 1  # once, after its full bound, with the check's own dial
    assert "`kubernetes` Service (10.0.0.1:443) answered from lin-client" in first.describe()
    assert "Client sent an HTTP request to an HTTPS server." in first.describe()  # what it answered, quoted
    assert not flows.FlowChecks.proxy_down  # Services are proxied from that node: this one's rules may lag
    # Another module's Service from the same node: its own full bound again
    again = dial(Kube("mod-b", (VIP_C,), silent={VIP_C}), CLIENT, VIP_C)
    assert again.tries == c.DIAL_SILENT_TRIES


def test_the_first_dial_is_shortened_only_after_both_the_vip_and_the_kubernetes_service_were_silent() -> None:
    down = {VIP_A, VIP_B, VIP_C, KUBERNETES_IP, POD_IP}
    first = dial(Kube("mod-a", (VIP_A,), silent=down), CLIENT, VIP_A)
    assert first.tries == c.DIAL_SILENT_TRIES  # the first VIP dial from the node: its full bound
    assert "`kubernetes` Service (10.0.0.1:443) answered nothing either from lin-client" in first.describe()
    assert "no route to host" in first.describe()  # the probe's own output, quoted
    assert "lin-worker-0" in flows.FlowChecks.proxy_down
    # A later module (its own client, its own Service) on that node: the check stops at its first silent try,
    # saying what was recorded, and when.
    later(30)
    kube = Kube("mod-b", (VIP_B,), silent=down)
    short = dial(kube, OTHER_CLIENT, VIP_B)
    assert short.tries == flows.PROXY_DOWN_TRIES == 1 and not short.reached_all
    assert kube.asked_kubernetes() == 0  # a record younger than PROXY_DOWN_FRESH_SECONDS stands
    assert "stopped at its first silent try: Service proxying on lin-worker-0 was shown down 30 s ago" in (
        short.describe()
    )
    assert f"{VIP_A}:80 (http) from lin-client ran its full bound with no answer" in short.describe()
    assert "`kubernetes` Service (10.0.0.1:443) answered nothing either from lin-client" in short.describe()
    udp = dial(Kube("mod-c", (VIP_B,), silent=down), OTHER_CLIENT, VIP_B, "udp")  # its own UDP rule, its own try
    assert udp.tries == 1 and "stopped at its first silent try" in udp.describe()
    # not a Service VIP (a pod IP), or a client on another node: their full bound
    assert dial(Kube("mod-d", (VIP_B,), silent=down), OTHER_CLIENT, POD_IP).tries == c.DIAL_SILENT_TRIES
    assert dial(Kube("mod-e", (VIP_B,), silent=down), ELSEWHERE, VIP_B).tries == c.DIAL_SILENT_TRIES


def test_a_silent_vip_alone_or_a_silent_kubernetes_service_alone_never_shortens() -> None:
    # The kubernetes Service silent, but no VIP dial from that node ever ran its full bound silent: nothing recorded
    kube = Kube("mod-a", (VIP_A,), silent={KUBERNETES_IP})
    assert dial(kube, CLIENT, VIP_A).reached_all and not flows.FlowChecks.proxy_down
    # A VIP dial that ran only its lowered module bound (its client reached nothing over http earlier in the
    # module) records nothing either: the node's evidence comes from a full bound
    kube = Kube("mod-b", (VIP_A, VIP_B), silent={POD_IP, VIP_B, KUBERNETES_IP})
    assert dial(kube, CLIENT, POD_IP).tries == c.DIAL_SILENT_TRIES
    assert dial(kube, CLIENT, VIP_B).tries == flows.SILENT_AGAIN_TRIES
    assert not flows.FlowChecks.proxy_down and kube.asked_kubernetes() == 0


def test_an_answer_of_a_service_from_that_node_restores_the_full_bound() -> None:
    down = {VIP_A, VIP_B, KUBERNETES_IP}
    dial(Kube("mod-a", (VIP_A,), silent=down), CLIENT, VIP_A)
    assert "lin-worker-0" in flows.FlowChecks.proxy_down
    assert dial(Kube("mod-b", (VIP_C,), silent=down), OTHER_CLIENT, VIP_C).reached_all
    assert not flows.FlowChecks.proxy_down
    assert dial(Kube("mod-c", (VIP_B,), silent=down), OTHER_CLIENT, VIP_B).tries == c.DIAL_SILENT_TRIES
    # a curl of a Service VIP that answers from that node does the same
    assert "lin-worker-0" in flows.FlowChecks.proxy_down
    command = c.http_get_command("linux", url(VIP_C))
    assert flows.FlowChecks(Kube("mod-d", (VIP_C,), silent=down)).until(HOST, command, lambda r: r.ok)[0]
    assert not flows.FlowChecks.proxy_down


def test_an_old_record_is_checked_again_with_the_kubernetes_service_before_a_dial_stops() -> None:
    dial(Kube("mod-a", (VIP_A,), silent={VIP_A, KUBERNETES_IP}), CLIENT, VIP_A)
    assert "lin-worker-0" in flows.FlowChecks.proxy_down
    later(flows.PROXY_DOWN_FRESH_SECONDS + 1)
    kube = Kube("mod-b", (VIP_B,), silent={VIP_B})  # the kubernetes Service answers now
    outcome = dial(kube, OTHER_CLIENT, VIP_B)
    assert outcome.tries == 1 + c.DIAL_SILENT_TRIES and not outcome.reached_all  # its full bound after all
    assert "went on after its first silent try" in outcome.describe() and kube.asked_kubernetes() == 1
    assert "answered from lin-client" in outcome.describe()
    assert not flows.FlowChecks.proxy_down


def test_an_old_record_is_renewed_when_the_kubernetes_service_is_still_silent() -> None:
    dial(Kube("mod-a", (VIP_A,), silent={VIP_A, KUBERNETES_IP}), CLIENT, VIP_A)
    later(flows.PROXY_DOWN_FRESH_SECONDS + 1)
    kube = Kube("mod-b", (VIP_B,), silent={VIP_B, KUBERNETES_IP})
    outcome = dial(kube, OTHER_CLIENT, VIP_B)
    assert outcome.tries == 1 and kube.asked_kubernetes() == 1
    assert (
        "shown down 121 s ago, and now the `kubernetes` Service (10.0.0.1:443) answered nothing" in outcome.describe()
    )
    assert flows.FlowChecks.proxy_down["lin-worker-0"][0] == NOW.now  # renewed: the next one asks nothing
    kube = Kube("mod-c", (VIP_C,), silent={VIP_C, KUBERNETES_IP})
    renewed = dial(kube, OTHER_CLIENT, VIP_C)
    assert renewed.tries == 1 and kube.asked_kubernetes() == 0
    assert f"shown down 0 s ago: {VIP_B}:80 (http) from lin-client got no answer, and the `kubernetes` Service" in (
        renewed.describe()
    )


def test_a_host_network_client_records_nothing_for_the_node() -> None:
    # A Windows node's own network reaching no VIP is a documented deviation (service-vip-from-node): never
    # evidence about its pods' Service proxying.
    kube = Kube("mod-a", (VIP_A,), silent={VIP_A, KUBERNETES_IP})
    outcome = dial(kube, HOST, VIP_A)
    assert outcome.tries == c.DIAL_SILENT_TRIES and "answered nothing either" in outcome.describe()
    assert not flows.FlowChecks.proxy_down


def test_the_probe_is_the_checks_own_dial_on_windows_too() -> None:
    kube = Kube("mod-a", (VIP_A,), silent={VIP_A, KUBERNETES_IP})
    dial(kube, WINDOWS, VIP_A)
    probe = kube.commands[-1]
    assert probe == c.dial_command("windows", WINDOWS.ip, KUBERNETES_IP, 443, "http")
    assert probe[0] == "curl.exe" and kube.commands[0][:-1] == probe[:-1]  # the same command, another address


def test_no_probe_across_ip_families() -> None:
    # An IPv6 VIP on a cluster whose kubernetes Service has only an IPv4 address: ip6tables rules are not
    # iptables rules, so there is nothing to ask and nothing is recorded.
    vip6 = "fd00:10:96::50"
    kube = Kube("mod-a", (vip6,), silent={vip6, KUBERNETES_IP})
    assert dial(kube, CLIENT, vip6).tries == c.DIAL_SILENT_TRIES
    assert kube.asked_kubernetes() == 0 and not flows.FlowChecks.proxy_down


def url(target: str) -> str:
    return f"http://{c.host_port(target, 80)}/hostname"


def test_a_curl_of_a_vip_from_that_node_stops_at_its_first_silent_try_quoting_both() -> None:
    down = {VIP_A, VIP_B, KUBERNETES_IP}
    dial(Kube("mod-a", (VIP_A,), silent=down), CLIENT, VIP_A)
    kube = Kube("mod-b", (VIP_B,), silent=down)
    command = c.http_get_command("linux", url(VIP_B))
    ok, result = flows.FlowChecks(kube).until(HOST, command, lambda r: r.ok, tries=5)
    assert not ok and result.exit_code == 7 and flows.no_answer(result)  # curl's own exit, as it ran
    assert result.stderr.startswith(CURL_SILENT.stderr)  # curl's own words first, then the suite's note
    assert "[wincon: stopped at its first silent try" in result.stderr and "answered nothing either" in result.stderr
    assert kube.commands == [command]  # one try
    # An old record: the same curl asks the kubernetes Service (its address in the URL), silent too: it stops
    later(flows.PROXY_DOWN_FRESH_SECONDS + 1)
    kube = Kube("mod-c", (VIP_B,), silent=down)
    ok, result = flows.FlowChecks(kube).until(HOST, command, lambda r: r.ok, tries=5)
    assert not ok and kube.commands == [command, [*command[:-1], f"http://{KUBERNETES_IP}:443/"]]
    assert "and now the `kubernetes` Service (10.0.0.1:443) answered nothing either from lin-node: curl exit 7" in (
        result.stderr
    )


def test_a_curl_of_a_vip_keeps_its_full_bound_unless_the_node_was_shown_down() -> None:
    kube = Kube("mod-a", (VIP_A,), silent={VIP_A, KUBERNETES_IP})
    command = c.http_get_command("linux", url(VIP_A))
    ok, result = flows.FlowChecks(kube).until(HOST, command, lambda r: r.ok, tries=5)
    assert not ok and len(kube.commands) == 5 and kube.lists == 0  # unmarked: not even a Service list
    assert result == CURL_SILENT
    # recorded long ago, and the kubernetes Service answers the probe (curl exit 22, an HTTP 400): the full bound
    dial(Kube("mod-b", (VIP_B,), silent={VIP_B, KUBERNETES_IP}), CLIENT, VIP_B)
    later(flows.PROXY_DOWN_FRESH_SECONDS + 1)
    kube = Kube("mod-c", (VIP_A,), silent={VIP_A})
    ok, result = flows.FlowChecks(kube).until(HOST, command, lambda r: r.ok, tries=5)
    assert not ok and len(kube.commands) == 5 + 1 and result == CURL_SILENT
    assert not flows.FlowChecks.proxy_down
