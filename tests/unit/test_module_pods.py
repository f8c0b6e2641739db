"""A networking module's netservers and client of one OS created together and awaited together (issue 22, item 3):
wincon.network.modulepods and NetworkObjects.start_each."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace as NS
from typing import Any

import pytest

from wincon.commandline.errors import InfrastructureError
from wincon.network import modulepods
from wincon.network.modulepods import ModulePods, Plan
from wincon.network.objects import NetworkObjects


def item(*fixtures: str, os_name: str | None = None, skipped: bool = False) -> Any:
    callspec = NS(params={"target_os": os_name}) if os_name else None
    return NS(
        fixturenames=list(fixtures),
        callspec=callspec,
        get_closest_marker=lambda name: object() if (skipped and name == "skip") else None,
    )


def test_needs_reads_the_items_fixtures_per_os():
    assert modulepods.needs(item("checks", "client", "servers", os_name="linux")) == {
        ("client", "linux"),
        ("servers", "linux"),
    }
    assert modulepods.needs(item("client", "server_service", os_name="windows")) == {
        ("client", "windows"),
        ("servers", "windows"),
    }
    # a hybrid check: the Linux client against the Windows servers
    assert modulepods.needs(item("linux_client", "server_service", "servers", os_name="windows")) == {
        ("client", "linux"),
        ("servers", "windows"),
    }
    assert modulepods.needs(item("kube", "netservers")) == {("servers", "windows")}
    assert modulepods.needs(item("kube", "namespace")) == set()


def manifest(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


class Starts:
    """A fake create and await_each: records the events in order (``create x``, then one ``await [..]`` per
    await_each call); pods named in ``broken`` fail their wait."""

    def __init__(self, broken: tuple[str, ...] = ()) -> None:
        self.events: list[str] = []
        self.calls: list[list[str]] = []
        self.broken = broken

    def create(self, manifest: dict[str, Any]) -> None:
        self.events.append(f"create {manifest['metadata']['name']}")

    def await_each(self, manifests: list[dict[str, Any]]) -> dict[str, Any]:
        names = [m["metadata"]["name"] for m in manifests]
        self.calls.append(names)
        self.events.append(f"await {names}")
        return {n: InfrastructureError(f"{n} never ran") if n in self.broken else NS(name=n) for n in names}


def plans(host_create: Any = None) -> dict[str, Any]:
    def servers(os_name: str) -> Plan:
        ms = [manifest(f"{os_name}-netserver-0"), manifest(f"{os_name}-netserver-1")]
        return Plan(ms, lambda started: [started[m["metadata"]["name"]].name for m in ms])

    def client(os_name: str) -> Plan:
        name = f"{os_name}-client"
        return Plan([manifest(name)], lambda started: started[name].name)

    def host(os_name: str) -> Plan:
        name = f"{os_name}-node-0"
        return Plan([manifest(name)], lambda started: started[name].name, create=host_create)

    return {"servers": servers, "client": client, "host": host}


def module_pods(starts: Starts, wanted: Any, host_create: Any = None) -> ModulePods:
    return ModulePods(starts.create, starts.await_each, wanted, plans(host_create))


def both(os_name: str) -> Any:
    return lambda it: {("servers", os_name), ("client", os_name)}


def test_joint_start_creates_servers_and_client_in_one_start_whichever_comes_first():
    starts = Starts()
    pods = module_pods(starts, both("linux"))
    assert pods.get("client", "linux", item()) == "linux-client"
    assert pods.get("servers", "linux", item()) == ["linux-netserver-0", "linux-netserver-1"]
    assert starts.calls == [["linux-client", "linux-netserver-0", "linux-netserver-1"]], "one start, each pod once"
    assert starts.events[:3] == ["create linux-client", "create linux-netserver-0", "create linux-netserver-1"]
    pods.get("client", "linux", item())
    assert len(starts.calls) == 1


def test_without_a_joint_need_each_kind_starts_alone_as_before():
    starts = Starts()
    pods = module_pods(starts, lambda it: set())
    pods.get("servers", "windows", item())
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]]
    pods.get("client", "windows")
    assert starts.calls[-1] == ["windows-client"]


def test_each_kind_raises_only_its_own_pods_error():
    starts = Starts(broken=("linux-netserver-1",))
    pods = module_pods(starts, both("linux"))
    assert pods.get("client", "linux", item()) == "linux-client", "the client ran: a client-only check goes on"
    with pytest.raises(InfrastructureError, match="linux-netserver-1 never ran"):
        pods.get("servers", "linux", item())
    with pytest.raises(InfrastructureError):
        pods.get("servers", "linux", item())  # and again for the next check that needs them, without a new start
    assert len(starts.calls) == 1


def test_a_node_side_check_creates_the_hostprocess_pod_and_the_netservers_before_awaiting_either():
    """test_node's and the UDP module's node -> pod on itself: before, node-0 was awaited (under the model 5 to
    52 s) before the netservers were even created."""
    starts = Starts()
    pods = module_pods(starts, modulepods.needs)
    check = item("checks", "host", "servers", os_name="windows")
    assert modulepods.needs(check) == {("host", "windows"), ("servers", "windows")}
    assert pods.get("host", "windows", check) == "windows-node-0"
    assert starts.events == [
        "create windows-node-0",
        "create windows-netserver-0",
        "create windows-netserver-1",
        "await ['windows-node-0', 'windows-netserver-0', 'windows-netserver-1']",
    ]
    assert pods.get("servers", "windows", check) == ["windows-netserver-0", "windows-netserver-1"]
    assert len(starts.calls) == 1
    # its Linux control: the hostNetwork pod and the Linux netservers, the same way
    assert pods.get("host", "linux", item("checks", "host", "servers", os_name="linux")) == "linux-node-0"
    assert starts.calls[-1] == ["linux-node-0", "linux-netserver-0", "linux-netserver-1"]


def test_a_hybrid_node_check_starts_the_linux_host_with_the_windows_servers():
    starts = Starts()
    pods = module_pods(starts, modulepods.needs)
    pods.get("host", "linux", item("checks", "linux_host", "servers", os_name="windows"))
    assert starts.calls == [["linux-node-0", "windows-netserver-0", "windows-netserver-1"]]


def refused(manifest: dict[str, Any]) -> None:
    pytest.skip("HostProcess pods are not allowed here (API answered 403: ...)")


def test_a_refused_host_pod_asked_first_starts_nothing_else_and_skips_each_check_that_asks():
    starts = Starts()
    pods = module_pods(starts, modulepods.needs, host_create=refused)
    check = item("checks", "host", "servers", os_name="windows")
    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="HostProcess pods are not allowed"):
            pods.get("host", "windows", check)
    assert starts.events == [], "the check stops at its first fixture: no netserver started for it"
    pods.get("servers", "windows", item("kube", "netservers"))
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]]


def test_a_refused_host_pod_asked_after_the_servers_leaves_the_servers_started():
    starts = Starts()
    pods = module_pods(starts, modulepods.needs, host_create=refused)
    check = item("checks", "servers", "host", os_name="windows")
    assert pods.get("servers", "windows", check) == ["windows-netserver-0", "windows-netserver-1"]
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]], "the refused pod is not awaited"
    with pytest.raises(pytest.skip.Exception):
        pods.get("host", "windows", check)
    assert len(starts.calls) == 1


def test_an_interrupt_while_creating_is_not_kept_as_an_outcome():
    def interrupted(manifest: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    pods = module_pods(Starts(), modulepods.needs, host_create=interrupted)
    with pytest.raises(KeyboardInterrupt):
        pods.get("host", "windows", item("host", os_name="windows"))


class FakeKube:
    namespace = "ns"
    profile = None

    def __init__(self, failing: str = "") -> None:
        self.events: list[str] = []
        self.failing = failing

    def create_pod(self, manifest: dict[str, Any]) -> None:
        self.events.append(f"create {manifest['metadata']['name']}")

    def wait_pod(self, name: str, done: Any = None) -> Any:
        self.events.append(f"wait {name}")
        if name == self.failing:
            raise InfrastructureError(f"pod {name}: ImagePullBackOff")
        return NS(metadata=NS(name=name))


def test_start_each_creates_every_pod_before_waiting_and_hands_back_each_error(monkeypatch):
    placed: list[str] = []
    monkeypatch.setattr(
        "wincon.network.objects.check_placement", lambda pod, manifest, profile: placed.append(pod.metadata.name)
    )
    kube = FakeKube(failing="b")
    started = NetworkObjects(kube).start_each([manifest("a"), manifest("b"), manifest("c")])
    assert kube.events[:3] == ["create a", "create b", "create c"]
    assert sorted(kube.events[3:]) == ["wait a", "wait b", "wait c"]
    assert started["a"].metadata.name == "a" and started["c"].metadata.name == "c"
    assert isinstance(started["b"], InfrastructureError) and "ImagePullBackOff" in str(started["b"])
    assert sorted(placed) == ["a", "c"], "every pod that ran is checked to have run where pinned"


class StuckKube(FakeKube):
    """Pods that never start: each wait returns only once every wait is in progress at the same time (a barrier),
    and times out as the cluster's error."""

    def __init__(self, pods: int) -> None:
        super().__init__()
        self.all_waiting = threading.Barrier(pods)

    def wait_pod(self, name: str, done: Any = None) -> Any:
        self.events.append(f"wait {name}")
        self.all_waiting.wait(timeout=10)  # BrokenBarrierError if the waits ran one after another
        raise InfrastructureError(f"pod {name} did not become ready within 20s (last phase: Pending)")


