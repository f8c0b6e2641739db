"""Fault injection: every check can fail. A fault that breaks a behaviour turns its checks red.

Against a local cluster of its own with real Linux nodes, each test runs the affected checks (their Linux
controls, which execute the very check code) first as they are, where they must pass, then with one fault
injected into the nodes' or the external host's network namespace, or one of the cluster's own processes
stopped, where each of them must fail (or, where the fault keeps the check from starting, error): never pass,
xfail or skip. Every fault is removed afterwards and the cluster is brought down at the end.

Faults: pod-to-pod TCP refused between pods; Service rules removed (kube-proxy stopped, KUBE-SERVICES
flushed); the external host down (its link down); the kubelet's connections to pods refused (a readiness or
startup probe's target closed, an httpGet postStart hook failing); every kubelet stopped.

The runs are real pytest runs of the suites (``pytest suites -m control -k ...``) read back from their JUnit.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client

from wincon.localcluster import cluster, dataplane, netns, paths
from wincon.results.junit import parse

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("faults")  # one worker, one cluster, one fault at a time

# The checks each fault must break (selections of Linux controls by keyword).
# The checks each fault must break: Linux controls, by suite file and keyword.
POD_TO_POD = "suites/networking/test_pod_to_pod.py"
SERVICES = "suites/networking/test_services.py"
EGRESS = "suites/networking/test_egress.py"
POD_TCP = (POD_TO_POD, "pod_reaches_pod and http")
SERVICE = (SERVICES, "pod_reaches_service_by_cluster_ip")
EGRESS_TCP = (EGRESS, "pod_reaches_external and over_tcp")
ALL_PODS = (f"{POD_TO_POD} {SERVICES}", "pod_reaches_pod or pod_reaches_service_by_cluster_ip")
KUBELET_TO_POD = (
    "suites/probes/test_probes.py suites/lifecycle/test_lifecycle.py",
    "startup_probe_delays_readiness or post_start_http_hook",
)


@pytest.fixture(scope="module")
def fault_cluster(localcluster_binaries: Path) -> Iterator[tuple[str, Path]]:
    import os

    if os.geteuid() != 0:
        pytest.skip("fault injection needs the real Linux data plane, which needs root")
    name = f"faults-{uuid.uuid4().hex[:6]}"
    try:
        kubeconfig = cluster.up(name)
        yield name, kubeconfig
    finally:
        cluster.down(name)
        cluster.lock_path(name).unlink(missing_ok=True)


def run_checks(kubeconfig: Path, checks: tuple[str, str], tmp: Path, *extra: str) -> dict[str, str]:
    """Run the Linux controls ``checks`` (suite files, keyword); return nodeid -> verdict (passed, failed, ...)."""
    files, selection = checks
    junit = tmp / f"junit-{uuid.uuid4().hex[:6]}.xml"
    args = [sys.executable, "-m", "pytest", *files.split(), "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
    args += ["--kubeconfig", str(kubeconfig), "-m", "control", "-k", selection, f"--junitxml={junit}"]
    args += ["--results-dir", str(tmp / f"results-{junit.stem}"), "--pod-start-timeout", "45", *extra]
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    if not junit.is_file():
        pytest.fail(
            f"the suite run wrote no JUnit (exit {result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
        )
    verdicts = {f"{c.classname}::{c.name}": c.verdict.value for c in parse(junit)}
    assert verdicts, f"`-m control -k {selection!r}` selected nothing:\n{result.stdout[-2000:]}"
    return verdicts


def assert_broken(before: dict[str, str], after: dict[str, str], allowed: tuple[str, ...] = ("failed",)) -> None:
    """Every check passed before the fault and ends in ``allowed`` with it; none passes, xfails or skips."""
    assert set(before.values()) == {"passed"}, f"the checks must pass without the fault first: {before}"
    assert set(after) == set(before), f"not the same checks ran: {sorted(set(before) ^ set(after))}"
    wrong = {k: v for k, v in after.items() if v not in allowed}
    assert not wrong, f"with the fault these checks did not end in {allowed}: {wrong}"


def real_nodes(name: str) -> list[str]:
    record = cluster._read_record(name) or {}
    return [n.name for n in dataplane.Plan.from_dict(record["dataplane"]).nodes]


def node_namespaces(name: str) -> list[str]:
    return [netns.netns_name(name, node) for node in real_nodes(name)]


@contextmanager
def iptables_fault(name: str, table: str, chain: str, match: list[str], target: list[str]) -> Iterator[None]:
    """Insert a rule first in ``chain`` of every real node's namespace; delete it afterwards."""
    rule = [*match, "-m", "comment", "--comment", "wincon-fault", *target]
    inserted = []
    try:
        for ns in node_namespaces(name):
            netns.run(["iptables", "-w", "-t", table, "-I", chain, "1", *rule], netns=ns)
            inserted.append(ns)
        yield
    finally:
        for ns in inserted:
            netns.run(["iptables", "-w", "-t", table, "-D", chain, *rule], netns=ns)


