"""The networking suite's expected failures accept only their own evidence (issue 22 follow-up, h4;
wincon.network.evidence): each predicate accepts the documented deviation's form and refuses a tool that failed,
and the checks that use it, run on fakes, give DeviationObserved for that form and NotTheDeviation (a failure)
for the other."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation
from wincon.network import evidence
from wincon.network.flows import FlowChecks
from wincon.windows import connectivity as conn

POD_TO_POD = suites.load("suites/networking/test_pod_to_pod.py")
NODE = suites.load("suites/networking/test_node.py")
IPV6 = suites.load("suites/networking/test_ipv6.py")
SERVICES = suites.load("suites/networking/test_services.py")

TIMEOUT = (
    'Get "http://10.96.0.12:80/hostName": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
)


def netexec(responses: list[str] | None = None, errors: list[str] | None = None) -> conn.DialAnswer:
    """The client netexec's /dial answer (netexec.go:454-460 at v1.34.4: "responses" and "errors" when any)."""
    body: dict[str, list[str]] = {}
    if responses:
        body["responses"] = responses
    if errors:
        body["errors"] = errors
    return conn.DialAnswer(json.dumps(body))


def outcome_of(*tries: str, expected: frozenset[str] = frozenset({"server-0"})) -> conn.DialOutcome:
    """A dial's outcome through the suite's own collect_dial, from what each try printed."""
    outputs = iter(tries)
    return conn.collect_dial(lambda: next(outputs), expected, max_tries=len(tries), delay=0, silent_tries=len(tries))


CLIENT_EXEC_FAILED = "exec failed: the API server closed the exec stream"
CLIENT_CURL_FAILED = "exit 7: curl: (7) Failed to connect to 10.244.1.5 port 8080"

# --------------------------------------------------------------------------- dial_unanswered


def test_the_client_netexec_reporting_the_target_silent_is_the_deviation():
    assert evidence.dial_unanswered(outcome_of(netexec(errors=[TIMEOUT]), netexec(errors=[TIMEOUT])))
    # A try of the client that failed among them does not take away what the others showed.
    assert evidence.dial_unanswered(outcome_of(CLIENT_EXEC_FAILED, netexec(errors=[TIMEOUT])))


@pytest.mark.parametrize("tries", [(CLIENT_EXEC_FAILED, CLIENT_EXEC_FAILED), (CLIENT_CURL_FAILED,)])
def test_a_client_that_never_answered_is_not_the_deviation(tries):
    assert not evidence.dial_unanswered(outcome_of(*tries))


def test_any_answer_is_not_the_deviation():
    partial = outcome_of(netexec(["server-0"]), expected=frozenset({"server-0", "server-1"}))
    wrong = outcome_of(netexec(["another-pod"]))
    assert not partial.reached_all and not evidence.dial_unanswered(partial)
    assert not wrong.reached_all and not evidence.dial_unanswered(wrong)


def test_a_dial_that_was_not_run_is_not_the_deviation():
    """FlowChecks.dial's early return for a name whose resolver was seen silent: no try, nslookup's output."""
    note = "not dialled: a look-up earlier in this worker found no DNS server, and one nslookup found none either"
    skipped = conn.DialOutcome(frozenset({"server-0"}), errors=["nslookup x: ;; connection timed out"], note=note)
    assert not evidence.dial_unanswered(skipped)
    assert not evidence.dial_unanswered(conn.DialOutcome(frozenset({"server-0"})))


class DialChecks:
    """``checks`` for a dial check: each dial returns the outcome given."""

    def __init__(self, outcome: conn.DialOutcome) -> None:
        self.outcome = outcome

    def gate(self, command, where=""):
        pass

    @staticmethod
    def where(pod):
        return pod.name

    def dial(self, client, target, port, protocol, expected, max_tries=None, min_tries=1):
        return self.outcome

    def until(self, pod, command, ok, tries=5, container=None, resolver=None):
        """The hostNetwork check's server, asked from inside its pod: it listens (tests/unit/test_hostnet_evidence.py
        has the cases where it does not)."""
        answer = ExecResult(0, NODE.LISTENING_MESSAGE, "")
        return ok(answer), answer


CLIENT = NS(name="client", os="windows", ip="10.244.1.5", host_ip="10.0.0.5", node="win-0")


def cluster_ip_check(outcome: conn.DialOutcome) -> None:
    service = NS(cluster_ip="10.96.0.12")
    SERVICES.test_pod_reaches_service_by_cluster_ip("http", DialChecks(outcome), CLIENT, service, [NS(name="server-0")])


def ipv6_checks(outcome: conn.DialOutcome) -> None:
    server = NS(name="server-0", node="win-1", ip="10.244.2.5", ips=["10.244.2.5", "fd00:10:244:2::5"])
    IPV6.test_windows_pods_talk_over_ipv6_on_a_dual_stack_cluster(DialChecks(outcome), NS(), CLIENT, [server])