def test_start_each_waits_for_its_pods_side_by_side_so_pods_that_never_start_cost_one_timeout():
    """Every kubelet stopped (tests/faults): the module's 3 pods each ran into the 20 s pod-start timeout one
    after another, 61.5 s before the first check errored. Side by side, the pods' waits are in progress at once."""
    started = NetworkObjects(StuckKube(3)).start_each([manifest("a"), manifest("b"), manifest("c")])
    assert list(started) == ["a", "b", "c"]
    for name, outcome in started.items():
        assert isinstance(outcome, InfrastructureError), outcome
        assert f"pod {name} did not become ready within 20s" in str(outcome)


def test_nodes_for_servers_at_least_two_one_per_node():
    a, b, c = (NS(name=n) for n in "abc")
    assert modulepods.nodes_for_servers([a]) == [a, a]
    assert modulepods.nodes_for_servers([a, b, c]) == [a, b, c]


def test_the_asking_check_decides_so_no_pod_starts_that_was_not_started_before():
    """A worker whose first check of the module needs only the servers starts only them; the client follows
    when a check needs it (as before); a first check needing both starts both in one start."""
    starts = Starts()
    pods = module_pods(starts, modulepods.needs)
    servers_only = item("kube", "netservers")
    pods.get("servers", "windows", servers_only)
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]]
    pods.get("client", "windows", item("client", "servers", os_name="windows"))
    assert starts.calls[-1] == ["windows-client"], "the servers ran already: only the client starts"
    pods.get("client", "linux", item("client", "local_server", os_name="linux"))
    assert starts.calls[-1] == ["linux-client", "linux-netserver-0", "linux-netserver-1"]
    pods.get("host", "windows", item("checks", "host", os_name="windows"))
    assert starts.calls[-1] == ["windows-node-0"], "a host-only check starts only the host pod"


