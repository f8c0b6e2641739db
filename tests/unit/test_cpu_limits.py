"""suites/scheduling/test_cpu_limits.py: how and when the CPU-limit check reads /stats/summary. Each pod is judged by
the CPU seconds it used over the same window of at least 20 s, which must lie inside the load (it opens at a sample
one stats period after the start, or later so that it closes after the whole load), on a fake kubelet whose samples
are taken on a fake clock: no cluster, no real sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.checks.cpu import RATE_WINDOW_SECONDS, cpu_seconds
from wincon.cluster.kube import ApiException
from wincon.commandline.errors import InfrastructureError, linux_control

CPU = suites.load("suites/scheduling/test_cpu_limits.py")
START = datetime(2026, 11, 24, 14, 0, 0, tzinfo=UTC)
LIMITED = ("cpu-0p5", "cpu-500m")
TWINS = tuple(CPU.twin_of(n) for n in LIMITED)  # cpu-0p5-twin, cpu-500m-twin: one beside each limited pod


@pytest.fixture(autouse=True)
def first_node(monkeypatch):
    """The node choice by unrequested CPU reads the API (wincon.checks.scheduling.least_requested, its own unit test):
    here the check takes the first node, as with no other load."""
    monkeypatch.setattr(CPU, "least_requested", lambda api_client, nodes, resource: nodes[0])


def pods(p0p5: float, p500m: float, twin: float) -> dict[str, float]:
    """The cores of each pod the fake kubelet lists: the two limited pods, and each one's twin at ``twin``."""
    return {"cpu-0p5": p0p5, "cpu-500m": p500m, **dict.fromkeys(TWINS, twin)}


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


class Kubelet:
    """A kubelet whose CPU samples are taken when asked (containerd's path), ``lag`` seconds late, or never
    refreshed after ``frozen_after`` seconds, on a clock that only sleeps advance. Pod ``n`` runs from START at
    ``cores[n]``; ``drift(n, t)`` is how many seconds after its stamp ``t`` the counter of pod ``n`` was read."""

    def __init__(
        self,
        monkeypatch,
        cores: dict[str, float] | None = None,
        lag: float = 0.0,
        frozen_after: float | None = None,
        drift: Callable[[str, float], float] = lambda name, at: 0.0,
    ) -> None:
        self.now = 0.0  # seconds since START
        self.cores = cores or pods(0.5, 0.5, 0.9)
        self.later: dict[str, float] = {}  # cores from ``then`` seconds on (a node that gives the twin more later)
        self.then = float("inf")
        self.lag = lag
        self.frozen_after = frozen_after
        self.drift = drift
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
        pods = []
        for name, cores in self.cores.items():
            at = sampled + self.drift(name, sampled)
            later = self.later.get(name, cores)
            used = cores * min(at, self.then) + later * max(0.0, at - self.then)
            cpu = {"time": stamp(sampled), "usageCoreNanoSeconds": int(used * 1e9)}
            pods.append({"podRef": {"name": name, "namespace": "ns"}, "containers": [{"cpu": cpu}]})
        return {"pods": pods}, 0.05


def kube() -> NS:
    return NS(api_client=None, namespace="ns")


def read(load: float, started: dict[str, datetime] | None = None) -> NS:
    return CPU.load_window(
        kube(), "worker-0", started or dict.fromkeys(LIMITED, START), load, lambda cores: True, CPU.WAIT_SECONDS
    )


@pytest.mark.parametrize("os_name", ["linux", "windows"])
@pytest.mark.parametrize("lag", [0.0, 7.0])  # sampled when asked, or on a housekeeping round up to 7 s old
def test_the_window_opens_a_stats_period_into_the_load_and_closes_after_the_whole_load(monkeypatch, os_name, lag):
    kubelet = Kubelet(monkeypatch, lag=lag)
    load = CPU.LOAD_SECONDS[os_name]
    started = {"cpu-0p5": START, "cpu-500m": START + timedelta(seconds=1)}
    window = read(load, started)
    period = CPU.STATS_PERIOD_SECONDS
    last = window.history[-1]
    first = next(h for h in reversed(window.history[:-1]) if (last["cpu-0p5"][0] - h["cpu-0p5"][0]).seconds >= 20)
    for name, at in started.items():
        opened, closed = (first[name][0] - at).total_seconds(), (last[name][0] - at).total_seconds()
        assert opened >= period  # whatever the kubelet's stats path, the window opens inside the load
        assert closed - opened >= RATE_WINDOW_SECONDS
        assert closed >= load  # and closes after the whole load
    assert window.windows[-1] == {"cpu-0p5": pytest.approx(0.5), "cpu-500m": pytest.approx(0.5)}
    assert kubelet.reads[-1] < load + 1 + 3 * period  # and no longer than needed: at most a few polls past it


