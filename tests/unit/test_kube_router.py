"""kube-router as the local cluster's NetworkPolicy engine (wincon/localcluster/kuberouter.py) and how the profile
finds it: by its DaemonSet, as on any cluster, never by a mark of wincon's own.

The profile's ``network_policy`` is the engine on the Windows nodes. kube-router runs on Linux nodes only, so a
cluster showing its DaemonSet, the local cluster included, has an engine "seen on Linux nodes only": unknown for
the Windows nodes, which runs the policy checks (their Linux controls against the engine); the local cluster
without that DaemonSet shows none, and the checks skip there as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile, NetworkObjects, detect_network_policy, runs_on_windows
from wincon.localcluster import dataplane, extras, images, kuberouter, netns

PLAN = dataplane.Plan(
    "h3",
    "172.30.7.0/24",
    "172.30.7.1",
    "172.30.7.254",
    [
        dataplane.RealNode("worker-0", 0, "172.30.7.2", "10.244.1.0/24"),
        dataplane.RealNode("worker-1", 1, "172.30.7.3", "10.244.2.0/24"),
    ],
)
WINDOWS_NODE = {"metadata": {"name": "win2022-0", "labels": {"kubernetes.io/os": "windows", "type": "kwok"}}}


@pytest.fixture
def local_daemonset(monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(images, "references", lambda versions=None: {"pause": "wincon.local/pause:3.10"})
    return kuberouter.daemonset(PLAN)


def test_its_daemonset_is_found_and_says_nothing_of_the_windows_nodes(local_daemonset: dict) -> None:
    assert not runs_on_windows(kuberouter.NAME, local_daemonset)
    for cloud in ("kwok", "azure"):  # the local cluster reads the same evidence as any other
        objects = NetworkObjects(daemonsets={kuberouter.NAME: local_daemonset}, nodes=[WINDOWS_NODE], cloud=cloud)
        engine, source = detect_network_policy(objects)
        assert (engine, source) == ("unknown", "seen on Linux nodes only: kube-router (DaemonSet kube-router)")
        assert capabilities.has(ClusterProfile(server_version="", network_policy=engine), "network-policy") is None


def test_the_local_cluster_without_its_daemonset_shows_no_engine_and_the_checks_skip() -> None:
    objects = NetworkObjects(daemonsets={"kube-proxy": {}}, nodes=[WINDOWS_NODE], cloud="kwok")
    engine, source = detect_network_policy(objects)
    assert engine == "none" and "no policy engine" in source
    profile = ClusterProfile(server_version="", network_policy=engine, network_policy_source=source)
    assert capabilities.has(profile, "network-policy") is False


def test_its_daemonset_runs_on_the_real_linux_nodes_only(local_daemonset: dict) -> None:
    spec = local_daemonset["spec"]["template"]["spec"]
    assert local_daemonset["metadata"]["namespace"] == "kube-system"
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": "type", "operator": "NotIn", "values": ["kwok"]}]
    assert spec["hostNetwork"] is True and spec["containers"][0]["image"] == "wincon.local/pause:3.10"
    assert (
        local_daemonset["spec"]["selector"]["matchLabels"].items()
        <= local_daemonset["spec"]["template"]["metadata"]["labels"].items()
    )


def test_each_node_runs_the_policy_controller_alone_against_its_own_node() -> None:
    node = PLAN.nodes[1]
    argv = kuberouter.args(PLAN, node, Path("/x/kube-router"))
    assert argv[0] == "/x/kube-router"
    for flag in ("--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false"):
        assert flag in argv
    assert "--hostname-override=worker-1" in argv
    assert f"--service-cluster-ip-range={dataplane.SERVICE_RANGE}" in argv  # kube-router's default is 10.96.0.0/12
    assert f"--kubeconfig={dataplane.node_dir('h3', 'worker-1') / 'kubeconfig'}" in argv
    assert kuberouter.health_url(node) == "http://172.30.7.3:20244/healthz"


def test_it_is_started_last_after_the_kubelets_registered_the_nodes() -> None:
    assert extras.MODULES[-1] is kuberouter


def test_its_chains_and_ipsets_are_told_from_the_others_and_the_leftover_check_lists_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved = "\n".join(
        [
            "-P FORWARD ACCEPT",
            "-N KUBE-FORWARD",  # kube-proxy's
            "-N KUBE-ROUTER-FORWARD",
            "-N KUBE-POD-FW-ABCDEF",
            "-N KUBE-NWPLCY-DEFAULT",
            "-A FORWARD -m comment --comment kube-router -j KUBE-ROUTER-FORWARD",
        ]
    )
    sets = "KUBE-SRC-AAAA\nKUBE-DST-BBBB\nwincon-other\ninet6:KUBE-DST-CCCC\n"
    seen: list[tuple[tuple[str, ...], str | None]] = []

    def output(command: list[str], ns: str | None) -> str:
        seen.append((tuple(command[:2]), ns))
        return saved if command[0] == "iptables" else sets

    monkeypatch.setattr(netns, "_output", output)
    assert kuberouter.chains("n") == ["KUBE-ROUTER-FORWARD", "KUBE-POD-FW-ABCDEF", "KUBE-NWPLCY-DEFAULT"]
    assert kuberouter.ipsets("n") == ["KUBE-SRC-AAAA", "KUBE-DST-BBBB", "inet6:KUBE-DST-CCCC"]
    monkeypatch.setattr(netns, "our_netns", lambda cluster: ["wincon-h3-worker-0"])
    monkeypatch.setattr(netns, "run", lambda *a, **k: "")  # the other leftovers: none
    monkeypatch.setattr(netns, "mounts_under", lambda paths: [])
    monkeypatch.setattr(netns, "hierarchies", lambda: [])
    monkeypatch.setattr(netns.ipfamily, "host_routes6", lambda run, metric: [])
    monkeypatch.setattr(netns.ipfamily, "host_ip6tables_rules", lambda run, comment: [])
    found = netns.leftovers("h3", Path("/nonexistent"))
    assert "host: KUBE-ROUTER-FORWARD" in found["kube_router_chains"]
    assert "wincon-h3-worker-0: KUBE-SRC-AAAA" in found["ipsets"]
    assert (("iptables", "-w"), None) in seen and (("ipset", "list"), "wincon-h3-worker-0") in seen


def test_status_names_the_processes_of_every_real_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kuberouter, "binary", lambda: Path("/cache/kube-router"))
    processes = [
        {"name": "worker-0-kube-router", "pid": 10, "running": True, "log": "a"},
        {"name": "worker-1-kube-router", "pid": 11, "running": True, "log": "b"},
        {"name": "worker-0-kubelet", "pid": 12, "running": True, "log": "c"},
    ]
    said = kuberouter.status(PLAN, processes)
    assert [p["name"] for p in said["processes"]] == ["worker-0-kube-router", "worker-1-kube-router"]
    assert said["daemonset"] == "kube-system/kube-router" and said["functions"] == ["firewall"]
    assert kuberouter.status(PLAN, processes[2:])["daemonset"] is None


def test_a_cgroup_that_vanishes_while_down_walks_the_cgroups_is_skipped(tmp_path: Path, monkeypatch) -> None:
    """``down`` kills while pods are torn down: a pod's cgroup removed mid-walk must not stop it (at 53d3037 a
    second ``down`` right after ``up`` raised FileNotFoundError from Path.rglob over /sys/fs/cgroup/cpu/...)."""
    import os

    top = tmp_path / "wincon-h3-worker-0"
    (top / "kubepods" / "gone").mkdir(parents=True)
    (top / "kubepods" / "kept").mkdir()
    (top / "kubepods" / "kept" / "cgroup.procs").write_text("101\n102\n")
    real_scandir = os.scandir

    def scandir(path):  # the pod's cgroup removed between its listing and its reading
        if str(path).endswith("gone"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(netns, "our_cgroups", lambda name: [top])
    assert netns.cgroup_pids("h3") == {101, 102}
    assert [p.name for p in netns.cgroup_dirs(top)] == ["wincon-h3-worker-0", "kubepods", "kept"]  # "gone" skipped
