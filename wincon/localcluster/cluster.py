"""Start, reuse, inspect and stop a local cluster: a real control plane with kwok-simulated nodes.

The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and the kwok
controller are started by ``kwokctl create cluster --runtime binary`` from the binaries that
``wincon cluster build`` put in the cache: nothing is downloaded. The API server runs with RBAC
authorization (``--authorization-mode=Node,RBAC``), its default admission plugins (PodSecurity among
them) and service-account token signing. wincon then creates the simulated nodes and the objects of the
chosen CNI, and waits until every node is Ready.

Other modules call :func:`up`, :func:`down`, :func:`status` and :func:`kubeconfig_path`.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

import yaml

from wincon.commandline.errors import LocalClusterError
from wincon.documents import releases as kube_releases
from wincon.localcluster import (
    build,
    cni,
    dataplane,
    extras,
    hints,
    images,
    ipfamily,
    latency,
    metrics,
    netns,
    paths,
    procs,
)
from wincon.localcluster.kernel import ensure_kernel_settings
from wincon.localcluster.topology import SIMULATED_ANNOTATION, Topology

# The processes kwokctl starts, by the name of their pid and log files.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller")
UP_TIMEOUT = 120.0
KUBECONFIG_FILE = "kubeconfig"
RECORD_FILE = "cluster.json"
REPO_LIST_FILE = "image-repo-list.yaml"
KWOKCTL_CONFIG = "kwokctl.yaml"
NODE_GRACE_SECONDS = 60
FEATURE_GATE = dataplane.FEATURE_GATE
KWOKCTL_LOG = "kwokctl.log"
POLL = 0.25
T = TypeVar("T")
# kube-controller-manager gives the API server 10 s to answer /healthz ok and exits when it has not
# (cmd/kube-controller-manager/app/controllermanager.go:567 at v1.37.2, the same wait at v1.34-v1.38:
# WaitForAPIServer(versionedClient, 10*time.Second), "particularly important when we start apiserver and controller
# manager at the same time"). kwokctl starts both at once and, unlike a kubelet running them as static pods, never
# starts it again. On a loaded machine the API server's poststarthook/rbac/bootstrap-roles took longer than that
# (stop 51's CI, three cluster starts of the integration tests). Such an exit, and only such an exit, is started again
# with `kwokctl start cluster` once the API server's /healthz answers ok, at most KCM_STARTS_AGAIN times per start.
KCM_WAITED_OUT = "failed to wait for apiserver being healthy"
KCM_STARTS_AGAIN = 2


@dataclass
class Component:
    """One process of a cluster as seen from its kwokctl pid file and /proc."""

    name: str
    pid: int | None
    running: bool
    log: Path


# ---------------------------------------------------------------------------------------------
# processes


def _process_marker(name: str) -> str:
    # Every process kwokctl starts for this cluster runs a binary linked into, and reads its config
    # from, the cluster's kwokctl directory: its path identifies them and nothing else.
    return str(paths.kwok_cluster_dir(name)) + "/"


def cluster_pids(name: str) -> list[int]:
    """Every live process that belongs to cluster ``name`` (found by its kwokctl directory in /proc)."""
    return procs.with_marker(_process_marker(name))


def components(name: str) -> list[Component]:
    """The state of each control-plane process of cluster ``name``."""
    kdir = paths.kwok_cluster_dir(name)
    marker = _process_marker(name)
    result = []
    for comp in COMPONENTS:
        pid = None
        with contextlib.suppress(OSError, ValueError):
            pid = int((kdir / "pids" / f"{comp}.pid").read_text().strip())
        cmdline = procs.cmdline(pid) if pid else None
        result.append(Component(comp, pid, bool(cmdline and marker in cmdline), kdir / "logs" / f"{comp}.log"))
    return result


@dataclass
class Starting:
    """What one start or reuse of cluster ``name`` has seen of its components: the ones seen started, and how often
    kube-controller-manager was started again after it gave up waiting for the API server (KCM_WAITED_OUT)."""

    name: str
    bindir: Path
    out: TextIO | None = None
    started: set[str] = dataclasses.field(default_factory=set)
    again: int = 0
    kept_logs: list[Path] = dataclasses.field(default_factory=list)
    waited: float = 0.0  # seconds the start waited for another cluster's to finish: not counted against its timeout


def _kill(name: str, timeout: float = 5.0) -> None:
    """SIGKILL every process of cluster ``name`` and wait until none is left."""
    procs.kill_all(lambda: cluster_pids(name), f"processes of cluster {name}", timeout)


def _stop_everything(name: str) -> None:
    """Kill the data plane (and remove its namespaces, mounts, links, rules, cgroups), then the control plane."""
    dataplane.teardown(name)
    extras.teardown(name)
    _kill(name)


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _died(comp: Component, name: str, kept_logs: list[Path] | None = None) -> LocalClusterError:
    tail = _tail(comp.log)
    if kept_logs:
        tail += (
            "\n    (it had exited before and was started again; the logs of those runs: "
            + ", ".join(str(p) for p in kept_logs)
            + ")"
        )
    if "address already in use" in tail:
        return LocalClusterError(
            f"{comp.name} of cluster {name} could not start: a port it needs is in use (log: {comp.log})\n{tail}",
            "stop whatever holds the port, or run `wincon cluster up` again without --port (free ports are picked)",
        )
    return LocalClusterError(
        f"{comp.name} of cluster {name} exited while starting (log: {comp.log}); last lines:\n{tail}",
        f"read {comp.log}; then run `wincon cluster up --cluster-name {name}` again "
        "(the state of the failed start is removed automatically)",
    )


def _check_alive(starting: Starting) -> None:
    """Raise naming the first component that was started and is no longer running, unless it is a
    kube-controller-manager that gave up waiting for the API server (see KCM_WAITED_OUT): that one is started again."""
    for comp in components(starting.name):
        if comp.pid:
            starting.started.add(comp.name)
        if comp.name in starting.started and not comp.running and not _start_again(starting, comp):
            raise _died(comp, starting.name, starting.kept_logs if comp.name == "kube-controller-manager" else None)


def _waited_out(comp: Component) -> bool:
    """Whether ``comp`` is a kube-controller-manager whose last words are its own wait for the API server running out."""
    return comp.name == "kube-controller-manager" and KCM_WAITED_OUT in _tail(comp.log, 3)


def _start_again(starting: Starting, comp: Component) -> bool:
    """Start an exited kube-controller-manager again if it gave up waiting for the API server, once /healthz is ok;
    True if it was, or will be once the API server is healthy (the caller's deadline bounds that), False if the exit
    is any other (or a start too many) and must be reported."""
    if not _waited_out(comp) or starting.again >= KCM_STARTS_AGAIN:
        return False
    if not _api_healthy(starting.name) or not _reaped(comp.pid):
        return True  # not yet: asked again at the next poll
    starting.again += 1
    kept = comp.log.with_name(f"{comp.name}.exited-{starting.again}.log")  # kwokctl truncates the log it starts with
    shutil.copyfile(comp.log, kept)
    starting.kept_logs.append(kept)
    print(
        f"{comp.name} of cluster {starting.name} exited after its own 10 s wait for the API server's /healthz ran out "
        f"(log kept: {kept}); the API server is healthy now: starting it again "
        f"({starting.again} of at most {KCM_STARTS_AGAIN})",
        file=starting.out or sys.stderr,
        flush=True,
    )
    _kwokctl_start(starting)
    return True


def _reaped(pid: int | None) -> bool:
    """Whether process ``pid`` is gone, not even a zombie: kwokctl does not start a component again while the pid in
    its pid file answers signal 0 (kwok v0.8.0 runtime/exec.go ForkExec, utilsexec.IsRunning), and an exited
    component whose parent (kwokctl create) is gone stays a zombie until init reaps it."""
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _api_healthy(name: str) -> bool:
    """Whether the API server of cluster ``name`` answers /healthz with 200, read through kwokctl's own kubeconfig."""
    import requests

    try:
        data = yaml.safe_load((paths.kwok_cluster_dir(name) / "kubeconfig.yaml").read_text())
        server = data["clusters"][0]["cluster"]
        user = data["users"][0]["user"]
        response = requests.get(
            f"{server['server'].rstrip('/')}/healthz",
            cert=(user["client-certificate"], user["client-key"]),
            verify=server["certificate-authority"],
            timeout=3,
        )
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError, requests.RequestException):
        return False
    return response.status_code == 200


