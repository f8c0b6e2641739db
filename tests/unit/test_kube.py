"""The kube fixture's client: exec only through the data-plane gate, cleanup registered at creation and run
newest first, factories that own what they create."""

from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from wincon.cluster import kube as kube_mod
from wincon.cluster.kube import Kube, exec_where, pod_name
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.session.fixtures import data_plane_gate


def context():
    return SimpleNamespace(api_client=object(), profile=None, catalog=None, run_id="20260101-000000-abcdef")


class Gate:
    def __init__(self, skip=False):
        self.calls = []
        self.skip = skip

    def __call__(self, command, where="", pod_node=None):
        self.calls.append((command, where))
        if self.skip:
            pytest.skip("simulated")


@pytest.fixture
def execs(monkeypatch):
    calls = []

    def fake_exec(api_client, namespace, pod, command, container=None, timeout=60.0):
        calls.append((namespace, pod, command, container, timeout))
        return kube_mod.ExecResult(0, "ok", "")

    monkeypatch.setattr(kube_mod, "exec_in_pod", fake_exec)
    return calls


def test_exec_passes_the_gate_with_the_command_and_where_it_runs_then_runs_it(execs):
    gate = Gate()
    result = Kube(context(), "ns1", gate).exec("web", ["cmd", "/c", "echo hi"], container="main")
    assert result.stdout == "ok"
    assert gate.calls == [(["cmd", "/c", "echo hi"], "pod web container main")]
    assert execs == [("ns1", "web", ["cmd", "/c", "echo hi"], "main", 60.0)]


def test_exec_does_not_run_where_the_gate_skips(execs):
    with pytest.raises(pytest.skip.Exception):
        Kube(context(), "ns1", Gate(skip=True)).exec("web", ["hostname"])
    assert execs == []


def test_exec_without_a_gate_refuses_and_runs_nothing(execs):
    with pytest.raises(RuntimeError, match="no data-plane gate"):
        Kube(context(), "ns1").exec("web", ["hostname"])
    assert execs == []


def test_pods_are_named_by_string_ref_or_api_object():
    assert pod_name("a") == "a"
    assert pod_name(SimpleNamespace(name="b")) == "b"
    assert pod_name(SimpleNamespace(metadata=SimpleNamespace(name="c"))) == "c"
    assert exec_where("a") == "pod a"


