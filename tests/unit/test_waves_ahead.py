"""What a check creates first, made ahead while the checks before it run (issue 44, item 2): wincon.cluster.waves'
``ahead`` without a cluster. Objects are made in each check's own reserved namespace, in the check's order, while
fewer than the limit of pods wait for their checks; the check's own create adopts exactly what it asks for, or errs;
an error making one is that check's, and what it would create next is not made; what no check took is deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from wincon.checks import api_rules
from wincon.checks.pods import Rejected, create_or_reject
from wincon.cluster import waves
from wincon.commandline.errors import SuiteError
from wincon.session.fixtures import make_ahead
from wincon.workloads import deploy


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [], **spec}}


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def two_pods(target_os: str, kind: str) -> list[dict[str, Any]]:
    return [pod(f"{kind}-a", os=target_os), pod(f"{kind}-b", os=target_os)]


def one_pod(target_os: str) -> dict[str, Any]:
    return pod("one", os=target_os)


def map_then_pod(target_os: str, build: int | None) -> list[dict[str, Any]]:
    return [config_map("settings"), pod("reader", os=target_os, build=build)]


def takes_a_fixture(kube: Any) -> dict[str, Any]:
    return pod("never")


def check_a() -> None:
    """A check without builders."""


@waves.ahead(two_pods)
def check_b() -> None:
    """Declares two pods."""


@waves.ahead(one_pod)
def check_c() -> None:
    """Declares one pod."""


@waves.ahead(map_then_pod)
def check_d() -> None:
    """Declares a ConfigMap, then a pod that reads it."""


class Item:
    def __init__(self, name: str, function: Any, **params: Any) -> None:
        self.nodeid, self.name, self.function = f"suites/x.py::{name}", name, function
        self.callspec = SimpleNamespace(params={"target_os": "windows", **params})


class Cluster:
    """Reserves namespaces and makes objects, recording each step; ``refuse``: names whose making raises."""

    def __init__(self, refuse: dict[str, BaseException] | None = None, reserve_fails: bool = False) -> None:
        self.log: list[tuple[str, str]] = []
        self.refuse, self.reserve_fails = refuse or {}, reserve_fails

    def reserve(self, item: Any) -> str:
        if self.reserve_fails:
            raise RuntimeError("namespace got no default ServiceAccount in time")
        self.log.append(("reserve", item.name))
        return f"ns-{item.name}"

    def make(self, namespace: str, manifest: dict[str, Any]) -> str:
        name = manifest["metadata"]["name"]
        self.log.append(("make", f"{namespace}/{name}"))
        if name in self.refuse:
            raise self.refuse[name]
        return f"made {namespace}/{name}"

    def release(self, namespace: str) -> None:
        self.log.append(("release", namespace))

    def ahead(self, pods: int = waves.AHEAD_PODS) -> waves.Ahead:
        return waves.Ahead(self.reserve, self.make, lambda item: {"build": 26100, **item.callspec.params},
                           self.release, pods=pods)  # fmt: skip


@pytest.fixture(autouse=True)
def empty_registry() -> Iterator[None]:
    waves._MADE.clear()
    yield
    waves._MADE.clear()


def test_each_declared_check_gets_a_namespace_of_its_own_with_its_objects_made_in_its_order() -> None:
    cluster = Cluster()
    ahead = cluster.ahead()
    items = [Item("a", check_a), Item("b", check_b, kind="exec"), Item("d", check_d)]
    ahead.top_up(items)
    assert cluster.log == [
        ("reserve", "b"),
        ("make", "ns-b/exec-a"),
        ("make", "ns-b/exec-b"),
        ("reserve", "d"),
        ("make", "ns-d/settings"),
        ("make", "ns-d/reader"),
    ]
    assert ahead.waiting() == 3  # pods only: the ConfigMap does not count
    assert ahead.namespace_for(items[0]) is None  # a check that declared nothing creates its own namespace
    assert ahead.namespace_for(items[1]) == "ns-b" and ahead.waiting() == 1
    ahead.top_up(items)  # nothing is made twice
    assert len(cluster.log) == 6


def test_no_more_than_the_limit_of_pods_waits_and_handing_one_over_makes_room() -> None:
    cluster = Cluster()
    ahead = cluster.ahead(pods=2)
    items = [Item("b", check_b, kind="x"), Item("c", check_c), Item("d", check_d)]
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "b")]
    assert ahead.namespace_for(items[0]) == "ns-b"
    ahead.top_up(items[1:])
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "b"), ("reserve", "c"),
                                                                      ("reserve", "d")]  # fmt: skip


def test_windows_checks_are_made_first_and_linux_controls_only_where_the_limit_leaves_room() -> None:
    """A module's Linux controls come before their Windows twins; made in that order, the limit went to pods that
    start in a second and the Windows pods were made only as the controls ended. The Windows checks' go first, each
    group in its order; a Linux control's where room is left."""
    cluster = Cluster()
    ahead = cluster.ahead(pods=2)
    items = [Item("c-linux", check_c, target_os="linux"), Item("d-linux", check_d, target_os="linux"),
             Item("c-windows", check_c), Item("d-windows", check_d)]  # fmt: skip
    assert [i.name for i in waves.slow_first(items)] == ["c-windows", "d-windows", "c-linux", "d-linux"]
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "c-windows"),
                                                                      ("reserve", "d-windows")]  # fmt: skip
    assert ahead.namespace_for(items[0]) is None  # the control runs first and creates its own
    ahead.namespace_for(items[2])
    ahead.top_up(items[3:] + items[1:2])  # room for one: the Linux control still coming gets it
    assert cluster.log[-1] == ("make", "ns-d-linux/reader")