def _kwokctl_env(bindir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # kwokctl runs `kubectl get --raw /healthz` to tell the cluster is served: give it ours.
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["KWOK_KUBECTL_BINARY"] = str(bindir / "kubectl")
    return env


def _kwokctl_start(starting: Starting) -> None:
    """``kwokctl start cluster``: starts each component of the cluster that is not running (kwok v0.8.0
    runtime/binary startComponent skips a running one), with the command line it was created with."""
    log = paths.state_dir(starting.name) / KWOKCTL_LOG
    with log.open("a") as sink:
        done = subprocess.run(
            netns.at_control_plane_priority(
                [str(starting.bindir / "kwokctl"), "start", "cluster", f"--name={starting.name}"]
            ),
            stdout=sink, stderr=subprocess.STDOUT, env=_kwokctl_env(starting.bindir), timeout=150, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise LocalClusterError(
            f"kwokctl start cluster {starting.name} failed (exit {done.returncode}, log: {log}); last lines:\n"
            + _tail(log),
            f"read {log}",
        )
    _prioritise(starting.name)


def _check_port(port: int, component: str) -> None:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise LocalClusterError(
                        f"port {port} requested for {component} is in use by another process",
                        f"pick another --port, or omit it (a free port is picked); `ss -ltnp 'sport = :{port}'` "
                        "shows who holds it",
                    ) from None
                raise


# ---------------------------------------------------------------------------------------------
# state


@contextlib.contextmanager
def _lock(path: Path, what: str, out: TextIO, timeout: float = 600.0) -> Iterator[float]:
    """Hold the exclusive lock ``path`` for the block, waiting at most ``timeout`` s for it; yields the seconds
    waited."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        began = time.monotonic()
        deadline = began + timeout
        waiting = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waiting:
                    print(f"waiting for {what} (lock {path})", file=out, flush=True)
                    waiting = True
                if time.monotonic() > deadline:
                    raise LocalClusterError(
                        f"gave up waiting {timeout:.0f} s for {what} (lock {path})",
                        "wait for the other wincon cluster command to finish",
                    ) from None
                time.sleep(0.2)
        try:
            yield time.monotonic() - began
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def lock_path(name: str) -> Path:
    """The lock that serialises up/down of cluster ``name`` (kept by ``down``: someone may wait on it)."""
    return paths.cache_root() / "clusters" / f".{name}.lock"


def _cluster_lock(name: str, out: TextIO) -> contextlib.AbstractContextManager[float]:
    return _lock(lock_path(name), f"another command on cluster {name}", out)


def _read_record(name: str) -> dict[str, Any] | None:
    try:
        return json.loads((paths.state_dir(name) / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None


def _write_record(name: str, record: dict[str, Any]) -> None:
    path = paths.state_dir(name) / RECORD_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)


def _remove_state(name: str) -> None:
    for directory in (paths.kwok_cluster_dir(name), paths.state_dir(name)):
        shutil.rmtree(directory, ignore_errors=True)


def kubeconfig_path(name: str | None = None) -> Path:
    """The kubeconfig of running cluster ``name``; a LocalClusterError if it is not up."""
    name = paths.check_name(name or paths.default_cluster_name())
    path = paths.state_dir(name) / KUBECONFIG_FILE
    record = _read_record(name)
    if not path.is_file() or not record or not record.get("ready"):
        raise LocalClusterError(
            f"local cluster {name} is not running (no kubeconfig at {path})",
            f"start it with `wincon cluster up --cluster-name {name}`",
        )
    return path


def _write_kubeconfig(name: str) -> Path:
    """A self-contained copy of kwokctl's kubeconfig (certificates embedded), context ``wincon-<name>``."""
    source = paths.kwok_cluster_dir(name) / "kubeconfig.yaml"
    data = yaml.safe_load(source.read_text())
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for entry in data.get(section) or []:
            body = entry[key]
            for field in ("certificate-authority", "client-certificate", "client-key"):
                if field in body:
                    body[f"{field}-data"] = base64.b64encode(Path(body.pop(field)).read_bytes()).decode()
    context = f"wincon-{name}"
    for entry in data.get("contexts") or []:
        entry["name"] = context
    data["current-context"] = context
    path = paths.state_dir(name) / KUBECONFIG_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False))
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------------
# API


