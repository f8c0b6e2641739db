"""kube-router's network policy controller: the local cluster's NetworkPolicy engine, on the real Linux nodes.

Built from its Go module (``addons.toml``: ``kube-router``, github.com/cloudnativelabs/kube-router/v2) and run
with only its firewall function on (``--run-firewall=true --run-router=false --run-service-proxy=false``), as
kube-router's own "firewall only" DaemonSet runs it beside another pod network and kube-proxy: the pod network
stays Debian's bridge plugin (it needs no CNI of kube-router's: ``--enable-cni=false``), Services stay
kube-proxy's. One process per real node, inside that node's network namespace (``nsenter --net``, as the
nodes' other processes), with the nodes' kubeconfig and ``--hostname-override=<node>``: it reads pods,
namespaces and NetworkPolicies from the API server and programs the node's own iptables filter table (chains
``KUBE-ROUTER-INPUT``/``-FORWARD``/``-OUTPUT``, ``KUBE-POD-FW-*``, ``KUBE-NWPLCY-*``) and ipsets
(``KUBE-SRC-*``, ``KUBE-DST-*``). Both are per network namespace in the kernel: nothing of it reaches the host's
ruleset, and deleting the node's namespace (``down``) removes them with it; the data plane's leftover check
(``netns.leftovers``) looks for them in the host's namespace and in any namespace of the cluster still there.

A real cluster shows kube-router by its DaemonSet ``kube-system/kube-router`` and its pods: ``objects`` creates
that DaemonSet, restricted to the real nodes, its pods host-network pause containers standing for the process
that runs beside each node's kubelet (there is no kube-router image here, as for MetalLB's speakers). The suite's
profile finds the engine by that DaemonSet, as on any cluster (``wincon.clusterinfo.profile``), never by a wincon-only mark.
"""

from __future__ import annotations

import shlex
import time
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import addons, dataplane, images, netns, paths

NAME = "kube-router"  # its addons.toml entry and DaemonSet; the processes are <node>-kube-router
NAMESPACE = "kube-system"
HEALTH_PORT = 20244  # kube-router's default --health-port; /healthz, in each node's own namespace
READY_LOG = "Starting network policy controller"  # printed once its caches synced, before its first rule sync
TOP_CHAINS = ("KUBE-ROUTER-INPUT", "KUBE-ROUTER-FORWARD", "KUBE-ROUTER-OUTPUT")
REGISTER_WITHIN = 60.0  # s: it reads its own Node at start and exits if the kubelet has not registered it yet
WAITS_FOR = f"{NAME} (its network policy controller on every real node)"
LABELS = {"k8s-app": NAME}  # as kube-router's own DaemonSet manifests label it


def binary() -> Path | None:
    """The built kube-router, or None (``wincon cluster build`` builds it)."""
    return addons.binary(NAME)


def process_name(node: dataplane.RealNode) -> str:
    return f"{node.name}-{NAME}"


def health_url(node: dataplane.RealNode) -> str:
    return f"http://{node.address}:{HEALTH_PORT}/healthz"


def args(plan: dataplane.Plan, node: dataplane.RealNode, exe: Path) -> list[str]:
    """One node's kube-router: the policy controller alone, against the cluster's API server."""
    kubeconfig = dataplane.node_dir(plan.cluster, node.name) / "kubeconfig"
    return [
        str(exe),
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node.name}",
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--run-loadbalancer=false",
        "--enable-cni=false",  # the pod network is the bridge plugin's
        "--enable-ipv4=true",
        "--enable-ipv6=false",
        f"--service-cluster-ip-range={dataplane.SERVICE_RANGE}",
        f"--health-port={HEALTH_PORT}",
        "--metrics-port=0",
    ]


