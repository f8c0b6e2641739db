"""Dials judged only by what the cluster has shown (issue 34, item 2): a partly answered Service dial starts counting
the missing endpoints' tries once the Service is shown complete from the client's side (its EndpointSlices list each
missing endpoint ready and each answered the client by its own pod IP), then gives them conn.judged_tries (the fewer
of upstream's endpoints^2 + 30 and a miss chance of at most 1 in a million per dial); a failure names, per missing
endpoint, whether it answered by its own pod IP at that moment (the Service's fault) or not (the endpoint's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.network import flows
from wincon.network.pods import PodRef
from wincon.windows import connectivity as c

VIP = "10.0.0.80"
CLIENT = PodRef("lin-client", "10.244.1.9", ("10.244.1.9",), "lin-worker-0", "192.168.7.10", "linux", "netexec")
SERVERS = {"lin-netserver-0": "10.244.1.20", "lin-netserver-1": "10.244.2.21"}
SILENT = json.dumps({"errors": ['Get "http://10.244.2.21:8083/hostname": context deadline exceeded']})
collect_dial = c.collect_dial  # as it is (the fixture below makes FlowChecks' own sleepless)
ASK = c.WITNESS_AFTER_TRIES  # the try of the first question to the witness, after a first answer on try 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def service_answers(program_at: int | None, names: tuple[str, ...] = tuple(SERVERS)) -> Callable[[], str]:
    """The Service as the client's node proxies it: only the first endpoint until try ``program_at`` (None: never
    the others), then each endpoint in turn."""
    tries = [0]

    def run() -> str:
        tries[0] += 1
        if program_at is None or tries[0] < program_at:
            return c.DialAnswer(fakes.netexec_answer(names[0]))
        return c.DialAnswer(fakes.netexec_answer(names[tries[0] % len(names)]))

    return run


def witness_showing(at_question: int, why: str = "listed not ready in the EndpointSlices: the endpoint's fault"):
    """A witness that shows every endpoint it is asked about from its ``at_question``-th question on (``asked``
    counts the questions), and before that says ``why``."""
    asked: list[frozenset[str]] = []

    def witness(missing: frozenset[str]) -> dict[str, str | None]:
        asked.append(missing)
        return {name: None if len(asked) >= at_question else why for name in missing}

    return witness, asked


# ----------------------------------------------------------------------------- the bound in tries


def test_judged_tries_is_the_fewer_of_upstreams_count_and_a_one_in_a_million_miss_chance() -> None:
    for endpoints in range(2, 13):
        upstream = endpoints * endpoints + 30
        tries = 1
        while (endpoints - 1) * (1 - 1 / endpoints) ** tries > 1e-6:  # any working endpoint missed, at random
            tries += 1
        assert c.judged_tries(endpoints) == min(upstream, tries), endpoints
    assert [c.judged_tries(n) for n in (2, 3, 4, 10)] == [20, 36, 46, 130]


@pytest.mark.parametrize("endpoints", [2, 3, 4])
@pytest.mark.parametrize("shown_at_question", [1, 4])
def test_the_missing_endpoints_get_exactly_judged_tries_after_the_service_was_shown(
    endpoints: int, shown_at_question: int
) -> None:
    clock = FakeClock()
    names = tuple(f"s-{i}" for i in range(endpoints))
    witness, asked = witness_showing(shown_at_question)
    outcome = collect_dial(
        service_answers(None, names), names, c.dial_bound(endpoints), sleep=clock.sleep, clock=clock, witness=witness
    )
    assert not outcome.reached_all and outcome.shown_at == ASK - 1 + shown_at_question
    assert outcome.tries == outcome.shown_at + c.judged_tries(endpoints) <= c.dial_bound(endpoints)
    # asked after each try from the ASK-th until shown, then once more at the end to name the fault
    assert len(asked) == shown_at_question + 1 and asked[0] == frozenset(names[1:])


# ----------------------------------------------------------------------------- a node that programs an endpoint late


def test_a_client_whose_node_programs_an_endpoint_late_passes() -> None:
    # The issue's case: netserver-1's pod IP answers the client from the first try, the client's node sends it
    # nothing through the Service for 14 tries (the old rule failed after 10, "after 10 tries in 19 s").
    clock = FakeClock()
    witness, asked = witness_showing(1)
    outcome = collect_dial(
        service_answers(15), SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness
    )
    assert outcome.reached_all and outcome.tries == 15 and outcome.shown_at == ASK and not outcome.missing
    assert len(asked) == 1  # shown once: no more questions


def test_tries_before_the_service_is_shown_complete_do_not_count() -> None:
    # EndpointSlices list netserver-1 not ready for 4 questions (tries ASK to ASK + 3); then the node needs 20 more
    # tries: ASK + 24 in all, more than 1 + judged_tries(2) (judged from the first answer), and it passes.
    clock = FakeClock()
    witness, _ = witness_showing(5)
    late = ASK + 4 + c.judged_tries(2)
    outcome = collect_dial(
        service_answers(late), SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness
    )
    assert outcome.reached_all and outcome.shown_at == ASK + 4 and outcome.tries == late > 1 + c.judged_tries(2)


# ----------------------------------------------------------------------------- truly missing endpoints, fault named


def test_an_endpoint_never_shown_fails_after_the_silent_bound_naming_the_endpoints_fault() -> None:
    clock = FakeClock()
    why = "its own pod IP 10.244.2.21:8083 did not answer lin-client's netexec (...): the endpoint's fault"
    witness, asked = witness_showing(10**6, why)
    outcome = collect_dial(
        service_answers(None), SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness
    )
    assert not outcome.reached_all and outcome.tries == c.DIAL_SILENT_TRIES and not outcome.shown_at
    assert outcome.missing == {"lin-netserver-1": f"never shown complete from the client's side: {why}"}
    assert (
        "lin-netserver-1: never shown complete" in outcome.describe() and "the endpoint's fault" in outcome.describe()
    )
    assert len(asked) == c.DIAL_SILENT_TRIES - ASK + 1  # one question per try from the ASK-th, none at the end


def test_an_endpoint_shown_yet_never_answering_through_the_service_is_the_services_fault() -> None:
    clock = FakeClock()
    witness, _ = witness_showing(1)
    outcome = collect_dial(
        service_answers(None), SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness
    )
    assert not outcome.reached_all and outcome.tries == ASK + c.judged_tries(2)
    assert "answers the client by its own pod IP now" in outcome.missing["lin-netserver-1"]
    assert outcome.missing["lin-netserver-1"].endswith("the Service's fault")


def test_an_endpoint_that_stops_answering_by_its_pod_ip_is_named_the_endpoints_fault() -> None:
    asked: list[int] = []

    def witness(missing: frozenset[str]) -> dict[str, str | None]:
        asked.append(1)  # shown on the first question; silent by its own pod IP at the end
        return {n: None if len(asked) == 1 else "its own pod IP did not answer: the endpoint's fault" for n in missing}

    outcome = collect_dial(service_answers(None), SERVERS, c.dial_bound(2), sleep=lambda s: None, witness=witness)
    assert outcome.missing == {"lin-netserver-1": "its own pod IP did not answer: the endpoint's fault"}


def test_a_silent_service_still_fails_fast_and_never_asks_the_witness() -> None:
    clock = FakeClock()
    witness, asked = witness_showing(1)
    silent = collect_dial(lambda: SILENT, SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness)
    assert silent.tries == c.DIAL_SILENT_TRIES and not asked and not silent.missing


def test_the_warm_up_until_any_waits_for_the_others_to_be_shown() -> None:
    witness, asked = witness_showing(3)
    outcome = collect_dial(service_answers(None), SERVERS, 15, sleep=lambda s: None, until_any=True, witness=witness)
    assert outcome.tries == 3 and outcome.shown_at == 3 and len(asked) == 3
    never, _ = witness_showing(10**6)
    outcome = collect_dial(service_answers(None), SERVERS, 15, sleep=lambda s: None, until_any=True, witness=never)
    assert outcome.tries == c.DIAL_SILENT_TRIES and not outcome.shown_at and outcome.responses  # bounded


# ----------------------------------------------------------------------------- FlowChecks' witness on a fake cluster


def endpoint_slice(ready: dict[str, bool]) -> SimpleNamespace:
    return SimpleNamespace(
        address_type="IPv4",
        ports=[
            SimpleNamespace(name="http", port=8083, protocol="TCP"),
            SimpleNamespace(name="udp", port=8081, protocol="UDP"),
        ],
        endpoints=[
            SimpleNamespace(
                addresses=[SERVERS[name]],
                target_ref=SimpleNamespace(name=name),
                conditions=SimpleNamespace(ready=is_ready),
            )
            for name, is_ready in ready.items()
        ],
    )


class Kube(fakes.ServiceKube):
    """The namespace ``ns`` with Service ``lin-netserver`` at VIP (http 80 -> 8083, udp 90 -> 8081) over the two
    netservers. The client's node programs netserver-1 into the Service from its ``program_at``-th VIP dial on
    (None: never); each netserver answers its own pod IP unless in ``silent``; the EndpointSlices list ``ready``."""

    def __init__(self, program_at: int | None, silent: frozenset[str] = frozenset(), ready: bool = True) -> None:
        super().__init__("ns", (VIP,))
        self.program_at, self.silent = program_at, silent
        self.vip_dials = self.slice_lists = 0
        svc = SimpleNamespace(
            metadata=SimpleNamespace(name="lin-netserver"),
            spec=SimpleNamespace(
                cluster_ip=VIP,
                cluster_ips=[VIP],
                ports=[
                    SimpleNamespace(name="http", port=80, protocol="TCP", node_port=None),
                    SimpleNamespace(name="udp", port=90, protocol="UDP", node_port=None),
                ],
            ),
            status=SimpleNamespace(load_balancer=None),
        )
        self.core.list_namespaced_service = lambda namespace: SimpleNamespace(items=[svc])
        slices = endpoint_slice({"lin-netserver-0": True, "lin-netserver-1": ready})

        def list_namespaced_endpoint_slice(namespace: str, label_selector: str) -> SimpleNamespace:
            assert (namespace, label_selector) == ("ns", "kubernetes.io/service-name=lin-netserver")
            self.slice_lists += 1
            return SimpleNamespace(items=[slices])

        self.discovery = SimpleNamespace(list_namespaced_endpoint_slice=list_namespaced_endpoint_slice)

    def dial(self, target: str) -> ExecResult:
        if target not in SERVERS.values():  # the Service (by VIP, by name), or an address as the Service answers
            self.vip_dials += 1
            late = self.program_at is None or self.vip_dials < self.program_at
            return ExecResult(
                0, fakes.netexec_answer("lin-netserver-0" if late else f"lin-netserver-{self.vip_dials % 2}"), ""
            )
        name = next(n for n, ip in SERVERS.items() if ip == target)
        return ExecResult(0, SILENT if name in self.silent else fakes.netexec_answer(name), "")

    def pod_ip_dials(self) -> list[str]:
        return [cmd[-1] for cmd in self.commands if "host=10.244." in cmd[-1]]


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes.fresh_worker(monkeypatch)


def test_flowchecks_a_dial_that_answers_in_full_reads_no_service_and_dials_no_pod_ip() -> None:
    kube = Kube(program_at=1)
    outcome = flows.FlowChecks(kube).dial(CLIENT, VIP, 80, "http", set(SERVERS))
    assert outcome.reached_all and outcome.tries == 2 and not kube.pod_ip_dials() and kube.slice_lists == 0


@pytest.mark.parametrize("target", [VIP, "lin-netserver"])
def test_flowchecks_a_node_programming_an_endpoint_late_passes_after_its_pod_ip_answered(target: str) -> None:
    kube = Kube(program_at=16)
    outcome = flows.FlowChecks(kube).dial(CLIENT, target, 80, "http", set(SERVERS))
    assert outcome.reached_all and outcome.tries == 17 and outcome.shown_at == ASK, outcome.describe()
    (only,) = kube.pod_ip_dials()  # netserver-1's own pod IP, once, at the slice's port for the Service port
    assert "host=10.244.2.21&port=8083" in only


def test_flowchecks_an_endpoint_silent_by_its_pod_ip_is_named_the_endpoints_fault() -> None:
    kube = Kube(program_at=None, silent=frozenset({"lin-netserver-1"}))
    outcome = flows.FlowChecks(kube).dial(CLIENT, VIP, 90, "udp", set(SERVERS))
    assert not outcome.reached_all and outcome.tries == c.DIAL_SILENT_TRIES
    text = outcome.describe()
    assert "lin-netserver-1: never shown complete from the client's side: its own pod IP 10.244.2.21:8081" in text
    assert "did not answer lin-client's netexec" in text and text.endswith("the endpoint's fault")


def test_flowchecks_an_endpoint_the_service_never_reaches_is_named_the_services_fault() -> None:
    kube = Kube(program_at=None)
    outcome = flows.FlowChecks(kube).dial(CLIENT, VIP, 80, "http", set(SERVERS))
    assert not outcome.reached_all and outcome.tries == ASK + c.judged_tries(2)
    assert len(kube.pod_ip_dials()) == 2  # once to show it, once at the end to name the fault
    assert "lin-netserver-1: answers the client by its own pod IP now" in outcome.describe()
    assert outcome.describe().endswith("the Service's fault")


def test_flowchecks_an_endpoint_listed_not_ready_is_not_judged_and_named() -> None:
    kube = Kube(program_at=None, ready=False)
    outcome = flows.FlowChecks(kube).dial(CLIENT, VIP, 80, "http", set(SERVERS))
    assert outcome.tries == c.DIAL_SILENT_TRIES and not kube.pod_ip_dials()
    assert "listed not ready in the EndpointSlices of Service lin-netserver: the endpoint's fault" in outcome.describe()


def test_flowchecks_a_target_that_is_no_service_is_judged_from_the_first_question() -> None:
    kube = Kube(program_at=None)
    outcome = flows.FlowChecks(kube).dial(CLIENT, "10.0.0.99", 80, "http", set(SERVERS))  # no Service there
    assert outcome.tries == ASK + c.judged_tries(2) and not kube.pod_ip_dials() and kube.slice_lists == 0


# ----------------------------------------------------------------------------- the same rule elsewhere


def test_the_affinity_warm_up_waits_until_the_other_backends_are_shown_then_counts_its_dials() -> None:
    from tests.support import suites

    module = suites.load("suites/networking/test_services.py")
    kube = Kube(program_at=None)  # ClientIP affinity: every dial through the Service reaches netserver-0
    refs = [PodRef(n, ip, (ip,), "lin-worker-0", "192.168.7.10", "linux", "netexec") for n, ip in SERVERS.items()]
    service = SimpleNamespace(name="lin-netserver-sticky", cluster_ip=VIP)
    answers = module.dial_affinity_service(flows.FlowChecks(kube), CLIENT, service, refs)
    assert answers == ["lin-netserver-0"] * module.AFFINITY_CHECKS
    assert kube.vip_dials == 1 + module.AFFINITY_CHECKS  # one warm-up dial: the other backend shown at once
    (only,) = kube.pod_ip_dials()
    assert "host=10.244.2.21&port=8083" in only  # netserver-1 answered by its own pod IP before the counted dials


HEADLESS = "lin-netservers.ns.svc.cluster.local."


def nslookup_answer(*addresses: str) -> str:
    """BIND's nslookup (the agnhost image's) answering a headless Service's name with ``addresses``."""
    records = "".join(f"Name:\tlin-netservers.ns.svc.cluster.local\nAddress: {a}\n" for a in addresses)
    return f"Server:\t\t10.0.0.10\nAddress:\t10.0.0.10#53\n\n{records}\n"


