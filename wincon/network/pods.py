"""What the checks talk to, and the pods they run in.

Everything here runs for real on any cluster, simulated or not: pods are created, pinned to the intended
node and operating system, waited for, and checked to have run where pinned. As upstream's networking
tests do (k/k test/e2e/framework/network/utils.go): ``netserver-N`` pods run ``agnhost netexec
--http-port=8083 --udp-port=8081``, and a client pod runs ``netexec --http-port=9080`` to dial the targets.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from wincon.checks.pods import Rejected
from wincon.clusterinfo.nodes import schedulable  # noqa: F401 - a Ready node ordinary pods may land on: the suite's one rule
from wincon.clusterinfo.profile import NodeProfile
from wincon.commandline.errors import InfrastructureError, SuiteError
from wincon.windows import connectivity as conn
from wincon.workloads.deploy import check_placement, container, pod_manifest

NETSERVER_LABEL = "wincon.io/netserver"  # each netserver pod's own name, to select exactly one
APP_LABEL = "app"
WINDOWS_NETSERVERS = "netserver"  # app label of the Windows netserver pods
LINUX_NETSERVERS = "lin-netserver"  # app label of the Linux netserver pods (hybrid checks)
SUBDOMAIN = "netservers"  # headless Service whose name is the netserver pods' subdomain
LINUX_SUBDOMAIN = "lin-netservers"  # the same for the Linux netservers (hybrid checks, Linux controls)
MAX_WINDOWS_NODES = 4  # netservers on at most this many Windows nodes: enough for every flow, bounded cost
HOSTPROCESS_USER = "NT AUTHORITY\\Local service"
IDLE_WINDOWS = ["powershell.exe", "-NoLogo", "-NoProfile", "-Command", "while ($true) { Start-Sleep -Seconds 3600 }"]


@dataclass(frozen=True)
class PodRef:
    """A pod a check runs in or talks to, after it ran where intended."""

    name: str
    ip: str
    ips: tuple[str, ...]
    node: str
    host_ip: str
    os: str
    container: str  # the container checks exec into by default
    tools: str | None = None  # the container with the Windows tools (curl.exe, ping, Resolve-DnsName), if any

    @property
    def tool_container(self) -> str:
        return self.tools or self.container

    @property
    def dns_tool(self) -> str:
        return conn.default_dns_tool(self.os, powershell=self.tools is not None)


def pod_ref(pod: Any, os_name: str, container_name: str, tools: str | None = None) -> PodRef:
    """The PodRef of a running pod; InfrastructureError if it has no IP."""
    status = pod.status
    ips = tuple(p.ip for p in (status.pod_ips or []) if p.ip) or ((status.pod_ip,) if status.pod_ip else ())
    if not status.pod_ip:
        raise InfrastructureError(f"pod {pod.metadata.name} is running but has no IP", "see the pod's events")
    return PodRef(
        name=pod.metadata.name,
        ip=status.pod_ip,
        ips=ips,
        node=pod.spec.node_name,
        host_ip=status.host_ip or "",
        os=os_name,
        container=container_name,
        tools=tools,
    )


def pod_names(pods: Any) -> set[str]:
    """The names of PodRefs (or of anything with a ``name``): what a dial or a Service answered with."""
    return {p.name for p in pods}


def resolver_config(checks: Any, pod: PodRef) -> conn.DnsConfig:
    """The pod's DNS servers and search list as ``/agnhost dns-server-list`` and ``dns-suffix`` print them in
    its agnhost container: the same commands and parser on both OSes (conn.agnhost_dns_commands).

    agnhost panics with "Could not find DNS search list!" where resolv.conf has no such line (its
    dns/dns.go): an empty list, not an error. Any other failure is the suite's (SuiteError, exit 1).
    """
    outputs = []
    for command in conn.agnhost_dns_commands():
        result = checks.run(pod, command, container=pod.container)
        if result.ok:
            outputs.append(result.stdout)
        elif conn.AGNHOST_NO_DNS_LIST in result.stdout + result.stderr:
            outputs.append("")
        else:
            raise SuiteError(
                f"{' '.join(command)} failed in pod {pod.name} (exit {result.exit_code})",
                "the agnhost image of the catalog must have /agnhost with its dns subcommands (agnhost 2.x)",
                image="agnhost",
                tool=" ".join(command),
                output=(result.stderr or result.stdout).strip()[:300],
            )
    try:
        return conn.parse_agnhost_dns(*outputs)
    except ValueError as exc:
        raise SuiteError(str(exc), image="agnhost", tool="agnhost dns-server-list", output=outputs[1][:300]) from exc


# ----------------------------------------------------------------------------- nodes


def check_windows_nodes(profile: Any) -> list[NodeProfile]:
    """The Ready Windows nodes the checks use (at most MAX_WINDOWS_NODES), in name order."""
    nodes = sorted(profile.ready_windows_nodes, key=lambda n: n.name)[:MAX_WINDOWS_NODES]
    if not nodes:
        raise InfrastructureError(
            "no Windows node is Ready", "wait for the Windows nodes to become Ready (`kubectl get nodes`)"
        )
    return nodes


def schedulable_linux_node(profile: Any) -> NodeProfile:
    """A Ready, schedulable Linux worker; skips where the cluster has none."""
    nodes = sorted((n for n in profile.linux_nodes if schedulable(n)), key=lambda n: n.name)
    if not nodes:
        pytest.skip("the check needs a Ready, schedulable Linux worker node; the cluster has none")
    return nodes[0]


def second_windows_node(windows_nodes: list[NodeProfile]) -> NodeProfile:
    if len(windows_nodes) < 2:
        pytest.skip("the check needs two Ready Windows nodes; the cluster has one")
    return windows_nodes[1]


# ----------------------------------------------------------------------------- manifests


HOST_DIAL_PORTS = (20000, 30000)  # below the NodePort range and Linux's ephemeral ports


def host_dial_port(namespace: str, name: str) -> int:
    """The port a node-side Linux pod's netexec listens on in its node's network (it dials from the node):
    derived from the pod's namespace and name, so that the node pods of modules running at the same time on
    one node do not collide, and a check computes it from the pod alone."""
    low, high = HOST_DIAL_PORTS
    return low + zlib.crc32(f"{namespace}/{name}".encode()) % (high - low)


def nettools_image(catalog: Any, build: int | None) -> str | None:
    """The Windows tools image for ``build``, or None where the catalog has no variant for it."""
    if "nettools" not in catalog.images:
        return None
    try:
        return str(catalog.image("nettools", "windows", build))
    except InfrastructureError:
        return None


def windows_netserver_manifest(
    catalog: Any,
    name: str,
    node: NodeProfile,
    http_port: int = conn.NETSERVER_HTTP_PORT,
    udp_port: int | None = conn.NETSERVER_UDP_PORT,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """``agnhost netexec`` pinned to ``node``, labelled as a Windows netserver (or with ``labels``)."""
    image = catalog.image("agnhost", "windows", node.windows_build)
    return pod_manifest(
        name,
        [conn.netexec_container("netexec", image, http_port=http_port, udp_port=udp_port)],
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels=labels or {APP_LABEL: WINDOWS_NETSERVERS, NETSERVER_LABEL: name},
        **spec,
    )


def windows_client_manifest(catalog: Any, name: str, node: NodeProfile, **spec: Any) -> tuple[dict[str, Any], bool]:
    """A client pod: netexec on 9080 for the dial check, plus the nettools container where the catalog has it."""
    agnhost = catalog.image("agnhost", "windows", node.windows_build)
    containers = [conn.netexec_container("netexec", agnhost, http_port=conn.CLIENT_HTTP_PORT, udp_port=None)]
    tools = nettools_image(catalog, node.windows_build)
    if tools:
        containers.append(container("tools", tools))
    manifest = pod_manifest(
        name,
        containers,
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels={APP_LABEL: f"client-{name}"},
        **spec,
    )
    return manifest, tools is not None


def hostprocess_manifest(catalog: Any, name: str, node: NodeProfile, **spec: Any) -> dict[str, Any]:
    """A HostProcess pod: its commands run on the Windows node itself, in the host's network."""
    image = catalog.image("agnhost", "windows", node.windows_build)
    return pod_manifest(
        name,
        [container("host", image, command=IDLE_WINDOWS)],
        os_name="windows",
        build=node.windows_build,
        node=node.name,
        labels={APP_LABEL: f"host-{name}"},
        hostNetwork=True,
        securityContext={"windowsOptions": {"hostProcess": True, "runAsUserName": HOSTPROCESS_USER}},
        **spec,
    )


