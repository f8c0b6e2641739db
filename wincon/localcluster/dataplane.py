"""The real Linux data plane of the local cluster: Linux worker nodes that really run containers.

Each real node is a network namespace of its own (as kind's nodes are containers of their own) in which run:

- a containerd of the node's own (config, root, state, socket and runc root under the node's directory; the
  CRI plugin with ``restrict_oom_score_adj``, since these machines lack CAP_SYS_RESOURCE), with runc and
  Debian's CNI plugins (bridge + host-local + portmap, loopback added by containerd);
- a kubelet (cgroupfs driver, cgroupRoot ``/wincon-<cluster>-<node>``, root directory under the node's
  directory) built from the same k8s.io/kubernetes as the control plane;
- kube-proxy in iptables mode, whose rules live in the node's namespace.

Processes run in the host's mount namespace (``nsenter --net``), so that containerd sees the kubelet's
volume mounts. Cross-node pod traffic is routed node to node (host-gw style) over the cluster's bridge;
pod traffic leaving the pod range is masqueraded behind the node's address. Beside the nodes runs the
**simulated external host**: a namespace outside the pod and Service ranges (``.254`` of the cluster's /24)
answering HTTP on port 80 (agnhost netexec), ICMP echo, and DNS for the local zone ``wincon.test``
(CoreDNS ``hosts``: ``external.wincon.test`` is its own address; every other name is NXDOMAIN). The nodes'
resolver (dnsPolicy Default) and the cluster DNS's upstream are that host: no DNS query leaves the machine.

The API server's ``cluster`` egress (pods/proxy, services/proxy, kubelets, webhooks, aggregated APIs) goes
through the egress proxy (egress.py), a process of the data plane in the first real node's namespace. worker-0's
kubelet reserves CPU and memory (kubeReserved, systemReserved), as a cloud node's does.

Every process of the data plane carries the path of the cluster's ``dataplane/`` directory in its command
line (binaries are run through links there), and container processes live in the cluster's cgroups: that is
how ``down`` finds them, even after a ``up`` that was killed.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from wincon.commandline.errors import LocalClusterError
from wincon.documents import releases
from wincon.localcluster import egress, images, ipfamily, journal, netns, paths, procs

POD_RANGE = "10.244.0.0/16"
SERVICE_RANGE = "10.0.0.0/24"
DNS_SERVICE_IP = "10.0.0.10"
CLUSTER_DOMAIN = "cluster.local"
EXTERNAL_ZONE = "wincon.test"
EXTERNAL_NAME = f"external.{EXTERNAL_ZONE}"
CNI_BIN_DIR = "/usr/lib/cni"
DEBIAN_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "ctr": "containerd",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "nsenter": "util-linux",
    "ip": "iproute2",
    "busybox": "busybox-static",
    "curl": "curl",
    "ldd": "libc-bin",
    "ipset": "ipset",  # kube-router's network policy controller (kuberouter.py) calls it
    "journalctl": "systemd",  # the kubelets' node log query reads each node's journal with it (journal.py)
    str(journal.JOURNAL_REMOTE): "systemd-journal-remote",  # writes each node's journal (journal.py)
}
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")
DIRNAME = "dataplane"
KUBELET_PORT = 10250
PROXY_HEALTH_PORT = 10256
FEATURE_GATE = "ContainerStopSignals"  # on in the API server and the kubelets (the stop-signal checks)
SIMULATED_NODE_RANGE = "10.224.0.0/16"  # the simulated nodes' InternalIPs (topology.py): routed nowhere
EGRESS_PROCESS = "egress-proxy"
RESERVING_NODE = 0  # worker-0's kubelet reserves CPU and memory (the first Linux worker by name, as suites pick)
KUBE_RESERVED = {"cpu": "100m", "memory": "128Mi"}
SYSTEM_RESERVED = {"cpu": "100m", "memory": "128Mi"}
EGRESS_CONFIG_FILE = "egress-selector.yaml"
UDS_PATH_MAX = 107  # sun_path is 108 bytes with its terminating NUL
# The longest Unix socket path a real node's kubelet binds under its --root-dir: its pod-resources socket, first bound
# under a name of 10 digits (a kubelet's log at v1.37.2: "Failed to create listener for podResources endpoint"
# err="listen unix .../worker-0/kubelet/pod-resources/3505636126: bind: invalid argument", where the path was 115 bytes).
KUBELET_LONGEST_SOCKET = "kubelet/pod-resources/" + "0" * 10


@dataclass
class RealNode:
    """One real Linux node: its name, address on the cluster's bridge and pod subnet."""

    name: str
    index: int
    address: str
    pod_cidr: str


