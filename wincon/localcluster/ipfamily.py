"""The local cluster's IP families: ``ipv4`` (the default), ``dual`` (IPv4 primary, IPv6 secondary) or ``ipv6``
(IPv6 single-stack), chosen by ``wincon cluster up --ip-family``.

Everything the families change is decided here; the modules that build the cluster ask this one and change
nothing for ``ipv4``:

- the API server serves Services from both ranges (``--service-cluster-ip-range``, primary first); with
  ``ipv6`` it advertises the bridge's IPv6 gateway (its Service family must match the advertised address);
- the controller-manager gets both cluster CIDRs and the per-node mask sizes;
- each real node's namespace gets an IPv6 address of the cluster's ULA /64 (``fd00:172:30:<k>::/64`` beside
  ``172.30.<k>.0/24``), IPv6 routes to the other nodes' pod /64s, IPv6 forwarding inside the namespace (the
  host's is left as it is) and an ip6tables masquerade for pod egress; the kubelet's ``--node-ip`` names the
  node's address of each family; kube-proxy runs both iptables and ip6tables (``clusterCIDR`` of both);
- the CNI (Debian's bridge + host-local) hands each pod an address of each family;
- CoreDNS answers AAAA for cluster.local (its ``kubernetes`` plugin does, for Services with IPv6 cluster IPs);
  with ``ipv6`` the kube-dns Service and the kubelets' clusterDNS use an IPv6 address;
- the simulated nodes carry a podCIDR of each family;
- the host rejects the IPv6 pod, Service and simulated-node ranges with ``prohibit`` routes (the cluster's
  metric), as it rejects the IPv4 ones; ``down`` removes them and the leftover check looks for them.

Nothing of it leaves the machine: every IPv6 range is inside fd00::/8 (unique local) and none is routed off
the host. With ``ipv6`` the nodes' kubelets still reach the API server at the bridge's IPv4 gateway (a host
detail, as the kubeconfig's server is); pods reach it at the IPv6 gateway through a forwarder on the host
bound to that address only (the API server itself listens on 127.0.0.1, and the kernel cannot DNAT IPv6 to
the loopback as ``route_localnet`` lets IPv4 do).

Run ``python3 -m wincon.localcluster.ipfamily forward ADDRESS PORT MARKER`` for that forwarder (MARKER: the
cluster's data-plane directory, by which ``down`` finds the process).
"""

from __future__ import annotations

import asyncio
import ipaddress
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from wincon.commandline.errors import UsageError
from wincon.localcluster import egress


class RealNode(Protocol):
    """What this module reads of a dataplane.RealNode (it imports neither dataplane nor netns: they ask it)."""

    name: str
    address: str
    pod_cidr: str


class Plan(Protocol):
    """What this module reads of a dataplane.Plan."""

    cluster: str
    subnet: str
    gateway: str
    ip_family: str

    @property
    def nodes(self) -> Sequence[RealNode]: ...


FAMILIES = ("ipv4", "dual", "ipv6")
DEFAULT = "ipv4"

# IPv4 ranges, as dataplane.py and netns.py name them (repeated here so this module imports neither at load).
POD_RANGE4 = "10.244.0.0/16"
SERVICE_RANGE4 = "10.0.0.0/24"
NODE_MASK4 = 24
# IPv6: unique local addresses only (fd00::/8), none of them routed off the machine.
POD_RANGE6 = "fd00:10:244::/56"
NODE_MASK6 = 64  # one /64 per node out of POD_RANGE6: fd00:10:244:<n>::/64 beside 10.244.<n>.0/24
SERVICE_RANGE6 = "fd00:10:96::/112"
KUBERNETES_SERVICE_IP6 = "fd00:10:96::1"  # the first address of the range, as 10.0.0.1 is
DNS_SERVICE_IP6 = "fd00:10:96::a"
SIMULATED_NODE_RANGE6 = "fd00:10:224::/64"  # the simulated nodes' IPv6 addresses: routed nowhere
NODE_NETWORK6 = "fd00:172:30::/48"  # one /64 per cluster: fd00:172:30:<k>::/64 beside 172.30.<k>.0/24
PROHIBITED6 = (POD_RANGE6, SERVICE_RANGE6, SIMULATED_NODE_RANGE6)
FORWARDER = "apiserver-ipv6"  # the process name (pid file, log) of the IPv6 forwarder to the API server
# The forwarder runs in the host's network namespace: its recorded "namespace", relative to /run/netns, is the
# starting process's own, so that dataplane.restart_process (nsenter --net=/run/netns/<ns>) starts it there again.
HOST_NS = "../../proc/self/ns/net"


