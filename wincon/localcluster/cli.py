"""`wincon cluster build|up|down|status|kubeconfig`: the local simulated cluster from the command line."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from wincon.commandline.errors import ExitCode
from wincon.documents import releases as kube_releases
from wincon.localcluster import build, cluster, ipfamily, latency, paths
from wincon.localcluster.topology import (
    CNI_CHOICES,
    DATAPLANE_CHOICES,
    DEFAULT_WINDOWS_VERSIONS,
    WINDOWS_RELEASES,
    Topology,
)

DESCRIPTION = """\
A local Kubernetes cluster for wincon's own tests and for trying the suite without a real cluster:
kube-apiserver, kube-controller-manager, kube-scheduler and etcd built from the Go module proxy
(`build`, once; cached under ${WINCON_CACHE:-~/.cache/wincon}), run by kwokctl, with kwok-simulated
Windows nodes and (by default) real Linux worker nodes: containerd, kubelet and kube-proxy in network
namespaces of their own, CoreDNS, locally built images and a simulated external host. Simulated nodes carry
the annotation kwok.x-k8s.io/node=fake: nothing really runs in their pods, so data-plane checks skip there.
No packet leaves this machine.
"""


def _add_name(parser: argparse.ArgumentParser) -> None:
    from wincon.commandline.optionnames import add_option

    add_option(  # `wincon run --cluster-name` names the same cluster; `--name` is the old spelling
        parser,
        "--cluster-name",
        deprecated=["--name"],
        dest="name",
        metavar="NAME",
        default=None,
        help=f"cluster name (default: $WINCON_CLUSTER_NAME, else {paths.DEFAULT_CLUSTER_NAME})",
    )


def add_kubernetes_version(parser: argparse.ArgumentParser) -> None:
    """The --kubernetes-version option of the commands that build or start the local cluster."""
    supported = ", ".join(f"{m} ({paths.load_versions(m)['kubernetes']['version']})" for m in paths.releases())
    parser.add_argument(
        "--kubernetes-version",
        default=None,
        metavar="MINOR",
        help=f"the Kubernetes release of the local cluster: {supported}; a minor picks the patch versions.toml "
        f"names (default: ${kube_releases.VERSION_ENV}, else the release a running cluster has, else "
        f"{paths.default_release()}). Each release is built and cached apart",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster",
        help="build, start and stop the local cluster with simulated Windows nodes",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=lambda args: _usage(parser))
    actions = parser.add_subparsers(dest="cluster_action", metavar="ACTION")

    p = actions.add_parser("build", help="build the binaries (once; nothing is rebuilt when cached)")
    add_kubernetes_version(p)
    p.set_defaults(func=_build)

    p = actions.add_parser("up", help="start the cluster (or reuse it), wait until every node is Ready")
    _add_name(p)
    p.add_argument("--windows-nodes", type=int, default=None, metavar="N",
                   help="number of Windows nodes (default: 2, or one per --windows-versions entry)")  # fmt: skip
    p.add_argument("--linux-nodes", type=int, default=None, metavar="N",
                   help="number of simulated Linux nodes (default: 0 beside real nodes, 1 with --dataplane none)")  # fmt: skip
    p.add_argument("--dataplane", default="linux", choices=DATAPLANE_CHOICES,
                   help="linux (default): real Linux worker nodes (containerd, kubelet, kube-proxy, CoreDNS) and a "
                        "simulated external host beside the simulated Windows nodes; none: every node simulated")  # fmt: skip
    p.add_argument("--real-nodes", type=int, default=2, metavar="N",
                   help="number of real Linux nodes with --dataplane linux (default: 2)")  # fmt: skip
    p.add_argument("--windows-versions", default=None, metavar="LIST",
                   help=f"comma-separated Windows Server releases, assigned round-robin to the Windows nodes: "
                        f"{','.join(WINDOWS_RELEASES)} (default: {','.join(DEFAULT_WINDOWS_VERSIONS)})")  # fmt: skip
    p.add_argument("--windows-taint", default=None, metavar="KEY=VALUE:EFFECT",
                   help="taint every Windows node (default: none), e.g. os=windows:NoSchedule")  # fmt: skip
    p.add_argument("--cni", default="flannel-vxlan", choices=CNI_CHOICES,
                   help="CNI whose objects (DaemonSets, ConfigMaps) are created (default: flannel-vxlan)")  # fmt: skip
    p.add_argument("--windows-pod-latency", default=None, metavar="MODEL",
                   help="make the simulated Windows nodes take as long as real ones to run and to delete a pod: "
                        "quantiles such as p50=30s,p90=54s (piecewise uniform; min=/max= bound it) or a profile: "
                        f"{', '.join(f'{k} ({v})' for k, v in latency.PROFILES.items())}; default: no delay")  # fmt: skip
    p.add_argument("--ip-family", default="ipv4", choices=ipfamily.FAMILIES,
                   help="ipv4 (default); dual: IPv4/IPv6 dual-stack (IPv4 primary); ipv6: IPv6 single-stack. Pods, "
                        "Services, nodes, kube-proxy and the CNI get addresses of each family (unique local IPv6 "
                        "ranges that never leave the machine)")  # fmt: skip
    add_kubernetes_version(p)
    p.add_argument("--port", type=int, default=None, help="kube-apiserver port (default: a free port)")
    p.add_argument("--timeout", type=float, default=cluster.UP_TIMEOUT, metavar="SECONDS",
                   help=f"give up after this long, not counting the wait for another cluster's start "
                        f"(default: {cluster.UP_TIMEOUT:.0f})")  # fmt: skip
    p.add_argument("--extra-args", action="append", default=[], metavar="COMPONENT=FLAG=VALUE",
                   help="extra flag for a component, passed to kwokctl (repeatable)")  # fmt: skip
    p.set_defaults(func=_up)

    p = actions.add_parser("down", help="stop every process of the cluster and remove its state")
    _add_name(p)
    p.set_defaults(func=_down)

    p = actions.add_parser("status", help="say what runs: components, pids, logs, nodes")
    _add_name(p)
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=_status)

    p = actions.add_parser("kubeconfig", help="print the kubeconfig path of the running cluster")
    _add_name(p)
    p.set_defaults(func=_kubeconfig)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return ExitCode.USAGE


def _build(args: argparse.Namespace) -> int:
    # The one place `wincon cluster build` reads $WINCON_KUBERNETES_VERSION; the release is passed down from here.
    release = kube_releases.requested(args.kubernetes_version, os.environ) or kube_releases.default_release()
    from wincon.localcluster import (
        addons,  # optional components, cached under their own key (addons.toml)
        consumer,  # upstream's resource-consumer image, cached under its own key
        prefetch,  # later modules download while the first compile
    )

    with prefetch.warming(release, sys.stderr):
        build.build(release=release)
        addons.build_all()
        consumer.build_binaries(versions=kube_releases.get(release).versions())
    return ExitCode.OK


def topology_from_args(args: argparse.Namespace) -> Topology:
    """The Topology the `up` options describe (validated: a UsageError names a bad option)."""
    defaults = Topology()
    versions = defaults.windows_versions
    if args.windows_versions is not None:
        versions = [v.strip() for v in args.windows_versions.split(",") if v.strip()]
    windows_nodes = args.windows_nodes
    if windows_nodes is None:
        windows_nodes = len(versions) if args.windows_versions is not None else defaults.windows_nodes
    return Topology(
        windows_nodes=windows_nodes,
        linux_nodes=args.linux_nodes,
        windows_versions=versions,
        windows_taint=args.windows_taint,
        cni=args.cni,
        dataplane=args.dataplane,
        real_nodes=args.real_nodes,
        windows_pod_latency=getattr(args, "windows_pod_latency", None),
        ip_family=getattr(args, "ip_family", "ipv4"),
    )


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _up(args: argparse.Namespace) -> int:
    topology = topology_from_args(args)
    # SIGTERM (CI cancelling a job) must clean up like Ctrl-C: no orphaned control plane.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    start = time.monotonic()
    path = cluster.up(
        args.name,
        topology,
        port=args.port,
        extra_args=args.extra_args,
        timeout=args.timeout,
        # the one place `wincon cluster up` reads $WINCON_KUBERNETES_VERSION (None: a running cluster's, else the default)
        kubernetes_version=kube_releases.requested(args.kubernetes_version, os.environ),
    )
    elapsed = time.monotonic() - start
    name = args.name or paths.default_cluster_name()
    print(f"cluster {name} ready in {elapsed:.1f} s; use: export KUBECONFIG={path}", file=sys.stderr)
    print(path)
    return ExitCode.OK


def _down(args: argparse.Namespace) -> int:
    start = time.monotonic()
    cluster.down(args.name)
    print(f"down in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return ExitCode.OK


def _status(args: argparse.Namespace) -> int:
    info = cluster.status(args.name)
    if args.json:
        print(json.dumps(info, indent=2))
        return ExitCode.OK
    print(f"cluster {info['name']}: {info['state']}")
    if info["state"] == "absent":
        return ExitCode.OK
    if info.get("kubernetes_version"):
        print(f"  Kubernetes: {info['kubernetes_version']}")
    if info.get("server"):
        print(f"  API server: {info['server']}")
    if info.get("kubeconfig"):
        print(f"  kubeconfig: {info['kubeconfig']}")
    if info.get("topology"):
        print(f"  topology:   {info['topology']}")
        if (info["topology"] or {}).get("windows_pod_latency"):
            model = latency.LatencyModel.parse(info["topology"]["windows_pod_latency"])
            print(f"  Windows pod latency (run and delete): {model.describe()}")
    for comp in info["components"]:
        state = f"running (pid {comp['pid']})" if comp["running"] else "not running"
        print(f"  {comp['name']:<24} {state:<22} log: {comp['log']}")
    for proc in info.get("dataplane", []):
        state = f"running (pid {proc['pid']})" if proc["running"] else "not running"
        print(f"  {proc['name']:<24} {state:<22} log: {proc['log']}")
    if info.get("external_host"):
        print(f"  external host: {info['external_host']['ip']} ({info['external_host']['name']})")
    for key, ref in (info.get("images") or {}).items():
        print(f"  image {key:<18} {ref}")
    for node in info.get("nodes", []):
        print(
            f"  node {node['name']:<19} {node['os']:<8} {'Ready' if node['ready'] else 'NotReady':<9} {node['os_image']}"
        )
    if info.get("nodes_error"):
        print(f"  nodes: {info['nodes_error']}")
    if info["state"] == "stopped":
        print(f"  nothing runs; state left in {info['state_dir']} (removed by the next up or by down)")
    return ExitCode.OK


def _kubeconfig(args: argparse.Namespace) -> int:
    print(cluster.kubeconfig_path(args.name))
    return ExitCode.OK