def deployment(replicas: int | None) -> dict[str, Any]:
    spec = {"template": {"spec": {"containers": []}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": spec if replicas is None else {"replicas": replicas, **spec}}  # fmt: skip


def three_replicas() -> dict[str, Any]:
    return deployment(3)


@waves.ahead(three_replicas)
def check_deployment() -> None:
    """Declares a Deployment of three replicas."""


def test_a_controller_made_ahead_counts_the_pods_it_starts() -> None:
    """A Deployment of 3 replicas is 3 pods waiting, not none: with a limit of 3, a second one waits until the first
    check takes its own. Counted as one pod each (``kind == "Pod"``), both would be made at once."""
    assert [waves.pods_of(m) for m in (pod("p"), deployment(3), deployment(None), config_map("c"))] == [1, 3, 1, 0]
    cluster = Cluster()
    ahead = cluster.ahead(pods=3)
    items = [Item("e1", check_deployment), Item("e2", check_deployment)]
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "e1")]
    assert ahead.waiting() == 3
    ahead.namespace_for(items[0])
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "e1"), ("reserve", "e2")]


def test_the_check_adopts_exactly_what_it_asks_for_once() -> None:
    cluster = Cluster()
    ahead = cluster.ahead()
    item = Item("d", check_d)
    ahead.top_up([item])
    namespace = ahead.namespace_for(item)
    assert namespace == "ns-d"
    made = waves.adopt(namespace, config_map("settings"), waves.OBJECT_CREATE)
    assert made is not None and made.result == "made ns-d/settings"
    assert waves.adopt(namespace, config_map("settings"), waves.OBJECT_CREATE) is None  # taken: created anew
    with pytest.raises(SuiteError, match="from another manifest"):
        waves.adopt(namespace, pod("reader", os="windows", build=20348), waves.POD_CREATE)
    assert waves.adopt("ns-other", pod("reader", os="windows", build=26100), waves.POD_CREATE) is None


def test_a_pod_made_ahead_and_created_another_way_errs() -> None:
    Cluster().ahead().top_up([Item("c", check_c)])
    with pytest.raises(SuiteError, match="was made ahead as submit_pod .* but the check creates it with kube.create"):
        waves.adopt("ns-c", one_pod("windows"), waves.OBJECT_CREATE)


def test_an_error_making_an_object_is_its_checks_and_what_it_creates_next_is_not_made() -> None:
    refused = RuntimeError("admission webhook denied settings")
    cluster = Cluster(refuse={"settings": refused})
    ahead = cluster.ahead()
    ahead.top_up([Item("d", check_d), Item("c", check_c)])
    assert ("make", "ns-d/reader") not in cluster.log and ("make", "ns-c/one") in cluster.log
    with pytest.raises(RuntimeError) as raised:
        waves.adopt("ns-d", config_map("settings"), waves.OBJECT_CREATE)
    assert raised.value is refused
    made = waves.adopt("ns-c", one_pod("windows"), waves.POD_CREATE)
    assert made is not None and made.result == "made ns-c/one"


