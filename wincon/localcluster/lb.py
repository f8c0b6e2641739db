"""MetalLB on the local cluster, in L2 mode: the LoadBalancer provider that hands out addresses on the node network.

Built from its Go module (``addons.toml``: ``metallb-controller`` and ``metallb-speaker``, both from
go.universe.tf/metallb) and run as processes of the data plane, as a real cluster's MetalLB pods would run:

- the controller (address allocation) in the first real node's namespace; its admission webhook is off
  (``--webhook-mode=disabled``): the configuration below is written by ``up`` itself, never by a user;
- one speaker per real node, in that node's namespace, answering ARP for the addresses it wins on the node's
  ``eth0`` only (the L2Advertisement names that interface), which is the node's veth on the cluster's bridge: the
  host's real interfaces are in another namespace, out of its reach. Memberlist is off (no ``--ml-bindaddr``),
  so each speaker takes every eligible node as alive: the L2Advertisement's node selector leaves out the
  simulated nodes (``type=kwok``), which run no speaker. A speaker reads its own Pod at start (it owns its
  ServiceL2Status objects by it): each has one, ``metallb-system/speaker-<node>``, a host-network pause pod bound
  to its node, standing for the process that runs beside the node's kubelet (there is no MetalLB image here).

The pool is ``.200-.220`` of the cluster's node /24 (no node, gateway or external host address: those are
``.1``, ``.2`` upwards and ``.254``). MetalLB's CRDs are applied by ``start`` from the module's own files in the
Go module cache (``config/crd/bases``; the bgppeers conversion patch is left out, as there is no webhook), with
the pool and the advertisement. ``objects`` adds a Service of type LoadBalancer, ``metallb-system/lb-probe``:
the address the controller gives it is what ``up`` waits for, and what the suite's profile finds, as on any
cluster, by a Service's ingress address (``wincon.clusterinfo.profile``).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
from pathlib import Path
from typing import Any, TextIO

import yaml

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import addons, build, dataplane, images, netns, paths

NAME = "metallb"  # the controller's process name and log (dataplane root); the speakers are <node>-metallb-speaker
CONTROLLER = "metallb-controller"  # addons.toml entries
SPEAKER = "metallb-speaker"
MODULE = "go.universe.tf/metallb"
NAMESPACE = "metallb-system"
POOL = "node-network"
ADVERTISEMENT = "node-network-l2"
PROBE = "lb-probe"
POOL_FIRST, POOL_LAST = 200, 220  # host offsets in the node /24
INTERFACE = "eth0"  # the node's veth on the cluster's bridge (netns.add_netns)
CONTROLLER_PORT = 7473  # its metrics port; the speaker in the same namespace keeps MetalLB's default 7472
SPEAKER_PORT = 7472
CRD_DIR = "config/crd/bases"
GROUP, VERSION = "metallb.io", "v1beta1"
CRDS_NEEDED = ("ipaddresspools.metallb.io", "l2advertisements.metallb.io")
WAITS_FOR = f"MetalLB (an ingress address for Service {NAMESPACE}/{PROBE})"


def binaries() -> tuple[Path | None, Path | None]:
    """The built controller and speaker (None where not built: ``wincon cluster build`` builds them)."""
    return addons.binary(CONTROLLER), addons.binary(SPEAKER)


def pool_range(plan: dataplane.Plan) -> str:
    """``first-last`` of the pool in the cluster's node /24; a ValueError if a node's address falls inside."""
    net = ipaddress.IPv4Network(plan.subnet)
    first, last = net.network_address + POOL_FIRST, net.network_address + POOL_LAST
    if last not in net or last == net.broadcast_address:
        raise ValueError(f"the node network {plan.subnet} has no room for the pool .{POOL_FIRST}-.{POOL_LAST}")
    taken = [plan.gateway, plan.external_ip, *(n.address for n in plan.nodes)]
    inside = [a for a in taken if first <= ipaddress.IPv4Address(a) <= last]
    if inside:
        raise ValueError(f"the pool {first}-{last} holds {', '.join(inside)}, an address of the cluster's network")
    return f"{first}-{last}"


def configuration(plan: dataplane.Plan) -> list[dict[str, Any]]:
    """The IPAddressPool and the L2Advertisement (eth0 of the real nodes only)."""
    labels = {"app.kubernetes.io/managed-by": "wincon.local"}
    return [
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "IPAddressPool",
            "metadata": {"name": POOL, "namespace": NAMESPACE, "labels": labels},
            "spec": {"addresses": [pool_range(plan)]},
        },
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "L2Advertisement",
            "metadata": {"name": ADVERTISEMENT, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "ipAddressPools": [POOL],
                "interfaces": [INTERFACE],
                "nodeSelectors": [{"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["kwok"]}]}],
            },
        },
    ]


def objects(plan: dataplane.Plan) -> list[dict[str, Any]]:
    """The probe Service of type LoadBalancer (no selector: the controller allocates it an address all the same)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": PROBE, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": NAME}},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
        }
    ]


