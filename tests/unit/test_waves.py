"""A module's pod wave (issue 44, item 2): wincon.cluster.waves without a cluster: declared pods are created
together, before any is waited for; each is one check's alone; each check gets only its own pod's error."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from wincon.cluster import waves
from wincon.commandline.errors import SuiteError


@waves.pod("client", "dns-default", dnsPolicy="Default")
@waves.pod("host", "dns-hostnet")
def declaring() -> None:
    """A test function with two declared pods."""


def test_pod_declares_on_the_function_in_source_order() -> None:
    item = SimpleNamespace(function=declaring)
    assert waves.declared(item) == (  # type: ignore[arg-type]
        waves.PodDecl("host", "dns-hostnet"),
        waves.PodDecl("client", "dns-default", (("dnsPolicy", "Default"),)),
    )
    assert waves.declared(SimpleNamespace()) == ()  # type: ignore[arg-type]  # a doctest, say: nothing


class Cluster:
    """Creates and waits, recording the order: every create of a wave comes before any wait."""

    def __init__(self, refuse: dict[str, BaseException] | None = None) -> None:
        self.log: list[tuple[str, str]] = []
        self.refuse = refuse or {}

    def create(self, manifest: dict[str, Any]) -> None:
        name = manifest["metadata"]["name"]
        self.log.append(("create", name))
        if name in self.refuse:
            raise self.refuse[name]

    def wait(self, manifest: dict[str, Any]) -> str:
        self.log.append(("wait", manifest["metadata"]["name"]))
        return f"pod {manifest['metadata']['name']}"


def _wave(cluster: Cluster, names: list[str]) -> waves.Wave:
    wave = waves.Wave(create=cluster.create, wait=cluster.wait)
    for name in names:
        wave.add(name, waves.PodDecl("client", name), {"metadata": {"name": name}}, lambda pod: f"ref of {pod}")
    return wave


def test_a_wave_creates_every_pod_before_any_wait_and_each_check_waits_for_its_own() -> None:
    cluster = Cluster()
    wave = _wave(cluster, ["a", "b", "lin-a"])
    assert wave.start() == 3 and wave.start() == 0  # once
    assert wave.take("b", "t2") == "ref of pod b"
    assert wave.take("a", "t1") == "ref of pod a"
    assert cluster.log == [("create", "a"), ("create", "b"), ("create", "lin-a"), ("wait", "b"), ("wait", "a")]


def test_a_declared_pod_is_one_checks_alone() -> None:
    wave = _wave(Cluster(), ["a"])
    wave.start()
    wave.take("a", "suites/x.py::test_one")
    with pytest.raises(SuiteError, match="suites/x.py::test_one's: a declared pod is one check's alone"):
        wave.take("a", "suites/x.py::test_two")


def test_each_check_gets_only_its_own_pods_error_and_a_skip_stays_a_skip() -> None:
    refused = RuntimeError("409 AlreadyExists")
    cluster = Cluster(refuse={"a": refused})
    wave = _wave(cluster, ["a", "b"])
    host = {"metadata": {"name": "host"}}
    skips = pytest.skip.Exception("HostProcess pods are not allowed here")

    def create_host(manifest: dict[str, Any]) -> None:
        raise skips

    wave.add("host", waves.PodDecl("host", "host"), host, lambda pod: pod, create=create_host)
    assert wave.start() == 3  # a refusal does not stop the others
    with pytest.raises(RuntimeError) as raised:
        wave.take("a", "t1")
    assert raised.value is refused
    assert wave.take("b", "t2") == "ref of pod b"
    with pytest.raises(pytest.skip.Exception, match="not allowed"):
        wave.take("host", "t3")
    assert ("wait", "a") not in cluster.log and ("wait", "host") not in cluster.log


def test_a_pod_taken_before_the_wave_started_starts_it() -> None:
    cluster = Cluster()
    wave = _wave(cluster, ["a", "b"])
    assert wave.take("a", "t1") == "ref of pod a"
    assert cluster.log == [("create", "a"), ("create", "b"), ("wait", "a")]


def test_holds_only_what_was_declared_with_the_same_spec() -> None:
    wave = waves.Wave(create=Cluster().create, wait=Cluster().wait)
    decl = waves.PodDecl("client", "dns-default", (("dnsPolicy", "Default"),))
    wave.add("lin-dns-default", decl, {"metadata": {"name": "lin-dns-default"}}, str)
    assert wave.holds("lin-dns-default", {"dnsPolicy": "Default"})
    assert not wave.holds("dns-default", {"dnsPolicy": "Default"})  # not declared: the factory creates it itself
    with pytest.raises(SuiteError, match="declared with"):
        wave.holds("lin-dns-default", {"dnsPolicy": "ClusterFirst"})
    with pytest.raises(SuiteError, match="declared twice"):
        wave.add("lin-dns-default", decl, {"metadata": {"name": "lin-dns-default"}}, str)


class Item:
    def __init__(self, module: Any, name: str, skip: bool = False) -> None:
        self.module, self.name, self.skip = module, name, skip
        self.session: Any = None
        self.function = declaring

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "skip" and self.skip else None


def test_items_from_are_the_modules_checks_still_to_run_here_without_skipped_ones() -> None:
    mod, other = SimpleNamespace(), SimpleNamespace()
    items = [Item(mod, "a"), Item(other, "x"), Item(mod, "b"), Item(mod, "c", skip=True), Item(mod, "d")]
    session = SimpleNamespace(items=items)
    for item in items:
        item.session = session
    assert [i.name for i in waves.items_from(items[2])] == ["b", "d"]  # type: ignore[arg-type]
    assert [i.name for i in waves.items_from(items[0])] == ["a", "b", "d"]  # type: ignore[arg-type]
    request = SimpleNamespace(_pyfuncitem=items[2], session=session, module=mod)
    assert [i.name for i in waves.module_items(request)] == ["b", "d"]  # type: ignore[arg-type]
    assert len(waves.decls_by_item(waves.items_from(items[2]))) == 4  # type: ignore[arg-type]  # 2 items x 2 pods


def test_one_at_a_time_waits_through_a_side_by_side_await_and_raises_the_pods_error() -> None:
    failed = TimeoutError("pod b did not become ready")
    seen: list[list[str]] = []

    def await_each(manifests: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append([m["metadata"]["name"] for m in manifests])
        return {m["metadata"]["name"]: failed if m["metadata"]["name"] == "b" else "pod" for m in manifests}

    wait = waves.one_at_a_time(await_each)
    assert wait({"metadata": {"name": "a"}}) == "pod"
    with pytest.raises(TimeoutError) as raised:
        wait({"metadata": {"name": "b"}})
    assert raised.value is failed and seen == [["a"], ["b"]]