def test_await_each_waits_without_creating(monkeypatch):
    monkeypatch.setattr("wincon.network.objects.check_placement", lambda pod, manifest, profile: None)
    kube = FakeKube()
    started = NetworkObjects(kube).await_each([manifest("a"), manifest("b")])
    assert sorted(kube.events) == ["wait a", "wait b"]
    assert sorted(started) == ["a", "b"]


def test_start_own_awaits_the_checks_pods_while_the_module_pod_is_asked_for():
    """test_endpoint_slices' backends and the module's client: before, the client was awaited (47.3 s under the
    model) before the backends were created. The own pods' waits are in progress while the module fixture runs."""
    events: list[str] = []
    own_waiting = threading.Event()

    def await_each(manifests: list[dict[str, Any]]) -> dict[str, Any]:
        events.append("await own")
        own_waiting.set()
        return {m["metadata"]["name"]: NS(name=m["metadata"]["name"]) for m in manifests}

    def client() -> str:
        assert own_waiting.wait(timeout=10), "the own pods were not awaited while the client was asked for"
        events.append("client")
        return "client"

    value, started = modulepods.start_own(
        lambda m: events.append(f"create {m['metadata']['name']}"), await_each, [manifest("a"), manifest("b")], client
    )
    assert value == "client" and sorted(started) == ["a", "b"]
    assert events[:2] == ["create a", "create b"], "created before anything is awaited"


