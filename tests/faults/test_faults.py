"""Fault injection: every check can fail. A fault that breaks a behaviour turns its checks red.

Against a local cluster of its own with real Linux nodes, each test runs the affected checks (their Linux
controls, which execute the very check code) first as they are, where they must pass, then with one fault
injected into the nodes' or the external host's network namespace, or one of the cluster's own processes
stopped, where each of them must fail (or, where the fault keeps the check from starting, error): never pass,
xfail or skip. Every fault is removed afterwards and the cluster is brought down at the end.

Faults: pod-to-pod TCP refused between pods; Service rules removed (kube-proxy stopped, KUBE-SERVICES
flushed); the external host down (its link down); the kubelet's connections to pods refused (a readiness or
startup probe's target closed, an httpGet postStart hook failing); volumes mounted empty (ConfigMap, Secret,
projected, downward API, emptyDir: an empty read-only tmpfs over each as the kubelet sets it up); an exec
postStart hook exiting non-zero (its write refused); every node's journal gone (the kubelets' node log query then
reads nothing); every kubelet stopped.

The runs are real pytest runs of the suites (``pytest suites -m control -k ...``) read back from their JUnit.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client

from tests.faults.conftest import (
    assert_broken,
    node_namespaces,
    node_processes,
    own_cluster,
    real_nodes,
    run_checks,
    stopped,
)
from wincon.localcluster import cluster, dataplane, netns, paths

# One worker, one fault at a time on this module's own cluster: a group of its own, so that it runs beside the
# other fault groups, on another worker; weighted by its seconds in a make test at d83e1a7 (about 350 s, its
# cluster's start included), so that it starts among the first (tests/support/ordering.py).
pytestmark = [pytest.mark.xdist_group("faults-own-cluster"), pytest.mark.weight(350)]

# The checks each fault must break: Linux controls, by suite file and keyword.
POD_TO_POD = "suites/networking/test_pod_to_pod.py"
SERVICES = "suites/networking/test_services.py"
EGRESS = "suites/networking/test_egress.py"
POD_TCP = (POD_TO_POD, "pod_reaches_pod and http")
SERVICE = (SERVICES, "pod_reaches_service_by_cluster_ip")
EGRESS_TCP = (EGRESS, "pod_reaches_external and over_tcp")
ALL_PODS = (f"{POD_TO_POD} {SERVICES}", "pod_reaches_pod or pod_reaches_service_by_cluster_ip")
VOLUMES = (
    "suites/storage/test_volume_types.py",
    "config_map_and_secret or downward_api_volume or projected_volume or service_account_token"
    " or empty_dir_on_disk or shared_by_two_containers",
)
EXEC_HOOK = ("suites/lifecycle/test_lifecycle.py", "post_start_exec_hook")
NODE_LOG_QUERY = ("suites/node/test_node_log_query.py", "node_log_query")  # the query and its tailLines/pattern
KUBELET_TO_POD = (
    "suites/probes/test_probes.py suites/lifecycle/test_lifecycle.py",
    "startup_probe_delays_readiness or post_start_http_hook",
)


@pytest.fixture(scope="module")
def fault_cluster(localcluster_binaries: Path) -> Iterator[tuple[str, Path]]:
    """This module's own cluster (its faults touch every node's network; conftest's own_cluster)."""
    with own_cluster("faults") as found:
        yield found


FAULT_TABLE = "wincon_fault"  # the nftables table of the forwarded-traffic fault, in each real node's namespace


@contextmanager
def forwarded_tcp_refused(name: str, cidr: str) -> Iterator[None]:
    """TCP forwarded from ``cidr`` to ``cidr`` is refused at once (a TCP reset) in every real node's namespace, by an
    nftables table of the fault's own whose forward chain runs ahead of iptables' filter table (priority -10
    against 0; bridged traffic between pods of one node passes the same hook). Not an iptables rule: the
    NetworkPolicy engine (kube-router) puts the jump to its own chains back at the top of FORWARD at each sync, and
    those chains accept pod traffic, so a REJECT inserted there (and moved first again every 0.5 s) still let a
    dial through now and then: in a clean-clone CI run both pod-to-pod checks passed under the fault (2026-11-28).
    Nothing of the cluster touches this table; a reject in an earlier chain ends the packet whatever later ones say.
    """
    rule = f"ip saddr {cidr} ip daddr {cidr} meta l4proto tcp reject with tcp reset"
    added: list[str] = []
    try:
        for ns in node_namespaces(name):
            netns.run(["nft", f"add table ip {FAULT_TABLE}"], netns=ns)
            added.append(ns)
            chain = f"add chain ip {FAULT_TABLE} forward {{ type filter hook forward priority -10; policy accept; }}"
            netns.run(["nft", chain], netns=ns)
            netns.run(["nft", f"add rule ip {FAULT_TABLE} forward {rule}"], netns=ns)
        yield
    finally:
        for ns in added:
            netns.run(["nft", f"delete table ip {FAULT_TABLE}"], netns=ns)


