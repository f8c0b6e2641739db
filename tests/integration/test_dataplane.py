"""The local cluster's real Linux data plane: every flow the suite's checks rely on, observed for real.

Against the session cluster (default topology: simulated Windows nodes and two real Linux workers): netexec
pods on each real node become Ready through their real readiness probe, exec works, and pod->pod (TCP, UDP),
pod->Service ClusterIP, Service FQDN and single-label names through CoreDNS, node->pod, NodePort from the
node, pod->external host (TCP by name, ICMP), volume contents and a postStart hook are each observed.
The lifecycle tests start their own clusters and check that ``down`` leaves nothing behind: no process,
mount, link, namespace, route, iptables rule or cgroup (after a normal ``up``, after a SIGKILLed ``up``,
and after ``up`` twice).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.stream import stream

from tests.support import clusters
from tests.support.waits import eventually
from wincon.clusterinfo.profile import discover
from wincon.localcluster import cluster, dataplane, hints, netns, paths, procs
from wincon.localcluster.topology import Topology

# One worker: the module's namespace and its pods (the flows) are set up once, not once per worker.
pytestmark = pytest.mark.xdist_group("dataplane")

WAIT = 90.0
HTTP, UDP = 8080, 8081


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def wait_for(what: str, probe: Any, timeout: float = WAIT) -> Any:
    return eventually(what, probe, timeout)


@pytest.fixture(scope="module")
def image(local_hints: dict[str, str]) -> dict[str, str]:
    return hints.images(local_hints)


@pytest.fixture(scope="module")
def real_nodes(core: Any, local_hints: dict[str, str]) -> list[Any]:
    nodes = clusters.real_nodes(core)
    assert len(nodes) >= 2, f"expected two real Linux nodes, found {[n.metadata.name for n in nodes]}"
    return nodes


def _internal_ip(node: Any) -> str:
    return next(a.address for a in node.status.addresses if a.type == "InternalIP")


@pytest.fixture(scope="module")
def ns(core: Any, local_hints: dict[str, str]) -> Iterator[str]:
    name = f"wincon-dp-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _pod(name: str, node: str, image: str, args: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": image, "imagePullPolicy": "IfNotPresent", "args": args}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": spec.pop("app", name)}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [container], **spec},
    }


def _run(core: Any, ns: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
    for pod in pods:
        core.create_namespaced_pod(ns, pod)
    names = [p["metadata"]["name"] for p in pods]

    def all_ready() -> dict[str, Any] | None:
        got = {n: core.read_namespaced_pod(n, ns) for n in names}
        for pod in got.values():
            for cs in pod.status.container_statuses or []:
                waiting = cs.state.waiting
                if waiting and waiting.reason in ("ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff"):
                    pytest.fail(f"pod {pod.metadata.name}: {waiting.reason}: {waiting.message}")
        return got if all(_ready(p) for p in got.values()) else None

    return wait_for(f"pods {names} to be Ready", all_ready)


def sh(core: Any, ns: str, pod: str, command: str) -> str:
    """Run ``sh -c command`` in the pod through the API server's exec; fail with the output if it exits non-zero."""
    resp = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", command + "; echo __rc=$?"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _request_timeout=60,
    )
    match = re.search(r"__rc=(\d+)\s*$", resp)
    assert match, f"no exit status from `{command}` in {pod}: {resp!r}"
    assert match.group(1) == "0", f"`{command}` in {pod} exited {match.group(1)}: {resp}"
    return resp[: match.start()]


@pytest.fixture(scope="module")
def flows(core: Any, ns: str, image: dict[str, str], real_nodes: list[Any]) -> dict[str, Any]:
    """netexec on each real node, a Service (ClusterIP + NodePort) over them, a hostNetwork pod on node 0."""
    agnhost = image["agnhost"]
    probe = {"readinessProbe": {"httpGet": {"path": "/healthz", "port": HTTP}, "periodSeconds": 1}}
    servers = [
        _pod(
            f"netexec-{i}",
            n.metadata.name,
            agnhost,
            ["netexec", f"--http-port={HTTP}", f"--udp-port={UDP}"],
            app="netexec",
            container=probe,
        )  # fmt: skip
        for i, n in enumerate(real_nodes[:2])
    ]
    node_pod = _pod("on-node", real_nodes[0].metadata.name, agnhost, ["pause"], hostNetwork=True)
    pods = _run(core, ns, [*servers, node_pod])
    svc = core.create_namespaced_service(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "netexec"},
                "ports": [{"name": "http", "port": 80, "targetPort": HTTP, "protocol": "TCP"}],
            },
        },
    )
    wait_for(
        "the Service's EndpointSlice to list both pods",
        lambda: (
            sum(
                len(e.endpoints or [])
                for e in client.DiscoveryV1Api(core.api_client)
                .list_namespaced_endpoint_slice(ns, label_selector="kubernetes.io/service-name=web")
                .items
            )
            == 2
        ),
    )
    return {"pods": pods, "service": svc, "nodes": real_nodes}