def test_a_namespace_that_cannot_be_reserved_is_left_to_the_check() -> None:
    cluster = Cluster(reserve_fails=True)
    ahead = cluster.ahead()
    item = Item("c", check_c)
    ahead.top_up([item])
    assert cluster.log == [] and ahead.namespace_for(item) is None and not waves._MADE


def test_close_deletes_what_checks_that_did_not_run_here_left_and_forgets_every_object() -> None:
    cluster = Cluster()
    ahead = cluster.ahead()
    ran, stolen = Item("c", check_c), Item("b", check_b, kind="y")
    ahead.top_up([ran, stolen])
    assert ahead.namespace_for(ran) == "ns-c"  # its own teardown deletes it
    ahead.close()
    assert cluster.log[-1] == ("release", "ns-b") and ("release", "ns-c") not in cluster.log
    assert not waves._MADE and not ahead.reserved


def test_a_builder_takes_only_what_the_suite_can_give() -> None:
    @waves.ahead(takes_a_fixture)
    def check_x() -> None:
        """Declares a builder that asks for a fixture."""

    with pytest.raises(SuiteError, match="takes_a_fixture .* takes kube"):
        Cluster().ahead().top_up([Item("x", check_x)])


def test_made_ahead_by_the_real_create_and_adopted_by_create_or_reject_without_a_second_create(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counter-case of the first version's bug: the ahead's own submit_pod adopted the entry it had just
    registered, so nothing was made ahead and the check created its pod itself, late. The API sees one create, by
    the ahead; the check's create_or_reject returns what that create returned."""
    creates: list[str] = []

    def fake_call(fn: Any, namespace: str, body: dict[str, Any], **kwargs: Any) -> Any:
        creates.append(f"{fn.__name__} {namespace}/{body['metadata']['name']}")
        return SimpleNamespace(data=json.dumps({"metadata": {"name": body["metadata"]["name"], "uid": "u1"}}))

    monkeypatch.setattr(api_rules, "call", fake_call)
    monkeypatch.setattr(deploy, "call", lambda fn, *a, **k: f"applied {k['namespace']}/{a[1]['metadata']['name']}")
    ahead = waves.Ahead(lambda item: f"ns-{item.name}", make_ahead(object()),
                        lambda item: {"build": 26100, **item.callspec.params}, lambda ns: None)  # fmt: skip
    ahead.top_up([Item("d", check_d)])
    assert creates == ["create_namespaced_pod ns-d/reader"]
    assert deploy.apply(object(), "ns-d", config_map("settings")) == "applied ns-d/settings"
    created = create_or_reject(object(), "ns-d", pod("reader", os="windows", build=26100))
    assert created == {"metadata": {"name": "reader", "uid": "u1"}} and len(creates) == 1
    create_or_reject(object(), "ns-d", pod("reader", os="windows", build=26100))  # taken: a create of its own
    assert len(creates) == 2


def test_a_refusal_made_ahead_is_the_checks_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.client.exceptions import ApiException

    def refuse(fn: Any, namespace: str, body: dict[str, Any], **kwargs: Any) -> Any:
        exc = ApiException(status=422, reason="Unprocessable Entity")
        exc.body = json.dumps({"kind": "Status", "message": "spec.os: Invalid value", "details": {"causes": []}})
        raise exc

    monkeypatch.setattr(api_rules, "call", refuse)
    ahead = waves.Ahead(lambda item: f"ns-{item.name}", make_ahead(object()),
                        lambda item: {"build": None, **item.callspec.params}, lambda ns: None)  # fmt: skip
    ahead.top_up([Item("c", check_c)])
    with pytest.raises(Rejected, match="refused pod one"):
        create_or_reject(object(), "ns-c", one_pod("windows"))


def named_after_its_namespace(target_os: str, namespace: str) -> dict[str, Any]:
    return pod("hp-writer", os=target_os, volumes=[{"hostPath": {"path": f"C:\\wincon-tests\\{namespace}"}}])


@waves.ahead(named_after_its_namespace)
def check_e() -> None:
    """Declares a pod whose hostPath is named after the check's namespace."""


def test_a_builder_may_take_the_checks_own_namespace_and_one_that_raises_leaves_it_to_close() -> None:
    cluster = Cluster()
    ahead = cluster.ahead()
    ahead.top_up([Item("e", check_e)])
    made = waves.adopt("ns-e", named_after_its_namespace("windows", "ns-e"), waves.POD_CREATE)
    assert made is not None and made.result == "made ns-e/hp-writer"

    @waves.ahead(takes_a_fixture)
    def check_x() -> None:
        """Declares a builder that asks for a fixture."""

    with pytest.raises(SuiteError):
        ahead.top_up([Item("x", check_x)])
    ahead.close()
    assert ("release", "ns-x") in cluster.log and ("release", "ns-e") in cluster.log  # neither was handed over


# ----------------------------------------------------------------------------- across modules, on one worker


class Queue:
    """xdist's TestQueue as the worker holds it: ``lock()`` yields its deque of indices (and its end marker)."""

    def __init__(self, indices: list[Any]) -> None:
        self.indices = indices

    def lock(self) -> Any:
        from contextlib import nullcontext

        return nullcontext(self.indices)


class WorkerInteractor:
    def __init__(self, nextitem_index: Any, queued: list[Any]) -> None:
        self.nextitem_index, self.torun = nextitem_index, Queue(queued)


class Run:
    """A session's items (``names``; ``marks``: name -> its markers) and, under xdist, the worker's plugin."""

    def __init__(self, names: list[str], marks: dict[str, set[str]] | None = None, worker: Any = None) -> None:
        plugins = [worker] if worker is not None else []
        self.config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: [object(), *plugins]))
        self.items = [self.item(n, (marks or {}).get(n, set())) for n in names]

    def item(self, name: str, marks: set[str]) -> Any:
        return SimpleNamespace(
            nodeid=f"suites/{name[0]}.py::{name}",
            name=name,
            session=self,
            config=self.config,
            get_closest_marker=lambda mark: mark if mark in marks else None,
            stash=pytest.Stash(),
        )


