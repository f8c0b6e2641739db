"""bench/bench_run.py's PodCounter waits out a brief outage of the API server (the suite's client keeps urllib3's
retries at 1: tenacity owns retries): its reads and its watch go through the suite's bounded retry policy
(wincon.cluster.client.retrying), the watch resumes from the last version it saw, an expired version lists every
pod again (and the figures say some may be missed), and an outage beyond the bound ends the count with the reason
in the figures, never silently. Before, the first refused connection raised at once (at the start) or ended the
watch thread (during the run), and the pods created after it were not counted."""

from __future__ import annotations

import time
from types import SimpleNamespace as NS
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

import wincon.cluster.client as wincon_client
from tests.support import suites
from wincon.results import podwaits

BENCH = suites.load("bench/bench_run.py")
NODES = NS(items=[NS(metadata=NS(name="lin-worker-0", labels={"kubernetes.io/os": "linux"}))])


def refused() -> urllib3.exceptions.MaxRetryError:
    return urllib3.exceptions.MaxRetryError(
        None, "/api/v1/pods", urllib3.exceptions.NewConnectionError(None, "refused")
    )


def pod(uid: str, version: str, namespace: str = "wincon-net", node: str = "lin-worker-0") -> Any:
    return NS(metadata=NS(uid=uid, namespace=namespace, resource_version=version), spec=NS(node_name=node))


class Api:
    """list_node / list_pod_for_all_namespaces fail with the next of ``failures[name]`` first; the pod list answers
    ``existing`` at version ``listed_at``."""

    def __init__(self, existing: list[Any], listed_at: str = "100", **failures: list[Exception]) -> None:
        self.existing, self.listed_at, self.failures = existing, listed_at, failures
        self.calls: list[str] = []

    def _answer(self, name: str, value: Any) -> Any:
        self.calls.append(name)
        pending = self.failures.get(name) or []
        if pending:
            raise pending.pop(0)
        return value

    def list_node(self) -> Any:
        return self._answer("list_node", NODES)

    def list_pod_for_all_namespaces(self, **kwargs: Any) -> Any:
        return self._answer("list_pods", NS(items=list(self.existing), metadata=NS(resource_version=self.listed_at)))


class Watches:
    """Each watch started takes the next step: a list of events, or an exception raised before any event. When
    the steps run out, the run ends (the counter's stop is set). Records the version each watch asked for."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps, self.asked, self.counter = list(steps), [], None

    def __call__(self) -> Watches:
        return self

    def stream(self, func: Any, resource_version: str, timeout_seconds: int) -> Any:
        self.asked.append(resource_version)
        if not self.steps:
            self.counter._stop.set()
            return
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        for event in step:
            yield {"type": "ADDED", "object": event}

    def stop(self) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # tenacity's waits
    monkeypatch.setattr(wincon_client, "load_api_client", lambda *a, **k: None)

    def make(api: Api, steps: list[Any]) -> tuple[Any, Watches]:
        import kubernetes.client
        import kubernetes.watch

        watches = Watches(steps)
        monkeypatch.setattr(kubernetes.client, "CoreV1Api", lambda *_: api)
        monkeypatch.setattr(kubernetes.watch, "Watch", watches)
        counter = BENCH.PodCounter("kubeconfig")
        watches.counter = counter
        return counter, watches

    return make


def test_a_brief_outage_at_the_start_is_waited_out(cluster) -> None:
    api = Api([], list_node=[refused(), refused()], list_pods=[refused()])
    counter, _ = cluster(api, [])
    assert counter.node_os == {"lin-worker-0": "linux"}
    assert api.calls == ["list_node"] * 3 + ["list_pods"] * 2


def test_a_watch_broken_by_an_outage_resumes_from_the_last_version_and_counts_what_came_after(cluster) -> None:
    api = Api([])
    steps = [
        [pod("a", "101")],
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError()),  # the server went away
        refused(),
        refused(),  # still restarting
        [pod("b", "105"), pod("c", "106", node="")],
    ]
    counter, watches = cluster(api, steps)
    counter._watch()  # what the counter's thread runs, until the run ends
    assert set(counter.pods) == {"a", "b", "c"} and not counter.lost and not counter.caveat()
    assert watches.asked[:5] == ["100", "101", "101", "101", "101"]  # resumed where it was, never from "now"
    assert counter.by_os() == {"linux": 2, "unscheduled": 1}


def test_an_expired_version_lists_every_pod_and_the_figures_say_some_may_be_missed(cluster) -> None:
    addon = pod("addon", "50", namespace="metallb-system")
    api = Api([addon], listed_at="100")
    counter, _ = cluster(api, [[pod("a", "101")], ApiException(status=410, reason="Expired")])
    api.existing = [addon, pod("a", "101"), pod("b", "140"), pod("dns", "90", namespace="kube-system")]
    api.listed_at = "150"
    counter._watch()
    assert set(counter.pods) == {"a", "b"}  # the add-on's pod existed before the run; kube-system is not counted
    assert counter.relisted == 1 and "expired 1 time(s)" in counter.caveat() and not counter.lost


def test_an_outage_beyond_the_bound_ends_the_count_and_says_so(cluster) -> None:
    counter, watches = cluster(Api([]), [refused() for _ in range(50)])
    counter._watch()
    assert len(watches.asked) == wincon_client.RETRY_ATTEMPTS  # bounded: the suite's policy, not forever
    assert "the pod watch ended during the run: MaxRetryError" in counter.lost
    assert counter.caveat().startswith("the pod watch ended during the run")


def test_a_refusal_that_is_not_transient_ends_the_count_at_once(cluster) -> None:
    counter, watches = cluster(Api([]), [ApiException(status=403, reason="Forbidden")])
    counter._watch()
    assert len(watches.asked) == 1 and "Forbidden" in counter.lost


def test_the_figures_print_an_incomplete_count(capsys: pytest.CaptureFixture[str]) -> None:
    figures = {"pods": 0, "windows_pods": 0, "linux_pods": 0, "other_pods": 0, "waits": 0, "wait_seconds": 0.0}
    result = {
        "mode": "no model", "up": 1.0, "results": "r", "wall": 2.0, "exit": 0, "verdicts": {}, "summary": "",
        "created": {"linux": 1}, "created_total": 1, "created_per_area": {}, "created_caveat": "the pod watch ended",
        "figures": {**figures, "critical_path_seconds": 0.0},
        "floor": podwaits.floor([]), "chains": [],  # an empty ledger: a floor of nothing waited
    }  # fmt: skip
    BENCH.show(result)
    assert "INCOMPLETE: the pod watch ended" in capsys.readouterr().out