def test_the_linux_control_reads_after_30_s_of_load_and_windows_after_upstreams_2_minutes(monkeypatch):
    assert CPU.LOAD_SECONDS == {"windows": 120.0, "linux": 30.0}
    kubelet = Kubelet(monkeypatch)
    read(CPU.LOAD_SECONDS["linux"])
    assert 30.0 <= kubelet.now < 40.0


def test_a_kubelet_that_stops_sampling_is_the_clusters_error_not_a_reading(monkeypatch):
    Kubelet(monkeypatch, frozen_after=25.0)  # samples inside the load come, but never 20 s of them
    with pytest.raises(InfrastructureError, match=r"none \(\d+ summaries with samples of every pod"):
        read(CPU.LOAD_SECONDS["linux"])


def ci_drift(name: str, at: float) -> float:
    """CI's case (make main, test_cpu_limits[linux]): one sample of cpu-0p5, the one that closes the first window,
    has its counter read 0.96 s after its stamp; a rate over one stats period ending there read 0.548 core."""
    return 0.96 if name == "cpu-0p5" and 30.0 <= at < 32.0 else 0.0


def check(monkeypatch, bodies: list[dict] | None = None, target_os: str = "linux") -> list[tuple[str, str]]:
    """The whole control on the fake kubelet (``bodies``: where the pods it creates go); the properties it recorded."""
    monkeypatch.setattr(CPU, "nodes_for", lambda *a: [NS(name="worker-0")])
    if bodies is None:
        monkeypatch.setattr(CPU, "burn_pod", lambda *a: {})
    running = NS(status=NS(phase="Running", container_statuses=[NS(state=NS(running=NS(started_at=START)))]))
    cluster = NS(namespace="ns", api_client=None, create=(bodies if bodies is not None else []).append)
    cluster.wait_pod = lambda *a, **k: running
    deleted: set[str] = set()

    def read_pod(name: str) -> NS:
        if name in deleted:
            raise ApiException(status=404)
        return running

    cluster.read_pod = read_pod
    cluster.delete_pod = lambda name, grace=None: deleted.add(name)
    request = NS(node=NS(user_properties=[]))
    wincon = NS(
        profile=None, pod_start_timeout=5, catalog=NS(image=lambda key, os_name, build=None: f"{key}-{os_name}")
    )
    with linux_control():
        CPU.test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it(
            request, cluster, wincon, 17763, lambda *a, **k: None, target_os
        )
    return request.node.user_properties


def test_the_drift_that_failed_ci_reads_under_the_ceiling_over_the_window(monkeypatch):
    kubelet = Kubelet(monkeypatch, drift=ci_drift)
    properties = check(monkeypatch)
    # The same samples, read over one stats period ending at the drifted one: CI's 0.548.
    ends = [r for r in kubelet.reads if 30.0 <= r < 32.0]
    assert ends, kubelet.reads
    one_period = (0.5 * (ends[0] + 0.96) - 0.5 * (ends[0] - CPU.STATS_PERIOD_SECONDS)) / CPU.STATS_PERIOD_SECONDS
    assert one_period == pytest.approx(0.548) and one_period > CPU.MAX_CORES
    readings = dict(properties)
    assert float(readings["cpu_cores_limit_0.5"]) <= 0.525 and float(readings["cpu_cores_limit_500m"]) == 0.5


@pytest.mark.parametrize("over", [0.56, 0.84, 1.0])
def test_a_pod_truly_over_the_ceiling_still_fails_even_with_the_drift_in_its_favour(monkeypatch, over):
    """0.56: just past the margin, its closing sample's counter read 0.5 s before its stamp (about 0.546 over the
    window); 0.84: what upstream's own bound lets pass; 1.0: a pod with no cap on a 2-core node. The pod over is
    cpu-0p5, the first pair's, whose window closes on the drifted samples (from 30 s on)."""
    cores = pods(over, 0.5, 0.9)
    Kubelet(monkeypatch, cores=cores, drift=lambda name, at: -0.5 if name == "cpu-0p5" and at >= 30 else 0.0)
    with pytest.raises(AssertionError, match=r"over 0.54 core over a 20 s window: cpu-0p5 \(limit 0.5\)") as failed:
        check(monkeypatch)
    used = float(str(failed.value).split(" uses ")[1].split()[0])
    assert CPU.MAX_CORES < used < over
    assert "cpu-500m (limit" not in str(failed.value).split("\n")[0]


