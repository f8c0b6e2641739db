"""The host side of the real Linux data plane: network namespaces, links, routes, iptables rules and cgroups.

Every object is named after the cluster, so that ``down`` finds and removes it even when ``up`` was killed
before it wrote anything down:

- a host bridge ``wc<hash>br`` (hash: 6 hex digits of the cluster name) with the gateway address of the
  cluster's /24 (``172.30.<k>.1``), to which each node's and the external host's veth is attached;
- network namespaces ``wincon-<cluster>-<node>`` and ``wincon-<cluster>-ext``;
- host routes of type ``prohibit`` for the pod, Service and simulated-node ranges, with a metric of the
  cluster's own, so that nothing addressed there can leave by the default route;
- host iptables rules carrying the comment ``wincon:<cluster>``;
- cgroups ``/wincon-<cluster>-<node>`` in every cgroup hierarchy (the kubelets' ``cgroupRoot``).

Traffic stays on this machine: the namespaces have no default route (only their /24 on the bridge and the
other nodes' pod subnets), the host does not forward (``ip_forward`` is left as it is), and the only host
rule is a DNAT from the bridge's gateway address to the API server on 127.0.0.1. The API server itself reaches
pods and Services not by a host route (every local cluster on the machine uses the same ranges) but through the
egress proxy inside the first real node's namespace (egress.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterable
from pathlib import Path

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import ipfamily

NODE_SUBNET_BASE = "172.30.0.0/16"  # one /24 per cluster out of this range
PROHIBITED = ("10.244.0.0/16", "10.0.0.0/24", "10.224.0.0/16")  # pods, Services, simulated node addresses
CGROUP_ROOT = Path("/sys/fs/cgroup")
NETNS_DIR = Path("/run/netns")


def run(args: list[str], *, check: bool = True, netns: str | None = None, timeout: float = 30) -> str:
    """Run a command (inside ``netns`` if given); raise a LocalClusterError naming it when it fails."""
    full = ["ip", "netns", "exec", netns, *args] if netns else args
    result = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise LocalClusterError(
            f"`{' '.join(full)}` failed (exit {result.returncode}): {(result.stderr or result.stdout).strip()[:400]}",
            "check that you are root and that iproute2 and iptables are installed (`make setup` installs them)",
        )
    return result.stdout


def cluster_hash(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:6]


def bridge_name(name: str) -> str:
    return f"wc{cluster_hash(name)}br"


def veth_name(name: str, index: int | str) -> str:
    return f"wc{cluster_hash(name)}v{index}"  # at most 15 characters: wc + 6 + v + up to 6


def netns_name(name: str, node: str) -> str:
    return f"wincon-{name}-{node}"


def route_metric(name: str) -> int:
    return 3000 + int(cluster_hash(name), 16) % 60000


def comment(name: str) -> str:
    return f"wincon:{name}"


def cgroup_name(name: str, node: str) -> str:
    return f"wincon-{name}-{node}"


# The data plane's node names (dataplane.make_plan's real nodes and the external host's namespace).
NODE_NAME = re.compile(r"worker-\d+|ext")


def is_ours(entry: str, name: str) -> bool:
    """Whether a namespace or cgroup named ``wincon-<cluster>-<node>`` is cluster ``name``'s.

    Not by the prefix ``wincon-<name>-`` alone: cluster names contain '-', so ``wincon-wincon-test-worker-0`` (of
    cluster ``wincon-test``, ``make test``'s) starts with the prefix of cluster ``wincon`` (``make main``'s), whose
    ``down``, and whose ``up`` over stale state, would then kill the other cluster's containers (found by cgroup)
    and delete its namespaces. The rest must be one of the node names the data plane gives (``worker-<n>``,
    ``ext``); no other cluster's name followed by such a node name ends the same way, so each entry is one
    cluster's only."""
    prefix = f"wincon-{name}-"
    return entry.startswith(prefix) and NODE_NAME.fullmatch(entry[len(prefix) :]) is not None


def our_cgroups(name: str) -> list[Path]:
    """Cluster ``name``'s top cgroups (the kubelets' cgroupRoots) in every hierarchy."""
    return [p for h in hierarchies() for p in sorted(h.glob(f"wincon-{name}-*")) if is_ours(p.name, name)]


def used_subnets() -> set[str]:
    """The /24s of 172.30.0.0/16 that some interface of this host already has."""
    out = run(["ip", "-j", "-4", "addr", "show"], check=False)
    used = set()
    base = ipaddress.ip_network(NODE_SUBNET_BASE)
    for link in json.loads(out or "[]"):
        for addr in link.get("addr_info", []):
            ip = ipaddress.ip_address(addr["local"])
            if ip in base:
                used.add(str(ipaddress.ip_network(f"{ip}/24", strict=False)))
    return used