@dataclass
class Plan:
    """Where cluster ``cluster``'s data plane lives: its /24, gateway, external host and real nodes."""

    cluster: str
    subnet: str
    gateway: str
    external_ip: str
    nodes: list[RealNode] = field(default_factory=list)
    external_name: str = EXTERNAL_NAME
    ip_family: str = ipfamily.DEFAULT  # ipv4, dual or ipv6 (ipfamily.py)

    @property
    def prefix(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.ip_family == ipfamily.DEFAULT:
            del data["ip_family"]  # ipv4 records stay as they were
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        nodes = [RealNode(**n) for n in data.get("nodes", [])]
        return cls(**{**data, "nodes": nodes})


def check_kubelet_sockets(plan: Plan) -> None:
    """Raise a LocalClusterError naming the fix where a real node's kubelet could not bind its Unix sockets: the path
    under the node's directory (the wincon cache, the cluster's name, the node's) would pass UDS_PATH_MAX bytes, and the
    kubelet would exit while starting with 'bind: invalid argument'."""
    for node in plan.nodes:
        longest = node_dir(plan.cluster, node.name) / KUBELET_LONGEST_SOCKET
        size = len(os.fsencode(longest))
        if size > UDS_PATH_MAX:
            raise LocalClusterError(
                f"cluster {plan.cluster}: the kubelet of {node.name} could not bind its Unix sockets: {longest} would be "
                f"{size} bytes, and a Unix socket path may have at most {UDS_PATH_MAX}",
                f"use a cluster name {size - UDS_PATH_MAX} characters shorter (--cluster-name), or a shorter cache "
                f"directory than {paths.cache_root()} (WINCON_CACHE)",
            )


def make_plan(cluster: str, count: int, first_pod_subnet: int, ip_family: str = ipfamily.DEFAULT) -> Plan:
    """Pick the cluster's /24 and lay out ``count`` real nodes (pod subnets from ``10.244.<first>.0/24``)."""
    subnet = netns.pick_subnet(cluster)
    hosts = list(subnet.hosts())
    nodes = [RealNode(f"worker-{i}", i, str(hosts[1 + i]), f"10.244.{first_pod_subnet + i}.0/24") for i in range(count)]
    return Plan(cluster, str(subnet), str(hosts[0]), str(hosts[-1]), nodes, ip_family=ip_family)


# ------------------------------------------------------------------------------------------ paths


def root(cluster: str) -> Path:
    return paths.state_dir(cluster) / DIRNAME


def node_dir(cluster: str, node: str) -> Path:
    return root(cluster) / node


def marker(cluster: str) -> str:
    return str(root(cluster)) + "/"


def egress_socket(cluster: str) -> Path:
    """The Unix socket of the cluster's egress proxy (see egress.py): the API server's way to pods and Services."""
    return root(cluster) / "egress.sock"


def write_egress_config(plan: Plan, directory: Path) -> Path:
    """The API server's EgressSelectorConfiguration: its ``cluster`` traffic (pods, Services, kubelets, webhooks,
    aggregated APIs) goes by HTTP CONNECT through the egress proxy's Unix socket; etcd and the control plane
    stay direct."""
    sock = egress_socket(plan.cluster)
    if len(str(sock).encode()) > UDS_PATH_MAX:
        raise LocalClusterError(
            f"the egress proxy's socket path {sock} is longer than a Unix socket path may be ({UDS_PATH_MAX} bytes)",
            "use a shorter cluster name or cache directory",
        )
    check_kubelet_sockets(plan)
    config = {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {"proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(sock)}}},
            }
        ],
    }
    path = directory / EGRESS_CONFIG_FILE
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def egress_ranges(plan: Plan) -> list[str]:
    """What the egress proxy may dial: the cluster's own ranges only (none of them has a route off the machine)."""
    return [POD_RANGE, SERVICE_RANGE, plan.subnet, SIMULATED_NODE_RANGE, *ipfamily.egress_ranges(plan)]


def pids(cluster: str) -> list[int]:
    """Every live process of the cluster's data plane: by command line, and by cgroup (containers)."""
    found = set(procs.with_marker(marker(cluster)))
    found |= {p for p in netns.cgroup_pids(cluster) if p != os.getpid() and procs.cmdline(p) is not None}
    return sorted(found)


# ------------------------------------------------------------------------------------------ checks


def preflight() -> None:
    """Root, the Debian packages, the CNI plugins and the kernel features the data plane needs."""
    netns.require_root()
    missing = sorted({pkg for tool, pkg in DEBIAN_PACKAGES.items() if not shutil.which(tool)})
    missing += sorted({"containernetworking-plugins" for p in CNI_PLUGINS if not Path(CNI_BIN_DIR, p).is_file()})
    if missing:
        raise LocalClusterError(
            f"the real Linux data plane needs Debian packages that are not installed: {', '.join(missing)}",
            f"run `make setup` (or `apt-get install {' '.join(missing)}`), or start without real nodes: "
            "`wincon cluster up --dataplane none`",
        )
    if "overlay" not in Path("/proc/filesystems").read_text():
        raise LocalClusterError(
            "the kernel has no overlay filesystem (containerd's overlayfs snapshotter needs it)",
            "use a kernel with overlayfs, or `wincon cluster up --dataplane none`",
        )
    if not netns.hierarchies():
        raise LocalClusterError(
            "no cgroup hierarchy is mounted under /sys/fs/cgroup (the kubelet needs cgroups)",
            "mount cgroups, or `wincon cluster up --dataplane none`",
        )


