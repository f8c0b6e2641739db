"""The local cluster's NetworkPolicy engine: kube-router's policy controller on a cluster of this module's own
(below), and the kernel probe of the engine that could not run here (wincon/localcluster/netpol.py).

The probe needs no cluster: it programs a scratch network namespace of its own. The same ruleset without the
queue statement (``counter``) must be taken there, so that a refusal of the queue rule is the kernel's answer
about the queue expression alone, not about nftables or the namespace; and neither the namespace nor the probe's
table may be left behind, in the host's ruleset least of all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from wincon.localcluster import netpol

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    # One worker: the tests share the module's cluster (one start, not one per worker) and the last brings it down.
    pytest.mark.xdist_group("netpol-engine"),
]
needs_nft = pytest.mark.skipif(shutil.which("nft") is None, reason="nft (Debian's nftables) is not installed")


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _host_tables() -> str:
    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True).stdout


@needs_nft
def test_the_same_ruleset_without_the_queue_is_taken_in_the_probes_namespace() -> None:
    answer = netpol.ask_kernel("counter")
    assert answer.queue_rule_error is None, answer.describe()
    assert netpol.probe_netns() not in _netns()


@needs_nft
def test_the_kernel_answers_the_queue_rule_and_the_probe_leaves_nothing_behind(
    record_property: Callable[[str, object], None],
) -> None:
    answer = netpol.ask_kernel()
    record_property("kernel_answer", answer.describe())
    print(answer.describe())
    if answer.queue_rule_error is not None:
        assert "Error:" in answer.queue_rule_error, answer.queue_rule_error  # nft's own refusal, not a crash
    assert netpol.probe_netns() not in _netns()
    assert netpol.TABLE not in _host_tables()  # the host's ruleset was never programmed


# ------------------------------------------------------------------------------------------ kube-router (issue 33)
# The engine the local cluster runs (wincon/localcluster/kuberouter.py), on a cluster of this module's own: `up`
# starts it on each real node inside the node's namespace, the profile finds it by its DaemonSet, a deny-all
# ingress policy stops a dial between two real pods and its deletion lets the dial through again, and `down`
# leaves no process, chain or ipset of it (the last test, which brings the cluster down).

WAIT = 90.0
NAMESPACE = "netpol-engine"
PORT = 8080


def _wait(what: str, probe: Callable[[], object], timeout: float = WAIT) -> object:
    from kubernetes.client.rest import ApiException

    from tests.support.waits import eventually

    return eventually(what, probe, timeout, interval=1, errors=(ApiException, OSError))


@pytest.fixture(scope="module")
def engine_cluster(localcluster_binaries):
    from tests.support.clusters import own_cluster
    from wincon.localcluster import kuberouter

    if kuberouter.binary() is None:
        pytest.skip("kube-router is not built: run `wincon cluster build`")
    with own_cluster("netpol", env="WINCON_NETPOL_CLUSTER") as (name, kubeconfig):
        yield name, kubeconfig


@pytest.fixture(scope="module")
def plan(engine_cluster):
    from wincon.localcluster import cluster, dataplane

    return dataplane.Plan.from_dict((cluster._read_record(engine_cluster[0]) or {})["dataplane"])


@pytest.fixture(scope="module")
def core(engine_cluster):
    from kubernetes import client

    from wincon.localcluster import cluster

    api = cluster._api_client(engine_cluster[1])
    yield client.CoreV1Api(api)
    api.close()


def _ready(core, ns: str, pod: str) -> str | None:
    status = core.read_namespaced_pod(pod, ns).status
    ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions or [])
    return status.pod_ip if ready else None


@pytest.fixture(scope="module")
def pods(core, plan):
    """A netexec server on the last real node and a busybox client (with curl) on the first: (client, server IP)."""
    from wincon.localcluster import hints

    refs = hints.images(hints.read(core.api_client))
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    server = {"name": "c", "image": refs["agnhost"], "args": ["netexec", f"--http-port={PORT}"]}
    client_ = {"name": "c", "image": refs["busybox"], "command": ["sleep", "3600"]}
    for pod, node, container in (("server", plan.nodes[-1], server), ("client", plan.nodes[0], client_)):
        spec = {"nodeName": node.name, "terminationGracePeriodSeconds": 0, "containers": [container]}
        core.create_namespaced_pod(NAMESPACE, {"metadata": {"name": pod, "labels": {"app": pod}}, "spec": spec})
    _wait("pod client to be Ready", lambda: _ready(core, NAMESPACE, "client"))
    return "client", str(_wait("pod server to be Ready", lambda: _ready(core, NAMESPACE, "server")))


def _dial(core, pod: str, target: str) -> str:
    """curl's answer from ``pod`` to the server (its hostname), or curl's error."""
    from kubernetes.stream import stream

    command = f"curl -sS -m 3 http://{target}:{PORT}/hostname 2>&1"
    return stream(
        core.connect_get_namespaced_pod_exec, pod, NAMESPACE, command=["sh", "-c", command],
        stderr=True, stdin=False, stdout=True, tty=False, _request_timeout=30,
    ).strip()  # fmt: skip


DENY_ALL_INGRESS = {
    "metadata": {"name": "deny-all-ingress"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
}


def test_up_runs_it_on_each_real_node_inside_the_nodes_namespace(engine_cluster, plan):
    from wincon.localcluster import cluster, kuberouter, netns

    name, _ = engine_cluster
    said = cluster.status(name)["addons"][kuberouter.NAME]
    assert said["daemonset"] == "kube-system/kube-router" and said["functions"] == ["firewall"]
    assert {p["name"] for p in said["processes"]} == {f"{n.name}-kube-router" for n in plan.nodes}
    host = os.readlink("/proc/self/ns/net")
    for proc in said["processes"]:
        assert proc["running"] is True, proc
        assert os.readlink(f"/proc/{proc['pid']}/ns/net") != host, f"{proc['name']} runs in the host's namespace"
    for node in plan.nodes:
        ns = netns.netns_name(name, node.name)
        assert set(kuberouter.TOP_CHAINS) <= set(kuberouter.chains(ns)), f"{ns}: {kuberouter.chains(ns)}"
    assert kuberouter.chains(None) == [] and kuberouter.ipsets(None) == []  # nothing in the host's namespace


def test_the_profile_finds_it_by_its_daemonset_and_the_plan_runs_the_policy_controls(engine_cluster):
    from wincon.cluster.client import connect
    from wincon.clusterinfo import capabilities
    from wincon.clusterinfo.profile import discover

    name, kubeconfig = engine_cluster
    profile = discover(connect(str(kubeconfig)))
    assert (profile.network_policy, profile.network_policy_source) == (
        "unknown",
        "seen on Linux nodes only: kube-router (DaemonSet kube-router)",
    )
    assert capabilities.has(profile, "network-policy") is None  # unknown never skips: the checks run
    plan = subprocess.run(
        [sys.executable, "-m", "wincon", "plan", "--kubeconfig", str(kubeconfig), "--json", "--",
         "suites/networking/test_network_policy.py", "-m", "control"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr[-2000:]
    rows = json.loads(plan.stdout)
    controls = {r["nodeid"]: r for r in rows if "[linux]" in r["nodeid"]}
    assert len(controls) == 2, controls
    assert all(r["outcome"] == "run" for r in controls.values()), controls


def test_a_deny_all_ingress_policy_stops_a_dial_between_real_pods_and_its_deletion_lets_it_through(core, pods):
    from kubernetes import client

    pod, server = pods
    assert _dial(core, pod, server) == "server", "the dial must pass before any policy"
    networking = client.NetworkingV1Api(core.api_client)
    networking.create_namespaced_network_policy(NAMESPACE, DENY_ALL_INGRESS)
    try:
        answer = _wait("the policy to stop the dial", lambda: (a := _dial(core, pod, server)) != "server" and a)
        assert str(answer).startswith("curl: "), answer  # curl's own failure (kube-router REJECTs), not another answer
    finally:
        networking.delete_namespaced_network_policy(DENY_ALL_INGRESS["metadata"]["name"], NAMESPACE)
    _wait("the dial to pass again once the policy is deleted", lambda: _dial(core, pod, server) == "server")


@pytest.mark.order("last")
def test_down_leaves_no_kube_router_process_chain_or_ipset(engine_cluster, core, plan, pods):
    from kubernetes import client

    from wincon.localcluster import cluster, dataplane, kuberouter, netns, paths

    name, _ = engine_cluster
    client.NetworkingV1Api(core.api_client).create_namespaced_network_policy(NAMESPACE, DENY_ALL_INGRESS)
    # Positive evidence first: the policy's ipsets and chains are there, where the leftover check looks.
    server_ns = netns.netns_name(name, plan.nodes[-1].name)
    _wait(f"the policy's ipset in {server_ns}", lambda: kuberouter.ipsets(server_ns))
    before = dataplane.leftovers(name)
    assert before["ipsets"] and before["kube_router_chains"], before
    cluster.down(name)
    left = {k: v for k, v in dataplane.leftovers(name).items() if v}
    assert left == {}, f"cluster {name} left behind: {left}"
    assert not [p for p in cluster.cluster_pids(name)], "a process of the cluster is left"
    assert not paths.state_dir(name).exists()
    assert kuberouter.chains(None) == [] and kuberouter.ipsets(None) == []
