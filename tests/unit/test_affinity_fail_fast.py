"""The session-affinity checks' warm-up (suites/networking/test_services.py ``dial_affinity_service``) dials through
FlowChecks.dial: from a node whose Service proxying was recorded down (FlowChecks.proxy_down) it stops at its first
silent try, quoting the record, as every other Service-VIP dial does; on a healthy cluster it keeps its own bound
(AFFINITY_WARM_UP_TRIES dials within conn.DIAL_SILENT_SECONDS) and the checks keep their assertions. Before, the
warm-up was the suite's own loop over dial_once: 15 silent dials (26.4 s each check under "Service rules removed")."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.network import flows
from wincon.network.pods import PodRef
from wincon.windows import connectivity as c

KUBERNETES_IP = "10.0.0.1"
STICKY_VIP, OTHER_VIP = "10.0.0.80", "10.0.0.50"
SILENT = json.dumps({"errors": ['Get "http://10.0.0.80:80/hostname": context deadline exceeded']})
CLIENT = PodRef("lin-client", "10.244.1.9", ("10.244.1.9",), "lin-worker-0", "192.168.7.10", "linux", "netexec")
SERVERS = [
    PodRef(f"lin-netserver-{i}", f"10.244.1.{20 + i}", (), "lin-worker-0", "192.168.7.10", "linux", "netexec")
    for i in range(2)
]


class Kube(fakes.ServiceKube):
    """A namespace with the affinity Service and another, default/kubernetes at 10.0.0.1:443. Each /dial of an
    address calls ``answer[address](n)`` (n: that address's dials so far, from 1): a backend's name, or None
    (nothing answered)."""

    def __init__(self, answer: dict[str, Callable[[int], str | None]]) -> None:
        super().__init__("mod-services", (STICKY_VIP, OTHER_VIP), (KUBERNETES_IP,), affinity_timeout=10)
        self.answer = answer
        self.dials: dict[str, int] = {}

    def dial(self, target: str) -> ExecResult:
        self.dials[target] = self.dials.get(target, 0) + 1
        name = self.answer.get(target, lambda n: None)(self.dials[target])
        return ExecResult(0, fakes.netexec_answer(name) if name else SILENT, "")


def silent(n: int) -> None:
    return None


def sticky(n: int) -> str:
    return "lin-netserver-1"


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes.fresh_worker(monkeypatch)
    monkeypatch.setattr(flows, "clock", lambda: 1000.0)


@pytest.fixture(scope="module")
def module():
    return suites.load("suites/networking/test_services.py")


def affinity_service() -> SimpleNamespace:
    return SimpleNamespace(
        name="lin-netserver-sticky", cluster_ip=STICKY_VIP, raw=fakes.service(STICKY_VIP, affinity_timeout=10)
    )


def keeps_one_backend(module, kube: Kube) -> None:
    module.test_session_affinity_client_ip_keeps_one_backend(
        flows.FlowChecks(kube), CLIENT, affinity_service(), SERVERS
    )


def record_proxy_down(kube: Kube) -> c.DialOutcome:
    """What an earlier check of the module leaves: a VIP dial that ran its full bound, then the `kubernetes`
    Service silent from the same client."""
    outcome = flows.FlowChecks(kube).dial(CLIENT, OTHER_VIP, 80, "http", {s.name for s in SERVERS})
    assert "lin-worker-0" in flows.FlowChecks.proxy_down, outcome.describe()
    kube.dials.clear()
    return outcome


def test_the_warm_up_stops_at_its_first_silent_try_where_service_proxying_was_shown_down(module) -> None:
    kube = Kube({})  # nothing answers: no Service, not even `kubernetes`
    record_proxy_down(kube)
    for check in (keeps_one_backend, ends_after_its_timeout):
        kube.dials.clear()
        with pytest.raises(AssertionError) as failed:
            check(module, kube)
        assert kube.dials == {STICKY_VIP: 1}, kube.dials  # was 15 dials (AFFINITY_WARM_UP_TRIES), 26.4 s
        message = str(failed.value)
        assert "never answered lin-client" in message and "stopped at its first silent try" in message
        assert f"{OTHER_VIP}:80 (http) from lin-client ran its full bound with no answer" in message
        assert "`kubernetes` Service (10.0.0.1:443) answered nothing either from lin-client" in message


def ends_after_its_timeout(module, kube: Kube) -> None:
    module.test_session_affinity_ends_after_its_timeout(flows.FlowChecks(kube), CLIENT, affinity_service(), SERVERS)


def test_a_first_silent_warm_up_keeps_its_bound_and_records_the_nodes_proxying_down(module) -> None:
    kube = Kube({})
    with pytest.raises(AssertionError, match="never answered lin-client"):
        keeps_one_backend(module, kube)
    assert kube.dials[STICKY_VIP] == module.AFFINITY_WARM_UP_TRIES == 15  # its own bound, not DIAL_SILENT_TRIES
    assert kube.dials[KUBERNETES_IP] == 1  # then the `kubernetes` Service, once, with the same dial
    assert "lin-worker-0" in flows.FlowChecks.proxy_down  # evidence for the module's later Service-VIP dials
    later = flows.FlowChecks(kube).dial(CLIENT, OTHER_VIP, 80, "http", {s.name for s in SERVERS})
    assert later.tries == flows.PROXY_DOWN_TRIES and "stopped at its first silent try" in later.describe()


def test_a_new_service_that_answers_on_the_last_warm_up_try_passes_as_before(module) -> None:
    # The data plane programs the Service late: silent for 14 dials, then one backend for good
    kube = Kube({STICKY_VIP: lambda n: None if n < module.AFFINITY_WARM_UP_TRIES else "lin-netserver-1"})
    keeps_one_backend(module, kube)
    assert kube.dials == {STICKY_VIP: module.AFFINITY_WARM_UP_TRIES + module.AFFINITY_CHECKS}  # never asked kubernetes
    assert not flows.FlowChecks.proxy_down and not flows.FlowChecks.silent_targets


def test_an_answer_ends_the_warm_up_and_the_checks_keep_their_assertions(module) -> None:
    kube = Kube({STICKY_VIP: sticky})
    keeps_one_backend(module, kube)
    assert kube.dials == {STICKY_VIP: 1 + module.AFFINITY_CHECKS}  # one warm-up dial, then the 10 counted
    # Two backends over the counted dials: the affinity check still fails
    kube = Kube({STICKY_VIP: lambda n: SERVERS[n % 2].name})
    with pytest.raises(AssertionError, match="sessionAffinity ClientIP, yet one client reached"):
        keeps_one_backend(module, kube)
    # A second backend answering once, beside unanswered dials: still a failure
    kube = Kube({STICKY_VIP: lambda n: {4: None, 6: "lin-netserver-1"}.get(n, "lin-netserver-0")})
    with pytest.raises(AssertionError, match="sessionAffinity ClientIP, yet one client reached"):
        keeps_one_backend(module, kube)


def test_unanswered_dials_are_tried_again_within_the_spare_tries_and_beyond_them_fail(module) -> None:
    # One counted dial without an answer (a load run's curl that ran out of time): one more dial, then it passes,
    # as upstream's GetEndpointsFromContainer skips the try
    kube = Kube({STICKY_VIP: lambda n: None if n == 5 else "lin-netserver-0"})
    keeps_one_backend(module, kube)
    assert kube.dials == {STICKY_VIP: 1 + module.AFFINITY_CHECKS + 1}
    # Counter-case: one unanswered dial more than the spare tries forgive fails, and the dials stop at the bound
    spare = module.AFFINITY_SPARE_TRIES
    kube = Kube({STICKY_VIP: lambda n: None if 2 <= n <= 2 + spare else "lin-netserver-0"})
    with pytest.raises(AssertionError, match=f"only {module.AFFINITY_CHECKS - 1} of 15 dials got an answer"):
        keeps_one_backend(module, kube)
    assert kube.dials == {STICKY_VIP: 1 + module.AFFINITY_CHECKS + spare}
    # The timeout check meets the same rule: affinity not shown, it skips and claims nothing
    kube = Kube({STICKY_VIP: lambda n: None if 2 <= n <= 2 + spare else "lin-netserver-0"})
    with pytest.raises(pytest.skip.Exception, match="ClientIP affinity itself does not hold here"):
        ends_after_its_timeout(module, kube)


def test_an_answer_from_the_node_drops_its_record(module) -> None:
    kube = Kube({})
    record_proxy_down(kube)
    kube.answer[STICKY_VIP] = sticky
    keeps_one_backend(module, kube)
    assert not flows.FlowChecks.proxy_down  # a Service answered from that node: full bounds again


def test_until_any_stops_at_the_first_answer_of_any_endpoint() -> None:
    answers = iter(["", json.dumps({"responses": ["a"]}), json.dumps({"responses": ["b"]})])
    outcome = c.collect_dial(lambda: next(answers), {"a", "b"}, 10, until_any=True)
    assert outcome.tries == 2 and outcome.responses == {"a"} and not outcome.reached_all
    answers = iter(["", json.dumps({"responses": ["a"]}), json.dumps({"responses": ["b"]})])
    outcome = c.collect_dial(lambda: next(answers), {"a", "b"}, 10)
    assert outcome.tries == 3 and outcome.reached_all  # without it: every expected endpoint