class DnsKube(fakes.ExecKube):
    """CoreDNS answering the headless Service's name with netserver-0 only for its first ``partial`` look-ups, then
    with both; the Service's EndpointSlices list netserver-1 ready from their ``listed_at``-th read (None: never)."""

    def __init__(self, partial: int, listed_at: int | None) -> None:
        super().__init__()
        self.partial, self.listed_at, self.lookups, self.reads = partial, listed_at, 0, 0

        def list_namespaced_endpoint_slice(namespace: str, label_selector: str, **_: object) -> SimpleNamespace:
            assert (namespace, label_selector) == ("ns", "kubernetes.io/service-name=lin-netservers")
            self.reads += 1
            ready = self.listed_at is not None and self.reads >= self.listed_at
            return SimpleNamespace(items=[endpoint_slice({"lin-netserver-0": True, "lin-netserver-1": ready})])

        self.discovery = SimpleNamespace(list_namespaced_endpoint_slice=list_namespaced_endpoint_slice)
        self.core = SimpleNamespace()

    def respond(self, command: list[str]) -> ExecResult:
        assert command == ["nslookup", HEADLESS], command
        self.lookups += 1
        both = self.lookups > self.partial
        return ExecResult(0, nslookup_answer(*(SERVERS.values() if both else [SERVERS["lin-netserver-0"]])), "")