def daemonset(plan: dataplane.Plan) -> dict[str, Any]:
    """``kube-system/kube-router`` as a real cluster has it, on the real Linux nodes only: its pods are
    host-network pause containers standing for the process beside each node's kubelet (``cluster status``)."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["kwok"]}]}]
            }
        }
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {**LABELS, "tier": "node"}},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": {**LABELS, "tier": "node"}},
                "spec": {
                    "hostNetwork": True,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "affinity": affinity,
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": NAME, "image": images.reference("pause")}],
                },
            },
        },
    }


def objects(plan: dataplane.Plan) -> list[dict[str, Any]]:
    return [daemonset(plan)]


def _admin_api(cluster: str) -> Any:
    from kubernetes import client

    from wincon.cluster.client import load_kubeconfig

    configuration = client.Configuration()
    load_kubeconfig(str(paths.state_dir(cluster) / "kubeconfig"), None, configuration)
    return client.ApiClient(configuration)


def wait_registered(plan: dataplane.Plan, within: float = REGISTER_WITHIN) -> None:
    """Until every real node's Node object exists with its InternalIP: kube-router reads its own Node at start
    (and exits without it); its pods are those whose hostIP is that address."""
    from kubernetes import client

    wanted = {n.name: n.address for n in plan.nodes}
    deadline = time.monotonic() + within
    with _admin_api(plan.cluster) as api:
        core = client.CoreV1Api(api)
        while True:
            seen = {
                n.metadata.name
                for n in core.list_node(_request_timeout=5).items
                if any(
                    a.type == "InternalIP" and a.address == wanted.get(n.metadata.name)
                    for a in n.status.addresses or []
                )
            }
            if set(wanted) <= seen:
                return
            if time.monotonic() > deadline:
                missing = ", ".join(sorted(set(wanted) - seen))
                raise TimeoutError(f"nodes {missing} not registered with their InternalIP within {within:.0f} s")
            time.sleep(0.25)


def start(plan: dataplane.Plan, out: TextIO) -> bool:
    """Start kube-router's policy controller on every real node; False (and why) where it cannot run."""
    exe = binary()
    if exe is None or not plan.nodes:
        why = "no real node" if exe else f"not built ({addons.bin_dir(NAME)}; `wincon cluster build` builds it)"
        print(f"{NAME}: {why}; no NetworkPolicy engine", file=out, flush=True)
        return False
    from kubernetes.client.rest import ApiException

    try:
        wait_registered(plan)
    except (OSError, TimeoutError, ApiException, LocalClusterError) as exc:
        print(f"{NAME}: not started ({exc}); no NetworkPolicy engine", file=out, flush=True)
        return False
    link = dataplane.link_binary(plan.cluster, NAME, exe)
    names = ", ".join(n.name for n in plan.nodes)
    print(f"starting {NAME} (network policy controller only) in the namespaces of {names}", file=out, flush=True)
    for node in plan.nodes:
        ns = netns.netns_name(plan.cluster, node.name)
        log = dataplane.node_dir(plan.cluster, node.name) / f"{NAME}.log"
        ready = {"url": health_url(node), "log": READY_LOG}
        dataplane._spawn(plan.cluster, ns, process_name(node), args(plan, node, link), log, ready)
    return True


def _real_node_addresses(api: Any) -> dict[str, str]:
    from kubernetes import client

    return {
        n.metadata.name: next((a.address for a in n.status.addresses or [] if a.type == "InternalIP"), "")
        for n in client.CoreV1Api(api).list_node(_request_timeout=5).items
        if (n.metadata.labels or {}).get("type") != "kwok"
    }


def available(api: Any) -> bool | None:
    """True once the DaemonSet's pods are ready on every real node and each node's kube-router answers its
    health endpoint (the address a real cluster's liveness probe asks)."""
    from kubernetes import client

    ds = client.AppsV1Api(api).read_namespaced_daemon_set(NAME, NAMESPACE, _request_timeout=5)
    nodes = _real_node_addresses(api)
    status = ds.status
    if not nodes or (status.desired_number_scheduled or 0) != len(nodes) or (status.number_ready or 0) != len(nodes):
        return None
    for address in nodes.values():
        with urllib.request.urlopen(f"http://{address}:{HEALTH_PORT}/healthz", timeout=2) as answer:
            if answer.status != 200:
                return None
    return True


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """``cluster status --json``'s ``addons["kube-router"]``."""
    exe = binary()
    ours = [p for p in processes if p["name"] in {process_name(n) for n in plan.nodes}]
    return {
        "binary": str(exe) if exe else None,  # None: not built (`wincon cluster build`), not started
        "daemonset": f"{NAMESPACE}/{NAME}" if ours else None,
        "functions": ["firewall"] if ours else [],
        "processes": ours,
    }


def chains(ns: str | None = None) -> list[str]:
    """kube-router's chains in the filter table of namespace ``ns`` (None: the host's)."""
    return netns.policy_chains(ns)


def ipsets(ns: str | None = None) -> list[str]:
    """kube-router's ipsets in namespace ``ns`` (None: the host's)."""
    return netns.policy_ipsets(ns)


def flush(ns: str) -> None:
    """Remove kube-router's rules, chains and ipsets from namespace ``ns`` (a fault, or cleanup): the jumps from
    the built-in chains first, then its chains, then its ipsets (no rule refers to them any more)."""
    out = netns._output(["iptables", "-w", "-t", "filter", "-S"], ns)
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("-A ") and parts[1] in ("INPUT", "FORWARD", "OUTPUT") and "-j" in parts:
            if parts[parts.index("-j") + 1].startswith(netns.POLICY_CHAIN_PREFIXES):
                netns._output(["iptables", "-w", "-t", "filter", "-D", *shlex.split(line)[1:]], ns)
    for chain in chains(ns):
        netns._output(["iptables", "-w", "-t", "filter", "-F", chain], ns)
    for chain in chains(ns):
        netns._output(["iptables", "-w", "-t", "filter", "-X", chain], ns)
    for name in ipsets(ns):
        netns._output(["ipset", "destroy", name], ns)


def teardown(cluster: str) -> None:
    """Remove kube-router's rules and ipsets from any namespace of the cluster still present (its processes are
    killed with the data plane's, its DaemonSet goes with the cluster's API); raise naming what is left."""
    for ns in netns.our_netns(cluster):
        flush(ns)
    left = [f"{ns}: {x}" for ns in netns.our_netns(cluster) for x in (*chains(ns), *ipsets(ns))]
    if left:
        raise LocalClusterError(
            f"cluster {cluster}: kube-router's chains or ipsets could not be removed: {', '.join(left)}",
            "check `iptables -S` and `ipset list -n` in those namespaces, then run down again",
        )