def pick_subnet(name: str) -> ipaddress.IPv4Network:
    """A free /24 for cluster ``name``: its hash's choice if free, else the first free one."""
    used = used_subnets()
    subnets = list(ipaddress.IPv4Network(NODE_SUBNET_BASE).subnets(new_prefix=24))[1:]
    start = int(cluster_hash(name), 16) % len(subnets)
    for subnet in subnets[start:] + subnets[:start]:
        if str(subnet) not in used:
            return subnet
    raise LocalClusterError(
        f"no free /24 left in {NODE_SUBNET_BASE} for cluster {name}'s node network",
        "stop other local clusters (`wincon cluster down --cluster-name ...`)",
    )


def require_root() -> None:
    if os.geteuid() != 0:
        raise LocalClusterError(
            "the real Linux data plane needs root (network namespaces, mounts, cgroups, iptables)",
            "run as root, or start the cluster without real nodes: `wincon cluster up --dataplane none`",
        )


# --------------------------------------------------------------------------------------------- setup


def create_bridge(name: str, gateway: str, prefix: int) -> None:
    bridge = bridge_name(name)
    run(["ip", "link", "add", bridge, "type", "bridge"])
    run(["ip", "addr", "add", f"{gateway}/{prefix}", "dev", bridge])
    run(["ip", "link", "set", bridge, "up"])
    # The API server listens on 127.0.0.1 only; the nodes reach it through a DNAT to 127.0.0.1 on this bridge.
    Path(f"/proc/sys/net/ipv4/conf/{bridge}/route_localnet").write_text("1\n")
    metric = str(route_metric(name))
    for cidr in PROHIBITED:
        run(["ip", "route", "add", "prohibit", cidr, "metric", metric])


def add_netns(name: str, node: str, veth_index: int | str, address: str, prefix: int) -> str:
    """A namespace with ``eth0`` on the cluster's bridge at ``address``, and lo up. Returns its name."""
    ns = netns_name(name, node)
    veth = veth_name(name, veth_index)
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
    run(["ip", "link", "set", veth, "master", bridge_name(name), "up"])
    run(["ip", "addr", "add", f"{address}/{prefix}", "dev", "eth0"], netns=ns)
    run(["ip", "link", "set", "eth0", "up"], netns=ns)
    run(["ip", "link", "set", "lo", "up"], netns=ns)
    return ns


def prohibit_in_netns(ns: str, cidrs: Iterable[str]) -> None:
    for cidr in cidrs:
        run(["ip", "route", "add", "prohibit", cidr], netns=ns)


def sysctl_in_netns(ns: str, settings: dict[str, str]) -> None:
    for key, value in settings.items():
        path = "/proc/sys/" + key.replace(".", "/")
        run(["sh", "-c", f"[ ! -e {path} ] || echo {value} > {path}"], netns=ns)


def dnat_to_loopback(name: str, gateway: str, port: int) -> None:
    """Let the nodes reach the API server (127.0.0.1:port) at ``gateway:port`` on the cluster's bridge."""
    rule = ["-i", bridge_name(name), "-d", gateway, "-p", "tcp", "--dport", str(port)]
    rule += ["-m", "comment", "--comment", comment(name), "-j", "DNAT", "--to-destination", f"127.0.0.1:{port}"]
    run(["iptables", "-w", "-t", "nat", "-A", "PREROUTING", *rule])


# The CPU weight of a real node's cgroupRoot, eight times the default (cgroup v1 cpu.shares 1024, v2 cpu.weight
# 100). A real node's pods have its CPU to themselves; here the nodes share the host with everything a test run
# starts (control planes, pytest, other clusters), whose processes sit in the root cgroup and weigh 1024 each: under
# that load a node's pods got a tenth of a core, and the CPU-limit cap check, whose unlimited twin must be given
# more than the limit to show the limit matters, erred "the node could not show the limit matters" in the fault
# test's clean run of a clean-clone `make test` (both pods 0.15-0.30 core). Pods without a limit can then take most
# of the host's CPU while they spin; the suite's only such pod is that twin, for at most its 150 s wait.
NODE_CPU_SHARES = 8192
NODE_CPU_WEIGHT = 800

