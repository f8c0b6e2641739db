"""suites/probes/test_probes.py's windows and filters against the kubelet's own probing (issue 40, item 1).

The kubelet runs the probes of one worker one after another (pkg/kubelet/prober/worker.go at v1.37.2): a worker
started within a period of the kubelet's start first sleeps a random part of the period (:165-167); then a ticker of
the period drives doProbe (:169, :186-201), and a tick that falls while a probe runs is received as soon as it ends
(Go's ticker keeps one tick for a slow receiver and drops the rest); no probe counts before the container has run
initialDelaySeconds (:331) nor, for liveness and readiness, before it has started (:341-345); failureThreshold
failures in a row act (:373); a liveness failure then stops the container with the probe's grace, else the pod's,
at least 2 s (kuberuntime_container.go setTerminationGracePeriod, kuberuntime_manager.go:84). ``kubelet_acts_at``
below plays that sequence (its own code, not the suite's formula) for a probe that hangs to its timeout from a
given moment on, and the checks are driven with fakes on a fake clock (tests/unit/conftest.py ``clock``) against
what it gives."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS

import pytest

from tests.support import suites

probes = suites.load("suites/probes/test_probes.py")

TIMED_OUT = 'Liveness probe failed: command timed out: "sh -c exit 0" timed out after 5s'
READINESS_TIMED_OUT = (
    'Readiness probe failed: Get "http://10.244.1.9:8080/healthz": context deadline exceeded '
    "(Client.Timeout exceeded while awaiting headers)"
)
STARTUP_REFUSED = "Startup probe failed: dial tcp 10.244.1.9:8080: connect: connection refused"
PLEG_RELIST = 1.0  # kubelet.go:215 genericPlegRelistPeriod: the restart shows in the status after the next relist


def kubelet_acts_at(
    spec: dict,
    pod_grace: int,
    *,
    kubelet_start: float,
    worker_start: float,
    jitter: float,
    container_start: float,
    started: float,
    failing_from: float,
    passing_takes: float = 0.0,
    kills: bool = True,
) -> float:
    """When the kubelet has acted on a probe of ``spec`` that fails by hanging to its timeout from ``failing_from``
    on (and passes, taking ``passing_takes``, before): for a liveness probe (``kills``) the end of the container's
    stop, else the moment its failureThreshold-th failure ends. ``jitter`` in [0, 1): the worker's random sleep as a
    share of the period."""
    period, timeout = spec.get("periodSeconds", 10), spec.get("timeoutSeconds", 1)
    threshold, delay = spec.get("failureThreshold", 3), spec.get("initialDelaySeconds", 0)
    t = worker_start + (jitter * period if period > worker_start - kubelet_start else 0.0)
    grid, next_tick, run = t, 1, 0
    while True:
        end = t
        if t >= started and int(t - container_start) >= delay:
            if t >= failing_from:
                end, run = t + timeout, run + 1
                if run >= threshold:
                    grace = spec.get("terminationGracePeriodSeconds", pod_grace)
                    return end + (max(grace, 2) if kills else 0.0)
            else:
                end, run = t + passing_takes, 0
        tick = grid + next_tick * period
        if tick <= end:  # a tick fell while the probe ran: the next one starts as it ends, later ticks dropped
            t, next_tick = end, math.floor((end - grid) / period) + 1
        else:
            t, next_tick = tick, next_tick + 1


def worst_delay(spec: dict, pod_grace: int, kills: bool = True) -> float:
    """The longest time, over the kubelet's start, the worker's jitter, the tick's phase and a passing probe's
    duration, from a watch's start (the container running and started) until the kubelet has acted on the probe
    failing from then on."""
    period = spec.get("periodSeconds", 10)
    worst = 0.0
    for kubelet_ago, jitter, phase, passing in itertools.product(
        (0.0, 1000.0), (0.0, 0.5, 0.999), [i * period / 8 for i in range(8)], (0.0, spec.get("timeoutSeconds", 1))
    ):
        container_start = 0.3
        watch = container_start + phase
        acted = kubelet_acts_at(
            spec,
            pod_grace,
            kubelet_start=-kubelet_ago,
            worker_start=0.0,
            jitter=jitter,
            container_start=container_start,
            started=container_start,
            failing_from=watch,
            passing_takes=passing,
            kills=kills,
        )
        worst = max(worst, acted - watch)
    return worst


TIMINGS = [
    {"periodSeconds": 2, "failureThreshold": 3, "timeoutSeconds": 5},
    {"periodSeconds": 2, "failureThreshold": 3, "timeoutSeconds": 5, "terminationGracePeriodSeconds": 2},
    {"periodSeconds": 2, "failureThreshold": 1, "timeoutSeconds": 1},
    {"periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 1},
    {"periodSeconds": 3, "failureThreshold": 2, "timeoutSeconds": 7, "initialDelaySeconds": 15},
    {"periodSeconds": 1, "failureThreshold": 5, "timeoutSeconds": 1, "terminationGracePeriodSeconds": 0},
]


@pytest.mark.parametrize("spec", TIMINGS, ids=lambda s: "-".join(f"{k[:4]}{v}" for k, v in s.items()))
def test_the_watch_outlasts_the_kubelets_slowest_restart_and_unready(spec):
    """probe_window covers the kubelet's sequence for every phase tried, with REPORT_SECONDS left for the status:
    the restart (liveness, the pod's default 30 s grace) and the unready (readiness)."""
    assert worst_delay(spec, 30) + probes.REPORT_SECONDS <= probes.probe_window(spec, 30)
    assert worst_delay(spec, 30, kills=False) + probes.REPORT_SECONDS <= probes.probe_window(spec)
    # Not loose beyond the terms the kubelet may add (the jitter, the initial delay and one step, counted whole).
    step = max(spec["periodSeconds"], spec["timeoutSeconds"])
    slack = spec["periodSeconds"] + spec.get("initialDelaySeconds", 0) + step + probes.REPORT_SECONDS
    assert probes.probe_window(spec, 30) - worst_delay(spec, 30) <= slack


def test_three_hung_tolerant_probes_take_longer_than_the_old_13_s_window():
    """The sequence the issue names: three 5 s timeouts take at least 15 s, plus the stop (c48de23 watched 13 s)."""
    tolerant = {"periodSeconds": 2, "failureThreshold": 3, "timeoutSeconds": 5}
    assert worst_delay(tolerant, 30) >= 15 + 30
    assert worst_delay(probes.TOLERANT_LIVENESS, 30) >= 15 + 2
    assert probes.probe_window(probes.TOLERANT_LIVENESS, 30) >= worst_delay(probes.TOLERANT_LIVENESS, 30) + 1


def test_first_result_within_covers_a_probe_run_without_the_gate():
    for spec in TIMINGS:
        first = max(
            kubelet_acts_at(
                {**spec, "failureThreshold": 1},
                30,
                kubelet_start=0.0,
                worker_start=0.0,
                jitter=jitter,
                container_start=0.0,
                started=0.0,
                failing_from=0.0,
                kills=False,
            )
            for jitter in (0.0, 0.5, 0.999)
        )
        assert first <= probes.first_result_within(spec), spec


# ----------------------------------------------------------------------------------------- the checks, with fakes


def event(message: str, container: str = "main", count: int = 1) -> NS:
    return NS(message=message, count=count, involved_object=NS(field_path=f"spec.containers{{{container}}}"))


class Timeline:
    """The pod and its Unhealthy events as the fake clock goes: ``restarts``: container -> when it restarted;
    ``events``: (from when, event); ``ready_at``: when main was Ready (default: at once)."""

    def __init__(self, clock: list[float], restarts: dict | None = None, events: list | None = None) -> None:
        self.clock, self.restarts, self.events = clock, restarts or {}, events or []
        self.start = clock[0]

    def now(self) -> float:
        return self.clock[0] - self.start

    def status(self, name: str, started: bool = True, ready: bool = True) -> NS:
        at = self.restarts.get(name)
        restarted = at is not None and self.now() >= (at() if callable(at) else at)
        return NS(
            name=name,
            restart_count=int(restarted),
            state=NS(running=NS(started_at=None)),
            started=started,
            ready=ready,
        )

    def pod(self, name: str, containers: tuple[str, ...] = ("main",), **flags: bool) -> NS:
        return NS(
            metadata=NS(name=name),
            spec=NS(termination_grace_period_seconds=30),
            status=NS(container_statuses=[self.status(c, **flags) for c in containers], conditions=[]),
        )

    def events_for(self, api_client, namespace, name, reason):
        return [e for at, e in self.events if self.now() >= at]


def every_kind(monkeypatch, clock, restarts=None, events=None):
    """Run the every-kind check on fakes: the pod Ready at once (the fake clock at 0 when it is); ``restarts``,
    ``events`` as Timeline takes them, where a restart at None comes when the kubelet's sequence gives for the
    liveness probe the check itself set (read from its call of os_pod), hanging from the Ready moment on, plus
    the PLEG's relist."""
    made: dict = {}

    def os_pod(wincon, name, target_os, build, args=None, container_extra=None, **_):
        made.update(container_extra or {})
        return {"spec": {"containers": [{"name": "main", "image": "agnhost", **(container_extra or {})}]}}

    line = Timeline(clock, events=events)
    for name, at in (restarts or {}).items():
        line.restarts[name] = at if at is not None else lambda: worst_delay(made["livenessProbe"], 30) + PLEG_RELIST
    kube = NS(read_pod=lambda name: line.pod(name), wait_pod=lambda name, **kw: line.pod(name))
    monkeypatch.setattr(probes, "os_pod", os_pod)
    monkeypatch.setattr(probes, "run_os_pod", lambda wincon, namespace, body, ready=True: line.pod("all-probes"))
    monkeypatch.setattr(probes, "events_for", line.events_for)
    probes.test_probes_of_every_kind_are_accepted_and_the_pod_is_scheduled(
        kube, NS(api_client=None), "ns", None, lambda *a, **k: None, "linux"
    )
    return line


def test_every_kind_check_passes_a_pod_whose_probes_pass(monkeypatch, clock):
    every_kind(monkeypatch, clock, events=[(0.0, event(STARTUP_REFUSED, count=3))])


def test_every_kind_check_fails_a_hung_liveness_probe_by_its_restart_alone(monkeypatch, clock):
    """No event reached the API (events are best effort): the restart the kubelet's sequence gives for three hung
    liveness probes (the check's own timing, the pod's grace) still fails the check. c48de23 watched 13 s and
    passed it (its probe had the pod's 30 s grace: restarted about 47 s after Ready)."""
    with pytest.raises(AssertionError, match="restarted 1 time"):
        every_kind(monkeypatch, clock, restarts={"main": None})


def test_every_kind_check_fails_a_liveness_probe_that_timed_out(monkeypatch, clock):
    """'timed out' is a failed probe of the probe under test: c48de23 dropped it as a slow answer and passed."""
    with pytest.raises(AssertionError, match="timed out"):
        every_kind(monkeypatch, clock, events=[(7.0, event(TIMED_OUT))])
    assert clock[0] < 10, "the check went on after the kubelet reported the failed probe"


def test_every_kind_check_fails_a_readiness_probe_that_timed_out(monkeypatch, clock):
    with pytest.raises(AssertionError, match="context deadline exceeded"):
        every_kind(monkeypatch, clock, events=[(3.0, event(READINESS_TIMED_OUT))])


def liveness_check(monkeypatch, clock, kind: str, events: list) -> None:
    line = Timeline(clock, restarts={"failing": 0.0}, events=events)
    containers = ("main", "failing")
    kube = NS(
        read_pod=lambda name: line.pod(name, containers),
        wait_pod=lambda name, **kw: line.pod(name, containers),
    )
    monkeypatch.setattr(
        probes,
        "os_pod",
        lambda wincon, name, target_os, build, args=None, container_extra=None, **_: {
            "spec": {"containers": [{"name": "main", "image": "agnhost", **(container_extra or {})}]}
        },
    )
    monkeypatch.setattr(
        probes, "run_os_pod", lambda wincon, namespace, body, ready=True: line.pod(f"liveness-{kind.lower()}")
    )
    monkeypatch.setattr(probes, "events_for", line.events_for)
    monkeypatch.setattr(probes, "wait_for_event", lambda *a, **k: line.events_for(*a[:4]))
    probes.test_failing_liveness_probe_restarts_the_container_and_passing_one_does_not(
        kube, NS(api_client=None), "ns", None, lambda *a, **k: None, kind, "linux"
    )


FAILING_EXIT_1 = "Liveness probe failed: "


def test_liveness_check_passes_when_only_container_failing_fails(monkeypatch, clock):
    liveness_check(monkeypatch, clock, "exec", [(0.0, event(FAILING_EXIT_1, "failing"))])


def test_liveness_check_fails_a_timed_out_probe_of_main(monkeypatch, clock):
    """Container main's liveness probe timing out is its passing probe failing: c48de23 looked at restarts only."""
    with pytest.raises(AssertionError, match="timed out"):
        liveness_check(monkeypatch, clock, "exec", [(0.0, event(FAILING_EXIT_1, "failing")), (6.0, event(TIMED_OUT))])


def test_liveness_check_needs_container_failings_own_failure(monkeypatch, clock):
    """A failed probe of main's does not stand for failing's."""
    with pytest.raises(AssertionError):
        liveness_check(monkeypatch, clock, "exec", [(40.0, event(TIMED_OUT))])


def startup_gate(monkeypatch, clock, extra_events: list) -> None:
    """The startup-gate check on fakes: the startup probe fails every 2 s from 1 s (five failures at 9 s)."""
    line = Timeline(clock)

    def events_for(api_client, namespace, name, reason):
        failures = min(60, max(0, math.floor((line.now() - 1) / 2) + 1))
        said = [event("Startup probe failed: ", count=failures)] if failures else []
        return said + [e for at, e in extra_events if line.now() >= at]

    def eventually(check, timeout, describe, interval=1.0, behaviour=False, seen=None):
        end = line.now() + timeout
        while line.now() <= end:
            if found := check():
                return found
            clock[0] += interval
        raise AssertionError(f"not observed: {describe}")

    gated = {"started": False, "ready": False}
    kube = NS(
        read_pod=lambda name: line.pod(name, **gated),
        core=NS(read_namespaced_pod=lambda name, namespace: line.pod(name, **gated)),
        exec=lambda pod, command: NS(ok=True),
        wait_pod=lambda name, **kw: line.pod(name),
    )
    monkeypatch.setattr(probes, "os_pod", lambda *a, **k: {})
    monkeypatch.setattr(probes, "run_os_pod", lambda wincon, namespace, body, ready=True: line.pod("startup-gate"))
    monkeypatch.setattr(probes, "events_for", events_for)
    monkeypatch.setattr(probes, "eventually", eventually)
    probes.test_startup_probe_holds_liveness_and_readiness_back_until_it_succeeds(
        kube, NS(api_client=None), "ns", None, lambda *a, **k: None, "linux"
    )


def test_startup_gate_check_passes_when_only_the_startup_probe_ran(monkeypatch, clock):
    startup_gate(monkeypatch, clock, [])


def test_startup_gate_check_fails_a_liveness_probe_run_before_startup_passed(monkeypatch, clock):
    """Without the gate, the TOLERANT liveness probe (a worker's jitter of up to 2 s, then a 5 s timeout on a slow
    node) first fails about 11 s after the container ran: after the fifth startup failure (9 s), where c48de23
    stopped looking."""
    with pytest.raises(AssertionError, match="other probes ran"):
        startup_gate(monkeypatch, clock, [(11.0, event("Liveness probe failed: ", count=1))])


def initial_delay(monkeypatch, clock, ready_after: float) -> None:
    started_at = datetime(2026, 11, 28, 15, 0, 0, tzinfo=UTC)
    pod = NS(
        metadata=NS(name="startup-httpget"),
        status=NS(
            container_statuses=[NS(state=NS(running=NS(started_at=started_at)))],
            conditions=[NS(type="Ready", last_transition_time=started_at + timedelta(seconds=ready_after))],
        ),
    )
    kube = NS(wait_pod=lambda name, **kw: pod)
    monkeypatch.setattr(probes, "os_pod", lambda *a, **k: {})
    monkeypatch.setattr(probes, "run_os_pod", lambda *a, **k: pod)
    probes.test_startup_probe_delays_readiness_by_its_initial_delay(
        kube, NS(api_client=None), "ns", None, lambda *a, **k: None, "httpGet", "linux"
    )


def test_initial_delay_check_passes_ready_at_the_delay(monkeypatch, clock):
    initial_delay(monkeypatch, clock, 15)


def test_initial_delay_check_fails_ready_a_second_early(monkeypatch, clock):
    """Ready 14 s after the start of a 15 s initial delay: no probe may count before 15 s (worker.go:331), and both
    times are cut to the second alike; c48de23 allowed a second and passed it."""
    with pytest.raises(AssertionError, match="ready"):
        initial_delay(monkeypatch, clock, 14)