def _api_client(kubeconfig: Path) -> Any:
    from kubernetes import client

    from wincon.cluster.client import load_kubeconfig

    configuration = client.Configuration()
    load_kubeconfig(str(kubeconfig), None, configuration)  # leaves no credential in /tmp, however it ends
    configuration.retries = False  # we poll ourselves; urllib3's retries only print warnings
    return client.ApiClient(configuration)


def _api_not_ready_errors() -> tuple[type[BaseException], ...]:
    import requests
    import urllib3
    from kubernetes.client.rest import ApiException

    return (ApiException, urllib3.exceptions.HTTPError, requests.RequestException, OSError)


def _wait(
    what: str,
    probe: Callable[[], T | None],
    deadline: float,
    starting: Starting,
    logs: list[Path] | None = None,
) -> T:
    """Poll ``probe`` until it returns a value; fail fast when a component dies, clearly on timeout (naming the
    component logs: the API server's and kwok's, and ``logs`` of what the wait is about)."""
    name = starting.name
    last_error = ""
    while True:
        _check_alive(starting)
        try:
            value = probe()
        except _api_not_ready_errors() as exc:  # the API is not up yet: connection errors, 404s, 503s
            value, last_error = None, f" (last error: {str(exc).splitlines()[0][:200]})"
        if value is not None:
            return value
        if time.monotonic() > deadline:
            named = [str(p) for p in logs or []]
            named += [str(c.log) for c in components(name) if c.name in ("kube-apiserver", "kwok-controller")]
            raise LocalClusterError(
                f"cluster {name}: timed out waiting for {what}{last_error}",
                f"read the component logs ({', '.join(named)}); on a busy machine raise the timeout with --timeout",
            )
        time.sleep(POLL)