# The control plane's CPU priority, the other side of that weight. A real cluster's control plane has machines of
# its own; here it shares two cores with the nodes, whose pods without a limit can spin on every core (the CPU-limit
# checks' twins; their limited pods too, while the CPU fault test lifts the limit). kwokctl starts each component in
# a session of its own, and the kernel's autogroup scheduling (kernel.sched_autogroup_enabled, on here) weighs each
# session in the root cgroup as one entity of 1024, against a node's 8192: the API server got a tenth of a core, its
# accept queue filled (3822 connections waiting, 3767 in CLOSE-WAIT), TLS handshakes timed out, a list of pods got
# 504, and the CPU fault test's run ended "the API server ... is unreachable" (stop 53's CI, twice here after it).
# Its autogroup set to -10 (9548, the kernel's sched_prio_to_weight) emptied that queue within 20 s. So every
# control-plane process, and the API server's egress proxy (its path to the nodes, as a konnectivity server is a
# real control plane's), gets niceness -10: its autogroup's (/proc/<pid>/autogroup) and, for a kernel without
# autogroups, its own: kwokctl starts under ``nice`` (at_control_plane_priority), so that the components it starts
# inherit it from their first thread; the egress proxy gets it as it is spawned, before it starts any thread
# (raise_to_control_plane_priority), its command line staying its own. Only root may raise a priority; elsewhere
# (no real node can run there either) the processes keep the default.
CONTROL_PLANE_NICE = -10


def at_control_plane_priority(args: list[str]) -> list[str]:
    """``args`` run at the control plane's niceness (CONTROL_PLANE_NICE) where this process may raise one (root)."""
    return ["nice", "-n", str(CONTROL_PLANE_NICE), *args] if os.geteuid() == 0 else args


def raise_to_control_plane_priority(pid: int) -> bool:
    """Give process ``pid`` the control plane's niceness, its own (which the threads it starts afterwards inherit)
    and its autogroup's; False where its autogroup's could not be set (no autogroups, not root, the process gone)."""
    if os.geteuid() != 0:
        return False
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, CONTROL_PLANE_NICE)
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(CONTROL_PLANE_NICE))
    except OSError:
        return False
    return True


def make_cgroup(name: str, node: str) -> str:
    """Create the kubelet's cgroupRoot in every hierarchy (cpuset values copied from the root), with the node's
    CPU weight (NODE_CPU_SHARES, NODE_CPU_WEIGHT). Returns it."""
    group = cgroup_name(name, node)
    for hierarchy in hierarchies():
        path = hierarchy / group
        path.mkdir(exist_ok=True)
        if hierarchy.name == "cpuset":
            for key in ("cpuset.cpus", "cpuset.mems"):
                with contextlib.suppress(OSError):
                    (path / key).write_text((hierarchy / key).read_text())
        if (path / "cpu.shares").exists():  # v1: the cpu (cpu,cpuacct) hierarchy
            (path / "cpu.shares").write_text(str(NODE_CPU_SHARES))
        elif (path / "cpu.weight").exists():  # v2: the unified root, once cpu is enabled for its children
            (path / "cpu.weight").write_text(str(NODE_CPU_WEIGHT))
    return "/" + group


def hierarchies() -> list[Path]:
    """The mounted cgroup hierarchies (v1 controllers, systemd and the unified one, or the v2 root)."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT]
    return sorted(p for p in CGROUP_ROOT.iterdir() if p.is_dir() and not p.is_symlink())


# --------------------------------------------------------------------------------------------- teardown


def cgroup_dirs(top: Path) -> list[Path]:
    """``top`` and every cgroup below it. A pod's cgroup may vanish while it is walked (its pod torn down as
    ``down`` kills): os.walk skips it, where Path.rglob raised FileNotFoundError and stopped ``down`` half-way."""
    return [Path(dirpath) for dirpath, _, _ in os.walk(top)]


def cgroup_pids(name: str) -> set[int]:
    """Every process in the cluster's cgroups (containers, shims and anything started under them)."""
    pids: set[int] = set()
    for top in our_cgroups(name):
        for cgroup in cgroup_dirs(top):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (cgroup / "cgroup.procs").read_text().split())
    return pids


def remove_cgroups(name: str) -> list[str]:
    """rmdir the cluster's cgroups, deepest first; return those that could not be removed."""
    left = []
    for top in our_cgroups(name):
        dirs = sorted(cgroup_dirs(top), key=lambda p: len(p.parts), reverse=True)  # top last
        for path in dirs:
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(str(path))
    return left


def mounts_under(prefixes: Iterable[str]) -> list[str]:
    """Mount points below any of ``prefixes``, deepest first (from /proc/self/mountinfo)."""
    prefixes = [p.rstrip("/") + "/" for p in prefixes]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any((point + "/").startswith(p) for p in prefixes):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_all(prefixes: Iterable[str]) -> list[str]:
    """Detach every mount below ``prefixes``; return what is still mounted afterwards."""
    prefixes = list(prefixes)
    for _ in range(5):
        points = mounts_under(prefixes)
        if not points:
            return []
        for point in points:
            subprocess.run(["umount", "-l", point], capture_output=True, timeout=30)
    return mounts_under(prefixes)