def headless_lookup(kube: DnsKube):
    return flows.FlowChecks(kube).lookup(CLIENT, HEADLESS, tool="nslookup", every=SERVERS.values())


def test_a_headless_name_answered_partly_at_first_is_judged_once_its_slices_list_every_pod_ready() -> None:
    kube = DnsKube(partial=6, listed_at=4)  # CoreDNS serves the new endpoint a moment after the slices list it
    lookup = headless_lookup(kube)
    assert set(lookup.addresses) == set(SERVERS.values()) and kube.reads == 4 and kube.lookups == 7


def test_a_headless_name_that_never_answers_every_pod_fails_after_judged_tries() -> None:
    kube = DnsKube(partial=10**6, listed_at=1)
    lookup = headless_lookup(kube)
    assert lookup.ok and lookup.addresses == (SERVERS["lin-netserver-0"],)  # the suite's assertion fails on it
    assert kube.lookups == 1 + c.judged_tries(2) and kube.reads == 1


def test_a_headless_name_whose_slices_never_list_every_pod_is_not_judged_by_more_look_ups() -> None:
    kube = DnsKube(partial=10**6, listed_at=None)
    lookup = headless_lookup(kube)
    assert lookup.addresses == (SERVERS["lin-netserver-0"],) and kube.lookups == 1
    assert kube.reads == c.DIAL_SILENT_TRIES  # bounded wait for the slices