# --------------------------------------------------------------------------- hostNetwork


def host_network_check(outcome: conn.DialOutcome, phase: str = "Running", pod_ip: str = "10.0.0.6") -> None:
    pod = NS(
        metadata=NS(name="win-hostnet", namespace="wincon-ns"),
        spec=NS(node_name="win-1"),
        status=NS(phase=phase, reason=None, message=None, pod_ip=pod_ip, pod_ips=None, host_ip="10.0.0.6"),
    )
    NODE.test_ordinary_windows_pod_with_host_network_shares_the_node_network(
        DialChecks(outcome), (pod, CLIENT, NS(name="win-1"))
    )


# Each dial check: the deviation its silent target shows, and a client's own failure (never the deviation).
DIAL_CHECKS = [
    # Before: any failed dial of the Service IP was the deviation, the client's exec failing included.
    pytest.param(cluster_ip_check, "win-overlay-1803-service-ip", CLIENT_EXEC_FAILED, id="service-ip"),
    pytest.param(ipv6_checks, "ipv6-overlay-unsupported", CLIENT_CURL_FAILED, id="ipv6"),
    pytest.param(host_network_check, "hostnetwork-unsupported", CLIENT_EXEC_FAILED, id="host-network-node-ip"),
]


@pytest.mark.parametrize(("check", "deviation", "client_failed"), DIAL_CHECKS)
def test_a_target_silent_to_a_working_client_is_the_deviation_and_a_client_that_never_answered_is_not(
    check, deviation, client_failed
):
    with pytest.raises(DeviationObserved, match=deviation):
        check(outcome_of(netexec(errors=[TIMEOUT])))
    with pytest.raises(NotTheDeviation):
        check(outcome_of(client_failed))


@pytest.mark.parametrize(("phase", "pod_ip"), [("Failed", "10.0.0.6"), ("Running", "10.244.1.9")])
def test_a_host_network_pod_that_failed_or_shows_another_ip_is_an_ordinary_failure(phase, pod_ip):
    with pytest.raises(AssertionError) as caught:
        host_network_check(outcome_of(netexec(["win-1"])), phase=phase, pod_ip=pod_ip)
    assert not isinstance(caught.value, (DeviationObserved, NotTheDeviation))


def test_the_host_network_port_is_picked_by_namespace_within_its_range():
    """Two runs (two namespaces) mostly ask a node for different host ports; one namespace always for the same."""
    ports = {NODE.host_network_port(f"wincon-test-node-{i:04d}-w0") for i in range(200)}
    assert ports <= set(range(8090, 8190)) and len(ports) > 50
    assert NODE.host_network_port("wincon-ns") == NODE.host_network_port("wincon-ns")


def test_host_network_server_answering_on_the_node_ip_passes():
    host_network_check(outcome_of(netexec(["win-1"])))


# --------------------------------------------------------------------------- session affinity timeout


def test_every_dial_after_idle_answered_by_the_sticky_backend_is_the_deviation():
    assert evidence.stayed_with(["server-0", "server-0"], "server-0")


@pytest.mark.parametrize("seen", [["server-0", ""], [""], [], ["server-0", "server-1"]])
def test_a_dial_without_an_answer_or_another_backend_is_not(seen):
    assert not evidence.stayed_with(seen, "server-0")