def _readyz(api: Any) -> bool | None:
    import requests

    cfg = api.configuration
    response = requests.get(f"{cfg.host}/readyz", cert=(cfg.cert_file, cfg.key_file), verify=cfg.ssl_ca_cert, timeout=3)
    return True if response.status_code == 200 else None


def _create(api: Any, obj: dict[str, Any]) -> None:
    """Create ``obj`` unless an object of that kind and name exists (so ``up`` can finish a half-done start)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    group_api = {
        "v1": client.CoreV1Api,
        "apps/v1": client.AppsV1Api,
        "rbac.authorization.k8s.io/v1": client.RbacAuthorizationV1Api,
        "discovery.k8s.io/v1": client.DiscoveryV1Api,
        "apiregistration.k8s.io/v1": client.ApiregistrationV1Api,
        "node.k8s.io/v1": client.NodeV1Api,
    }[obj["apiVersion"]](api)
    kind = re.sub(
        r"(?<!^)(?=[A-Z])", "_", obj["kind"].replace("APIService", "ApiService")
    ).lower()  # DaemonSet -> daemon_set
    name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
    scope, args = ("namespaced_", (namespace,)) if namespace else ("", ())
    try:
        getattr(group_api, f"read_{scope}{kind}")(name, *args)
        return
    except ApiException as exc:
        if exc.status != 404:
            raise
    try:
        getattr(group_api, f"create_{scope}{kind}")(*args, obj)
    except ApiException as exc:
        if exc.status != 409:
            raise


def _hints(plan: dataplane.Plan | None, release: kube_releases.Release) -> dict[str, Any]:
    data = {"dataplane": "linux" if plan else "none"}
    if plan:
        data.update(
            {
                "external-ip": plan.external_ip,
                "external-host": plan.external_name,
                "image-repo-list": images.repo_list_text(),
                "images": json.dumps(images.references(release.versions())),
            }
        )
    return hints.configmap(data)


def _api_port(kubeconfig: Path) -> int:
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    return int(server.rsplit(":", 1)[1].rstrip("/"))


def _provision(
    name: str, topology: Topology, deadline: float, starting: Starting, release: kube_releases.Release,
    plan: dataplane.Plan | None = None, start_dataplane: bool = False, out: TextIO | None = None,
) -> Path:  # fmt: skip
    """Make the API server usable, create nodes and CNI objects, start the real nodes, wait for all to be Ready."""
    from kubernetes import client

    kube_version = release.version
    kubeconfig = _write_kubeconfig(name)
    with _api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        _wait("the API server to be ready (/readyz)", lambda: _readyz(api), deadline, starting)
        _wait("namespace kube-system", lambda: core.read_namespace("kube-system"), deadline, starting)
        nodes = topology.nodes(kube_version)
        for node in nodes:
            _create(api, node)
            core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
        dns = cni.RealDns(images.references(release.versions())["coredns"], dataplane.corefile(plan)) if plan else None
        objects = ipfamily.adjust_objects(cni.objects(topology.cni, kube_version, dns), topology.ip_family)
        for obj in [*objects, _hints(plan, release)]:
            _create(api, obj)
        wanted = {node["metadata"]["name"] for node in nodes}
        real = {node.name for node in plan.nodes} if plan else set()
        serving: list[Any] = []
        if plan and start_dataplane:
            dataplane.start(
                plan, paths.bin_dir(release.minor), _api_port(kubeconfig), paths.kwok_cluster_dir(name) / "pki",
                deadline, out or sys.stderr, release,
            )  # fmt: skip
            serving = extras.start(plan, out or sys.stderr)
            for obj in extras.objects(plan, serving):
                _create(api, obj)
        watch = dataplane.watched(plan) if plan else None

        def all_ready() -> bool | None:
            if watch:
                watch.check()
            ready = {
                n.metadata.name
                for n in core.list_node(_request_timeout=5).items
                if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
            }
            return True if wanted | real <= ready else None

        kubelet_logs = [dataplane.node_dir(name, node) / "kubelet.log" for node in sorted(real)]
        _wait(f"nodes {', '.join(sorted(wanted | real))} to be Ready", all_ready, deadline, starting, kubelet_logs)
        if plan:
            apps = client.AppsV1Api(api)

            def dns_available() -> bool | None:
                if watch:
                    watch.check()
                dep = apps.read_namespaced_deployment("coredns", "kube-system", _request_timeout=5)
                return True if (dep.status.available_replicas or 0) >= (dep.spec.replicas or 1) else None

            # CoreDNS's pods report through the same kubelets: their logs say why it is not available.
            _wait("CoreDNS (kube-system/coredns) to be available", dns_available, deadline, starting, kubelet_logs)
        for mod in serving:

            def addon_available(mod: Any = mod) -> bool | None:
                if watch:
                    watch.check()
                return mod.available(api)

            _wait(
                f"{getattr(mod, 'WAITS_FOR', mod.NAME)} to be available",
                addon_available, deadline, starting, [dataplane.root(name) / f"{mod.NAME}.log"],
            )  # fmt: skip
        _wait(
            "the default service account (kube-controller-manager)",
            lambda: core.read_namespaced_service_account("default", "default"),
            deadline,
            starting,
        )
    return kubeconfig


def _kwokctl_config(sdir: Path, plan: dataplane.Plan | None, topology: Topology | None = None) -> Path:
    """kwokctl's configuration: every component on 127.0.0.1 only; kwok manages the simulated nodes only;
    with real nodes, the API server's cert also names the nodes' gateway and the Service IP, it advertises
    the gateway, reaches the kubelets by InternalIP (not by a host name resolved off the machine) and reaches
    pods, Services, kubelets, webhooks and aggregated APIs through the egress proxy (egress.py).

    Component flags go in ``componentsPatches`` (kwokctl v0.8.0's ``--extra-args`` mis-indexes a second
    component that has several flags); later flags win over kwokctl's own.

    With a Windows pod-latency model (``topology.windows_pod_latency``) the file also holds kwok Stages: kwokctl's
    defaults, with the Windows nodes' pod-ready and pod-delete delayed as the model draws (``latency.stages``).
    """
    options: dict[str, Any] = {"bindAddress": "127.0.0.1"}
    patches: dict[str, dict[str, str]] = {
        # Alpha in 1.34, on here so that the stop-signal checks run against the real API server.
        "kube-apiserver": {"feature-gates": f"{FEATURE_GATE}=true"},
        "kwok-controller": {
            "manage-all-nodes": "false",
            "manage-nodes-with-annotation-selector": f"{SIMULATED_ANNOTATION}=fake",
        },
        # One instance of each, so no leader to elect. With election on, a controller-manager that misses its lease
        # renewal under load exits ("leaderelection lost") and kwokctl does not start it again. The flake benchmark
        # at 86ee81d (load average 20) lost its controller-manager so, by all signs (its logs went with the
        # cluster): from its ninth run on, new namespaces got no default ServiceAccount and 138 checks were refused.
        # (tests/faults/test_fault_counter_cases.py's _restart_kcm tells from this flag what to wait for.)
        "kube-controller-manager": {"leader-elect": "false"},
        "kube-scheduler": {"leader-elect": "false"},
    }
    if plan:
        options["kubeApiserverCertSANs"] = [plan.gateway, "10.0.0.1"]
        # A real node whose kubelet stops posting becomes NotReady within a minute (kwokctl's default of an
        # hour suits simulated nodes only; kwok renews their leases well within this).
        # kwokctl multiplies its heartbeat periods by heartbeatFactor (5 by default): 1 keeps the figures as given.
        options["heartbeatFactor"] = 1
        options["kubeControllerManagerNodeMonitorGracePeriodMilliseconds"] = NODE_GRACE_SECONDS * 1000
        patches["kube-apiserver"] |= {
            "advertise-address": plan.gateway,
            "kubelet-preferred-address-types": "InternalIP",
            # Pods, Services, kubelets, webhooks and aggregated APIs through the cluster's egress proxy, inside a
            # real node's namespace (dataplane.write_egress_config): the host keeps rejecting the shared ranges.
            "egress-selector-config-file": str(dataplane.write_egress_config(plan, sdir)),
            # The aggregator's front-proxy identity headers (kwokctl sets its client cert, not these): an
            # aggregated API such as metrics-server authenticates the user the API server forwards.
            "requestheader-client-ca-file": str(paths.kwok_cluster_dir(plan.cluster) / "pki" / "ca.crt"),
            "requestheader-username-headers": "X-Remote-User",
            "requestheader-group-headers": "X-Remote-Group",
            "requestheader-extra-headers-prefix": "X-Remote-Extra-",
            # The front proxy's client cert (kwokctl's --proxy-client-cert-file, pki/admin.crt) is signed by the same
            # CA as every client's: from v1.37 the API server refuses to start with overlapping CAs unless the names
            # allowed to set those headers are given ("--requestheader-allowed-names must be specified").
            "requestheader-allowed-names": "kwok-admin",
        }
        # --ip-family dual/ipv6 (ipfamily.py): both Service ranges, cluster CIDRs, IPv6 names in the cert.
        options["kubeApiserverCertSANs"] += ipfamily.cert_sans(plan, plan.ip_family)
        patches["kube-apiserver"] |= ipfamily.apiserver_flags(plan, plan.ip_family)
        if cm_flags := ipfamily.controller_manager_flags(plan.ip_family):
            patches["kube-controller-manager"] |= cm_flags
    doc = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
        "componentsPatches": [
            {"name": name, "extraArgs": [{"key": k, "value": v} for k, v in flags.items()]}
            for name, flags in patches.items()
        ],
    }
    docs: list[dict[str, Any]] = [doc]
    if topology is not None and topology.windows_pod_latency:
        kwok = kube_releases.kwok()
        stage_dir = latency.kwok_stage_dir(kwok["module"], kwok["version"], build.go_binary())
        model = latency.LatencyModel.parse(topology.windows_pod_latency)
        docs += latency.stages(model, topology.windows_node_names(), stage_dir)
    path = sdir / KWOKCTL_CONFIG
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def _start(
    name: str, bindir: Path, port: int | None, extra_args: list[str], deadline: float, out: TextIO,
    kube_version: str, plan: dataplane.Plan | None = None, topology: Topology | None = None,
) -> Starting:  # fmt: skip
    """Run ``kwokctl create cluster`` (its nodes report ``kube_version``) and watch its components; return what was
    seen of them (all started)."""
    sdir = paths.state_dir(name)
    sdir.mkdir(parents=True, exist_ok=True)
    config = _kwokctl_config(sdir, plan, topology)
    args = [
        str(bindir / "kwokctl"),
        "create",
        "cluster",
        f"--name={name}",
        "--runtime=binary",
        f"--kube-apiserver-binary={bindir / 'kube-apiserver'}",
        f"--kube-controller-manager-binary={bindir / 'kube-controller-manager'}",
        f"--kube-scheduler-binary={bindir / 'kube-scheduler'}",
        f"--kwok-controller-binary={bindir / 'kwok'}",
        f"--etcd-binary={bindir / 'etcd'}",
        "--secure-port=true",
        "--kube-authorization=true",  # --authorization-mode=Node,RBAC; SA keys for the controller-manager
        "--kube-admission=true",  # keep the API server's default admission plugins (PodSecurity among them)
        "--kubeconfig=",  # leave ~/.kube/config alone: wincon writes its own kubeconfig
        "--quiet-pull=true",
        f"--config={config}",
    ]
    if port:
        args.append(f"--kube-apiserver-port={port}")
    args += [f"--extra-args={arg}" for arg in extra_args]
    env = _kwokctl_env(bindir)
    env["KWOK_KUBE_VERSION"] = kube_version
    log_path = sdir / KWOKCTL_LOG
    starting = Starting(name, bindir, out)
    # kwokctl picks free ports by probing from 32767 down: two creates at once would pick the same
    # ones. Serialise creation across clusters sharing the kwokctl work directory. The time spent waiting here is
    # another cluster's start, not this one's: it moves this start's deadline (the caller's too, by
    # ``starting.waited``), so a cluster queued behind others still gets its whole timeout for its own start.
    lock = paths.kwok_workdir() / "wincon-create.lock"
    with _lock(lock, "another cluster to finish starting", out) as waited, log_path.open("w") as log:
        starting.waited = waited
        deadline += waited
        args.append(f"--timeout={max(int(deadline - time.monotonic()), 10)}s")
        print(f"starting the control plane of cluster {name} (kwokctl log: {log_path})", file=out, flush=True)
        proc = subprocess.Popen(
            netns.at_control_plane_priority(args), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            while proc.poll() is None:
                _check_alive(starting)
                if time.monotonic() > deadline:
                    raise LocalClusterError(
                        f"cluster {name}: kwokctl create cluster did not finish in time (log: {log_path})",
                        f"read {log_path}; on a busy machine raise the timeout with --timeout",
                    )
                time.sleep(POLL)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _check_alive(starting)
    if proc.returncode != 0:
        raise LocalClusterError(
            f"kwokctl create cluster {name} failed (exit {proc.returncode}, log: {log_path}); last lines:\n"
            + _tail(log_path),
            f"read {log_path}",
        )
    starting.started.update(COMPONENTS)  # kwokctl is done: every component must run now, seen with a pid or not
    _check_alive(starting)
    _prioritise(name)
    return starting


def _prioritise(name: str) -> None:
    """Every running control-plane process of cluster ``name`` at the control plane's priority (netns)."""
    for comp in components(name):
        if comp.pid and comp.running:
            netns.raise_to_control_plane_priority(comp.pid)


