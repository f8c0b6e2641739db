"""Fail fast when the data plane is down (issue 22, item 5): the dial's bounds in wall time and in tries."""

from __future__ import annotations

import json

import pytest

from wincon.windows import connectivity as c


class FakeClock:
    """Time that moves only when a try runs (``cost`` s) or the retry sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _runner(clock: FakeClock, cost: float, answer: str):
    def run() -> str:
        clock.now += cost
        return answer

    return run


SILENT = json.dumps({"responses": [], "errors": ["dial tcp 10.0.0.9:80: i/o timeout"]})


@pytest.mark.parametrize("cost", [0.1, 5.0, 10.0, float(c.MAX_TIME_SECONDS)])
def test_a_target_that_never_answers_fails_within_60_s(cost: float) -> None:
    # A try lasts from an instant (connection refused) to curl's --max-time (the client pod does not answer).
    clock = FakeClock()
    outcome = c.collect_dial(
        _runner(clock, cost, SILENT), {"netserver-0", "netserver-1"}, max_tries=c.dial_tries(2),
        sleep=clock.sleep, clock=clock,
    )  # fmt: skip
    assert not outcome.reached_all
    assert clock.now <= 60.0, f"failed after {clock.now:.0f} s ({outcome.tries} tries)"
    assert outcome.tries >= 2 or cost >= c.DIAL_SILENT_SECONDS  # never judged on a single short try
    assert outcome.seconds == pytest.approx(clock.now)
    assert "i/o timeout" in outcome.describe() and f"{outcome.seconds:.0f} s" in outcome.describe()


@pytest.mark.parametrize("endpoints", [2, 3, 5, 10])
def test_a_dial_some_endpoints_answer_without_a_witness_is_judged_from_its_first_answer(endpoints: int) -> None:
    clock = FakeClock()
    expected = {f"netserver-{i}" for i in range(endpoints)}
    outcome = c.collect_dial(
        _runner(clock, 0.1, json.dumps({"responses": ["netserver-0"]})), expected, max_tries=c.dial_bound(endpoints),
        sleep=clock.sleep, clock=clock,
    )  # fmt: skip
    judged = c.judged_tries(endpoints)
    assert not outcome.reached_all and outcome.shown_at == 1 and outcome.tries == 1 + judged
    assert judged <= c.dial_tries(endpoints)  # never more than upstream's endpoints^2 + 30


def test_every_endpoint_still_gets_its_chance_when_they_answer_at_random() -> None:
    # Two endpoints picked at random: the dial succeeds long before the fair bound in practice.
    import random

    rng = random.Random(3)
    clock = FakeClock()
    for _ in range(200):
        outcome = c.collect_dial(
            lambda: json.dumps({"responses": [rng.choice(["a", "b", "c"])]}), {"a", "b", "c"},
            max_tries=c.dial_tries(3), sleep=clock.sleep, clock=clock,
        )  # fmt: skip
        assert outcome.reached_all


@pytest.mark.parametrize("cost", [0.1, 10.0, float(c.MAX_TIME_SECONDS)])
def test_other_checks_on_a_silent_target_stop_within_60_s(cost: float) -> None:
    # curl, ping, a look-up: FlowChecks.until passes seconds=DIAL_SILENT_SECONDS.
    clock = FakeClock()

    def check() -> bool:
        clock.now += cost
        return False

    ok, tries = c.attempts(check, 5, sleep=clock.sleep, seconds=c.DIAL_SILENT_SECONDS, clock=clock)
    assert not ok and clock.now <= 60.0 and tries >= 1
    assert c.attempts(check, 5, sleep=clock.sleep, clock=clock)[1] == 5  # without a budget: every try


def test_a_check_that_answers_late_within_the_budget_still_passes() -> None:
    clock = FakeClock()
    answers = iter([False, False, True])

    def check() -> bool:
        clock.now += 5
        return next(answers)

    assert c.attempts(check, 5, sleep=clock.sleep, seconds=c.DIAL_SILENT_SECONDS, clock=clock) == (True, 3)


def test_a_module_whose_server_is_silent_fails_its_next_dials_after_fewer_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wincon.cluster.exec import ExecResult
    from wincon.network import flows
    from wincon.network.pods import PodRef

    class Kube:
        namespace = "wincon-mod"

        def __init__(self, stdout: str) -> None:
            self.stdout = stdout
            self.execs = 0

        def gate(self, command: object, where: str = "") -> None:
            pass

        def exec(self, pod: object, command: object, container: object = None, where: object = None,
                 timeout: float = 60.0) -> ExecResult:  # fmt: skip
            self.execs += 1
            return ExecResult(0, self.stdout, "")

    monkeypatch.setattr(flows.FlowChecks, "silent_targets", set())
    monkeypatch.setattr(flows.FlowChecks, "silent_clients", set())
    dial = c.collect_dial
    monkeypatch.setattr(c, "collect_dial", lambda *a, **k: dial(*a, sleep=lambda s: None, **k))
    client = PodRef("client", "10.0.0.9", ("10.0.0.9",), "worker-0", "", "linux", "netexec")
    silent = Kube(SILENT)
    first = flows.FlowChecks(silent).dial(client, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert first.tries == c.DIAL_SILENT_TRIES and not first.reached_all
    second = flows.FlowChecks(silent).dial(client, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert second.tries == flows.SILENT_AGAIN_TRIES and not second.reached_all  # its own dials, fewer of them
    assert "answered nothing earlier in this module" in second.describe()  # the failure says why so few
    other = flows.FlowChecks(silent).dial(client, "10.0.0.6", 8083, "http", ["netserver-1"])
    assert other.tries == flows.SILENT_AGAIN_TRIES  # another target, but this client reached nothing over http
    udp = flows.FlowChecks(silent).dial(client, "10.0.0.6", 8081, "udp", ["netserver-1"])
    assert udp.tries == c.DIAL_SILENT_TRIES  # another protocol: its full bound
    client2 = PodRef("client-2", "10.0.0.8", ("10.0.0.8",), "worker-0", "", "linux", "netexec")
    assert flows.FlowChecks(silent).dial(client2, "10.0.0.7", 8083, "http", ["x"]).tries == c.DIAL_SILENT_TRIES
    answering = Kube(json.dumps({"responses": ["netserver-0"]}))
    assert flows.FlowChecks(answering).dial(client, "10.0.0.5", 8083, "http", ["netserver-0"]).reached_all
    again = flows.FlowChecks(silent).dial(client, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert again.tries == c.DIAL_SILENT_TRIES  # an answer in between lifted the lower bound
    assert "earlier in this module" not in again.describe()
    # a partial answer lifts the client's bound too: after it, a silent target of its own gets its full bound
    partial = Kube(json.dumps({"responses": ["netserver-0"]}))
    assert (
        not flows.FlowChecks(partial).dial(client, "10.0.0.9", 80, "http", ["netserver-0", "netserver-1"]).reached_all
    )
    assert flows.FlowChecks(silent).dial(client, "10.0.0.10", 80, "http", ["y"]).tries == c.DIAL_SILENT_TRIES


def test_a_working_flow_passes_on_its_first_try_even_after_a_silent_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lower bound never touches a flow that works: it answers on the first try and passes."""
    from wincon.cluster.exec import ExecResult
    from wincon.network import flows
    from wincon.network.pods import PodRef

    class Kube:
        namespace = "wincon-mod"

        def __init__(self, answers: dict[str, str]) -> None:
            self.answers = answers

        def gate(self, command: object, where: str = "") -> None:
            pass

        def exec(self, pod: object, command: list[str], container: object = None, where: object = None,
                 timeout: float = 60.0) -> ExecResult:  # fmt: skip
            url = command[-1]
            return ExecResult(0, next((v for k, v in self.answers.items() if f"host={k}&" in url), SILENT), "")

    monkeypatch.setattr(flows.FlowChecks, "silent_targets", set())
    monkeypatch.setattr(flows.FlowChecks, "silent_clients", set())
    dial = c.collect_dial
    monkeypatch.setattr(c, "collect_dial", lambda *a, **k: dial(*a, sleep=lambda s: None, **k))
    client = PodRef("client", "10.0.0.9", ("10.0.0.9",), "worker-0", "", "linux", "netexec")
    kube = Kube({"10.0.0.6": json.dumps({"responses": ["netserver-1"]})})
    assert not flows.FlowChecks(kube).dial(client, "10.0.0.5", 8083, "http", ["netserver-0"]).reached_all
    works = flows.FlowChecks(kube).dial(client, "10.0.0.6", 8083, "http", ["netserver-1"])
    assert works.reached_all and works.tries == 1