def test_a_lookup_without_every_is_as_before() -> None:
    kube = DnsKube(partial=10**6, listed_at=1)
    lookup = flows.FlowChecks(kube).lookup(CLIENT, HEADLESS, tool="nslookup")
    assert lookup.ok and kube.lookups == 1 and kube.reads == 0


# ----------------------------------------------------------------------------- externalTrafficPolicy's wait


NODE_PORT_URL = "http://192.168.7.10:30080/clientip"


class PolicyKube(fakes.ExecKube):
    """The NodePort of an externalTrafficPolicy Local Service, programmed on its node from the ``programmed_at``-th
    curl on; its backend lin-netserver-0 answering its own /hostname unless ``backend_silent``."""

    def __init__(self, programmed_at: int, backend_silent: bool = False) -> None:
        super().__init__()
        self.programmed_at, self.backend_silent, self.node_port_curls = programmed_at, backend_silent, 0
        slices = endpoint_slice({"lin-netserver-0": True})
        self.discovery = SimpleNamespace(
            list_namespaced_endpoint_slice=lambda namespace, label_selector, **_: SimpleNamespace(items=[slices])
        )
        self.core = SimpleNamespace()

    def respond(self, command: list[str]) -> ExecResult:
        if command[-1] == NODE_PORT_URL:
            self.node_port_curls += 1
            if self.node_port_curls < self.programmed_at:
                return ExecResult(7, "", "curl: (7) Failed to connect to 192.168.7.10 port 30080")
            return ExecResult(0, "192.168.7.11:41000", "")
        assert command[-1] == "http://10.244.1.20:8083/hostname", command
        return (
            ExecResult(7, "", "curl: (7) Failed to connect")
            if self.backend_silent
            else ExecResult(0, "lin-netserver-0", "")
        )