def up(
    name: str | None = None,
    topology: Topology | None = None,
    *,
    port: int | None = None,
    extra_args: list[str] | None = None,
    timeout: float = UP_TIMEOUT,
    out: TextIO | None = None,
    kubernetes_version: str | None = None,
) -> Path:
    """Start cluster ``name`` (default ``$WINCON_CLUSTER_NAME`` or ``wincon``), or reuse it if it runs.

    ``kubernetes_version`` (a minor such as ``1.36`` or a release's version, as the command line resolved it:
    wincon.documents.releases.requested) picks the release it is built at; without it, the release a running cluster was
    started at, else versions.toml's default. The release is passed down to the start, the data plane and the
    images; nothing reads it back from the environment.

    Blocks until every node is Ready and returns the kubeconfig path, giving up after ``timeout`` s of this
    cluster's own start: time spent waiting for another command on it, or for another cluster's start (the
    machine starts one at a time), is not counted. ``port`` fixes the API server's
    port (default: a free one); ``extra_args`` are kwokctl ``component=flag=value`` extras. On failure no
    process of the cluster is left running; its logs stay until the next ``up`` or ``down``.
    """
    out = out or sys.stderr
    name = paths.check_name(name or paths.default_cluster_name())
    with _cluster_lock(name, out):
        deadline = time.monotonic() + timeout  # from when no other command on this cluster holds it
        comps = components(name)
        alive = [c for c in comps if c.running]
        minor = _select_release(name, kubernetes_version, running=bool(alive) and len(alive) == len(comps))
        release = kube_releases.get(minor)
        bindir = build.require_binaries(minor)
        if alive and len(alive) == len(comps):
            record = _read_record(name) or {}
            recorded = Topology.from_dict(record["topology"]) if record.get("topology") else None
            if topology is not None and recorded is not None and topology != recorded:
                raise LocalClusterError(
                    f"cluster {name} already runs with another topology ({recorded.to_dict()})",
                    f"run `wincon cluster down --cluster-name {name}` first, or pick another --cluster-name",
                )
            topology = topology or recorded or Topology()
            plan = dataplane.Plan.from_dict(record["dataplane"]) if record.get("dataplane") else None
            stopped = [p for p in (dataplane.processes(plan) if plan else []) if not p["running"]]
            if stopped:
                raise LocalClusterError(
                    f"cluster {name} is only partly running: {', '.join(p['name'] for p in stopped)} not running "
                    f"(log: {stopped[0]['log']})",
                    f"read the log, then `wincon cluster down --cluster-name {name}` and `wincon cluster up --cluster-name {name}`",
                )
            print(f"cluster {name} is already running: reusing it", file=out, flush=True)
            kubeconfig = _provision(
                name, topology, deadline, Starting(name, bindir, out, set(COMPONENTS)), release, plan
            )
            _write_record(name, {**record, "topology": topology.to_dict(), "ready": True})
            return kubeconfig
        if alive:
            dead = [c for c in comps if not c.running]
            raise LocalClusterError(
                f"cluster {name} is only partly running: {', '.join(c.name for c in dead)} not running "
                f"(log: {dead[0].log})",
                f"read the log, then `wincon cluster down --cluster-name {name}` and `wincon cluster up --cluster-name {name}`",
            )
        if (
            cluster_pids(name)
            or dataplane.pids(name)
            or paths.kwok_cluster_dir(name).exists()
            or paths.state_dir(name).exists()
        ):
            print(f"removing the stale state of cluster {name} (nothing of it is running)", file=out, flush=True)
            _stop_everything(name)
            _remove_state(name)
        topology = topology or Topology()
        if port:
            _check_port(port, "kube-apiserver")
        plan = None
        if topology.real_nodes:
            dataplane.preflight()
            ensure_kernel_settings(out)  # the host's inotify limits the real nodes need
        try:
            record = {
                "name": name,
                "topology": topology.to_dict(),
                "kubernetes_version": release.version,
                "kubernetes_release": minor,
                "versions_key": paths.versions_key(minor),
                "binaries": str(bindir),
                "kwok_dir": str(paths.kwok_cluster_dir(name)),
                "created": time.time(),
                "ready": False,
            }
            paths.state_dir(name).mkdir(parents=True, exist_ok=True)
            if topology.real_nodes:
                plan = dataplane.make_plan(name, topology.real_nodes, topology.simulated_count(), topology.ip_family)
                record["dataplane"] = plan.to_dict()
                _write_record(name, record)  # before anything is created: `down` must find it all
                (paths.state_dir(name) / REPO_LIST_FILE).write_text(images.repo_list_text())
                dataplane.prepare_network(plan)
            starting = _start(
                name, bindir, port, list(extra_args or []), deadline, out, release.version, plan, topology
            )
            _write_record(name, record)
            kubeconfig = _provision(
                name, topology, deadline + starting.waited, starting, release, plan, start_dataplane=True, out=out
            )
        except BaseException:
            _stop_everything(name)  # no orphans; the logs stay for the error message and `status`
            raise
        _write_record(name, {**(_read_record(name) or {}), "ready": True})
        return kubeconfig