# ------------------------------------------------------------------------------------------ setup


def prepare_network(plan: Plan) -> None:
    """Before the control plane starts: the bridge (its gateway address goes into the API server's cert)."""
    netns.create_bridge(plan.cluster, plan.gateway, plan.prefix)
    # IPv6 gateway and prohibit routes (nothing for ipv4)
    ipfamily.prepare_host(plan, netns.run, netns.bridge_name(plan.cluster), netns.route_metric(plan.cluster))


def _kubeconfig(plan: Plan, api_port: int, pki: Path) -> str:
    def data(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": f"https://{plan.gateway}:{api_port}",
                    "certificate-authority-data": data("ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": "node",
                "user": {"client-certificate-data": data("admin.crt"), "client-key-data": data("admin.key")},
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "node"}}],
        "current-context": "local",
    }
    return yaml.safe_dump(config, sort_keys=False)


def _containerd_config(ndir: Path) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{ndir}/containerd/root"
state = "{ndir}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{ndir}/containerd.sock"
[ttrpc]
  address = "{ndir}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{ndir}/containerd/opt"
[{cri}]
  sandbox_image = "{images.sandbox_image()}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{ndir}/containerd/runc"
[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{ndir}/cni/net.d"
[{cri}.registry]
  config_path = "{ndir}/containerd/certs.d"
"""


def cni_network(cluster: str) -> str:
    """The CNI network's name: libcni caches each attachment's result under it in /var/lib/cni/results."""
    return f"wincon-{netns.cluster_hash(cluster)}"


def _cni_config(plan: Plan, node: RealNode, ndir: Path) -> str:
    ipam = {"ranges": [[{"subnet": node.pod_cidr}]], "routes": [{"dst": "0.0.0.0/0"}]}
    if plan.ip_family != ipfamily.DEFAULT:
        ipam = ipfamily.cni_ipam(plan, node)  # a range and a default route per family
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": cni_network(plan.cluster),
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,  # the node masquerades pod traffic leaving the pod range (see _node_network)
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        **ipam,
                        "dataDir": str(ndir / "cni" / "ipam"),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


def kubelet_feature_gates(minor: str) -> dict[str, bool]:
    """The gates the real nodes' kubelets turn on at release ``minor`` (``1.35``): the stop-signal checks' gate,
    and NodeLogQuery before 1.36 (beta and off by default there; GA and locked on from 1.36, v1.36.3
    pkg/features/kube_features.go), which a kubelet needs for ``enableSystemLogQuery``
    (v1.35.4 pkg/kubelet/apis/config/validation/validation.go:355)."""
    gates = {FEATURE_GATE: True}
    if not releases.at_least(minor, releases.since("node-log-query")):
        gates["NodeLogQuery"] = True
    return gates


def _kubelet_config(plan: Plan, node: RealNode, ndir: Path, cgroup_root: str, minor: str = "") -> str:
    """The node's KubeletConfiguration at Kubernetes ``minor`` (the cluster's release; '': the default)."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        # The kubelet's API answers only inside this machine's namespaces; the API server is its client.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        # From v1.35 the kubelet refuses a cgroup v1 host unless told otherwise (failCgroupV1 defaults to true);
        # these machines mount cgroup v1 hierarchies.
        "failCgroupV1": False,
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": f"unix://{ndir}/containerd.sock",
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(ndir / "resolv.conf"),
        "failSwapOn": False,
        "podLogsDir": str(ndir / "pod-logs"),
        "volumePluginDir": str(ndir / "volume-plugins"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": False,
        "registerNode": True,
        "maxPods": 110,
        "podCIDR": node.pod_cidr,
        "nodeStatusReportFrequency": "10s",
        "shutdownGracePeriod": "0s",
        # Node log query (/logs/?query=<service>): the kubelet reads the node's journal (journal.py).
        "enableSystemLogHandler": True,
        "enableSystemLogQuery": True,
        "featureGates": kubelet_feature_gates(minor or releases.default_release()),
    }
    if node.index == RESERVING_NODE:
        # As a cloud node's kubelet does, this one keeps CPU and memory back for itself and the system: its
        # allocatable is capacity minus these (and evictionHard's memory), which the node suite checks.
        config["kubeReserved"] = dict(KUBE_RESERVED)
        config["systemReserved"] = dict(SYSTEM_RESERVED)
    return yaml.safe_dump(ipfamily.adjust_kubelet(config, plan, node), sort_keys=False)