def names(items: list[Any]) -> list[str]:
    return [i.name for i in items]


def test_upcoming_is_the_workers_own_queue_across_modules_and_stops_before_a_serial_check() -> None:
    """Under xdist: the running item, the worker's next one, then its queue (indices into the session's items),
    whatever their module; without the queue's end marker, the skipped, and anything from the first serial or
    disruptive check on. Without xdist: the session's items from the running one on."""
    from xdist.remote import Marker

    run = Run(["a1", "a2", "b1", "b2", "c1", "c2"], {"b2": {"skip"}})
    run.config.pluginmanager = SimpleNamespace(get_plugins=lambda: [WorkerInteractor(3, [4, 5, Marker.SHUTDOWN])])
    assert names(waves.upcoming(run.items[1])) == ["a2", "c1", "c2"]  # b2 (3) skipped; b1 went to another worker
    serial = Run(["a1", "a2", "b1", "b2"], {"b1": {"serial"}})
    assert names(waves.upcoming(serial.items[0])) == ["a1", "a2"]
    assert names(waves.upcoming(serial.items[2])) == []
    disruptive = Run(["a1", "b1"], {"b1": {"disruptive"}})
    assert names(waves.upcoming(disruptive.items[0])) == ["a1"]


def test_checks_no_longer_coming_are_dropped_and_the_namespace_of_one_that_did_not_take_it_is_deleted() -> None:
    """A check made ahead, then stolen by another worker (no longer upcoming, never handed): its namespace is
    deleted and its pods no longer count against the limit, so the next check's are made. One that took its
    namespace is forgotten, not deleted (its own fixture deletes it)."""
    cluster = Cluster()
    ahead = cluster.ahead(pods=2)
    b, c, d = Item("b", check_b, kind="x"), Item("c", check_c), Item("d", check_d)
    ahead.top_up([b, c, d])
    assert ahead.waiting() == 2 and [s for s in cluster.log if s[0] == "reserve"] == [("reserve", "b")]
    ahead.drop_passed([c, d])  # b was stolen
    assert ("release", "ns-b") in cluster.log and ahead.waiting() == 0
    assert not [k for k in waves._MADE if k[0] == "ns-b"]
    ahead.top_up([c, d])
    assert ahead.namespace_for(c) == "ns-c"
    ahead.drop_passed([d])
    assert ("release", "ns-c") not in cluster.log, "c took its namespace: its own fixture deletes it"
    assert "suites/x.py::c" not in ahead.reserved