@contextmanager
def connections_refused(name: str, cidr: str, proto: str = "tcp") -> Iterator[None]:
    """The ``proto`` connections that the nodes' own processes (the kubelet) open to ``cidr`` are refused at once,
    in every real node's namespace, by a policy-routing rule: ``iif lo`` (made on the node itself, not forwarded
    for a pod) ``prohibit`` (the route lookup fails: connect() ends with EACCES). A routing rule, not an iptables
    rule: the NetworkPolicy engine (kube-router) puts the jump to its own chains ahead of every rule in OUTPUT at
    each sync, and those chains accept the node's traffic to its pods (an inserted REJECT lost that race once in
    a clean-clone CI run: the httpGet postStart hook passed under the fault); it leaves routing rules alone."""
    spec = ["iif", "lo", "ipproto", proto, "to", cidr, "prohibit"]
    added: list[str] = []
    try:
        for ns in node_namespaces(name):
            netns.run(["ip", "rule", "add", *spec], netns=ns)
            added.append(ns)
        yield
    finally:
        for ns in added:
            netns.run(["ip", "rule", "del", *spec], netns=ns, check=False)


MOUNT_SOURCE = "wincon-fault"  # the device name of every tmpfs a fault mounts, to find and remove them
CONTENT_VOLUMES = ("configmap", "secret", "projected", "downward-api")


def fault_mounts() -> list[str]:
    """The mount points of the tmpfs mounts the faults made (from the host's mount table)."""
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [line.split()[1] for line in lines if line.split()[0] == MOUNT_SOURCE]


@contextmanager
def volumes_mounted_empty(name: str, plugins: tuple[str, ...]) -> Iterator[list[str]]:
    """Every volume of the ``plugins`` (``kubernetes.io~<plugin>``) a real kubelet sets up from now on is covered,
    once the kubelet has written it and before the container starts, by an empty read-only tmpfs: the container
    sees an empty volume it cannot write. Volumes that existed before are left alone. Yields the mount points
    (filled as they are made); every one left is unmounted afterwards (the kubelet unmounts those of pods it
    tears down itself)."""
    roots = [dataplane.node_dir(name, node) / "kubelet" / "pods" for node in real_nodes(name)]
    patterns = [f"*/volumes/kubernetes.io~{plugin}/*" for plugin in plugins]

    def current() -> set[Path]:
        while True:
            try:
                return {d for root in roots for pattern in patterns for d in root.glob(pattern)}
            except FileNotFoundError:  # a pod's directory removed while it was read (the pod torn down): read again
                continue

    before, stop = current(), threading.Event()
    mounted: list[str] = []

    def cover() -> None:
        while not stop.wait(0.005):
            for volume in sorted(current() - before - {Path(m) for m in mounted}):
                # A content volume is covered only once its atomic writer finished (``..data`` is its last step).
                if "empty-dir" not in str(volume.parent) and not (volume / "..data").exists():
                    continue
                opts = "ro,size=64k,mode=0755"
                cmd = ["mount", "-t", "tmpfs", "-o", opts, MOUNT_SOURCE, str(volume)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode == 0:
                    mounted.append(str(volume))
                elif volume.exists():  # a volume torn down meanwhile is no longer the fault's to cover
                    raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")

    def watch() -> None:
        try:
            cover()
        except BaseException as exc:  # noqa: BLE001 - reported by the block: a fault half-injected must not pass
            died.append(exc)

    died: list[BaseException] = []
    watcher = threading.Thread(target=watch, name="volumes-mounted-empty", daemon=True)
    watcher.start()
    try:
        yield mounted
    finally:
        stop.set()
        watcher.join(timeout=10)
        for point in fault_mounts():
            subprocess.run(["umount", "-l", point], check=False)
    if died:
        raise AssertionError(f"the fault stopped covering volumes part-way: {died[0]!r}") from died[0]


JOURNAL_AWAY = "journal.wincon-fault"


@contextmanager
def journals_gone(name: str) -> Iterator[None]:
    """Each real node's journal directory (wincon.localcluster.journal) moved aside, so the journalctl the kubelet
    runs for a node log query finds no journal there; moved back afterwards (the journal writer keeps its open
    file and goes on writing)."""
    moved = []
    try:
        for node in real_nodes(name):
            ndir = dataplane.node_dir(name, node)
            (ndir / "journal").rename(ndir / JOURNAL_AWAY)
            moved.append(ndir)
        yield
    finally:
        for ndir in moved:
            (ndir / JOURNAL_AWAY).rename(ndir / "journal")


def wait_nodes_ready(kubeconfig: Path, timeout: float = 90) -> None:
    api = cluster._api_client(kubeconfig)
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            nodes = [n for n in core.list_node().items if (n.metadata.labels or {}).get("type") != "kwok"]
            if nodes and all(
                any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or []) for n in nodes
            ):
                return
            time.sleep(1)
    finally:
        api.close()
    pytest.fail(f"the real nodes did not come back Ready within {timeout:.0f} s")


def test_dropped_pod_to_pod_tcp_fails_the_pod_to_pod_tcp_checks(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, POD_TCP, tmp_path)
    with forwarded_tcp_refused(name, "10.244.0.0/16"):
        after = run_checks(kubeconfig, POD_TCP, tmp_path)
    assert_broken("pod-to-pod TCP refused", before, after)