def _proxy_config(node: RealNode, ndir: Path, plan: Plan | None = None) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(ndir / "kubeconfig")},
        "hostnameOverride": node.name,
        "bindAddress": "0.0.0.0",
        "healthzBindAddress": f"{node.address}:{PROXY_HEALTH_PORT}",
        "metricsBindAddress": "127.0.0.1:10249",
        "clusterCIDR": POD_RANGE,
        "mode": "iptables",
        # Inside a namespace the conntrack table's size and timeouts belong to the host: leave them.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    if plan is not None:
        ipfamily.adjust_proxy(config, plan)  # clusterCIDR of each family (unchanged for ipv4)
    return yaml.safe_dump(config, sort_keys=False)


def link_binary(cluster: str, name: str, exe: Path) -> Path:
    """A link to ``exe`` under the cluster's directory, named ``name``: its path marks the process as ours (an
    add-on's binary as well as the nodes')."""
    link = root(cluster) / "bin" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(exe)
    return link


def _link_binaries(cluster: str, bindir: Path) -> Path:
    """Links to the binaries under the cluster's directory: their path marks the processes as ours."""
    for name in ("kubelet", "kube-proxy", "agnhost", "coredns"):
        link_binary(cluster, name, bindir / name)
    return root(cluster) / "bin"


def pid_dir(cluster: str) -> Path:
    """Where the data-plane processes' pid files (``<name>.pid``) and start specs (``<name>.cmd``) are kept."""
    return root(cluster) / "pids"


def pid_file(cluster: str, name: str) -> Path:
    """The pid file of data-plane process ``name`` (``worker-0-kubelet``, ``external-http``...)."""
    return pid_dir(cluster) / f"{name}.pid"