def test_start_own_joins_its_waits_and_raises_the_module_pods_error():
    finished: list[str] = []

    def await_each(manifests: list[dict[str, Any]]) -> dict[str, Any]:
        time.sleep(0.2)
        finished.append("own")
        return {"a": InfrastructureError("a never ran")}

    def client() -> str:
        raise InfrastructureError("client never ran")

    with pytest.raises(InfrastructureError, match="client never ran"):
        modulepods.start_own(lambda m: None, await_each, [manifest("a")], client)
    assert finished == ["own"], "no wait is left running behind the check"


def test_the_other_oss_pods_later_checks_need_are_created_with_the_first_start_and_awaited_by_their_first_check():
    """Issue 44, item 2: a Linux control's start also creates its Windows twins' pods (``later``), awaiting none of
    them; the first Windows check that needs them awaits them, without creating them again."""
    starts = Starts()
    pods = ModulePods(starts.create, starts.await_each, both("linux"), plans(),
                      later=lambda it: {("servers", "windows"), ("client", "windows")})  # fmt: skip
    assert pods.get("client", "linux", item()) == "linux-client"
    assert starts.events == [
        "create linux-client",
        "create linux-netserver-0",
        "create linux-netserver-1",
        "await ['linux-client', 'linux-netserver-0', 'linux-netserver-1']",
        "create windows-client",
        "create windows-netserver-0",
        "create windows-netserver-1",
    ]
    assert pods.get("servers", "windows", item()) == ["windows-netserver-0", "windows-netserver-1"]
    assert starts.events[-1] == "await ['windows-netserver-0', 'windows-netserver-1']"
    assert pods.get("client", "windows", item()) == "windows-client"
    assert starts.events[-1] == "await ['windows-client']"
    assert [e for e in starts.events if e.startswith("create")] == [
        "create linux-client", "create linux-netserver-0", "create linux-netserver-1",
        "create windows-client", "create windows-netserver-0", "create windows-netserver-1",
    ]  # fmt: skip


def test_a_pod_made_ahead_that_fails_is_the_error_of_the_check_that_awaits_it_and_a_refusal_its_skip():
    starts = Starts(broken=("windows-netserver-1",))

    def refuse(manifest: dict[str, Any]) -> None:
        pytest.skip("HostProcess pods are not allowed here")

    pods = ModulePods(starts.create, starts.await_each, both("linux"), plans(host_create=refuse),
                      later=lambda it: {("servers", "windows"), ("host", "windows")})  # fmt: skip
    assert pods.get("client", "linux", item()) == "linux-client"  # the Linux control is untouched
    with pytest.raises(pytest.skip.Exception, match="not allowed"):
        pods.get("host", "windows", item())
    with pytest.raises(InfrastructureError, match="windows-netserver-1 never ran"):
        pods.get("servers", "windows", item())