class AffinityChecks:
    """Dials in order from ``answers`` (the first ten are the affinity check's, then one per idle period)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = iter(answers)

    def gate(self, command, where=""):
        pass

    @staticmethod
    def where(pod):
        return pod.name

    def dial_once(self, client, command):
        return next(self.answers)

    def dial(self, client, target, port, protocol, expected, **bounds):  # the warm-up: until any backend answers
        answer = next(self.answers)
        return conn.DialOutcome(frozenset(expected), responses={answer} if answer else set(), tries=1)

    def dial_each(self, client, target, port, protocol, times):
        return [next(self.answers) for _ in range(times)]


def affinity_check(after_idle: list[str], monkeypatch) -> None:
    monkeypatch.setattr(SERVICES.time, "sleep", lambda seconds: None)
    first = ["server-0"] * (1 + SERVICES.AFFINITY_CHECKS)  # the warm-up dial, then the ten sticky dials
    timeout = SERVICES.AFFINITY_TIMEOUT_SECONDS
    service = NS(
        cluster_ip="10.96.0.13", raw=NS(spec=NS(session_affinity_config=NS(client_ip=NS(timeout_seconds=timeout))))
    )
    servers = [NS(name="server-0"), NS(name="server-1")]
    SERVICES.test_session_affinity_ends_after_its_timeout(AffinityChecks(first + after_idle), CLIENT, service, servers)


def test_affinity_that_outlives_its_timeout_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="session-affinity-timeout"):
        affinity_check(["server-0"] * SERVICES.AFFINITY_IDLE_ROUNDS, monkeypatch)


def test_dials_after_idle_that_got_no_answer_are_not_the_deviation(monkeypatch):
    """Before: a data plane that stopped answering after the first idle period read as the deviation."""
    with pytest.raises(NotTheDeviation):
        affinity_check(["server-0"] + [""] * (SERVICES.AFFINITY_IDLE_ROUNDS - 1), monkeypatch)


def test_affinity_that_ends_after_its_timeout_passes(monkeypatch):
    affinity_check(["server-0", "server-1"], monkeypatch)


def test_a_move_seen_only_in_the_last_idle_round_passes_and_one_round_fewer_is_the_deviation(monkeypatch):
    """The rounds' bound (AFFINITY_IDLE_ROUNDS) and its counter-case: the same backend after every idle period,
    one round short of a move, is still the deviation; the move in the last round is the affinity ending."""
    rounds = SERVICES.AFFINITY_IDLE_ROUNDS
    assert rounds == 12
    affinity_check(["server-0"] * (rounds - 1) + ["server-1"], monkeypatch)
    with pytest.raises(DeviationObserved, match="session-affinity-timeout"):
        affinity_check(["server-0"] * rounds + ["server-1"], monkeypatch)


# --------------------------------------------------------------------------- externalTrafficPolicy Local


def test_a_source_address_other_than_the_client_is_the_deviation():
    assert evidence.source_rewritten("10.0.0.7:50123", ["10.0.0.5"])
    assert evidence.source_rewritten("[fd00::7]:50123", ["10.0.0.5", "fd00::5"])
    assert not evidence.source_rewritten("10.0.0.5:50123", ["10.0.0.5"])


@pytest.mark.parametrize("answer", ["", "404 page not found", "curl: (52) Empty reply from server", "10.0.0.7"])
def test_an_answer_that_is_not_an_address_is_not(answer):
    assert not evidence.source_rewritten(answer, ["10.0.0.5"])


def test_a_backend_hostname_from_a_node_without_an_endpoint_is_the_forwarding_deviation():
    assert evidence.answered_by_backend(ExecResult(0, "Server-0\n", ""), ["server-0"])
    assert not evidence.answered_by_backend(ExecResult(0, "<html>default backend</html>", ""), ["server-0"])
    assert not evidence.answered_by_backend(ExecResult(7, "", "curl: (7) Failed to connect"), ["server-0"])


class PolicyChecks:
    def __init__(self, client_ip_answer: str, idle_answer: ExecResult) -> None:
        self.client_ip_answer, self.idle_answer = client_ip_answer, idle_answer

    def until(self, pod, command, ok, tries=5, container=None, resolver=None):
        result = ExecResult(0, self.client_ip_answer, "")
        return ok(result), result

    def until_shown(self, pod, command, ok, shown, tries=5, container=None):
        return (*self.until(pod, command, ok, tries, container), "")

    def exec(self, pod, command, container=None, timeout=90.0):
        return self.idle_answer


def policy_check(client_ip_answer: str, idle_answer: ExecResult) -> None:
    host = NS(name="lin-host", os="windows", ip="10.0.0.5", host_ip="10.0.0.5", node="win-0", tool_container=None)
    server = NS(name="server-0", os="windows", node="win-1", host_ip="10.0.0.6")
    net = NS(service=lambda *a, **k: NS(node_ports={"http": 30080}), only=lambda pod: {})
    nodes = [NS(name="win-0", internal_ip="10.0.0.5"), NS(name="win-1", internal_ip="10.0.0.6")]
    nodes.append(NS(name="win-2", internal_ip="10.0.0.7"))
    SERVICES.test_external_traffic_policy_local_keeps_the_client_ip(
        PolicyChecks(client_ip_answer, idle_answer), net, host, server, nodes, "w-"
    )


DROPPED = ExecResult(28, "", "curl: (28) Connection timed out")


def test_source_rewritten_is_the_deviation_and_an_unreadable_answer_is_not():
    with pytest.raises(DeviationObserved, match="external-traffic-policy-local"):
        policy_check("10.0.0.6:41000", DROPPED)
    with pytest.raises(NotTheDeviation):
        policy_check("upstream connect error", DROPPED)


def test_forwarding_from_a_node_without_an_endpoint_is_the_deviation_and_another_answer_is_not():
    with pytest.raises(DeviationObserved, match="external-traffic-policy-local"):
        policy_check("10.0.0.5:41000", ExecResult(0, "server-0", ""))
    with pytest.raises(NotTheDeviation):
        policy_check("10.0.0.5:41000", ExecResult(0, "ok", ""))


def test_source_kept_and_no_forwarding_passes():
    policy_check("10.0.0.5:41000", DROPPED)


# --------------------------------------------------------------------------- port-forward


class FakeSocket:
    def __init__(self, chunks: list[bytes], error: Exception | None = None) -> None:
        self.chunks, self.error = chunks, error

    def settimeout(self, seconds):
        pass

    def sendall(self, data):
        pass

    def recv(self, size):
        if self.error is not None:
            raise self.error
        return self.chunks.pop(0) if self.chunks else b""

    def close(self):
        pass


class FakeForward:
    def __init__(self, sock: FakeSocket, error: str | None) -> None:
        self.sock, self.err = sock, error

    def socket(self, port):
        return self.sock

    def error(self, port):
        return self.err

    def close(self):
        pass


class FakeKube:
    namespace = "ns"
    core = NS(connect_get_namespaced_pod_portforward=None)

    def gate(self, command, where=""):
        pass


REFUSED = "error forwarding port 8083 to pod 1f0c, uid : failed to execute portforward in network namespace"


def port_forward_check(forward: FakeForward, monkeypatch) -> None:
    """The check through the suite's own FlowChecks.port_forward_get, over a fake port-forward stream."""
    import kubernetes.stream

    monkeypatch.setattr(kubernetes.stream, "portforward", lambda *a, **k: forward)
    POD_TO_POD.test_port_forward_reaches_a_windows_pod(
        FlowChecks(FakeKube()), NS(name="server-0", os="windows", node="win-0")
    )


