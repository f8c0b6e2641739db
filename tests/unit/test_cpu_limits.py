"""suites/scheduling/test_cpu_limits.py: when the CPU-limit check reads /stats/summary. The reading's window must lie
inside the load (a first sample one stats period after the start, the reading one period after that sample), on a
fake kubelet whose samples are taken on a fake clock: no cluster, no real sleep."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from tests.support import suites
from wincon.errors import InfrastructureError

CPU = suites.load("suites/scheduling/test_cpu_limits.py")
START = datetime(2026, 11, 24, 14, 0, 0, tzinfo=UTC)


def summary(at: datetime | None, pods: tuple[str, ...] = ("cpu-0p5", "cpu-500m"), namespace: str = "ns") -> dict:
    cpu = {"usageNanoCores": 400_000_000} | ({"time": at.strftime("%Y-%m-%dT%H:%M:%SZ")} if at else {})
    return {"pods": [{"podRef": {"name": n, "namespace": namespace}, "containers": [{"cpu": cpu}]} for n in pods]}


class Kubelet:
    """A kubelet whose CPU samples are taken when asked (containerd's path), ``lag`` seconds late, or never
    refreshed after ``frozen_after`` seconds, on a clock that only sleeps advance."""

    def __init__(self, monkeypatch, lag: float = 0.0, frozen_after: float | None = None) -> None:
        self.now = 0.0  # seconds since START
        self.lag = lag
        self.frozen_after = frozen_after
        self.reads: list[float] = []  # the sample time of each answer, seconds since START
        monkeypatch.setattr(time, "sleep", self.sleep)
        monkeypatch.setattr(time, "monotonic", lambda: 1000.0 + self.now)
        monkeypatch.setattr(CPU, "kubelet_json", self.answer)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def answer(self, api_client, node: str, path: str):
        assert (node, path) == ("worker-0", "stats/summary")
        self.now += 0.05
        sampled = max(0.0, self.now - self.lag)
        if self.frozen_after is not None:
            sampled = min(sampled, self.frozen_after)
        self.reads.append(sampled)
        return summary(START + timedelta(seconds=sampled)), 0.05


def kube() -> SimpleNamespace:
    return SimpleNamespace(api_client=None, namespace="ns")


def test_sample_times_reads_the_pods_cpu_time_in_its_namespace_only():
    assert CPU.sample_times(summary(START), "ns", "cpu-0p5") == START
    assert CPU.sample_times(summary(START, namespace="other"), "ns", "cpu-0p5") is None
    assert CPU.sample_times(summary(START), "ns", "cpu-absent") is None
    assert CPU.sample_times(summary(None), "ns", "cpu-0p5") is None  # listed, never sampled


@pytest.mark.parametrize("os_name", ["linux", "windows"])
@pytest.mark.parametrize("lag", [0.0, 7.0])  # sampled when asked, or on a housekeeping round up to 7 s old
def test_the_reading_comes_one_stats_period_after_a_sample_taken_a_period_into_the_load(monkeypatch, os_name, lag):
    kubelet = Kubelet(monkeypatch, lag=lag)
    load = CPU.LOAD_SECONDS[os_name]
    started = {"cpu-0p5": START, "cpu-500m": START + timedelta(seconds=1)}
    reading = CPU.load_reading(kube(), "worker-0", started, load)
    period = CPU.STATS_PERIOD_SECONDS
    for name, at in started.items():
        taken = (CPU.sample_times(reading, "ns", name) - at).total_seconds()
        assert taken >= load  # the reading's sample: after the whole load
    read = kubelet.reads[-1]
    # An earlier answer was sampled at least one period into the load and at least one period before the reading:
    # whatever the kubelet's rate window, it starts after that earlier sample, inside the load.
    assert any(1 + period <= earlier <= read - period for earlier in kubelet.reads[:-1])
    assert read < load + 1 + 3 * period  # and no longer than needed: at most a few polls past it


def test_the_linux_control_reads_after_20_s_of_load_and_windows_after_upstreams_2_minutes(monkeypatch):
    assert CPU.LOAD_SECONDS == {"windows": 120.0, "linux": 20.0}
    kubelet = Kubelet(monkeypatch)
    CPU.load_reading(kube(), "worker-0", {"cpu-0p5": START}, CPU.LOAD_SECONDS["linux"])
    assert 20.0 <= kubelet.now < 30.0  # it was 122 s: a fixed 120 s sleep after both pods ran


def test_a_kubelet_that_stops_sampling_is_the_clusters_error_not_a_reading(monkeypatch):
    Kubelet(monkeypatch, frozen_after=15.0)  # the first sample (>= 10 s) comes, the reading's (>= 20 s) never
    with pytest.raises(InfrastructureError, match="CPU samples of"):
        CPU.load_reading(kube(), "worker-0", {"cpu-0p5": START}, CPU.LOAD_SECONDS["linux"])