def policy_wait(kube: PolicyKube):
    checks = flows.FlowChecks(kube)
    backend = PodRef(
        "lin-netserver-0", SERVERS["lin-netserver-0"], (), "lin-worker-0", "192.168.7.10", "linux", "netexec"
    )
    return checks.until_shown(
        CLIENT,
        c.http_get_command("linux", NODE_PORT_URL),
        lambda r: r.ok and r.stdout.strip() != "",
        lambda: checks.backend_shown(CLIENT, "lin-netserver-local", backend),
    )


def test_a_node_port_programmed_after_the_first_tries_passes_once_its_backend_is_shown() -> None:
    kube = PolicyKube(programmed_at=9)  # after until's 5 tries: failed before
    ok, result, shown = policy_wait(kube)
    assert ok and result.stdout == "192.168.7.11:41000" and kube.node_port_curls == 9
    assert "shown complete from lin-client's side after 5 tries" in shown


def test_a_node_port_whose_backend_does_not_answer_by_its_pod_ip_is_not_judged_further() -> None:
    kube = PolicyKube(programmed_at=10**6, backend_silent=True)
    ok, _, shown = policy_wait(kube)
    assert not ok and kube.node_port_curls == 5  # as before: fail fast
    assert shown.startswith("not judged further: lin-netserver-0's own pod IP did not answer")
    assert shown.endswith("the endpoint's fault")
    never = PolicyKube(programmed_at=10**6)
    ok, _, shown = policy_wait(never)
    assert not ok and never.node_port_curls == 5 + c.judged_tries(1)  # shown: judged_tries more, then failed


