"""The helpers the upstream-parity checks use (wincon.checks.node): Gomega's Consistently, and upstream's four
HostProcess counters by container_type."""

from __future__ import annotations

from wincon.checks import node
from wincon.checks.node import consistently, host_process_counts, parse_metrics

METRICS = """
# TYPE kubelet_started_host_process_containers_total counter
kubelet_started_host_process_containers_total{container_type="container"} 4
kubelet_started_host_process_containers_total{container_type="init_container"} 2
kubelet_started_host_process_containers_errors_total{code="RunContainerError",container_type="container"} 1
kubelet_started_host_process_containers_errors_total{code="ErrImagePull",container_type="container"} 2
kubelet_started_host_process_containers_errors_total{code="RunContainerError",container_type="init_container"} 3
kubelet_started_containers_total{container_type="container"} 40
"""


def test_host_process_counts_split_by_container_type_and_sum_every_error_code():
    assert host_process_counts(parse_metrics(METRICS)) == {
        "started container": 4.0,
        "container error": 3.0,
        "started init_container": 2.0,
        "init_container error": 3.0,
    }


def test_host_process_counts_are_zero_without_the_series():
    assert set(host_process_counts(parse_metrics("kubelet_running_pods 3\n")).values()) == {0.0}


def test_consistently_holds_only_when_every_poll_holds(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(node.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(node.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + max(seconds, 0.25)))
    polls: list[float] = []

    def fine() -> None:
        polls.append(clock[0])

    assert consistently(fine, seconds=10, interval=1) is None
    assert len(polls) >= 10 and polls[-1] >= 9, polls

    answers = iter([None, None, "connection refused", None])
    failure = consistently(lambda: next(answers), seconds=10, interval=1)
    assert failure == "failed at poll 3 of a 10 s window: connection refused"


def test_consistently_polls_at_least_twice_even_when_the_window_is_over():
    seen = []
    assert consistently(lambda: seen.append(1), seconds=0, interval=0) is None
    assert len(seen) == 2
