"""A networking module's netservers and client of one OS created together and awaited together (issue 22, item 3):
wincon.network.modulepods and NetworkObjects.start_each."""

from __future__ import annotations

import threading
from types import SimpleNamespace as NS
from typing import Any

import pytest

from wincon.errors import InfrastructureError
from wincon.network import modulepods
from wincon.network.modulepods import ModulePods
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


def test_together_only_where_the_items_need_both_of_that_os():
    dial = item("client", "servers", os_name="linux")
    assert modulepods.together([dial], "linux")
    assert not modulepods.together([dial], "windows")
    assert not modulepods.together([item("client", os_name="linux"), item("kube", "netservers")], "linux")
    # the two needs may come from different items of the module
    assert modulepods.together([item("client", os_name="linux"), item("servers", os_name="linux")], "linux")
    # an item skipped at collection runs no fixture
    assert not modulepods.together(
        [item("client", os_name="linux"), item("servers", os_name="linux", skipped=True)], "linux"
    )


def manifest(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


class Starts:
    """A fake start_each: records each call's pod names; pods named in ``broken`` fail their wait."""

    def __init__(self, broken: tuple[str, ...] = ()) -> None:
        self.calls: list[list[str]] = []
        self.broken = broken

    def __call__(self, manifests: list[dict[str, Any]]) -> dict[str, Any]:
        names = [m["metadata"]["name"] for m in manifests]
        self.calls.append(names)
        return {n: InfrastructureError(f"{n} never ran") if n in self.broken else NS(name=n) for n in names}


def plans() -> tuple[Any, Any]:
    def servers(os_name: str) -> Any:
        ms = [manifest(f"{os_name}-netserver-0"), manifest(f"{os_name}-netserver-1")]
        return ms, lambda started: [started[m["metadata"]["name"]].name for m in ms]

    def client(os_name: str) -> Any:
        name = f"{os_name}-client"
        return [manifest(name)], lambda started: started[name].name

    return servers, client


def test_joint_start_creates_servers_and_client_in_one_start_whichever_comes_first():
    starts = Starts()
    pods = ModulePods(starts, lambda os_name, item: True, *plans())
    assert pods.get("client", "linux") == "linux-client"
    assert pods.get("servers", "linux") == ["linux-netserver-0", "linux-netserver-1"]
    assert starts.calls == [["linux-netserver-0", "linux-netserver-1", "linux-client"]], "one start, each pod once"
    pods.get("client", "linux")
    assert len(starts.calls) == 1


def test_without_a_joint_need_each_kind_starts_alone_as_before():
    starts = Starts()
    pods = ModulePods(starts, lambda os_name, item: False, *plans())
    pods.get("servers", "windows")
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]]
    pods.get("client", "windows")
    assert starts.calls[-1] == ["windows-client"]


def test_each_kind_raises_only_its_own_pods_error():
    starts = Starts(broken=("linux-netserver-1",))
    pods = ModulePods(starts, lambda os_name, item: True, *plans())
    assert pods.get("client", "linux") == "linux-client", "the client ran: a client-only check goes on"
    with pytest.raises(InfrastructureError, match="linux-netserver-1 never ran"):
        pods.get("servers", "linux")
    with pytest.raises(InfrastructureError):
        pods.get("servers", "linux")  # and again for the next check that needs them, without a new start
    assert len(starts.calls) == 1


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
    pods = ModulePods(starts, lambda os_name, it: modulepods.together([it], os_name), *plans())
    servers_only = item("kube", "netservers")
    pods.get("servers", "windows", servers_only)
    assert starts.calls == [["windows-netserver-0", "windows-netserver-1"]]
    pods.get("client", "windows", item("client", "servers", os_name="windows"))
    assert starts.calls[-1] == ["windows-client"], "the servers ran already: only the client starts"
    pods.get("client", "linux", item("client", "local_server", os_name="linux"))
    assert starts.calls[-1] == ["linux-netserver-0", "linux-netserver-1", "linux-client"]
