"""metrics-server on the local cluster: the resource metrics API (metrics.k8s.io) the HPA scales on.

Built from its Go module (``addons.toml``) and run as a process of the data plane in the first real node's
namespace, as a node's pod would be: it reads the API server through the nodes' kubeconfig, scrapes the real
kubelets' ``/metrics/resource`` (simulated nodes have no kubelet to scrape: ``--node-selector=type!=kwok``) and
serves on the node's address. The API server reaches it as a real cluster's does: the aggregated APIService
``v1beta1.metrics.k8s.io`` names the Service ``kube-system/metrics-server``, whose EndpointSlice is that address,
dialled through the API server's egress proxy (egress.py) where kube-proxy translates the Service address.
The suite detects it the way it would on any cluster: by that APIService being Available.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from wincon.localcluster import addons, dataplane, netns

NAME = "metrics-server"
NAMESPACE = "kube-system"
PORT = 4443
APISERVICE = "v1beta1.metrics.k8s.io"
RESOLUTION = "15s"
WAITS_FOR = f"metrics-server (APIService {APISERVICE})"  # what `up` says it waits for


def binary() -> Path | None:
    """The built metrics-server, or None (``wincon cluster build`` builds it)."""
    return addons.binary(NAME)


def objects(plan: dataplane.Plan) -> list[dict[str, Any]]:
    """The Service, its EndpointSlice (the first real node's address) and the aggregated APIService."""
    node = plan.nodes[0]
    labels = {"k8s-app": NAME}
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": PORT}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{NAME}-{node.name}",
                "namespace": NAMESPACE,
                "labels": {
                    **labels,
                    "kubernetes.io/service-name": NAME,
                    "endpointslice.kubernetes.io/managed-by": "wincon.local",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [node.address], "conditions": {"ready": True}, "nodeName": node.name}],
            "ports": [{"name": "https", "port": PORT, "protocol": "TCP"}],
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": APISERVICE, "labels": labels},
            "spec": {
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "service": {"name": NAME, "namespace": NAMESPACE, "port": 443},
                # As metrics-server's own manifest: it serves a self-signed certificate.
                "insecureSkipTLSVerify": True,
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        },
    ]


def args(plan: dataplane.Plan, exe: Path) -> list[str]:
    node = plan.nodes[0]
    kubeconfig = dataplane.node_dir(plan.cluster, node.name) / "kubeconfig"
    return [
        str(exe),
        f"--secure-port={PORT}",
        f"--bind-address={node.address}",
        f"--cert-dir={dataplane.root(plan.cluster) / NAME}",
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--kubelet-insecure-tls",  # the kubelets serve self-signed certificates
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        f"--metric-resolution={RESOLUTION}",
        "--node-selector=type!=kwok",
        "--v=1",
    ]


def start(plan: dataplane.Plan, out: TextIO) -> bool:
    """Start metrics-server in the first real node's namespace; False (and say so) when it is not built."""
    exe = binary()
    if exe is None or not plan.nodes:
        why = "no real node" if exe else f"not built ({addons.bin_dir(NAME)}; `wincon cluster build` builds it)"
        print(f"metrics-server: {why}; the resource metrics API is not served", file=out, flush=True)
        return False
    link = dataplane.link_binary(plan.cluster, NAME, exe)
    node = plan.nodes[0]
    print(f"starting metrics-server in {node.name}'s namespace ({node.address}:{PORT})", file=out, flush=True)
    ns = netns.netns_name(plan.cluster, node.name)
    # Up once its /readyz answers (anonymous, as its manifest's readiness probe asks): its first scrape is stored.
    ready = {"url": f"https://{node.address}:{PORT}/readyz"}
    dataplane._spawn(plan.cluster, ns, NAME, args(plan, link), dataplane.root(plan.cluster) / f"{NAME}.log", ready)
    return True


def available(api: Any) -> bool | None:
    """True once the APIService is Available (the aggregator reached metrics-server)."""
    from kubernetes import client

    service = client.ApiregistrationV1Api(api).read_api_service(APISERVICE, _request_timeout=5)
    return True if any(c.type == "Available" and c.status == "True" for c in service.status.conditions or []) else None


def wait_hint(plan: dataplane.Plan) -> str:
    return f"read {dataplane.root(plan.cluster) / f'{NAME}.log'} and the kube-apiserver log"


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """``cluster status --json``'s ``addons["metrics-server"]``."""
    exe = binary()
    return {
        "binary": str(exe) if exe else None,  # None: not built (`wincon cluster build`), not started
        "apiservice": APISERVICE if exe else None,
        "process": next((p for p in processes if p["name"] == NAME), None),
    }