def test_netexec_pods_run_on_each_real_node_and_are_ready_through_their_probe(flows):
    pods = flows["pods"]
    assert {pods["netexec-0"].spec.node_name, pods["netexec-1"].spec.node_name} == {
        n.metadata.name for n in flows["nodes"][:2]
    }
    for name in ("netexec-0", "netexec-1"):
        assert pods[name].status.pod_ip.startswith("10.244."), pods[name].status.pod_ip
        assert pods[name].status.pod_ip != pods[name].status.host_ip


def test_exec_pod_to_pod_over_tcp_and_udp_across_nodes(core, ns, flows):
    target = flows["pods"]["netexec-1"].status.pod_ip
    assert sh(core, ns, "netexec-0", f"curl -sS --max-time 5 http://{target}:{HTTP}/hostname") == "netexec-1"
    dial = f"http://127.0.0.1:{HTTP}/dial?request=hostname&protocol=udp&host={target}&port={UDP}&tries=1"
    assert json.loads(sh(core, ns, "netexec-0", f"curl -sS --max-time 10 '{dial}'"))["responses"] == ["netexec-1"]


def answers(core: Any, ns: str, pod: str, url: str) -> str:
    """The body ``url`` answers from ``pod`` once kube-proxy has programmed the Service (a real cluster's race:
    EndpointSlices first, rules within a sync period), retried for up to 30 s; fails with the last error."""
    last = ""

    def probe() -> str | None:
        nonlocal last
        out = sh(core, ns, pod, f"curl -sS --max-time 5 {url} 2>&1; echo __curl=$?")
        body, _, code = out.rpartition("__curl=")
        last = body
        return body.strip() if code.strip() == "0" else None

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(1)
    pytest.fail(f"{url} from {pod}: no answer in 30 s; last: {last!r}")


def test_pod_reaches_the_service_by_cluster_ip_fqdn_and_single_label_name(core, ns, flows):
    svc = flows["service"]
    for host in (svc.spec.cluster_ip, f"web.{ns}.svc.cluster.local", "web"):
        got = answers(core, ns, "netexec-0", f"http://{host}/hostname")
        assert got in ("netexec-0", "netexec-1"), f"{host}: {got!r}"


def test_node_reaches_pod_and_node_port(core, ns, flows):
    target = flows["pods"]["netexec-1"].status.pod_ip
    assert sh(core, ns, "on-node", f"curl -sS --max-time 5 http://{target}:{HTTP}/hostname") == "netexec-1"
    node_ip = _internal_ip(flows["nodes"][0])
    port = flows["service"].spec.ports[0].node_port
    got = answers(core, ns, "on-node", f"http://{node_ip}:{port}/hostname")
    assert got in ("netexec-0", "netexec-1")


def test_pod_reaches_the_external_host_by_name_over_tcp_and_by_icmp(core, ns, flows, local_hints):
    token = uuid.uuid4().hex
    host = local_hints["external-host"]
    assert sh(core, ns, "netexec-0", f"curl -sS --max-time 5 'http://{host}/echo?msg={token}'") == token
    out = sh(core, ns, "netexec-0", f"ping -c 2 -W 2 {local_hints['external-ip']}")
    assert re.search(r"2 packets transmitted, 2 packets received", out), out