@pytest.mark.parametrize(("cost", "tries"), [(0.1, c.DIAL_SILENT_TRIES), (10.0, ASK + c.WITNESS_MIN_QUESTIONS - 1)])
def test_an_endpoint_never_shown_is_asked_about_at_least_three_times_however_slow_the_tries(
    cost: float, tries: int
) -> None:
    clock = FakeClock()
    witness, asked = witness_showing(10**6)
    answers = service_answers(None)

    def run() -> str:
        clock.now += cost
        return answers()

    outcome = collect_dial(run, SERVERS, c.dial_bound(2), sleep=clock.sleep, clock=clock, witness=witness)
    assert outcome.tries == tries and len(asked) == tries - ASK + 1 >= c.WITNESS_MIN_QUESTIONS
    assert clock.now <= 100.0  # 25 s after the first answer at the least, bounded by the questions it needs


def api_service(name: str, kind: str = "ClusterIP", **spec: object) -> SimpleNamespace:
    ports = [SimpleNamespace(name="http", port=80, protocol="TCP", node_port=30080)]
    ingress = [SimpleNamespace(ip="172.18.0.50")] if kind == "LoadBalancer" else []
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name),
        spec=SimpleNamespace(type=kind, cluster_ip=spec.get("ip"), cluster_ips=[spec["ip"]] if "ip" in spec else [],
                             ports=spec.get("ports", ports), external_name=spec.get("external_name")),
        status=SimpleNamespace(load_balancer=SimpleNamespace(ingress=ingress)),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("target", "port", "found"),
    [
        (VIP, 80, "lin-netserver"),  # by cluster IP
        ("lin-netserver", 80, "lin-netserver"),  # by name, single label
        ("lin-netserver.ns.svc.cluster.local.", 80, "lin-netserver"),  # FQDN
        ("lin-netserver-alias.ns.svc.cluster.local", 80, "lin-netserver"),  # ExternalName: the Service it names
        ("192.168.7.10", 30080, "lin-netserver-lb"),  # a node's address at a node port
        ("172.18.0.50", 80, "lin-netserver-lb"),  # a LoadBalancer address
        ("lin-netserver.other", 80, None),  # another namespace's
        (VIP, 90, None),  # no such port
        ("10.244.1.20", 8083, None),  # a pod IP
    ],
)
def test_the_service_behind_a_target_is_found_by_address_name_node_port_or_externalname(target, port, found) -> None:
    kube = fakes.ServiceKube("ns", ())
    services = [
        api_service("lin-netserver-alias", "ExternalName", ports=[], external_name="lin-netserver.ns.svc.cluster.local"),
        api_service("lin-netserver", ip=VIP, ports=[SimpleNamespace(name="http", port=80, protocol="TCP", node_port=None)]),
        api_service("lin-netserver-lb", "LoadBalancer", ip="10.0.0.81"),
    ]  # fmt: skip
    kube.core.list_namespaced_service = lambda namespace: SimpleNamespace(items=services)
    behind = flows.FlowChecks(kube).service_behind(target, port, "http")
    assert (behind[0] if behind else None) == found
