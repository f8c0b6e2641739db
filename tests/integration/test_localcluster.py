"""The local cluster behaves like a real control plane with the nodes it declares.

Tests against the session cluster (``kubeconfig`` fixture) check the nodes, scheduling, the API server's
Windows validation, RBAC, PodSecurity, service-account tokens and the CNI objects. The lifecycle tests
start their own small clusters (names ``lc-test-*``) to check reuse, ``down`` and the faults, and verify
with pgrep that no process survives.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.clusters import fresh_name, removed_after
from tests.support.waits import eventually
from wincon.commandline.errors import ExitCode, LocalClusterError
from wincon.localcluster import cluster, cni, paths
from wincon.localcluster.topology import SIMULATED_ANNOTATION, WINDOWS_RELEASES, Topology

T = TypeVar("T")
WAIT = 60.0


def pgrep(pattern: str) -> list[str]:
    """Live processes whose command line contains ``pattern`` (pgrep -f -a)."""
    result = subprocess.run(["pgrep", "-a", "-f", pattern], capture_output=True, text=True)
    return [line for line in result.stdout.splitlines() if "pgrep" not in line]


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    name = f"wincon-lc-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="module")
def topology(local_cluster_name: str | None) -> Topology:
    if local_cluster_name is None:
        pytest.skip("the declared topology is known only for a local cluster (WINCON_TEST_KUBECONFIG is another)")
    return Topology.from_dict(cluster.status(local_cluster_name)["topology"])


def api_message(exc: ApiException) -> str:
    """The message of the Status the API server answered with."""
    return json.loads(exc.body)["message"]


def kube_version() -> str:
    return paths.load_versions()["kubernetes"]["version"]


def is_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


# ------------------------------------------------------------------------------------------ nodes


def test_nodes_are_ready_with_declared_labels_node_info_and_simulated_marks(core, topology):
    declared = {n["metadata"]["name"]: n for n in topology.nodes(kube_version())}
    every = {n.metadata.name: n for n in core.list_node().items}
    nodes = {name: n for name, n in every.items() if n.metadata.labels.get("type") == "kwok"}
    assert set(nodes) == set(declared)
    real = [n for n in every.values() if n.metadata.labels.get("type") != "kwok"]
    assert len(real) == topology.real_nodes, "the real Linux workers are the only other nodes"
    for node in real:  # a real kubelet's node: nothing marks it simulated
        assert is_ready(node) and node.metadata.labels["kubernetes.io/os"] == "linux"
        assert SIMULATED_ANNOTATION not in (node.metadata.annotations or {})
        assert not (node.spec.provider_id or "").startswith("kwok://")
        assert node.status.node_info.kubelet_version == kube_version()
    for name, want in declared.items():
        node = nodes[name]
        assert is_ready(node), f"{name} is not Ready"
        for key, value in want["metadata"]["labels"].items():
            assert node.metadata.labels.get(key) == value, f"{name}: label {key}"
        assert node.metadata.annotations.get(SIMULATED_ANNOTATION) == "fake"
        assert node.spec.provider_id == f"kwok://{name}"
        info = node.status.node_info
        want_info = want["status"]["nodeInfo"]
        assert info.operating_system == want_info["operatingSystem"]
        assert info.os_image == want_info["osImage"]
        assert info.kernel_version == want_info["kernelVersion"]
        assert info.container_runtime_version.startswith("containerd://")
        assert info.kubelet_version == kube_version()
        assert info.architecture == "amd64"
        assert node.status.capacity["pods"] == want["status"]["capacity"]["pods"]
        assert node.status.allocatable["cpu"] == want["status"]["allocatable"]["cpu"]
        assert {a.type for a in node.status.addresses} == {"InternalIP", "Hostname"}
    windows = [n for n in nodes.values() if n.metadata.labels["kubernetes.io/os"] == "windows"]
    assert len(windows) == topology.windows_nodes
    builds = {WINDOWS_RELEASES[v]["build"] for v in topology.windows_versions}
    for node in windows:
        build = node.metadata.labels["node.kubernetes.io/windows-build"]
        assert build in builds
        assert node.status.node_info.kernel_version.startswith(build + ".")


# ------------------------------------------------------------------------------------ scheduling


def test_windows_pinned_deployment_runs_all_pods_on_windows_nodes_none_on_linux(api, core, namespace, topology):
    replicas = 4
    pod_spec = {
        "os": {"name": "windows"},
        "nodeSelector": {"kubernetes.io/os": "windows"},
        "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}],
        "containers": [{"name": "web", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52"}],
    }
    if topology.windows_taint:
        key, _, rest = topology.windows_taint.partition("=")
        value, _, effect = rest.rpartition(":")
        pod_spec["tolerations"].append({"key": key, "operator": "Equal", "value": value, "effect": effect})
    client.AppsV1Api(api).create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "win-web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "win-web"}},
                "template": {"metadata": {"labels": {"app": "win-web"}}, "spec": pod_spec},
            },
        },
    )

    def all_running() -> list[Any] | None:
        pods = core.list_namespaced_pod(namespace, label_selector="app=win-web").items
        running = [p for p in pods if p.status.phase == "Running"]
        return running if len(running) == replicas else None

    pods = eventually(f"{replicas} Running pods of the Windows Deployment", all_running, WAIT)
    node_os = {n.metadata.name: n.metadata.labels["kubernetes.io/os"] for n in core.list_node().items}
    placed = {p.metadata.name: p.spec.node_name for p in pods}
    assert all(node_os[node] == "windows" for node in placed.values()), placed
    assert len(set(placed.values())) == min(replicas, topology.windows_nodes)  # spread across Windows nodes


# -------------------------------------------------------------------------- API server admission


def test_windows_pod_with_run_as_user_is_rejected_by_the_api_server(core, namespace):
    pod = {
        "metadata": {"name": "win-runasuser"},
        "spec": {
            "os": {"name": "windows"},
            "securityContext": {"runAsUser": 1000},
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}],
        },
    }
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod(namespace, pod)
    assert raised.value.status == 422
    assert "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod" in api_message(raised.value)


def test_pod_security_admission_enforces_the_namespace_level(core):
    name = f"wincon-lc-psa-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
    try:
        privileged = {
            "metadata": {"name": "privileged"},
            "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]},
        }
        with pytest.raises(ApiException) as raised:
            core.create_namespaced_pod(name, privileged)
        assert raised.value.status == 403
        assert 'violates PodSecurity "restricted:latest"' in api_message(raised.value)

        # The documented exemption: for a pod that says it is Windows, restricted does not ask for the
        # Linux-only fields (seccomp, capabilities, allowPrivilegeEscalation) a Linux pod must set.
        def pod(pod_name: str, os_name: str) -> dict:
            return {
                "metadata": {"name": pod_name},
                "spec": {
                    "os": {"name": os_name},
                    "securityContext": {"runAsNonRoot": True},
                    "containers": [{"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52"}],
                },
            }

        with pytest.raises(ApiException) as raised:
            core.create_namespaced_pod(name, pod("linux", "linux"))
        assert "allowPrivilegeEscalation != false" in api_message(raised.value)
        assert core.create_namespaced_pod(name, pod("windows", "windows")).metadata.name == "windows"
    finally:
        core.delete_namespace(name)


def test_service_account_token_authenticates_and_rbac_denies_what_it_was_not_granted(api, core, namespace):
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    eventually(
        "the default service account of a new namespace",
        lambda: next(
            (sa for sa in core.list_namespaced_service_account(namespace).items if sa.metadata.name == "default"), None
        ),
        WAIT,
    )
    token = core.create_namespaced_service_account_token(
        "nobody", namespace, {"spec": {"expirationSeconds": 600}}
    ).status.token
    assert token
    configuration = client.Configuration()
    configuration.host = api.configuration.host
    configuration.ssl_ca_cert = api.configuration.ssl_ca_cert
    configuration.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(configuration) as as_sa:
        review = client.AuthenticationV1Api(as_sa).create_self_subject_review({})
        assert review.status.user_info.username == f"system:serviceaccount:{namespace}:nobody"
        with pytest.raises(ApiException) as raised:
            client.CoreV1Api(as_sa).list_namespaced_secret(namespace)
    assert raised.value.status == 403
    assert f'User "system:serviceaccount:{namespace}:nobody" cannot list resource "secrets"' in api_message(
        raised.value
    )


# ---------------------------------------------------------------------------------- CNI objects


def test_cni_daemonsets_run_their_pods_on_the_nodes_of_their_os(api, core, topology):
    """The objects made for CNI detection run (simulated) on the simulated nodes of their OS, never on a real
    node, where they would pull images."""
    apps = client.AppsV1Api(api)
    node_os = {
        n.metadata.name: n.metadata.labels["kubernetes.io/os"]
        for n in core.list_node().items
        if n.metadata.labels.get("type") == "kwok"
    }
    expected = cni.daemonsets(topology.cni, kube_version())
    assert expected, "every topology deploys at least kube-proxy"
    for namespace, name, os_name in expected:
        wanted = sum(1 for v in node_os.values() if v == os_name)

        def scheduled(namespace: str = namespace, name: str = name, wanted: int = wanted) -> Any:
            ds = apps.read_namespaced_daemon_set(name, namespace)
            ready = ds.status.number_ready == wanted and ds.status.desired_number_scheduled == wanted
            return ds if ready else None

        ds = eventually(f"DaemonSet {namespace}/{name} ready on its {wanted} {os_name} node(s)", scheduled, WAIT)
        selector = ",".join(f"{k}={v}" for k, v in ds.spec.selector.match_labels.items())
        pods = [p for p in core.list_namespaced_pod(namespace, label_selector=selector).items]
        owned = [p for p in pods if any(o.name == name for o in p.metadata.owner_references or [])]
        assert len(owned) == wanted
        assert all(p.status.phase == "Running" and node_os[p.spec.node_name] == os_name for p in owned)


def test_kube_proxy_and_dns_objects_look_like_a_real_cluster(api, core, topology):
    config = core.read_namespaced_config_map("kube-proxy", "kube-system").data["config.conf"]
    assert "mode: iptables" in config.splitlines()
    windows_proxy = client.AppsV1Api(api).read_namespaced_daemon_set("kube-proxy-windows", "kube-system")
    assert "--proxy-mode=kernelspace" in windows_proxy.spec.template.spec.containers[0].args
    dns = core.read_namespaced_service("kube-dns", "kube-system")
    assert dns.spec.type == "ClusterIP" and dns.spec.cluster_ip == cni.DNS_CLUSTER_IP
    assert {(p.port, p.protocol) for p in dns.spec.ports} >= {(53, "UDP"), (53, "TCP")}
    if topology.cni.startswith("flannel-"):
        net_conf = core.read_namespaced_config_map("kube-flannel-cfg", "kube-flannel").data["net-conf.json"]
        backend = topology.cni.removeprefix("flannel-")
        assert f'"Type": "{backend}"' in net_conf


# ---------------------------------------------------------------------- lifecycle and faults


SMALL = Topology(windows_nodes=1, linux_nodes=1, windows_versions=["ltsc2022"], cni="none", dataplane="none")


@pytest.fixture
def lifecycle_name(localcluster_binaries: Path) -> Iterator[str]:
    """A fresh cluster name for one lifecycle test; the cluster is always brought down afterwards."""
    with removed_after(fresh_name("lc-test")) as name:
        yield name
    assert pgrep(str(paths.kwok_cluster_dir(name)) + "/") == []


def test_up_reuses_a_running_cluster_and_down_twice_leaves_no_process(lifecycle_name):
    name = lifecycle_name
    first = cluster.up(name, SMALL)
    pids = cluster.cluster_pids(name)
    assert len(pids) == len(cluster.COMPONENTS)
    assert pgrep(str(paths.kwok_cluster_dir(name)) + "/"), "pgrep sees the cluster's processes"
    assert cluster.status(name)["state"] == "running"

    start = time.monotonic()
    again = cluster.up(name)  # no topology: reuse whatever runs
    assert again == first and cluster.cluster_pids(name) == pids
    assert time.monotonic() - start < 10, "reusing must not restart the control plane"
    with pytest.raises(LocalClusterError, match="already runs with another topology"):
        cluster.up(name, Topology())

    cluster.down(name)
    assert pgrep(str(paths.kwok_cluster_dir(name)) + "/") == []
    assert not paths.state_dir(name).exists() and not paths.kwok_cluster_dir(name).exists()
    assert cluster.status(name)["state"] == "absent"
    cluster.down(name)  # harmless twice
    with pytest.raises(LocalClusterError, match="is not running"):
        cluster.kubeconfig_path(name)


def test_dead_component_is_named_and_stale_state_is_recovered(lifecycle_name):
    name = lifecycle_name
    cluster.up(name, SMALL)
    scheduler = next(c for c in cluster.components(name) if c.name == "kube-scheduler")
    os.kill(scheduler.pid, signal.SIGKILL)

    def scheduler_gone() -> bool | None:
        return True if not next(c for c in cluster.components(name) if c.name == "kube-scheduler").running else None

    eventually("kube-scheduler to be gone", scheduler_gone, 10)
    with pytest.raises(LocalClusterError) as raised:
        cluster.up(name, SMALL)
    assert "kube-scheduler not running" in raised.value.message
    assert str(scheduler.log) in raised.value.message
    assert cluster.status(name)["state"] == "degraded"

    for pid in cluster.cluster_pids(name):  # what a reboot or a SIGKILLed run leaves: state, no process
        os.kill(pid, signal.SIGKILL)
    eventually("every process to be gone", lambda: True if not cluster.cluster_pids(name) else None, 10)
    assert cluster.status(name)["state"] == "stopped"
    kubeconfig = cluster.up(name, SMALL)
    nodes = client.CoreV1Api(cluster._api_client(kubeconfig)).list_node().items
    assert sorted(n.metadata.name for n in nodes) == sorted(SMALL.node_names())
    assert all(is_ready(n) for n in nodes)


class PortHold:
    """Holds a dead component's port for it while it is down (a listening socket on 127.0.0.1:port), so that another
    cluster created meanwhile cannot take it: kwokctl picks each port of a new cluster by counting down from 32767 to
    the first that is free (kwok v0.8.0 pkg/utils/net/unused_port.go), and `make test` starts clusters on several
    xdist workers at once. Seen in a clean-clone CI (the twenty-seventh session): the controller-manager started again
    here could not bind 127.0.0.1:32750, taken by another test's cluster while it was down."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None

    def take(self, timeout: float = 10.0) -> None:
        """Bind the port as soon as its owner's socket is closed (a killed process closes it as it exits)."""
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", self.port))
                sock.listen()
            except OSError:
                sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
                continue
            self.sock = sock
            return

    def give_back(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def secure_port(pid: int) -> int:
    """The --secure-port= on process ``pid``'s command line (kwokctl gives kube-controller-manager one)."""
    words = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return int(next(w.split("=", 1)[1] for w in words if w.startswith("--secure-port=")))


def test_a_controller_manager_that_gave_up_waiting_for_the_api_server_is_started_again(lifecycle_name):
    """kube-controller-manager exits when /healthz is not ok within 10 s of its start (KCM_WAITED_OUT); made so here
    for real: etcd stopped (SIGSTOP), so the API server's /healthz fails its etcd check, and the controller-manager
    started by kwokctl meanwhile. Once etcd runs again, _check_alive starts it again and it runs its controllers (a
    new namespace gets its default ServiceAccount). The counter-case, any other exit still reported, is
    test_component_dying_on_start_is_named_with_its_log_and_nothing_is_left and tests/unit/test_kcm_started_again.py."""
    name = lifecycle_name
    kubeconfig = cluster.up(name, SMALL)
    comps = {c.name: c for c in cluster.components(name)}
    etcd, kcm = comps["etcd"], comps["kube-controller-manager"]
    assert etcd.pid and kcm.pid
    bindir = paths.bin_dir(
        json.loads(paths.state_dir(name).joinpath(cluster.RECORD_FILE).read_text())["kubernetes_release"]
    )

    def kcm_state() -> cluster.Component:
        return next(c for c in cluster.components(name) if c.name == "kube-controller-manager")

    hold = PortHold(secure_port(kcm.pid))
    os.kill(kcm.pid, signal.SIGKILL)
    hold.take()  # while it is down, no other cluster may take its port (PortHold)
    # kwokctl starts no component whose pid answers signal 0, a zombie's too (cluster._reaped)
    eventually("kube-controller-manager to be reaped", lambda: cluster._reaped(kcm.pid) or None, 30)
    os.kill(etcd.pid, signal.SIGSTOP)
    try:
        seen = cluster.Starting(name, bindir, sys.stderr, set(cluster.COMPONENTS))
        hold.give_back()
        cluster._kwokctl_start(seen)  # /version needs no etcd: kwokctl sees the cluster served and returns

        def gave_up() -> bool | None:
            if kcm_state().running or not cluster._waited_out(kcm_state()):
                return None
            hold.take()
            return True

        try:
            eventually("kube-controller-manager to give up waiting for the API server", gave_up, 60)
        finally:
            print(f"{kcm_state()}; its log's last lines:\n{cluster._tail(kcm_state().log, 3)}", file=sys.stderr)
        assert not cluster._api_healthy(name)
        cluster._check_alive(seen)  # the API server is not healthy: it waits, it neither raises nor starts it
        assert seen.again == 0
    finally:
        os.kill(etcd.pid, signal.SIGCONT)
    # The port is given back only once _check_alive will start it again at once: the API server healthy, the exited
    # process reaped (what _start_again waits for).
    try:
        eventually(
            "the API server healthy and the exited controller-manager reaped",
            lambda: True if cluster._api_healthy(name) and cluster._reaped(kcm_state().pid) else None,
            60,
        )
    finally:
        hold.give_back()

    def started_again() -> bool | None:
        cluster._check_alive(seen)
        return True if kcm_state().running else None

    eventually("kube-controller-manager to be started again", started_again, 60)
    assert seen.again == 1 and cluster.KCM_WAITED_OUT in seen.kept_logs[0].read_text()
    core = client.CoreV1Api(cluster._api_client(kubeconfig))
    ns = f"kcm-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))

    def default_account() -> Any:
        cluster._check_alive(seen)  # as up's waits do: a second such exit is started again too (at most twice)
        return core.read_namespaced_service_account("default", ns)

    try:
        eventually(f"namespace {ns}'s default ServiceAccount (the controller-manager's)", default_account, 120,
                   errors=(ApiException,))  # fmt: skip
    finally:  # stop 52's CI: no ServiceAccount within 60 s after the restart, and nothing said why
        print(f"started again {seen.again} time(s); {kcm_state()}; its log's last lines:\n"
              f"{cluster._tail(kcm_state().log, 5)}", file=sys.stderr)  # fmt: skip


def test_component_dying_on_start_is_named_with_its_log_and_nothing_is_left(lifecycle_name):
    name = lifecycle_name
    with pytest.raises(LocalClusterError) as raised:
        cluster.up(name, SMALL, extra_args=["kube-scheduler=no-such-flag=1"])
    message = raised.value.message
    log = paths.kwok_cluster_dir(name) / "logs" / "kube-scheduler.log"
    assert message.startswith(f"kube-scheduler of cluster {name} exited while starting (log: {log})")
    assert "unknown flag: --no-such-flag" in log.read_text()
    assert raised.value.exit_code == ExitCode.LOCAL_CLUSTER
    assert pgrep(str(paths.kwok_cluster_dir(name)) + "/") == []
    assert cluster.status(name)["state"] == "stopped"


def test_port_in_use_is_refused_before_anything_starts(lifecycle_name):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(LocalClusterError, match=f"port {port} requested for kube-apiserver is in use"):
            cluster.up(lifecycle_name, SMALL, port=port)
    assert pgrep(str(paths.kwok_cluster_dir(lifecycle_name)) + "/") == []


def run_wincon(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wincon", *args], capture_output=True, text=True, env=env, timeout=60)


def test_build_without_go_says_how_to_fix_it_and_exits_10(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "WINCON_GO"}
    env["PATH"] = "/usr/bin:/bin"  # no Go toolchain here
    env["WINCON_CACHE"] = str(tmp_path)  # an empty cache: everything would need building
    assert subprocess.run(["sh", "-c", "command -v go"], env=env, capture_output=True).returncode != 0
    result = run_wincon("cluster", "build", env=env)
    assert result.returncode == ExitCode.LOCAL_CLUSTER
    assert "the Go toolchain is not installed" in result.stderr
    assert result.stderr.count("error:") == 1 and "fix: install Go" in result.stderr


def test_up_without_binaries_and_bad_options_exit_with_their_codes(tmp_path):
    env = dict(os.environ, WINCON_CACHE=str(tmp_path))
    result = run_wincon("cluster", "up", "--cluster-name", "lc-test-nobin", env=env)
    assert result.returncode == ExitCode.LOCAL_CLUSTER
    assert "run `wincon cluster build`" in result.stderr
    result = run_wincon("cluster", "up", "--cluster-name", "lc-test-nobin", "--windows-taint", "os=windows", env=env)
    assert result.returncode == ExitCode.USAGE and "invalid Windows taint" in result.stderr
    result = run_wincon("cluster", "up", "--windows-nodes", "1", "--windows-versions", "ltsc2019,ltsc2022", env=env)
    assert result.returncode == ExitCode.USAGE and "only 1 Windows node" in result.stderr
