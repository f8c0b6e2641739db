"""The pod helpers a check's Linux control uses: os_pod, nodes_for, pin_template_linux, run_or_refused's OS."""

from __future__ import annotations

from types import SimpleNamespace as NS

from wincon.checks import pods
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile


class Catalog:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, int | None]] = []

    def image(self, key: str, os_name: str = "windows", host_build: int | None = None) -> str:
        self.asked.append((key, os_name, host_build))
        return f"{key}-{os_name}"


def node(name: str, os_name: str, ready: bool = True, simulated: bool = False) -> NodeProfile:
    return NodeProfile(
        name=name,
        os=os_name,
        arch="amd64",
        ready=ready,
        simulated=simulated,
        windows_build=20348 if os_name == "windows" else None,
    )


def test_os_pod_for_windows_is_windows_pod():
    context = NS(catalog=Catalog())
    assert pods.os_pod(context, "p", "windows", 20348) == pods.windows_pod(context, "p", 20348)
    body = pods.windows_pod(context, "p", 20348)
    assert body["spec"]["os"] == {"name": "windows"}
    assert "imagePullPolicy" not in body["spec"]["containers"][0]
    assert context.catalog.asked[-1] == ("agnhost", "windows", 20348)


def test_os_pod_for_linux_pins_linux_and_pulls_nothing():
    context = NS(catalog=Catalog())
    body = pods.os_pod(context, "p", "linux", 20348, args=["netexec"], container_extra={"env": []})
    spec = body["spec"]
    assert spec["os"] == {"name": "linux"} and spec["nodeSelector"]["kubernetes.io/os"] == "linux"
    assert "node.kubernetes.io/windows-build" not in spec["nodeSelector"]
    main = spec["containers"][0]
    assert main["image"] == "agnhost-linux" and main["imagePullPolicy"] == "IfNotPresent" and main["env"] == []
    assert main["args"] == ["netexec"]
    assert context.catalog.asked[-1] == ("agnhost", "linux", None), "a Windows build means nothing on Linux"


def test_nodes_for_linux_are_ready_linux_nodes_with_a_data_plane():
    profile = ClusterProfile(
        server_version="v1.34.0",
        nodes=[
            node("win", "windows"),
            node("lin-ready", "linux"),
            node("lin-down", "linux", ready=False),
            node("lin-sim", "linux", simulated=True),
        ],
    )
    assert [n.name for n in pods.nodes_for(profile, "linux", 20348)] == ["lin-ready"]
    assert [n.name for n in pods.nodes_for(profile, "windows", 20348)] == ["win"]


def test_pin_template_linux_runs_cmd_lines_with_sh():
    job = {
        "kind": "Job",
        "spec": {"template": {"spec": {"containers": [{"name": "main", "command": ["cmd", "/c", "echo job done"]}]}}},
    }
    pinned = pods.pin_template_linux(job)
    spec = pinned["spec"]["template"]["spec"]
    assert spec["os"] == {"name": "linux"}
    assert spec["containers"][0]["command"] == ["sh", "-c", "echo job done"]
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"][0] == "cmd", "the original is unchanged"
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{}]}}}}}}
    assert pods.pin_template_linux(cron)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["os"]["name"] == "linux"


def test_run_or_refused_waits_on_the_os_the_pod_pins(monkeypatch):
    import wincon.checks.api_rules as api_rules

    waited = {}
    monkeypatch.setattr(api_rules, "submit_pod", lambda *a, **k: (None, None))
    monkeypatch.setattr(pods, "await_pod", lambda w, ns, body, ready, os_name=None: waited.update(os=os_name))
    body = pods.os_pod(NS(catalog=Catalog()), "p", "linux", None)
    pods.run_or_refused(NS(api_client=None), "ns", body, "some-limitation")
    # None: await_pod checks the OS of the pod's own spec.os.name (linux here), not a fixed "windows".
    assert waited == {"os": None}