def test_the_kubelets_error_forwarding_the_port_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="port-forward-unsupported"):
        port_forward_check(FakeForward(FakeSocket([]), REFUSED), monkeypatch)
    assert evidence.port_forward_refused(f"no data; {REFUSED}", conn.NETSERVER_HTTP_PORT)


@pytest.mark.parametrize(
    "forward",
    [
        FakeForward(FakeSocket([], TimeoutError("timed out")), None),  # no word from the kubelet
        FakeForward(FakeSocket([b"HTTP/1.1 200 OK\r\n\r\nanother-pod"]), None),  # a wrong answer
        FakeForward(FakeSocket([]), "error forwarding port 9000 to pod 1f0c, uid : refused"),  # another port
    ],
)
def test_a_timeout_a_wrong_answer_or_another_port_is_not_the_deviation(forward, monkeypatch):
    with pytest.raises(NotTheDeviation):
        port_forward_check(forward, monkeypatch)


def test_port_forward_answered_by_the_pod_passes(monkeypatch):
    port_forward_check(FakeForward(FakeSocket([b"HTTP/1.1 200 OK\r\n\r\nserver-0"]), None), monkeypatch)


def test_a_predicate_is_asked_only_once_the_assertion_failed() -> None:
    asked: list[Any] = []
    from wincon.commandline.errors import expect_deviation

    with expect_deviation("x", accepts=lambda: asked.append(1) or True):
        pass
    assert asked == []


def refused(*causes: tuple[str, str], status: int = 422) -> Any:
    """kubernetes.utils' FailToCreateError for the dual-stack Service, the API server answering ``status`` with the
    field causes given (alloc.go's Invalid: reason FieldValueInvalid)."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.utils import FailToCreateError

    error = ApiException(status=status, reason="Unprocessable Entity" if status == 422 else "Forbidden")
    details = {"causes": [{"reason": "FieldValueInvalid", "field": f, "message": m} for f, m in causes]}
    error.body = json.dumps({"kind": "Status", "status": "Failure", "reason": "Invalid", "details": details})
    return FailToCreateError([error])


def test_the_dual_stack_service_skips_only_where_the_api_server_refuses_it_for_the_cluster_s_families() -> None:
    one_family = refused(
        (
            "spec.ipFamilyPolicy",
            'Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
        )
    )
    assert "this cluster is not configured for dual-stack services" in IPV6.not_dual_stack(one_family)
    assert IPV6.not_dual_stack(refused(("spec.ipFamilies[1]", 'Invalid value: "IPv6": not configured on this cluster')))
    # Counter-cases: any other refusal is no evidence of a cluster of one family, and the fixture raises it
    assert IPV6.not_dual_stack(refused(("spec.ports[0].port", "Invalid value: 0: must be between 1 and 65535"))) is None
    mixed = refused(
        ("spec.ipFamilyPolicy", "this cluster is not configured for dual-stack services"),
        ("metadata.name", "a DNS-1035 label must consist of lower case alphanumeric characters"),
    )
    assert IPV6.not_dual_stack(mixed) is None
    assert IPV6.not_dual_stack(refused()) is None  # a 422 that names no field
    assert IPV6.not_dual_stack(refused(("spec.ipFamilyPolicy", "denied by a webhook"), status=403)) is None