def test_cpu_seconds_is_the_reading_the_window_is_made_of():
    summary = {
        "pods": [
            {
                "podRef": {"name": "cpu-0p5", "namespace": "ns"},
                "containers": [{"cpu": {"time": stamp(10), "usageCoreNanoSeconds": 5_000_000_000}}],
            }
        ]
    }
    assert cpu_seconds(summary, "ns", "cpu-0p5") == (START + timedelta(seconds=10), 5.0)


# --------------------------------------------------------------------------- the unlimited twin


def test_a_starved_twin_shows_nothing_about_the_limit_an_error_not_a_pass(monkeypatch):
    """The weak evidence before: both limited pods read above zero (0.30) and under the ceiling, and that passed; a
    node that gave the same load no more than that (the twin at 0.45) shows no cap."""
    Kubelet(monkeypatch, cores=pods(0.30, 0.30, 0.45))
    with pytest.raises(InfrastructureError, match="could not show the limit matters") as errored:
        check(monkeypatch)
    assert "cpu-0p5-twin 0.450" in str(errored.value)  # every window's readings, in the message
    assert not isinstance(errored.value, AssertionError)


@pytest.mark.parametrize("twin", [0.55, 0.74])
def test_a_twin_short_of_one_and_a_half_times_the_limit_is_not_enough(monkeypatch, twin):
    Kubelet(monkeypatch, cores=pods(0.5, 0.5, twin))
    with pytest.raises(InfrastructureError, match="could not show the limit matters"):
        check(monkeypatch)


def test_a_twin_given_the_cpu_later_is_waited_for_and_judges(monkeypatch):
    kubelet = Kubelet(monkeypatch, cores=pods(0.5, 0.5, 0.3))
    kubelet.later, kubelet.then = dict.fromkeys(TWINS, 1.0), 60.0  # the node's other work ends after 60 s
    properties = dict(check(monkeypatch))
    assert kubelet.now > 70.0  # a window mostly after it (at 0.3 then 1.0: 0.755 over 20 s), not the first at 30 s
    assert float(properties["cpu_cores_twin_0.5"]) >= CPU.TWIN_SHOWN_CORES
    assert float(properties["cpu_cores_limit_0.5"]) == pytest.approx(0.5, abs=0.001)


def test_a_limited_pod_over_the_ceiling_fails_whatever_its_twin_read(monkeypatch):
    Kubelet(monkeypatch, cores=pods(0.70, 0.5, 0.6))
    with pytest.raises(
        AssertionError, match=r"cpu-0p5 \(limit 0.5\) uses 0.700 cores \(the unlimited twin cpu-0p5-twin"
    ):
        check(monkeypatch)


def test_a_limited_load_that_did_not_run_beside_a_busy_twin_is_an_error(monkeypatch):
    Kubelet(monkeypatch, cores=pods(0.5, 0.04, 1.5))
    with pytest.raises(InfrastructureError, match="could not show the limit matters"):
        check(monkeypatch)


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_the_twin_runs_the_same_command_and_request_on_the_same_node_without_a_limit(monkeypatch, os_name):
    Kubelet(monkeypatch)
    bodies: list[dict] = []
    check(monkeypatch, bodies, os_name)
    assert [b["metadata"]["name"] for b in bodies] == ["cpu-0p5", "cpu-0p5-twin", "cpu-500m", "cpu-500m-twin"]
    containers = [b["spec"]["containers"][0] for b in bodies]
    twin = {"requests": {"cpu": "500m", "memory": "1Gi"}}  # the limited pods' requests, which their limits give them
    assert [c["resources"] for c in containers] == [
        {"limits": {"cpu": "0.5", "memory": "1Gi"}},
        twin,
        {"limits": {"cpu": "500m", "memory": "1Gi"}},
        twin,
    ]
    assert len({(str(c.get("command")), str(c.get("args")), c["image"]) for c in containers}) == 1
    if os_name == "windows":
        assert containers[0]["command"] == CPU.CPU_BURN  # upstream's powershell burn, on the twin too
    else:
        assert containers[0]["args"] == ["stress", "--cpus=8"]
    assert len({str(b["spec"]["nodeSelector"]) for b in bodies}) == 1
    assert bodies[0]["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "worker-0"