def speaker_pod_name(node: dataplane.RealNode) -> str:
    return f"speaker-{node.name}"


def speaker_pods(plan: dataplane.Plan) -> list[dict[str, Any]]:
    """The speakers' Pod objects, one per real node (host network, the pause image, bound to the node): the speaker
    reads its own Pod at start and owns its ServiceL2Status objects by it, as a real cluster's speaker pod does.
    The process itself runs beside the node's kubelet, not in this pod (there is no MetalLB image here)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": speaker_pod_name(node),
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "speaker"},
            },
            "spec": {
                "nodeName": node.name,
                "hostNetwork": True,
                "tolerations": [{"operator": "Exists"}],
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "speaker", "image": images.reference("pause")}],
            },
        }
        for node in plan.nodes
    ]


def controller_args(plan: dataplane.Plan, exe: Path) -> list[str]:
    kubeconfig = dataplane.node_dir(plan.cluster, plan.nodes[0].name) / "kubeconfig"
    return [
        str(exe),
        f"--namespace={NAMESPACE}",
        f"--kubeconfig={kubeconfig}",
        f"--port={CONTROLLER_PORT}",
        "--webhook-mode=disabled",
        "--disable-cert-rotation",
        "--log-level=info",
    ]


def speaker_args(plan: dataplane.Plan, node: dataplane.RealNode, exe: Path) -> list[str]:
    kubeconfig = dataplane.node_dir(plan.cluster, node.name) / "kubeconfig"
    return [
        str(exe),
        f"--namespace={NAMESPACE}",
        f"--kubeconfig={kubeconfig}",
        f"--node-name={node.name}",
        f"--pod-name={speaker_pod_name(node)}",
        f"--host={node.address}",
        f"--port={SPEAKER_PORT}",
        "--log-level=info",
    ]


def module_dir() -> Path:
    """MetalLB's module in the Go module cache (``go mod download`` puts it there if it is not)."""
    entry = addons.load()[CONTROLLER]
    result = subprocess.run(
        [build.go_binary(), "mod", "download", "-json", f"{MODULE}@{entry['version']}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    info = json.loads(result.stdout or "{}")
    if result.returncode != 0 or not info.get("Dir"):
        raise OSError(f"go mod download {MODULE}@{entry['version']}: {info.get('Error') or result.stderr.strip()}")
    return Path(info["Dir"])


def crds(directory: Path) -> list[dict[str, Any]]:
    """MetalLB's CustomResourceDefinitions, from its module's ``config/crd/bases``."""
    found = [yaml.safe_load(p.read_text()) for p in sorted((directory / CRD_DIR).glob("*.yaml"))]
    return [doc for doc in found if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"]


def _established(crd: Any) -> bool:
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def configure(api: Any, plan: dataplane.Plan, directory: Path, timeout: float = 30.0) -> None:
    """Apply the namespace, MetalLB's CRDs, the speakers' pods, the pool and the advertisement (CRDs established
    first); existing objects stay."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    def create(call: Any, *args: Any) -> None:
        try:
            call(*args)
        except ApiException as exc:
            if exc.status != 409:
                raise

    create(client.CoreV1Api(api).create_namespace, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})  # fmt: skip
    ext = client.ApiextensionsV1Api(api)
    for crd in crds(directory):
        create(ext.create_custom_resource_definition, crd)
    deadline = time.monotonic() + timeout
    while not all(_established(ext.read_custom_resource_definition(n)) for n in CRDS_NEEDED):
        if time.monotonic() > deadline:
            raise TimeoutError(f"MetalLB's CRDs {', '.join(CRDS_NEEDED)} not Established within {timeout:.0f} s")
        time.sleep(0.2)
    for pod in speaker_pods(plan):
        create(client.CoreV1Api(api).create_namespaced_pod, NAMESPACE, pod)
    custom = client.CustomObjectsApi(api)
    for obj in configuration(plan):
        plural = obj["kind"].lower() + "s"
        create(custom.create_namespaced_custom_object, GROUP, VERSION, NAMESPACE, plural, obj)


def _admin_kubeconfig(cluster: str) -> Path:
    return paths.state_dir(cluster) / "kubeconfig"  # cluster.KUBECONFIG_FILE, written before the data plane


def start(plan: dataplane.Plan, out: TextIO) -> bool:
    """Configure MetalLB and start its controller and one speaker per real node; False (and why) where it cannot."""
    controller, speaker = binaries()
    if controller is None or speaker is None or not plan.nodes:
        why = "no real node" if controller and speaker else (
            f"not built ({addons.bin_dir(CONTROLLER)}, {addons.bin_dir(SPEAKER)}; `wincon cluster build` builds it)"
        )  # fmt: skip
        print(f"MetalLB: {why}; no LoadBalancer provider", file=out, flush=True)
        return False
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from wincon.cluster.client import load_kubeconfig

    try:
        directory = module_dir()
        configuration_ = client.Configuration()
        load_kubeconfig(str(_admin_kubeconfig(plan.cluster)), None, configuration_)  # nothing left in /tmp
        with client.ApiClient(configuration_) as api:
            configure(api, plan, directory)
    except (OSError, ValueError, TimeoutError, ApiException, subprocess.SubprocessError, LocalClusterError) as exc:
        print(f"MetalLB: could not be configured ({exc}); no LoadBalancer provider", file=out, flush=True)
        return False
    links = {
        name: dataplane.link_binary(plan.cluster, name, exe)
        for name, exe in ((CONTROLLER, controller), (SPEAKER, speaker))
    }
    first = plan.nodes[0]
    print(f"starting MetalLB (L2, pool {pool_range(plan)}): controller in {first.name}'s namespace", file=out, flush=True)  # fmt: skip
    root = dataplane.root(plan.cluster)
    ns = netns.netns_name(plan.cluster, first.name)
    # Up once each serves /metrics (where its manifests' probes ask).
    ready = {"url": f"http://{first.address}:{CONTROLLER_PORT}/metrics"}
    dataplane._spawn(plan.cluster, ns, NAME, controller_args(plan, links[CONTROLLER]), root / f"{NAME}.log", ready)
    for node in plan.nodes:
        ns = netns.netns_name(plan.cluster, node.name)
        log = dataplane.node_dir(plan.cluster, node.name) / f"{SPEAKER}.log"
        ready = {"url": f"http://{node.address}:{SPEAKER_PORT}/metrics"}
        dataplane._spawn(
            plan.cluster, ns, f"{node.name}-{SPEAKER}", speaker_args(plan, node, links[SPEAKER]), log, ready
        )
    return True


def probe_address(api: Any) -> str | None:
    """The probe Service's ingress address, or None while it has none."""
    from kubernetes import client

    svc = client.CoreV1Api(api).read_namespaced_service(PROBE, NAMESPACE, _request_timeout=5)
    ingress = (svc.status.load_balancer and svc.status.load_balancer.ingress) or []
    return (ingress[0].ip or ingress[0].hostname) if ingress else None


def available(api: Any) -> bool | None:
    """True once the controller gave the probe Service an address (what a real cluster shows of a provider)."""
    return True if probe_address(api) else None


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """``cluster status --json``'s ``addons["metallb"]``."""
    controller, speaker = binaries()
    started = next((p for p in processes if p["name"] == NAME), None)
    return {
        "binaries": {CONTROLLER: str(controller) if controller else None, SPEAKER: str(speaker) if speaker else None},
        "pool": pool_range(plan) if started else None,  # not started (not built, an IPv6 cluster): no pool
        "probe_service": f"{NAMESPACE}/{PROBE}" if started else None,
        "controller": started,
        "speakers": [p for p in processes if p["name"].endswith(f"-{SPEAKER}")],
    }