def test_a_supplier_serves_only_the_checks_of_its_module_until_withdrawn() -> None:
    def needs_recorder(recorder: str) -> dict[str, Any]:
        return pod(f"hooked-{recorder}")

    @waves.ahead(needs_recorder)
    def check_r() -> None:
        """Its builder takes a fixture of its check that its module supplies."""

    mine, other = object(), object()
    made: list[str] = []
    ahead = waves.Ahead(lambda item: f"ns-{item.name}", lambda ns, m: made.append(m["metadata"]["name"]),
                        lambda item: {}, lambda ns: None)  # fmt: skip

    def item(name: str, module: object) -> Any:
        return SimpleNamespace(nodeid=f"x::{name}", name=name, function=check_r, module=module,
                               fixturenames=["recorder", "namespace"])  # fmt: skip

    ahead.provide("recorder", lambda i: "10.0.0.9", mine)
    ahead.top_up([item("elsewhere", other)])
    assert made == [], "another module's recorder fixture is not this supplier's"
    ahead.top_up([item("here", mine)])
    assert made == ["hooked-10.0.0.9"]
    ahead.withdraw("recorder")
    ahead.top_up([item("later", mine)])
    assert made == ["hooked-10.0.0.9"]


def test_every_check_that_uses_the_cluster_makes_the_next_checks_ahead_and_one_that_does_not_makes_nothing() -> None:
    """suites/conftest.py's autouse ``next_checks_made_ahead``: a networking check (its module's namespace, no
    ``fresh_namespace``) still tops up what comes after it on its worker; a check without ``wincon`` asks for no
    ``made_ahead`` (it would need a cluster) and makes nothing."""
    from wincon.session.fixtures import make_next_checks_ahead

    cluster = Cluster()
    ahead = cluster.ahead()
    run = Run(["n1", "v1"])
    networking, volume = run.items
    volume.function, volume.callspec = check_c, SimpleNamespace(params={"target_os": "windows"})
    asked: list[str] = []

    def request(fixturenames: list[str]) -> Any:
        def getfixturevalue(name: str) -> Any:
            asked.append(name)
            return ahead

        return SimpleNamespace(node=networking, fixturenames=fixturenames, getfixturevalue=getfixturevalue)

    assert make_next_checks_ahead(request(["checks", "servers"])) is False
    assert asked == [] and cluster.log == []
    assert make_next_checks_ahead(request(["wincon", "checks", "servers"])) is True
    assert asked == ["made_ahead"] and cluster.log == [("reserve", "v1"), ("make", "ns-v1/one")]
    # Once per check: its fresh_namespace asks again after the autouse fixture, and a top-up reads the nodes' room.
    from wincon.session.fixtures import top_up_ahead

    steps: list[str] = []
    counting = SimpleNamespace(
        drop_passed=lambda coming: steps.append("drop"), top_up=lambda coming: steps.append("top")
    )
    top_up_ahead(volume, counting)  # type: ignore[arg-type]
    top_up_ahead(volume, counting)  # type: ignore[arg-type]
    assert steps == ["drop", "top"]