def _spawn(
    cluster: str,
    ns: str,
    name: str,
    args: list[str],
    log: Path,
    ready: dict[str, str] | None = None,
    path_first: str | None = None,
    control_plane: bool = False,
) -> int:
    """Start a long-running process in namespace ``ns`` (host mount namespace); record its pid, and how it was
    started for ``restart_process``. ``ready`` is how to see it up, where it has a signal of its own
    (``ready_problem``): ``url`` (an address answering 200: its health endpoint) and/or ``log`` (a text its log
    prints once it serves). ``path_first`` is a directory put first on its PATH (a node's kubelet: its
    journalctl, journal.py). ``control_plane``: it runs at the control plane's priority
    (netns.raise_to_control_plane_priority)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = None
    if path_first:
        env = {**os.environ, "PATH": f"{path_first}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            ["nsenter", f"--net={netns.NETNS_DIR / ns}", "--", *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    if control_plane:
        netns.raise_to_control_plane_priority(proc.pid)
    pid_dir(cluster).mkdir(parents=True, exist_ok=True)
    pid_file(cluster, name).write_text(f"{proc.pid}\n")
    spec: dict[str, Any] = {"ns": ns, "args": args, "log": str(log)}
    if ready:
        spec["ready"] = ready
    if path_first:
        spec["path_first"] = path_first
    if control_plane:
        spec["control_plane"] = True
    (pid_dir(cluster) / f"{name}.cmd").write_text(json.dumps(spec))
    return proc.pid


def stop_process(cluster: str, name: str) -> None:
    """SIGKILL one data-plane process (``worker-0-kubelet``, ``external-http``...): a fault, as a crash is."""
    pid = int(pid_file(cluster, name).read_text().strip())
    if _alive(pid) and marker(cluster) in (procs.cmdline(pid) or ""):
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


RESTART_SETTLE_SECONDS = 1.0  # a restarted process must still run this long after it runs its own program
RESTART_EXEC_SECONDS = 10.0  # nsenter enters the namespace and execs the program within this, even under load
RESTART_READY_SECONDS = 90.0  # then its readiness signal (``ready`` of ``_spawn``) within this, even under load


def ready_problem(ready: dict[str, str], log: Path, offset: int = 0) -> str | None:
    """What of a process's readiness signal (``_spawn``'s ``ready``) does not hold yet, or None once all of it
    holds: ``url`` answers 200 (its health endpoint; a self-signed certificate is accepted, nothing is sent),
    ``log`` is printed in its log after byte ``offset`` (what it wrote before it was restarted does not count)."""
    import ssl

    problems = []
    if "url" in ready:
        context = ssl._create_unverified_context() if ready["url"].startswith("https:") else None
        try:
            with urllib.request.urlopen(ready["url"], timeout=2, context=context) as answer:
                if answer.status != 200:
                    problems.append(f"{ready['url']} answered {answer.status}")
        except (OSError, ValueError) as exc:
            problems.append(f"{ready['url']} did not answer 200 ({exc})")
    if "log" in ready:
        try:
            with log.open("rb") as fh:
                fh.seek(offset)
                printed = ready["log"].encode() in fh.read()
        except OSError:
            printed = False
        if not printed:
            problems.append(f"its log has not printed {ready['log']!r} yet")
    return "; ".join(problems) or None


def restart_process(
    cluster: str, name: str, settle: float = RESTART_SETTLE_SECONDS, ready_within: float = RESTART_READY_SECONDS
) -> int:
    """Start a stopped data-plane process again, as it was started by ``up``; return its pid once it is up: it
    runs its own program, still runs ``settle`` s later, and, where it was started with a readiness signal
    (``_spawn``'s ``ready``: its health endpoint, a line of its log), shows it. Spawned, it is still nsenter for a
    moment, and while nsenter execs the program its command line reads empty: a caller that looked at once could
    see no process of the cluster (a clean-clone CI did); one that returned then could run checks against an
    add-on not serving yet. One that exits meanwhile raises LocalClusterError with its log's last lines; one that
    runs without showing its signal within ``ready_within`` s raises naming what it lacks."""
    spec = json.loads((pid_dir(cluster) / f"{name}.cmd").read_text())
    log = Path(spec["log"])
    offset = log.stat().st_size if log.exists() else 0
    pid = _spawn(
        cluster, spec["ns"], name, spec["args"], log, spec.get("ready"), spec.get("path_first"),
        control_plane=spec.get("control_plane", False),
    )  # fmt: skip
    program = spec["args"][0]
    spawned = time.monotonic()
    running_since: float | None = None
    while True:
        line = procs.cmdline(pid)
        now = time.monotonic()
        if line is None:
            raise LocalClusterError(
                f"{name} of cluster {cluster} exited as it was started again (log: {log}); last lines:\n{_tail(log)}",
                f"read {log}; `wincon cluster down --cluster-name {cluster}` and `up` start the cluster afresh",
            )
        if running_since is None and line.split(" ", 1)[0] == program:
            running_since = now
        if running_since is None and now - spawned > RESTART_EXEC_SECONDS:
            raise LocalClusterError(
                f"{name} of cluster {cluster} (pid {pid}) did not run {program} within {RESTART_EXEC_SECONDS:.0f} s "
                f"of being started again (its command line: {line!r})",
                f"read {log}; `wincon cluster down --cluster-name {cluster}` and `up` start the cluster afresh",
            )
        if running_since is not None and now - running_since >= settle:
            problem = ready_problem(spec["ready"], log, offset) if spec.get("ready") else None
            if problem is None:
                return pid
            if now - running_since > ready_within:
                raise LocalClusterError(
                    f"{name} of cluster {cluster} (pid {pid}) runs but is not up {ready_within:.0f} s after being "
                    f"started again: {problem}; its log's last lines:\n{_tail(log)}",
                    f"read {log}; `wincon cluster down --cluster-name {cluster}` and `up` start the cluster afresh",
                )
            time.sleep(0.2)  # the probe itself may have taken up to 2 s
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    return procs.cmdline(pid) is not None


def _tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join("    " + line for line in path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "    (no log written)"


class _Watch:
    """The processes started so far: a dead one fails the start at once, naming its log."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.procs: dict[str, tuple[int, Path]] = {}

    def add(self, name: str, pid: int, log: Path) -> None:
        self.procs[name] = (pid, log)

    def check(self) -> None:
        for name, (pid, log) in self.procs.items():
            if not _alive(pid):
                tail = _tail(log)
                raise LocalClusterError(
                    f"{name} of cluster {self.cluster} exited while starting (log: {log}); last lines:\n{tail}",
                    exit_hint(tail) or f"read {log}; then run `wincon cluster up --cluster-name {self.cluster}` again",
                )


INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")


def exit_hint(tail: str) -> str | None:
    """The fix for a data-plane process that died of a known host limit, from the last lines of its log."""
    if "inotify" in tail and "too many open files" in tail.lower():
        try:
            limit = INOTIFY_LIMIT.read_text().strip()
        except OSError:
            limit = "unknown"
        more = 2 * int(limit) if limit.isdigit() else 1024  # `up` has raised it to kernel.py's minimum already
        return (
            f"the host's inotify instances are used up (fs.inotify.max_user_instances = {limit}; every kubelet "
            f"and containerd takes several): stop other local clusters (those under {paths.cache_root() / 'clusters'}: "
            "`wincon cluster down --cluster-name N`) or raise the limit further, e.g. "
            f"`sysctl -w fs.inotify.max_user_instances={more}`, then run `wincon cluster up` again"
        )
    return None


def _wait(what: str, probe: Any, deadline: float, watch: _Watch, hint: str) -> Any:
    last = ""
    while True:
        watch.check()
        try:
            value = probe()
        except Exception as exc:  # noqa: BLE001 - not ready yet; the last error is reported on timeout
            value, last = None, f" (last error: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})"
        if value:
            return value
        if time.monotonic() > deadline:
            raise LocalClusterError(f"cluster {watch.cluster}: timed out waiting for {what}{last}", hint)
        time.sleep(0.25)


def _node_network(plan: Plan, node: RealNode) -> str:
    ns = netns.add_netns(plan.cluster, node.name, f"n{node.index}", node.address, plan.prefix)
    for other in plan.nodes:
        if other is not node:
            netns.run(["ip", "route", "add", other.pod_cidr, "via", other.address], netns=ns)
    # No default route: anything outside the cluster's /24, the pod subnets and the Service range is
    # rejected here. The Service range goes to the host, which does not forward (and rejects it): the node's
    # own connections need a route before kube-proxy's OUTPUT rules translate them.
    netns.prohibit_in_netns(ns, [POD_RANGE, SIMULATED_NODE_RANGE])
    netns.run(["ip", "route", "add", SERVICE_RANGE, "via", plan.gateway], netns=ns)
    netns.sysctl_in_netns(ns, {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"})
    masquerade = ["-s", POD_RANGE, "!", "-d", POD_RANGE, "-m", "comment", "--comment", "wincon: pod egress"]
    netns.run(["iptables", "-w", "-t", "nat", "-A", "POSTROUTING", *masquerade, "-j", "MASQUERADE"], netns=ns)
    ipfamily.prepare_node(plan, node, ns, netns.run)  # the IPv6 side of all this (nothing for ipv4)
    return ns


def _external_host(plan: Plan, bdir: Path, watch: _Watch) -> None:
    ns = netns.add_netns(plan.cluster, "ext", "x", plan.external_ip, plan.prefix)
    xdir = root(plan.cluster) / "external"
    xdir.mkdir(parents=True, exist_ok=True)
    corefile = xdir / "Corefile"
    corefile.write_text(
        f".:53 {{\n    hosts {{\n        {plan.external_ip} {plan.external_name}\n    }}\n    errors\n}}\n"
    )
    pid = _spawn(
        plan.cluster, ns, "external-http", [str(bdir / "agnhost"), "netexec", "--http-port=80"], xdir / "http.log"
    )
    watch.add("the external host's HTTP server (agnhost netexec)", pid, xdir / "http.log")
    pid = _spawn(plan.cluster, ns, "external-dns", [str(bdir / "coredns"), "-conf", str(corefile)], xdir / "dns.log")
    watch.add("the external host's DNS server (CoreDNS)", pid, xdir / "dns.log")


def _start_node(
    plan: Plan, node: RealNode, bdir: Path, api_port: int, pki: Path, archive: Path, watch: _Watch, minor: str
) -> None:
    cluster = plan.cluster
    ndir = node_dir(cluster, node.name)
    for sub in ("cni/net.d", "cni/ipam", "containerd/certs.d", "pod-logs", "volume-plugins", "kubelet"):
        (ndir / sub).mkdir(parents=True, exist_ok=True)
    ns = _node_network(plan, node)
    cgroup_root = netns.make_cgroup(cluster, node.name)
    (ndir / "containerd.toml").write_text(_containerd_config(ndir))
    (ndir / "cni/net.d/10-wincon.conflist").write_text(_cni_config(plan, node, ndir))
    (ndir / "kubeconfig").write_text(_kubeconfig(plan, api_port, pki))
    (ndir / "kubeconfig").chmod(0o600)
    (ndir / "kubelet.yaml").write_text(_kubelet_config(plan, node, ndir, cgroup_root, minor))
    (ndir / "kube-proxy.yaml").write_text(_proxy_config(node, ndir, plan))
    # dnsPolicy Default (and CoreDNS's upstream): the simulated external host's resolver, nothing beyond.
    (ndir / "resolv.conf").write_text(f"nameserver {plan.external_ip}\nsearch {EXTERNAL_ZONE}\n")

    log = ndir / "containerd.log"
    watch.add(f"containerd of {node.name}", _spawn(cluster, ns, f"{node.name}-containerd", ["containerd", "--config", str(ndir / "containerd.toml")], log), log)  # fmt: skip
    sock = ndir / "containerd.sock"
    _wait(f"containerd of {node.name} ({sock})", sock.exists, time.monotonic() + 30, watch, f"read {log}")
    ctr = ["ctr", "--address", str(sock), "--namespace", "k8s.io"]
    result = subprocess.run([*ctr, "images", "import", str(archive)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise LocalClusterError(
            f"importing the images into {node.name}'s containerd failed: {result.stderr.strip()[:400]}",
            f"read {log}",
        )
    log = ndir / "kubelet.log"
    args = [
        str(bdir / "kubelet"),
        f"--config={ndir / 'kubelet.yaml'}",
        f"--kubeconfig={ndir / 'kubeconfig'}",
        f"--hostname-override={node.name}",
        f"--node-ip={ipfamily.node_ips(plan, node)}",
        f"--root-dir={ndir / 'kubelet'}",
        f"--cert-dir={ndir / 'kubelet' / 'pki'}",
        "--v=1",
    ]
    path_first = str(journal.install_journalctl(ndir))
    watch.add(f"kubelet of {node.name}", _spawn(cluster, ns, f"{node.name}-kubelet", args, log, None, path_first), log)
    shipper = [
        sys.executable,
        "-m",
        "wincon.localcluster.journal",
        f"--log={log}",
        f"--journal={journal.journal_dir(ndir)}",
        f"--pid-file={pid_file(cluster, f'{node.name}-kubelet')}",
        f"--host={node.name}",
    ]
    jlog = ndir / "journal.log"
    watch.add(f"the journal writer of {node.name}", _spawn(cluster, ns, f"{node.name}-journal", shipper, jlog), jlog)
    log = ndir / "kube-proxy.log"
    args = [str(bdir / "kube-proxy"), f"--config={ndir / 'kube-proxy.yaml'}", "--v=1"]
    ready = {"url": f"http://{node.address}:{PROXY_HEALTH_PORT}/healthz"}  # what `start` waits for too
    watch.add(f"kube-proxy of {node.name}", _spawn(cluster, ns, f"{node.name}-kube-proxy", args, log, ready), log)


def start(
    plan: Plan, bindir: Path, api_port: int, pki: Path, deadline: float, out: TextIO, release: releases.Release
) -> None:
    """Start the external host and every real node; return once each node's kube-proxy is healthy.

    The nodes' readiness (registration, CNI) and CoreDNS are waited for by the caller through the API.
    """
    archive = images.build_archive(bindir, release.versions())
    bdir = _link_binaries(plan.cluster, bindir)
    netns.dnat_to_loopback(plan.cluster, plan.gateway, api_port)
    watch = _Watch(plan.cluster)
    log = root(plan.cluster) / f"{ipfamily.FORWARDER}.log"
    pid = ipfamily.start_forwarder(plan, api_port, marker(plan.cluster), _spawn, log)
    if pid:
        watch.add("the API server's IPv6 forwarder", pid, log)
    print(f"starting the external host ({plan.external_ip}, {plan.external_name})", file=out, flush=True)
    _external_host(plan, bdir, watch)
    for node in plan.nodes:
        print(f"starting real Linux node {node.name} ({node.address}, pods {node.pod_cidr})", file=out, flush=True)
        _start_node(plan, node, bdir, api_port, pki, archive, watch, release.minor)
    if plan.nodes:
        _start_egress(plan, watch, out)
    for node in plan.nodes:
        url = f"http://{node.address}:{PROXY_HEALTH_PORT}/healthz"
        _wait(
            f"kube-proxy of {node.name} to be healthy ({url})",
            lambda url=url: urllib.request.urlopen(url, timeout=2).status == 200,
            deadline,
            watch,
            f"read {node_dir(plan.cluster, node.name) / 'kube-proxy.log'}",
        )


def _start_egress(plan: Plan, watch: _Watch, out: TextIO) -> None:
    """The API server's egress proxy, in the first real node's namespace (where pods and Services are reachable)."""
    node = plan.nodes[0]
    sock = egress_socket(plan.cluster)
    print(f"starting the API server's egress proxy in {node.name}'s namespace ({sock})", file=out, flush=True)
    log = root(plan.cluster) / f"{EGRESS_PROCESS}.log"
    args = [sys.executable, str(Path(egress.__file__)), str(sock), *egress_ranges(plan)]
    # The API server's own path to the nodes: at the control plane's priority, set on the process (its command line
    # stays its own, as restart_process checks it), and again on each start.
    pid = _spawn(plan.cluster, netns.netns_name(plan.cluster, node.name), EGRESS_PROCESS, args, log, control_plane=True)
    watch.add("the API server's egress proxy", pid, log)
    _wait(f"the egress proxy's socket ({sock})", sock.exists, time.monotonic() + 15, watch, f"read {log}")


def watched(plan: Plan) -> _Watch:
    """A watch over the running data-plane processes (recorded pids), to fail fast while waiting on them."""
    watch = _Watch(plan.cluster)
    pids = pid_dir(plan.cluster)
    for recorded in sorted(pids.glob("*.pid")) if pids.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            watch.add(recorded.stem, int(recorded.read_text().strip()), _log_of(plan, recorded.stem))
    return watch


def _log_of(plan: Plan, proc: str) -> Path:
    for node in plan.nodes:
        if proc.startswith(node.name + "-"):
            return node_dir(plan.cluster, node.name) / f"{proc[len(node.name) + 1 :]}.log"
    if proc == EGRESS_PROCESS or (root(plan.cluster) / f"{proc}.log").exists():  # the add-ons' (extras.py) too
        return root(plan.cluster) / f"{proc}.log"
    return root(plan.cluster) / "external" / ("http.log" if proc == "external-http" else "dns.log")


def processes(plan: Plan) -> list[dict[str, Any]]:
    """Each recorded data-plane process: name, pid, running, log (for ``cluster status``)."""
    result = []
    pids = pid_dir(plan.cluster)
    for recorded in sorted(pids.glob("*.pid")) if pids.is_dir() else []:
        pid = None
        with contextlib.suppress(OSError, ValueError):
            pid = int(recorded.read_text().strip())
        running = bool(pid and _alive(pid) and marker(plan.cluster) in (procs.cmdline(pid) or ""))
        result.append({"name": recorded.stem, "pid": pid, "running": running, "log": str(_log_of(plan, recorded.stem))})
    return result


# ------------------------------------------------------------------------------------------ objects


def corefile(plan: Plan) -> str:
    """The cluster DNS's Corefile: cluster.local from the API, everything else from the external host only."""
    return (
        ".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n"
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n       pods insecure\n"
        "       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n"
        f"    prometheus :9153\n    forward . {plan.external_ip}\n    cache 30\n    loop\n    reload\n}}\n"
    )


# ------------------------------------------------------------------------------------------ teardown


def _kill_all(cluster: str, timeout: float = 20.0) -> None:
    procs.kill_all(lambda: pids(cluster), f"data-plane processes of cluster {cluster}", timeout)


def _remove_log_links(cluster: str) -> None:
    """The kubelet links container logs into /var/log/containers: remove the links into our directories."""
    mark = marker(cluster)
    logs = Path("/var/log/containers")
    for link in logs.glob("*.log") if logs.is_dir() else []:
        with contextlib.suppress(OSError):
            if link.is_symlink() and os.readlink(link).startswith(mark):
                link.unlink()


CNI_CACHE = Path("/var/lib/cni/results")
# Paths a kubelet or containerd shim writes outside its configured directories (device-plugin socket,
# shim socket directory); removed by `down` once no kubelet or shim of any cluster runs and they are empty.
HOST_PATHS = (
    Path("/var/lib/kubelet/device-plugins/kubelet.sock"),
    Path("/var/lib/kubelet/device-plugins"),
    Path("/var/lib/kubelet"),
    Path("/run/containerd/s"),
    Path("/run/containerd"),
    CNI_CACHE,
    CNI_CACHE.parent,
)
# Where the suites' Linux hostPath checks write on the real nodes (the host's filesystem); each check removes
# its own files, and `down` removes the directories once they are empty.
HOSTPATH_ROOTS = (Path("/tmp/wincon-tests"), Path("/tmp/wincon"))


def _cni_cache_files(cluster: str) -> list[Path]:
    """libcni's cached results of this cluster's pods: ``<network>-<id>-eth0`` and the same id's loopback."""
    prefix = cni_network(cluster) + "-"
    if not CNI_CACHE.is_dir():
        return []
    ours = [p for p in CNI_CACHE.iterdir() if p.name.startswith(prefix)]
    ids = {p.name[len(prefix) :].rsplit("-", 1)[0] for p in ours}
    return ours + [
        p for p in CNI_CACHE.iterdir() if p.name.startswith("cni-loopback-") and p.name[13:].rsplit("-", 1)[0] in ids
    ]


def _runs(binary: str) -> bool:
    """Whether any process on this host runs ``binary`` (by the last part of its argv[0])."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            cmdline = procs.cmdline(int(entry.name))
            if cmdline and cmdline.split(" ", 1)[0].rsplit("/", 1)[-1] == binary:
                return True
    return False


def _remove_host_files(cluster: str) -> None:
    for path in _cni_cache_files(cluster):
        path.unlink(missing_ok=True)
    if _runs("kubelet") or _runs("containerd-shim-runc-v2"):
        return  # another cluster (or a real kubelet) still uses them
    for top in HOSTPATH_ROOTS:
        if top.is_dir() and not top.is_symlink():
            for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
                with contextlib.suppress(OSError):
                    path.rmdir()  # only if empty
            with contextlib.suppress(OSError):
                top.rmdir()
    for path in HOST_PATHS:
        with contextlib.suppress(OSError):
            if path.is_socket():
                path.unlink()
            elif path.is_dir() and not path.is_symlink():
                path.rmdir()  # only if empty: a real kubelet's files stay


def teardown(cluster: str) -> None:
    """Remove everything of cluster ``cluster``'s data plane; raise naming what could not be removed."""
    if os.geteuid() != 0:
        return  # nothing of a data plane can exist without root
    _kill_all(cluster)
    base = root(cluster)
    still_mounted = netns.unmount_all([str(base)])
    netns.delete_network(cluster)
    left_cgroups = netns.remove_cgroups(cluster)
    _remove_log_links(cluster)
    _remove_host_files(cluster)
    if still_mounted or left_cgroups:
        raise LocalClusterError(
            f"cluster {cluster}: could not remove {', '.join(still_mounted + left_cgroups)}",
            "check `fuser -m` on the mount points and `cat cgroup.procs` of the cgroups, then run down again",
        )
    shutil.rmtree(base, ignore_errors=True)


def leftovers(cluster: str) -> dict[str, list[str]]:
    """What of the data plane is still on this host: processes, mounts, links, netns, routes, rules, cgroups, and
    kube-router's chains and ipsets (netns.leftovers)."""
    found = netns.leftovers(cluster, root(cluster))
    found["processes"] = [f"{pid} {procs.cmdline(pid) or ''}".strip() for pid in pids(cluster)]
    found["cni_cache"] = [str(p) for p in _cni_cache_files(cluster)]
    return found