@contextmanager
def stopped(name: str, component: str) -> Iterator[None]:
    """SIGKILL ``component`` (kubelet, kube-proxy) of every real node; start them again afterwards."""
    processes = [f"{node}-{component}" for node in real_nodes(name)]
    try:
        for proc in processes:
            dataplane.stop_process(name, proc)
        yield
    finally:
        for proc in processes:
            dataplane.restart_process(name, proc)


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
    pods = ["-s", "10.244.0.0/16", "-d", "10.244.0.0/16", "-p", "tcp"]
    with iptables_fault(name, "filter", "FORWARD", pods, ["-j", "REJECT", "--reject-with", "tcp-reset"]):
        after = run_checks(kubeconfig, POD_TCP, tmp_path)
    assert_broken(before, after)


def test_removed_service_rules_fail_the_service_checks(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, SERVICE, tmp_path)
    with stopped(name, "kube-proxy"):
        for ns in node_namespaces(name):
            netns.run(["iptables", "-w", "-t", "nat", "-F", "KUBE-SERVICES"], netns=ns)
        after = run_checks(kubeconfig, SERVICE, tmp_path)
    assert_broken(before, after)


def test_external_host_down_fails_the_egress_checks(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, EGRESS_TCP, tmp_path)
    ext = netns.netns_name(name, "ext")
    netns.run(["ip", "link", "set", "eth0", "down"], netns=ext)
    try:
        after = run_checks(kubeconfig, EGRESS_TCP, tmp_path)
    finally:
        netns.run(["ip", "link", "set", "eth0", "up"], netns=ext)
    assert_broken(before, after)


def test_closed_probe_and_hook_targets_fail_the_probe_and_http_hook_checks(fault_cluster, tmp_path):
    """The kubelet's own connections to pods (httpGet and tcpSocket probes, httpGet postStart hooks) refused:
    a readiness probe whose target is closed and a postStart hook that fails."""
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, KUBELET_TO_POD, tmp_path)
    to_pods = ["-d", "10.244.0.0/16", "-p", "tcp"]
    with iptables_fault(name, "filter", "OUTPUT", to_pods, ["-j", "REJECT", "--reject-with", "tcp-reset"]):
        after = run_checks(kubeconfig, KUBELET_TO_POD, tmp_path)
    # A failing postStart hook kills its container, so that check's pod never runs: an error, as it should be.
    assert_broken(before, after, allowed=("failed", "error"))


def test_stopped_kubelets_make_every_check_error_none_pass(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, ALL_PODS, tmp_path)
    try:
        with stopped(name, "kubelet"):
            after = run_checks(kubeconfig, ALL_PODS, tmp_path, "--pod-start-timeout", "20")
    finally:
        wait_nodes_ready(kubeconfig)
    assert_broken(before, after, allowed=("error",))


def test_every_fault_is_gone_afterwards(fault_cluster):
    name, _ = fault_cluster
    for ns in node_namespaces(name):
        for table in ("filter", "nat"):
            rules = netns.run(["iptables", "-w", "-t", table, "-S"], netns=ns)
            assert "wincon-fault" not in rules, f"{ns}: a fault rule was left:\n{rules}"
    assert all(p["running"] for p in cluster.status(name)["dataplane"]), "a stopped process was not restarted"
    assert paths.state_dir(name).is_dir()
