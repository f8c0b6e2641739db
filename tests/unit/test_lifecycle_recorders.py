"""suites/lifecycle with fakes: the module's recorder pods (one per OS and build, created together when the
first check asks, each waited for when first asked) and the hook and signal checks' end (the recorder's log
holding the check's message ends the wait; the pod's deletion is not waited for once it does)."""

from __future__ import annotations

import time
from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.cluster import waves

conftest = suites.load("suites/lifecycle/conftest.py")
lifecycle = suites.load("suites/lifecycle/test_lifecycle.py")


# ----------------------------------------------------------------------------- the shared recorders


def running(body: dict) -> NS:
    name = body["metadata"]["name"]
    return NS(
        metadata=NS(name=name, namespace="lifecycle-recorders"),
        spec=NS(node_name=f"node-of-{name}"),
        status=NS(pod_ip=f"10.0.0.{len(name)}"),
    )


class Cluster:
    """Records what is created and waited for, in order."""

    def __init__(self, refuse=(), never_runs=()):
        self.log: list[tuple[str, tuple]] = []
        self.refuse, self.never_runs = set(refuse), set(never_runs)

    def create(self, key):
        self.log.append(("create", key))
        if key in self.refuse:
            raise RuntimeError(f"refused {key}")
        return {"metadata": {"name": conftest.recorder_name(key)}, "key": key}

    def wait(self, body):
        self.log.append(("wait", body["key"]))
        if body["key"] in self.never_runs:
            raise TimeoutError(f"{body['key']} never ran")
        return running(body)


WIN_A, WIN_B, LINUX = ("windows", 17763), ("windows", 20348), ("linux", None)


def test_the_first_ask_creates_every_wanted_recorder_and_waits_for_its_own_only():
    cluster = Cluster()
    recorders = conftest.Recorders(cluster.create, cluster.wait, lambda: [WIN_A, LINUX, WIN_B])
    first = recorders.get(WIN_A)
    assert cluster.log == [("create", WIN_A), ("create", LINUX), ("create", WIN_B), ("wait", WIN_A)]
    assert first == conftest.Recorder(
        name="recorder-windows-17763",
        namespace="lifecycle-recorders",
        node="node-of-recorder-windows-17763",
        os="windows",
        ip="10.0.0.22",
    )
    # later asks: each key waited for once, when first asked; nothing created again
    assert recorders.get(LINUX).name == "recorder-linux"
    assert recorders.get(WIN_A) is first
    assert recorders.get(WIN_B).os == "windows"
    assert cluster.log[4:] == [("wait", LINUX), ("wait", WIN_B)]


def test_a_key_no_check_was_expected_to_use_is_created_when_asked():
    cluster = Cluster()
    recorders = conftest.Recorders(cluster.create, cluster.wait, lambda: [LINUX])
    recorders.get(LINUX)
    recorders.get(WIN_B)
    assert cluster.log == [("create", LINUX), ("wait", LINUX), ("create", WIN_B), ("wait", WIN_B)]


def test_a_recorder_that_cannot_run_is_the_error_of_each_check_asking_for_it():
    cluster = Cluster(refuse=[WIN_B], never_runs=[LINUX])
    recorders = conftest.Recorders(cluster.create, cluster.wait, lambda: [WIN_A, WIN_B, LINUX])
    assert recorders.get(WIN_A).name == "recorder-windows-17763"  # another key's refusal is not this check's
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"refused \('windows', 20348\)"):
            recorders.get(WIN_B)
        with pytest.raises(TimeoutError, match="never ran"):
            recorders.get(LINUX)
    assert cluster.log.count(("wait", LINUX)) == 1, "a recorder that never ran is not waited for again"
    assert ("wait", WIN_B) not in cluster.log


def test_ready_gives_a_recorder_only_once_it_runs_without_waiting_for_it():
    """What is made ahead takes the recorder's IP: ``ready`` gives it once the pod runs (one read, ``peek``), and
    ``waves.NotYet`` before it was created, while it starts and where it was refused; it never waits."""
    cluster = Cluster(refuse=[WIN_B])
    started: set = set()
    recorders = conftest.Recorders(
        cluster.create,
        cluster.wait,
        lambda: [LINUX, WIN_A, WIN_B],
        lambda body: running(body) if body["key"] in started else None,
    )
    with pytest.raises(waves.NotYet):
        recorders.ready(WIN_A)  # not created yet: no check has asked
    recorders.get(LINUX)
    with pytest.raises(waves.NotYet, match="still starting"):
        recorders.ready(WIN_A)
    started.add(WIN_A)
    assert recorders.ready(WIN_A).ip == running({"metadata": {"name": "recorder-windows-17763"}}).status.pod_ip
    with pytest.raises(waves.NotYet, match="refused"):
        recorders.ready(WIN_B)
    assert ("wait", WIN_A) not in cluster.log, "ready() must never wait for a recorder"
    assert recorders.ready(LINUX) == recorders.get(LINUX)