def check(family: str, dataplane: str = "linux") -> str:
    """``family`` if it is one of FAMILIES (other than ipv4 only with real nodes), else a UsageError."""
    if family not in FAMILIES:
        raise UsageError(f"unknown IP family {family!r}", f"pass --ip-family as one of {', '.join(FAMILIES)}")
    if family != DEFAULT and dataplane != "linux":
        raise UsageError(
            f"--ip-family {family} needs the real Linux data plane (its nodes carry the addresses)",
            "drop --dataplane none, or use --ip-family ipv4",
        )
    return family


def has_ipv4(family: str) -> bool:
    return family in ("ipv4", "dual")


def has_ipv6(family: str) -> bool:
    return family in ("ipv6", "dual")


def per_family(family: str, ipv4: str, ipv6: str) -> list[str]:
    """The values of the cluster's families, primary first: [ipv4], [ipv4, ipv6] or [ipv6]."""
    return [v for v, on in ((ipv4, has_ipv4(family)), (ipv6, has_ipv6(family))) if on]


def families(family: str) -> list[str]:
    """The API's names of the families (``spec.ipFamilies`` of a RequireDualStack Service), primary first."""
    return per_family(family, "IPv4", "IPv6")


# ------------------------------------------------------------------------------------------ addresses


def _octet(cidr4: str, index: int) -> int:
    return int(str(ipaddress.ip_network(cidr4, strict=False).network_address).split(".")[index])


def pod_cidr6(pod_cidr4: str) -> str:
    """The IPv6 pod /64 of the node whose IPv4 pod subnet is ``pod_cidr4`` (10.244.<n>.0/24 -> fd00:10:244:<n>::/64)."""
    base = ipaddress.IPv6Network(POD_RANGE6)
    return str(
        ipaddress.IPv6Network((int(base.network_address) + (_octet(pod_cidr4, 2) << (128 - NODE_MASK6)), NODE_MASK6))
    )


def node_subnet6(subnet4: str) -> ipaddress.IPv6Network:
    """The cluster's IPv6 node /64 beside its IPv4 /24 (172.30.<k>.0/24 -> fd00:172:30:<k>::/64)."""
    base = ipaddress.IPv6Network(NODE_NETWORK6)
    return ipaddress.IPv6Network((int(base.network_address) + (_octet(subnet4, 2) << 64), 64))


def address6(subnet4: str, address4: str) -> str:
    """The IPv6 address of the node network matching IPv4 ``address4`` (its last octet as the host part)."""
    return str(node_subnet6(subnet4).network_address + int(address4.split(".")[3]))


def gateway6(plan: Plan) -> str:
    return address6(plan.subnet, plan.gateway)


def node_address6(plan: Plan, node: RealNode) -> str:
    return address6(plan.subnet, node.address)


# ------------------------------------------------------------------------------------------ configuration


def service_ranges(family: str) -> str:
    return ",".join(per_family(family, SERVICE_RANGE4, SERVICE_RANGE6))


def cluster_cidrs(family: str) -> str:
    return ",".join(per_family(family, POD_RANGE4, POD_RANGE6))


def apiserver_flags(plan: Plan | None, family: str) -> dict[str, str]:
    """The API server's flags for ``family`` (none for ipv4: its defaults are the IPv4 ones)."""
    if family == DEFAULT:
        return {}
    flags = {"service-cluster-ip-range": service_ranges(family)}
    if family == "ipv6" and plan is not None:
        flags["advertise-address"] = gateway6(plan)
    return flags


def controller_manager_flags(family: str) -> dict[str, str]:
    """The controller-manager's cluster CIDRs and node mask sizes for ``family`` (none for ipv4)."""
    if family == DEFAULT:
        return {}
    flags = {"cluster-cidr": cluster_cidrs(family), "service-cluster-ip-range": service_ranges(family)}
    if has_ipv4(family):
        flags["node-cidr-mask-size-ipv4"] = str(NODE_MASK4)
    if has_ipv6(family):
        flags["node-cidr-mask-size-ipv6"] = str(NODE_MASK6)
    return flags


def cert_sans(plan: Plan, family: str) -> list[str]:
    """The API server certificate's extra names for ``family``: the IPv6 gateway and the IPv6 kubernetes Service IP."""
    return [gateway6(plan), KUBERNETES_SERVICE_IP6] if has_ipv6(family) else []