def test_real_nodes_have_no_route_off_this_machine(real_nodes, local_cluster_name):
    """No default route in a node's namespace: only the cluster's /24, the pod subnets (prohibited beyond the
    nodes') and the Service range (to the host, which does not forward it)."""
    if local_cluster_name is None:
        pytest.skip("the node namespaces are known only for a local cluster")
    for node in real_nodes:
        routes = subprocess.run(
            ["ip", "-n", netns.netns_name(local_cluster_name, node.metadata.name), "route"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "default" not in routes, routes
        assert "prohibit 10.244.0.0/16" in routes, routes
        assert re.search(r"^10\.0\.0\.0/24 via 172\.30\.\d+\.1 ", routes, re.M), routes


def test_volume_contents_and_post_start_hook_are_seen_inside_the_container(core, ns, image, real_nodes):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm"}, "data": {"greeting": "hello-config"}})
    core.create_namespaced_secret(ns, {"metadata": {"name": "sec"}, "stringData": {"token": "s3cret"}})
    pod = _pod(
        "volumes",
        real_nodes[1].metadata.name,
        image["busybox"],
        ["sh", "-c", "echo from-main > /scratch/main; sleep 3600"],
        container={
            "volumeMounts": [
                {"name": "scratch", "mountPath": "/scratch"},
                {"name": "cm", "mountPath": "/etc/cm"},
                {"name": "sec", "mountPath": "/etc/sec"},
            ],
            "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo hooked > /scratch/poststart"]}}},
        },
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            {"name": "cm", "configMap": {"name": "cm"}},
            {"name": "sec", "secret": {"secretName": "sec"}},
        ],
    )
    _run(core, ns, [pod])
    assert sh(core, ns, "volumes", "cat /etc/cm/greeting") == "hello-config"
    assert sh(core, ns, "volumes", "cat /etc/sec/token") == "s3cret"
    assert wait_for(
        "the main container's file", lambda: sh(core, ns, "volumes", "cat /scratch/main 2>/dev/null || true")
    )
    assert sh(core, ns, "volumes", "cat /scratch/poststart").strip() == "hooked"


def test_profile_says_which_nodes_have_a_data_plane(kubeconfig, real_nodes):
    from wincon.cluster.client import connect

    profile = discover(connect(str(kubeconfig)))
    nodes = {n["name"]: n for n in profile.to_dict()["nodes"]}
    for node in real_nodes:
        assert nodes[node.metadata.name]["data_plane"] is True
        assert nodes[node.metadata.name]["simulated"] is False
    windows = [n for n in nodes.values() if n["os"] == "windows"]
    assert windows and all(n["data_plane"] is False for n in windows)


# ------------------------------------------------------------------------------------------ lifecycle

SMALL_REAL = Topology(windows_nodes=1, windows_versions=["ltsc2022"], cni="none", real_nodes=1)


def _nothing_left(name: str) -> None:
    left = {k: v for k, v in dataplane.leftovers(name).items() if v}
    assert left == {}, f"cluster {name} left behind: {left}"
    assert cluster.cluster_pids(name) == []
    assert not paths.state_dir(name).exists()


@pytest.fixture
def dp_name(localcluster_binaries: Path) -> Iterator[str]:
    clusters.needs_root()
    with clusters.removed_after(clusters.fresh_name("dp-test")) as name:
        yield name


def test_down_leaves_nothing_after_up_and_after_up_twice(dp_name):
    cluster.up(dp_name, SMALL_REAL, timeout=clusters.START_WITHIN)
    status = cluster.status(dp_name)
    assert status["state"] == "running"
    assert status["external_host"]["name"] == dataplane.EXTERNAL_NAME
    assert set(status["images"]) >= {"agnhost", "pause", "coredns", "busybox"}
    before = dataplane.pids(dp_name)
    assert before and all(p["running"] for p in status["dataplane"])
    cluster.up(dp_name, timeout=clusters.START_WITHIN)  # reuse
    assert dataplane.pids(dp_name) == before, "a second up must reuse the running data plane"
    assert {k for k, v in dataplane.leftovers(dp_name).items() if v} >= {"netns", "links", "iptables", "cgroups"}
    cluster.down(dp_name)
    _nothing_left(dp_name)


def test_down_after_a_sigkilled_up_leaves_nothing(dp_name):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "wincon", "cluster", "up", "--cluster-name", dp_name]
    args += ["--real-nodes", "1", "--cni", "none"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Kill it once a kubelet runs: namespaces, mounts and cgroups exist, nothing is recorded as ready.
        wait_for(
            "a kubelet of the cluster to start",
            lambda: any("kubelet" in (procs.cmdline(p) or "") for p in dataplane.pids(dp_name)),
            timeout=120,
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert dataplane.pids(dp_name), "the daemons outlive the killed up"
    cluster.down(dp_name)
    _nothing_left(dp_name)