def test_the_recorder_checks_are_made_ahead_with_the_recorders_ip_once_it_runs():
    """The Ahead of the module passes over a check whose builder takes ``recorder`` until the supplier gives it,
    then makes its pod with that recorder's IP in its hook: the very manifest the check builds."""
    made: list[dict] = []
    ahead = waves.Ahead(lambda item: f"ns-{item.name}", lambda ns, m: made.append(m), lambda item: {},
                        lambda ns: None)  # fmt: skip
    item = NS(
        nodeid="suites/lifecycle/test_lifecycle.py::test_post_start_http_hook_reaches_the_recorder[windows]",
        name="test_post_start_http_hook_reaches_the_recorder[windows]",
        function=lifecycle.test_post_start_http_hook_reaches_the_recorder,
        fixturenames=["kube", "wincon", "namespace", "build", "recorder", "data_plane", "target_os"],
    )
    wincon = NS(catalog=NS(image=lambda *a: "agnhost:2.59"), pull_policy=None)
    arguments = {"wincon": wincon, "target_os": "windows", "build": 26100}
    ahead.arguments = lambda it: arguments
    ahead.top_up([item])
    assert made == [], "made before the module supplied a recorder"
    recorder = conftest.Recorder("recorder-windows-26100", "rec", "node-a", "windows", "10.0.0.9")
    ready = {"now": False}

    def supplier(it):
        if not ready["now"]:
            raise waves.NotYet("still starting")
        return recorder

    ahead.provide("recorder", supplier)
    ahead.top_up([item])
    assert made == []
    ready["now"] = True
    ahead.top_up([item])
    assert made == [lifecycle.poststart_http_pod(wincon, "windows", 26100, recorder)]
    assert made[0]["spec"]["containers"][0]["lifecycle"]["postStart"]["httpGet"]["host"] == "10.0.0.9"


def test_the_recorder_is_a_placed_pod_so_every_checks_gate_counts_its_node():
    from wincon.clusterinfo.nodes import PlacedPod

    recorder = conftest.Recorder(name="r", namespace="n", node="win-0", os="windows", ip="10.0.0.9")
    assert isinstance(recorder, PlacedPod)


def item(nodeid: str, fixtures=("recorder",), skipped=False, target_os=None):
    marker = NS(name="skip") if skipped else None
    callspec = NS(params={"target_os": target_os}) if target_os else None
    return NS(
        nodeid=nodeid,
        fixturenames=list(fixtures),
        callspec=callspec,
        get_closest_marker=lambda name: marker if name == "skip" else None,
    )


def test_the_wanted_keys_are_those_of_checks_that_take_a_recorder_and_will_run():
    items = [
        item("a", target_os="linux"),
        item("b", fixtures=("kube",)),  # no recorder
        item("c", skipped=True),  # skipped at collection: runs no fixture
        item("d"),
        item("e", target_os="linux"),
    ]
    keys = conftest.keys_to_run(items, lambda i: conftest.recorder_key(conftest.os_of(i), 17763))
    assert keys == [("linux", None), ("windows", 17763)]


# ----------------------------------------------------------------------------- the checks' end


class Core:
    """A pod being deleted that stays (on real Windows nodes a deletion takes tens of seconds), a recorder log."""

    def __init__(self, log: str, goes_after: float | None = None):
        self.log, self.deleted_at, self.goes_after = log, None, goes_after

    def delete_namespaced_pod(self, name, namespace):
        self.deleted_at = time.monotonic()

    def read_namespaced_pod(self, name, namespace):
        if self.goes_after is not None and time.monotonic() - self.deleted_at >= self.goes_after:
            raise lifecycle.ApiException(status=404)
        return NS(metadata=NS(name=name))

    def read_namespaced_pod_log(self, name, namespace):
        return self.log


RECORDER = conftest.Recorder(name="recorder-linux", namespace="rec", node="worker-0", os="linux", ip="10.244.2.9")


def run_pre_stop(monkeypatch, core) -> float:
    monkeypatch.setattr(lifecycle, "run_os_pod", lambda wincon, namespace, body: NS(spec=NS(node_name="worker-1")))
    kube = NS(core=core, namespace="ns")
    wincon = NS(catalog=NS(image=lambda key, target_os, build=None: "agnhost"))
    start = time.monotonic()
    lifecycle.test_pre_stop_hook_runs_when_the_pod_is_deleted(
        kube, wincon, "ns", None, RECORDER, lambda *a, **k: None, "httpGet", "linux"
    )
    return time.monotonic() - start


def test_the_pre_stop_check_ends_once_the_hook_is_recorded_not_when_the_pod_is_gone(monkeypatch):
    core = Core("GET /echo?msg=prestop-httpget\n")  # the pod never goes within the test
    assert run_pre_stop(monkeypatch, core) < 5


def test_the_pre_stop_check_fails_when_the_pod_went_without_a_hook_request(monkeypatch):
    core = Core("GET /echo?msg=other\n", goes_after=0.0)
    with pytest.raises(AssertionError, match="heard no msg=prestop-httpget before the pod was gone"):
        run_pre_stop(monkeypatch, core)


def test_recorded_or_gone_reads_the_log_again_once_the_pod_is_gone():
    class Late(Core):
        reads = 0

        def read_namespaced_pod_log(self, name, namespace):
            self.reads += 1
            return "" if self.reads == 1 else "GET /echo?msg=sigterm-trapped\n"

    core = Late("", goes_after=0.0)
    core.delete_namespaced_pod("trap-term", "ns")
    log = lifecycle.recorded_or_gone(
        NS(core=core, namespace="ns"), RECORDER, "msg=sigterm-trapped", "trap-term", timeout=5
    )
    assert "msg=sigterm-trapped" in log