def node_ips(plan: Plan, node: RealNode) -> str:
    """The kubelet's ``--node-ip``: the node's address of each family, primary first."""
    return ",".join(per_family(plan.ip_family, node.address, node_address6(plan, node)))


def pod_cidrs(plan: Plan, node: RealNode) -> list[str]:
    return per_family(plan.ip_family, node.pod_cidr, pod_cidr6(node.pod_cidr))


def cni_ipam(plan: Plan, node: RealNode) -> dict[str, Any]:
    """host-local's ranges (one per family) and default routes for ``node``'s pods."""
    ranges = [[{"subnet": cidr}] for cidr in pod_cidrs(plan, node)]
    routes = [{"dst": dst} for dst in per_family(plan.ip_family, "0.0.0.0/0", "::/0")]
    return {"ranges": ranges, "routes": routes}


def adjust_kubelet(config: dict[str, Any], plan: Plan, node: RealNode) -> dict[str, Any]:
    """The kubelet configuration for the cluster's families (unchanged for ipv4)."""
    if plan.ip_family == "ipv6":
        config["address"] = node_address6(plan, node)
        config["clusterDNS"] = [DNS_SERVICE_IP6]
        config["podCIDR"] = pod_cidr6(node.pod_cidr)
    return config


def adjust_proxy(config: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """kube-proxy's configuration: ``clusterCIDR`` of each family (it then runs iptables and ip6tables)."""
    if plan.ip_family != DEFAULT:
        config["clusterCIDR"] = cluster_cidrs(plan.ip_family)
    return config


def egress_ranges(plan: Plan) -> list[str]:
    """The IPv6 ranges the API server's egress proxy may dial besides the IPv4 ones (none for ipv4)."""
    if not has_ipv6(plan.ip_family):
        return []
    return [POD_RANGE6, SERVICE_RANGE6, str(node_subnet6(plan.subnet)), SIMULATED_NODE_RANGE6]


def adjust_objects(objects: list[dict[str, Any]], family: str) -> list[dict[str, Any]]:
    """The CNI, kube-proxy and DNS objects for ``family``: kube-proxy's ConfigMap names both cluster CIDRs; with
    ipv6 the kube-dns Service takes an IPv6 cluster IP. Unchanged for ipv4."""
    if family == DEFAULT:
        return objects
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ConfigMap" and name == "kube-proxy" and "config.conf" in obj["data"]:
            obj["data"]["config.conf"] = obj["data"]["config.conf"].replace(
                f"clusterCIDR: {POD_RANGE4}\n", f"clusterCIDR: {cluster_cidrs(family)}\n"
            )
        if obj["kind"] == "Service" and name == "kube-dns" and family == "ipv6":
            obj["spec"]["clusterIP"] = DNS_SERVICE_IP6
            obj["spec"]["ipFamilies"] = ["IPv6"]
    return objects


def adjust_simulated_node(node: dict[str, Any], family: str) -> dict[str, Any]:
    """A simulated node's podCIDRs of each family, primary first (unchanged for ipv4). Its InternalIP stays IPv4:
    the status patch that sets addresses merges them by type, so a second InternalIP could not be added there."""
    if family == DEFAULT:
        return node
    spec, v4 = node["spec"], node["spec"]["podCIDR"]
    spec["podCIDRs"] = per_family(family, v4, pod_cidr6(v4))
    spec["podCIDR"] = spec["podCIDRs"][0]
    return node


def serves(module: Any, family: str, out: Any) -> bool:
    """Whether add-on ``module`` (extras.py) runs on a cluster of ``family``: its ``IP_FAMILIES`` (default ipv4 and
    dual: an add-on that serves on the nodes' IPv4 addresses, a dual cluster's primary family). On ``out``, why not."""
    if family in getattr(module, "IP_FAMILIES", ("ipv4", "dual")):
        return True
    families = ", ".join(getattr(module, "IP_FAMILIES", ("ipv4", "dual")))
    print(f"not starting {module.NAME} on this {family} cluster: it is set up for {families} only", file=out)
    return False


def dns_service_ip(family: str, ipv4: str) -> str:
    return DNS_SERVICE_IP6 if family == "ipv6" else ipv4


# ------------------------------------------------------------------------------------------ host and namespaces


Run = Callable[..., str]  # netns.run: (args, *, check=True, netns=None) -> stdout


def prepare_host(plan: Plan, run: Run, bridge: str, metric: int) -> None:
    """The host's side for IPv6 (nothing for ipv4): the bridge's IPv6 gateway and ``prohibit`` routes for the IPv6
    pod, Service and simulated-node ranges (the cluster's metric), as the IPv4 ranges have."""
    if not has_ipv6(plan.ip_family):
        return
    run(["ip", "-6", "addr", "add", f"{gateway6(plan)}/64", "dev", bridge, "nodad"])
    for cidr in PROHIBITED6:
        run(["ip", "-6", "route", "add", "prohibit", cidr, "metric", str(metric)])


def prepare_node(plan: Plan, node: RealNode, ns: str, run: Run) -> None:
    """A real node's namespace for IPv6 (nothing for ipv4): its address, routes to the other nodes' pod /64s,
    ``prohibit`` for the rest of the IPv6 pod and simulated-node ranges, the IPv6 Service range towards the
    host (which rejects it; kube-proxy's rules translate it first), forwarding inside the namespace and a
    masquerade of pod egress."""
    if not has_ipv6(plan.ip_family):
        return
    run(["ip", "-6", "addr", "add", f"{node_address6(plan, node)}/64", "dev", "eth0", "nodad"], netns=ns)
    for other in plan.nodes:
        if other is not node:
            run(["ip", "-6", "route", "add", pod_cidr6(other.pod_cidr), "via", node_address6(plan, other)], netns=ns)
    for cidr in (POD_RANGE6, SIMULATED_NODE_RANGE6):
        run(["ip", "-6", "route", "add", "prohibit", cidr], netns=ns)
    run(["ip", "-6", "route", "add", SERVICE_RANGE6, "via", gateway6(plan)], netns=ns)
    for key, value in (("net/ipv6/conf/all/forwarding", "1"), ("net/bridge/bridge-nf-call-ip6tables", "1")):
        run(["sh", "-c", f"[ ! -e /proc/sys/{key} ] || echo {value} > /proc/sys/{key}"], netns=ns)
    masquerade = ["-s", POD_RANGE6, "!", "-d", POD_RANGE6, "-m", "comment", "--comment", "wincon: pod egress"]
    run(["ip6tables", "-w", "-t", "nat", "-A", "POSTROUTING", *masquerade, "-j", "MASQUERADE"], netns=ns)


def start_forwarder(plan: Plan, api_port: int, marker: str, spawn: Callable[..., int], log: Path) -> int | None:
    """With ipv6, the host process that lets pods reach the API server at [IPv6 gateway]:port (bound to that
    address only) and forwards to 127.0.0.1:port, started by ``spawn`` (dataplane._spawn: recorded, restartable,
    killed by ``down`` by ``marker`` in its command line). Returns its pid (None for ipv4 and dual)."""
    if plan.ip_family != "ipv6":
        return None
    args = [sys.executable, "-m", "wincon.localcluster.ipfamily", "forward", gateway6(plan), str(api_port), marker]
    return spawn(plan.cluster, HOST_NS, FORWARDER, args, log)


def delete_host(run: Run, metric: int) -> None:
    """Remove the host's IPv6 ``prohibit`` routes of the cluster with ``metric`` (harmless where there are none)."""
    for cidr in PROHIBITED6:
        run(["ip", "-6", "route", "delete", "prohibit", cidr, "metric", str(metric)], check=False)


def host_routes6(run: Run, metric: int) -> list[str]:
    """The host's IPv6 ``prohibit`` routes carrying the cluster's ``metric`` (for the leftover check)."""
    out = run(["ip", "-6", "route", "show", "type", "prohibit"], check=False)
    return [line for line in out.splitlines() if f"metric {metric}" in line]


def host_ip6tables_rules(run: Run, tag: str) -> list[str]:
    """The host's ip6tables rules carrying the cluster's comment ``tag``, in any table (for the leftover check)."""
    found = []
    for table in ("filter", "nat"):
        out = run(["ip6tables", "-w", "-t", table, "-S"], check=False)
        found += [f"{table} {line}" for line in out.splitlines() if line.startswith("-A ") and tag in shlex.split(line)]
    return found


# ------------------------------------------------------------------------------------------ the forwarder


async def _forward_one(port: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
    try:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        client_w.close()
        return
    await egress.relay(client_r, client_w, server_r, server_w)


async def forward(address: str, port: int) -> None:
    """Accept on [address]:port and forward each connection to 127.0.0.1:port, until cancelled."""
    server = await asyncio.start_server(lambda r, w: _forward_one(port, r, w), host=address, port=port)
    async with server:
        await server.serve_forever()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 4 or args[0] != "forward":
        print("usage: python3 -m wincon.localcluster.ipfamily forward ADDRESS PORT MARKER", file=sys.stderr)
        return 2
    asyncio.run(forward(args[1], int(args[2])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