def linux_agnhost_manifest(catalog: Any, name: str, node: NodeProfile, args: list[str], **spec: Any) -> dict[str, Any]:
    image = catalog.image("agnhost", "linux")
    return pod_manifest(
        name,
        [container("agnhost", image, args=args)],
        os_name="linux",
        node=node.name,
        labels={APP_LABEL: f"linux-{name}"},
        **spec,
    )


def linux_netexec_manifest(
    catalog: Any,
    name: str,
    node: NodeProfile,
    http_port: int = conn.NETSERVER_HTTP_PORT,
    udp_port: int | None = conn.NETSERVER_UDP_PORT,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """``agnhost netexec`` on a Linux node, labelled as a Linux netserver (or with ``labels``)."""
    image = catalog.image("agnhost", "linux")
    return pod_manifest(
        name,
        [conn.netexec_container("netexec", image, http_port=http_port, udp_port=udp_port)],
        os_name="linux",
        node=node.name,
        labels=labels or {APP_LABEL: LINUX_NETSERVERS, NETSERVER_LABEL: name},
        **spec,
    )


# ----------------------------------------------------------------------------- starting pods


# What the API server says when a cluster's policy forbids HostProcess pods (not a defect: a choice).
HOST_PROCESS_POLICY = ("disallowed by cluster policy", "violates PodSecurity", "forbidden")


def start_hostprocess(kube: Any, manifest: dict[str, Any]) -> PodRef:
    """Run a HostProcess pod; skip with the reason where the cluster's policy does not allow it.

    A refusal for any other reason (a validation error) and a HostProcess container that does not start
    are not skips: they are HostProcess support being broken, and the test fails with them.
    """
    name = manifest["metadata"]["name"]
    create_hostprocess(kube, manifest)
    pod = kube.wait_pod(name)  # a HostProcess container that crashes is WorkloadFailed: a failure, not a skip
    check_placement(pod, manifest, kube.profile)
    return pod_ref(pod, "windows", "host", tools="host")


def create_hostprocess(kube: Any, manifest: dict[str, Any]) -> None:
    """``start_hostprocess``'s create: skips where the cluster's policy does not allow HostProcess pods, raises
    Rejected for another refusal; returns once the pod is created (not started)."""
    name = manifest["metadata"]["name"]
    try:
        created = kube.create_pod(manifest)
    except ApiException as exc:
        message = api_message(exc)
        if exc.status in (400, 403, 422) and any(p in message for p in HOST_PROCESS_POLICY):
            pytest.skip(f"HostProcess pods are not allowed here (API answered {exc.status}: {message})")
        if exc.status in (400, 422):
            raise Rejected(f"the API server refused HostProcess pod {name}: {exc.status} {message}") from exc
        raise
    options = created.spec.security_context.windows_options if created.spec.security_context else None
    if not (options and options.host_process):
        pytest.skip(
            "HostProcess pods are not enabled on this cluster (the API server dropped windowsOptions.hostProcess)"
        )


def api_message(exc: ApiException) -> str:
    """The message of an API error's Status body (else its reason)."""
    try:
        return str(json.loads(exc.body).get("message", exc.reason))
    except (TypeError, ValueError):
        return str(exc.reason)