def _select_release(name: str, asked: str | None, running: bool) -> str:
    """The minor cluster ``name`` is (to be) started at: ``asked``, else a running cluster's, else the default."""
    recorded = (_read_record(name) or {}).get("kubernetes_release") if running else None
    release = kube_releases.resolve(asked or recorded)
    if running and recorded and release != recorded:
        version = (_read_record(name) or {}).get("kubernetes_version", recorded)
        raise LocalClusterError(
            f"cluster {name} already runs Kubernetes {version}, not the {release} asked for",
            f"run `wincon cluster down --cluster-name {name}` first, or pick another --cluster-name",
        )
    return release


def down(name: str | None = None, out: TextIO | None = None) -> None:
    """Stop every process of cluster ``name`` and remove its state. Harmless when it is not running."""
    out = out or sys.stderr
    name = paths.check_name(name or paths.default_cluster_name())
    with _cluster_lock(name, out):
        existed = bool(cluster_pids(name)) or paths.kwok_cluster_dir(name).exists() or paths.state_dir(name).exists()
        _stop_everything(name)
        _remove_state(name)
    print(f"cluster {name} {'stopped and removed' if existed else 'was not running: nothing to do'}", file=out)


def status(name: str | None = None) -> dict[str, Any]:
    """What runs for cluster ``name``: state, components (pid, log), kubeconfig, topology, nodes.

    ``state`` is ``running`` (every component up and the cluster provisioned), ``starting`` (components
    up, nodes not yet provisioned), ``degraded`` (some components died), ``stopped`` (state left on disk,
    nothing runs; the next ``up`` removes it) or ``absent``.
    """
    name = paths.check_name(name or paths.default_cluster_name())
    comps = components(name)
    record = _read_record(name) or {}
    alive = sum(c.running for c in comps)
    if alive == len(comps):
        state = "running" if record.get("ready") else "starting"
    elif alive:
        state = "degraded"
    elif paths.kwok_cluster_dir(name).exists() or paths.state_dir(name).exists():
        state = "stopped"
    else:
        state = "absent"
    kubeconfig = paths.state_dir(name) / KUBECONFIG_FILE
    result: dict[str, Any] = {
        "name": name,
        "state": state,
        "kubeconfig": str(kubeconfig) if state == "running" else None,
        "state_dir": str(paths.state_dir(name)),
        "kwok_dir": str(paths.kwok_cluster_dir(name)),
        "topology": record.get("topology"),
        "kubernetes_version": record.get("kubernetes_version"),
        "components": [{"name": c.name, "pid": c.pid, "running": c.running, "log": str(c.log)} for c in comps],
    }
    if record.get("dataplane"):
        plan = dataplane.Plan.from_dict(record["dataplane"])
        result["dataplane"] = dataplane.processes(plan)
        result["addons"] = extras.status(plan, result["dataplane"])
        result["metrics_server"] = result["addons"][metrics.NAME]  # the key earlier releases printed
        result["external_host"] = {"ip": plan.external_ip, "name": plan.external_name}
        result["images"] = images.references(kube_releases.get(record.get("kubernetes_release")).versions())
        result["image_repo_list"] = str(paths.state_dir(name) / REPO_LIST_FILE)
        if state == "running" and not all(p["running"] for p in result["dataplane"]):
            state = result["state"] = "degraded"
            result["kubeconfig"] = None
    if state == "running":
        try:
            from kubernetes import client

            api = _api_client(kubeconfig)
            result["server"] = api.configuration.host
            result["nodes"] = [
                {
                    "name": n.metadata.name,
                    "os": n.status.node_info.operating_system,
                    "os_image": n.status.node_info.os_image,
                    "ready": any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or []),
                }
                for n in client.CoreV1Api(api).list_node(_request_timeout=5).items
            ]
            api.close()
        except Exception as exc:  # noqa: BLE001 - status reports, it does not fail
            result["nodes_error"] = str(exc).splitlines()[0]
    return result