def test_removed_service_rules_fail_the_service_checks(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, SERVICE, tmp_path)
    with stopped(name, *node_processes(name, "kube-proxy")) as at:
        for ns in node_namespaces(name):
            netns.run(["iptables", "-w", "-t", "nat", "-F", "KUBE-SERVICES"], netns=ns)
        after = run_checks(kubeconfig, SERVICE, tmp_path)
    assert_broken("Service rules removed", before, after, injected_at=at)


def test_external_host_down_fails_the_egress_checks(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, EGRESS_TCP, tmp_path)
    ext = netns.netns_name(name, "ext")
    netns.run(["ip", "link", "set", "eth0", "down"], netns=ext)
    try:
        after = run_checks(kubeconfig, EGRESS_TCP, tmp_path)
    finally:
        netns.run(["ip", "link", "set", "eth0", "up"], netns=ext)
    assert_broken("external host down", before, after)


def test_closed_probe_and_hook_targets_fail_the_probe_and_http_hook_checks(fault_cluster, tmp_path):
    """The kubelet's own connections to pods (httpGet and tcpSocket probes, httpGet postStart hooks) refused:
    a readiness probe whose target is closed and a postStart hook that fails."""
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, KUBELET_TO_POD, tmp_path)
    # Refused at once: a tcp-reset rejection once left the kubelet's SYNs unanswered, so the hook's dial ran into
    # its 2-minute connect timeout and the check into its setup wait (an error).
    with connections_refused(name, "10.244.0.0/16"):
        after = run_checks(kubeconfig, KUBELET_TO_POD, tmp_path)
    # The failing httpGet hook kills its container: the check fails naming the kubelet's FailedPostStartHook.
    assert_broken("probe and hook targets closed", before, after)


def test_volumes_mounted_empty_fail_the_volume_checks(fault_cluster, tmp_path):
    """ConfigMap, Secret, projected (the service account token's too), downward API and emptyDir volumes each
    mounted empty and read-only on the node: every check that reads or writes one fails."""
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, VOLUMES, tmp_path)
    with volumes_mounted_empty(name, (*CONTENT_VOLUMES, "empty-dir")) as covered:
        after = run_checks(kubeconfig, VOLUMES, tmp_path)
    assert covered, "the fault covered no volume: the checks' pods set up none on the real nodes"
    assert_broken("volumes mounted empty", before, after)


def test_post_start_hook_exiting_non_zero_fails_the_exec_hook_check(fault_cluster, tmp_path):
    """The exec postStart hook's write refused (the pod's emptyDir mounted read-only), so the hook exits
    non-zero: the check fails, and says the kubelet reported the hook failed."""
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, EXEC_HOOK, tmp_path)
    with volumes_mounted_empty(name, ("empty-dir",)):
        after = run_checks(kubeconfig, EXEC_HOOK, tmp_path)
    assert_broken("post-start hook exits non-zero", before, after)
    unsaid = {k: m for k, m in after.messages.items() if "FailedPostStartHook" not in m}
    assert not unsaid, f"these failures do not name the failed hook: {unsaid}"


def test_gone_node_journals_fail_the_node_log_query_check(fault_cluster, tmp_path):
    """Every node's journal gone: the kubelet answers ?query=kubelet without its unit's lines, and the node log
    query's Linux controls fail (the plain query, tailLines=3 and the pattern)."""
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, NODE_LOG_QUERY, tmp_path)
    with journals_gone(name):
        after = run_checks(kubeconfig, NODE_LOG_QUERY, tmp_path)
    assert_broken("node journals gone", before, after)


def test_stopped_kubelets_make_every_check_error_none_pass(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, ALL_PODS, tmp_path)
    try:
        with stopped(name, *node_processes(name, "kubelet")) as at:
            after = run_checks(kubeconfig, ALL_PODS, tmp_path, "--pod-start-timeout", "20")
    finally:
        wait_nodes_ready(kubeconfig)
    assert_broken("kubelets stopped", before, after, allowed=("error",), injected_at=at)


def test_every_fault_is_gone_afterwards(fault_cluster):
    name, _ = fault_cluster
    for ns in node_namespaces(name):
        for table in ("filter", "nat"):
            rules = netns.run(["iptables", "-w", "-t", table, "-S"], netns=ns)
            assert "wincon-fault" not in rules, f"{ns}: a fault rule was left:\n{rules}"
        tables = netns.run(["nft", "list", "tables"], netns=ns)
        assert FAULT_TABLE not in tables, f"{ns}: the fault's nftables table was left:\n{tables}"
    assert not fault_mounts(), f"a volume fault's tmpfs was left mounted: {fault_mounts()}"
    away = [node for node in real_nodes(name) if (dataplane.node_dir(name, node) / JOURNAL_AWAY).exists()]
    assert not away, f"a node's journal was left moved aside: {away}"
    assert all(p["running"] for p in cluster.status(name)["dataplane"]), "a stopped process was not restarted"
    assert paths.state_dir(name).is_dir()