def test_cluster_scoped_objects_get_their_deletion_registered_at_creation(monkeypatch):
    created, deleted = [], []
    monkeypatch.setattr(kube_mod.deploy, "apply", lambda api, ns, m: created.append((ns, m["kind"])) or m)
    monkeypatch.setattr(Kube, "_delete_cluster_object", lambda self, m: deleted.append(m["metadata"]["name"]))
    k = Kube(context(), "ns1")
    k.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    k.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}})
    k.create({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"}})
    assert created == [("ns1", "ConfigMap"), ("ns1", "PriorityClass"), ("ns1", "RuntimeClass")]
    assert deleted == []
    k.close()
    assert deleted == ["rc", "high"], "cluster-scoped objects go, newest first; the namespace owns the ConfigMap"


def test_close_runs_every_cleanup_ignores_gone_objects_and_raises_the_first_error():
    k = Kube(context(), "ns1")
    ran = []

    def gone():
        ran.append("gone")
        raise ApiException(status=404)

    def broken():
        ran.append("broken")
        raise ApiException(status=500)

    k.cleanup(ran.append, "first")
    k.cleanup(broken)
    k.cleanup(gone)
    with pytest.raises(ApiException) as info:
        k.close()
    assert info.value.status == 500
    assert ran == ["gone", "broken", "first"]
    k.close()  # nothing left to run
    assert ran == ["gone", "broken", "first"]


def test_taint_registers_its_removal_before_tainting(monkeypatch):
    from wincon.checks import scheduling

    events = []

    def add_taint(api, node, taint):
        events.append(("add", node, taint["key"]))
        raise ApiException(status=409)

    monkeypatch.setattr(scheduling, "add_taint", add_taint)
    monkeypatch.setattr(scheduling, "remove_taint", lambda api, node, key: events.append(("remove", node, key)))
    k = Kube(context(), "ns1")
    with pytest.raises(ApiException):
        k.taint("win1", {"key": "k", "value": "v", "effect": "NoSchedule"})
    k.close()
    assert events == [("add", "win1", "k"), ("remove", "win1", "k")], "a half-done taint is still removed"


def test_runtime_class_is_labelled_with_the_run_and_deleted_at_teardown(monkeypatch):
    calls = []
    monkeypatch.setattr(kube_mod, "call", lambda fn, *args, **kw: calls.append((fn.__name__, args)))
    node_api = SimpleNamespace(
        create_runtime_class=lambda body: None,
        delete_runtime_class=lambda name: None,
    )
    node_api.create_runtime_class.__name__ = "create_runtime_class"
    node_api.delete_runtime_class.__name__ = "delete_runtime_class"
    k = Kube(context(), "ns1")
    k.__dict__["node"] = node_api  # the cached NodeV1Api handle
    name = k.runtime_class("runhcs-wcow-process", {"kubernetes.io/os": "windows"}, [])
    (create,) = calls
    body = create[1][0]
    assert create[0] == "create_runtime_class" and body["metadata"]["name"] == name
    assert body["metadata"]["labels"]["wincon.io/run-id"] == "20260101-000000-abcdef"
    assert body["scheduling"] == {"nodeSelector": {"kubernetes.io/os": "windows"}, "tolerations": []}
    k.close()
    assert calls[-1] == ("delete_runtime_class", (name,))


def windows(*nodes):
    """A profile of Windows nodes ltsc2022, given as (name, simulated)."""
    return ClusterProfile(
        "v1.34.4", [NodeProfile(n, "windows", "amd64", True, sim, windows_build=20348) for n, sim in nodes]
    )


def test_the_data_plane_gate_records_the_command_and_skips_on_simulated_nodes():
    node = SimpleNamespace(user_properties=[], stash={})
    with pytest.raises(pytest.skip.Exception, match="would run: pod a: hostname"):
        data_plane_gate(node, windows(("w1", True)))(["hostname"], where="pod a")
    assert ("command", "pod a: hostname") in node.user_properties
    assert ("simulated_skip", "true") in node.user_properties

    real = SimpleNamespace(user_properties=[], stash={})
    data_plane_gate(real, windows(("w1", False)))("ping 10.0.0.1")
    assert real.user_properties == [("command", "ping 10.0.0.1")]


def test_the_gate_judges_the_node_of_the_pod_it_runs_in_on_a_mixed_cluster():
    """One real and one simulated Windows node of the same build: the build alone cannot decide."""
    mixed = windows(("real", False), ("kwok", True))
    on_real = SimpleNamespace(user_properties=[], stash={})
    data_plane_gate(on_real, mixed)("hostname", where="pod a", pod_node="real")
    assert on_real.user_properties == [("command", "pod a: hostname"), ("node", "real")]

    on_kwok = SimpleNamespace(user_properties=[], stash={})
    with pytest.raises(pytest.skip.Exception, match=r"its pods ran on kwok\); would run: pod a: hostname"):
        data_plane_gate(on_kwok, mixed)("hostname", where="pod a", pod_node="kwok")
    assert ("node", "kwok") in on_kwok.user_properties

    unplaced = SimpleNamespace(user_properties=[], stash={})  # no pod known yet: every node must be real
    with pytest.raises(pytest.skip.Exception):
        data_plane_gate(unplaced, mixed)("hostname")


def test_exec_hands_the_gate_the_node_of_the_pod(execs):
    calls = []

    def gate(command, where="", pod_node=None):
        calls.append((where, pod_node))

    pod = SimpleNamespace(metadata=SimpleNamespace(name="web"), spec=SimpleNamespace(node_name="w1"))
    Kube(context(), "ns1", gate).exec(pod, ["hostname"])
    assert calls == [("pod web", "w1")]
    assert execs == [("ns1", "web", ["hostname"], None, 60.0)]


def test_submit_and_events_are_bound_to_the_namespace(monkeypatch):
    from wincon.checks import api_rules
    from wincon.checks import pods as pods_mod

    seen = []
    monkeypatch.setattr(
        api_rules, "submit_pod", lambda api, ns, body, dry_run=True: seen.append((ns, dry_run)) or (body, None)
    )
    monkeypatch.setattr(pods_mod, "events_for", lambda api, ns, name, reason: seen.append((ns, name, reason)) or ["e"])
    monkeypatch.setattr(
        pods_mod,
        "wait_for_event",
        lambda api, ns, name, reason, timeout, behaviour: seen.append((ns, timeout, behaviour)) or ["e"],
    )
    k = Kube(context(), "ns1")
    assert k.submit({"kind": "Pod"}, dry_run=False) == ({"kind": "Pod"}, None)
    assert k.events("p", "Failed") == ["e"]
    assert k.wait_event("p", "Unhealthy", timeout=5, behaviour=True) == ["e"]
    assert seen == [("ns1", False), ("ns1", "p", "Failed"), ("ns1", 5, True)]