def test_a_check_waiting_for_its_modules_fixture_keeps_its_room_from_the_checks_after_it() -> None:
    """With room for two: a check whose builder takes ``recorder`` before its module supplied it is passed over,
    and keeps the room of one pod, so of the two checks after it only the first is made; once the recorder is
    supplied, the room it kept is its own. Without the kept room, the check after it would have taken it."""

    def needs_recorder(recorder: str) -> dict[str, Any]:
        return pod(f"hooked-{recorder}")

    @waves.ahead(needs_recorder)
    def check_r() -> None:
        """Its builder takes a fixture of its check that its module supplies."""

    module = object()
    cluster = Cluster()
    ahead = cluster.ahead(pods=2)

    def item(name: str, function: Any) -> Any:
        return SimpleNamespace(nodeid=f"x::{name}", name=name, function=function, module=module,
                               fixturenames=["recorder", "namespace"], callspec=SimpleNamespace(params={"target_os": "windows"}))  # fmt: skip

    items = [item("hooked", check_r), item("first", check_c), item("second", check_c)]
    ready: list[str] = []

    def recorder(i: Any) -> str:
        if not ready:
            raise waves.NotYet("recorder still starting")
        return ready[0]

    ahead.provide("recorder", recorder, module)
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "first")]
    ready.append("10.0.0.9")
    ahead.top_up(items)
    assert [step for step in cluster.log if step[0] == "reserve"] == [("reserve", "first"), ("reserve", "hooked")]
    assert ("make", "ns-hooked/hooked-10.0.0.9") in cluster.log


def test_windows_checks_are_made_only_while_the_fullest_windows_node_keeps_its_margin() -> None:
    """With room for 12 more pods on the fullest Windows node and a margin of 10: two Windows checks of one pod each
    are made (11, then 10 left), the third is not (it would leave 9), and a Linux control after it still is. Without a
    room to read (None, or no reader), the limit of pods made ahead alone decides: all four."""
    items = [Item("w1", check_c), Item("w2", check_c), Item("w3", check_c), Item("l1", check_c, target_os="linux")]
    reads: list[int] = []

    def room() -> int:
        reads.append(12)
        return 12

    cluster = Cluster()
    ahead = waves.Ahead(cluster.reserve, cluster.make, lambda item: {"build": 26100, **item.callspec.params},
                        cluster.release, pods=8, room=room)  # fmt: skip
    assert waves.NODE_MARGIN == 10
    ahead.top_up(items)
    assert [s for s in cluster.log if s[0] == "reserve"] == [("reserve", "w1"), ("reserve", "w2"), ("reserve", "l1")]
    assert reads == [12], "read once per top-up"
    for reader in (lambda: None, None):
        waves._MADE.clear()
        unlimited = Cluster()
        waves.Ahead(unlimited.reserve, unlimited.make, lambda item: {"build": 26100, **item.callspec.params},
                    unlimited.release, pods=8, room=reader).top_up(items)  # fmt: skip
        assert [s[1] for s in unlimited.log if s[0] == "reserve"] == ["w1", "w2", "w3", "l1"]


def test_windows_room_is_the_fullest_nodes_allocatable_pods_less_those_bound_to_it_that_have_not_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods bound to a node count until they end (a terminating one too); a Succeeded or Failed one does not. The
    room is the fullest node's; a read that fails, or no Windows node, gives None."""
    from wincon.session import fixtures

    def pod_in(phase: str) -> Any:
        return SimpleNamespace(status=SimpleNamespace(phase=phase))

    bound = {"win-a": ["Running", "Pending", "Running", "Succeeded"], "win-b": ["Running", "Failed"]}
    calls: list[str] = []

    class Core:
        def __init__(self, api_client: Any) -> None:
            pass

        def read_node(self, name: str) -> Any:
            calls.append(f"read {name}")
            return SimpleNamespace(status=SimpleNamespace(allocatable={"pods": "30"}))

        def list_pod_for_all_namespaces(self, field_selector: str) -> Any:
            name = field_selector.removeprefix("spec.nodeName=")
            if name == "win-broken":
                raise RuntimeError("forbidden")
            return SimpleNamespace(items=[pod_in(p) for p in bound[name]])

    monkeypatch.setattr(fixtures.client, "CoreV1Api", Core)
    room = fixtures.windows_room(object(), ["win-a", "win-b"])
    assert room() == 27  # win-a: 30 less 3 not ended; win-b: 29
    assert room() == 27 and calls == ["read win-a", "read win-b"]  # allocatable read once
    assert fixtures.windows_room(object(), ["win-a", "win-broken"])() is None
    assert fixtures.windows_room(object(), [])() is None