def our_netns(name: str) -> list[str]:
    with contextlib.suppress(OSError):
        return sorted(p.name for p in NETNS_DIR.iterdir() if is_ours(p.name, name))
    return []


def delete_network(name: str) -> None:
    """Remove the cluster's namespaces, veths, bridge, host routes and host iptables rules."""
    for ns in our_netns(name):
        run(["ip", "netns", "delete", ns], check=False)
        with contextlib.suppress(OSError):
            (NETNS_DIR / ns).unlink()
    links = json.loads(run(["ip", "-j", "link", "show"], check=False) or "[]")
    prefix = f"wc{cluster_hash(name)}"
    for link in links:
        if link.get("ifname", "").startswith(prefix):
            run(["ip", "link", "delete", link["ifname"]], check=False)
    metric = str(route_metric(name))
    for cidr in PROHIBITED:
        run(["ip", "route", "delete", "prohibit", cidr, "metric", metric], check=False)
    for table, chain in (("nat", "PREROUTING"), ("filter", "FORWARD")):
        for rule in iptables_rules(name, table, chain):
            run(["iptables", "-w", "-t", table, "-D", *rule], check=False)
    ipfamily.delete_host(run, route_metric(name))  # the IPv6 prohibit routes of --ip-family dual/ipv6


def iptables_rules(name: str, table: str = "nat", chain: str = "PREROUTING") -> list[list[str]]:
    """The host's rules in ``table``/``chain`` that carry this cluster's comment, as ``-D`` arguments."""
    out = run(["iptables", "-w", "-t", table, "-S", chain], check=False)
    tag = comment(name)
    rules = []
    for line in out.splitlines():
        if line.startswith("-A ") and tag in shlex.split(line):
            rules.append(shlex.split(line)[1:])
    return rules


# kube-router's network policy controller (kuberouter.py): its filter-table chains and its ipsets, listed here with
# the data plane's other leftovers (the add-on imports the data plane, never the other way round).
POLICY_CHAIN_PREFIXES = ("KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-")
POLICY_IPSET_PREFIXES = ("KUBE-SRC-", "KUBE-DST-", "inet6:KUBE-SRC-", "inet6:KUBE-DST-")


def _output(args: list[str], netns: str | None) -> str:
    """A command's output (inside ``netns`` if given), or '' where it cannot run (the tool missing, the namespace
    gone): for listings only."""
    full = ["ip", "netns", "exec", netns, *args] if netns else args
    try:
        return subprocess.run(full, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def policy_chains(netns: str | None = None) -> list[str]:
    """kube-router's chains in the filter table of namespace ``netns`` (None: the host's)."""
    out = _output(["iptables", "-w", "-t", "filter", "-S"], netns)
    return [
        line.split()[1]
        for line in out.splitlines()
        if line.startswith("-N ") and line.split()[1].startswith(POLICY_CHAIN_PREFIXES)
    ]


def policy_ipsets(netns: str | None = None) -> list[str]:
    """kube-router's ipsets in namespace ``netns`` (None: the host's)."""
    return [n for n in _output(["ipset", "list", "-n"], netns).split() if n.startswith(POLICY_IPSET_PREFIXES)]


def leftovers(name: str, state_dir: Path) -> dict[str, list[str]]:
    """What of cluster ``name``'s data plane is still on this host (empty lists when nothing is)."""
    prefix = f"wc{cluster_hash(name)}"
    links = json.loads(run(["ip", "-j", "link", "show"], check=False) or "[]")
    metric = str(route_metric(name))
    routes = [
        line
        for line in run(["ip", "route", "show", "type", "prohibit"], check=False).splitlines()
        if f"metric {metric}" in line
    ]
    cgroups = [str(p) for p in our_cgroups(name)]
    rules = [" ".join(r) for t, c in (("nat", "PREROUTING"), ("filter", "FORWARD")) for r in iptables_rules(name, t, c)]
    routes += ipfamily.host_routes6(run, route_metric(name))
    rules += ipfamily.host_ip6tables_rules(run, comment(name))
    # kube-router's chains and ipsets: in the host's namespace none may ever be; in the cluster's, until down
    # deletes those namespaces (and their tables with them).
    where: list[tuple[str, str | None]] = [("host", None), *((ns, ns) for ns in our_netns(name))]
    return {
        "kube_router_chains": [f"{label}: {c}" for label, ns in where for c in policy_chains(ns)],
        "ipsets": [f"{label}: {s}" for label, ns in where for s in policy_ipsets(ns)],
        "netns": our_netns(name),
        "links": [link["ifname"] for link in links if link.get("ifname", "").startswith(prefix)],
        "routes": routes,
        "iptables": rules,
        "mounts": mounts_under([str(state_dir)]),
        "cgroups": cgroups,
    }
