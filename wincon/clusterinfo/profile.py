"""ClusterProfile: what this cluster is, as far as the API shows it.

Discovery reads nodes page by page and a fixed, small set of kube-system objects (DaemonSets and
ConfigMaps by name), never pods, so its cost grows with the number of nodes only. Each fact is a
pure function of API objects, so detection is unit-tested against the objects real clusters show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wincon.clusterinfo import aks
from wincon.commandline.errors import InfrastructureError, UsageError
from wincon.documents import releases

# Windows builds and the OS versions they are known by. Hosts older than ltsc2022 run only images of
# their exact build; ltsc2022 and later also run images from the previous LTSC up to their own build.
WINDOWS_BUILDS: dict[int, str] = {17763: "ltsc2019", 20348: "ltsc2022", 26100: "ltsc2025"}
OS_VERSION_BUILDS: dict[str, int] = {name: build for build, name in WINDOWS_BUILDS.items()}

SIMULATED_ANNOTATION = "kwok.x-k8s.io/node"
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"

# The kubelet feature gates checks decide by (wincon.checks.scheduling), read from /configz in discovery (each
# Ready real Windows node's, and the first LINUX_CONFIGZ_NODES Ready real Linux nodes'). PodAndContainerStatsFromCRI:
# /metrics/cadvisor is then served from the CRI runtime, not cAdvisor (k8s.io/kubernetes@v1.34.4
# pkg/kubelet/server/server.go:459-467). ClusterTrustBundleProjection and PodCertificateRequest: off, the kubelet
# runs a no-op manager that projects no clusterTrustBundle / podCertificate volume source (k8s.io/kubernetes@v1.37.2
# pkg/kubelet/kubelet.go:1008-1040), so such a pod never starts there.
# Each gate's stages by kubelet minor, as pkg/features/kube_features.go of the releases states them: (major, minor,
# default, stage), from the per-minor facts table wincon.documents.releases.MINORS (the sources are cited there). A stage
# "removed" (or "locked": LockToDefault) gives the value the behaviour is fixed at: the kubelet then refuses the gate
# by name (or any other value), so what /configz lists no longer decides.
KUBELET_GATE_STAGES: dict[str, tuple[tuple[int, int, bool, str], ...]] = releases.kubelet_gate_stages()
FIXED_STAGES = ("removed", "locked")  # stages at which /configz's value no longer decides
KUBELET_GATES = tuple(KUBELET_GATE_STAGES)
KUBELET_CONFIGZ_TIMEOUT = 10.0  # seconds a node's /configz read may take in discovery; slower is "unknown"
LINUX_CONFIGZ_NODES = 4  # Linux nodes whose /configz discovery reads (a check needs one; a cluster may have hundreds)

# Namespaces where pod networks, policy engines and kube-proxy put their objects (operators' included). A fixed
# list keeps discovery cheap: its DaemonSets, and a few ConfigMaps by name.
CNI_NAMESPACES = (
    "kube-system",
    "kube-flannel",
    "calico-system",
    "tigera-operator",
    "ovn-kubernetes",
    "antrea-system",
)
CNI_CONFIGMAPS = ("kube-flannel-cfg", "calico-config", "kube-proxy", "amazon-vpc-cni")

# DaemonSet names (exact, or prefix ending in '-') that reveal the pod network, checked in this order: a
# provider's own network first (AKS azure-cni, EKS VPC CNI), so that a policy-only Calico beside it is not
# taken for the pod network.
CNI_DAEMONSETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("azure-cni", ("azure-cns", "azure-cns-win", "azure-cni-networkmonitor")),
    ("aws-vpc-cni", ("aws-node", "aws-node-windows")),
    ("calico", ("calico-node", "calico-node-windows")),
    ("antrea", ("antrea-agent", "antrea-agent-windows")),
    ("ovn-kubernetes", ("ovnkube-node", "ovnkube-node-windows")),
    ("cilium", ("cilium",)),
    ("flannel", ("kube-flannel-ds", "kube-flannel-ds-windows-amd64", "kube-flannel-ds-amd64", "flannel-")),
)

# The policy engines that enforce NetworkPolicy on Windows nodes when they run there: DaemonSets whose pods run
# on Windows nodes (by name, or by a kubernetes.io/os: windows selector).
POLICY_DAEMONSETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("azure-npm", ("azure-npm-win", "azure-npm")),
    ("calico", ("calico-node-windows", "calico-node")),
    ("antrea", ("antrea-agent-windows", "antrea-agent")),
    ("ovn-kubernetes", ("ovnkube-node-windows", "ovnkube-node")),
    # Linux nodes only (kube-router has no Windows build): seen, it says nothing of the Windows nodes (unknown).
    ("kube-router", ("kube-router",)),
)
CALICO_NODE_ANNOTATIONS = ("projectcalico.org/IPv4Address", "projectcalico.org/IPv4VXLANTunnelAddr")
GKE_NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"

# What each detected CNI (and backend) is also known as in limitation conditions.
CNI_ALIASES: dict[tuple[str, str | None], frozenset[str]] = {
    ("flannel", "vxlan"): frozenset({"flannel", "flannel-vxlan", "win-overlay"}),
    ("flannel", "host-gw"): frozenset({"flannel", "flannel-host-gw", "win-bridge"}),
    ("flannel", None): frozenset({"flannel"}),
    ("azure-cni", None): frozenset({"azure-cni"}),
    ("win-overlay", None): frozenset({"win-overlay"}),
    ("win-bridge", None): frozenset({"win-bridge"}),
    ("calico", "vxlan"): frozenset({"calico", "win-overlay"}),
    ("calico", None): frozenset({"calico"}),
    ("gke", None): frozenset({"gke", "win-bridge"}),
}


def os_version_for_build(build: int | None) -> str | None:
    """'ltsc2022' for 20348; None for builds outside the supported LTSC list."""
    return WINDOWS_BUILDS.get(build) if build else None


def parse_build(text: str | None) -> int | None:
    """The build number from '10.0.20348', '10.0.20348.2655' or a bare '20348'."""
    if not text:
        return None
    parts = text.strip().split(".")
    candidate = parts[2] if len(parts) >= 3 else parts[0]
    return int(candidate) if candidate.isdigit() else None


@dataclass(frozen=True)
class NodeProfile:
    name: str
    os: str
    arch: str
    ready: bool
    simulated: bool
    kubelet_version: str = ""
    kube_proxy_version: str = ""  # nodeInfo.kubeProxyVersion: deprecated, empty (unknown) on current kubelets
    os_image: str = ""
    kernel_version: str = ""
    runtime: str = ""
    runtime_version: str = ""
    provider_id: str = ""
    windows_build: int | None = None
    os_version: str | None = None
    taints: tuple[str, ...] = ()
    internal_ip: str = ""
    cpu_capacity: str = ""  # status.capacity cpu as the API gives it ("4", "3500m"); "" unknown
    # KUBELET_GATES as the node's kubelet runs them, from its /configz: (gate, on) pairs; None where not read (a
    # simulated or NotReady node, a profile file that predates the field) or unreadable (no nodes/proxy right, a
    # timeout): unknown, never off.
    kubelet_feature_gates: tuple[tuple[str, bool], ...] | None = None

    @property
    def data_plane(self) -> bool:
        """True when this node really runs containers (a real kubelet); simulated nodes have none."""
        return not self.simulated

    @property
    def build_label(self) -> str:
        return f"10.0.{self.windows_build}" if self.windows_build else ""

    def kubelet_gate(self, gate: str) -> bool | None:
        """Whether the node's kubelet runs with ``gate`` on; None where the profile does not know."""
        return dict(self.kubelet_feature_gates or ()).get(gate)


@dataclass
class ClusterProfile:
    server_version: str
    nodes: list[NodeProfile] = field(default_factory=list)
    cni: str = "unknown"  # the pod network (the CNI that gives pods their addresses)
    cni_backend: str | None = None
    cni_source: str = "detected"
    # The NetworkPolicy engine on the Windows nodes, a fact of its own: calico, azure-npm, antrea, ovn-kubernetes,
    # "none" where the provider says so, "unknown" where nothing shows it (an unknown engine never skips a check).
    network_policy: str = "unknown"
    network_policy_source: str = "detected"
    kube_proxy_mode: str | None = None
    cloud: str = "other"
    # The Service IP families: default/kubernetes's spec.ipFamilies (the primary) then the ServiceCIDRs' (so
    # ["IPv4"], ["IPv6"] or both: dual-stack); empty when unknown.
    ip_families: list[str] = field(default_factory=list)
    # Services of type LoadBalancer that have an ingress address ("namespace/name address"): a LoadBalancer
    # provider serves this cluster. None where they could not be listed (or a profile file predates the field).
    load_balancers: list[str] | None = None
    # The Windows nodes `--windows-build` leaves out: the suite's pods never go there, but they are the
    # cluster's, so whole-cluster checks (a DaemonSet's count) and a pod's node lookup still see them.
    other_nodes: list[NodeProfile] = field(default_factory=list)
    # The cluster's RuntimeClasses as (name, handler) pairs: read once in discovery; None where they could not be
    # listed (no right to) or a profile file predates the field.
    runtime_classes: list[tuple[str, str]] | None = None
    # The cluster DNS: kube-system/kube-dns's cluster IP; "" where there is no such Service (or it has no IP);
    # None where it could not be read or a profile file predates the field.
    cluster_dns: str | None = None

    @property
    def all_nodes(self) -> list[NodeProfile]:
        """Every node of the cluster, ``--windows-build`` or not."""
        return self.nodes + self.other_nodes

    def whole_cluster(self) -> ClusterProfile:
        """The cluster as it is, every node in ``nodes``: what whole-cluster checks expect."""
        return ClusterProfile(**{**self.__dict__, "nodes": self.all_nodes, "other_nodes": []})

    @property
    def windows_nodes(self) -> list[NodeProfile]:
        return [n for n in self.nodes if n.os == "windows"]

    @property
    def linux_nodes(self) -> list[NodeProfile]:
        return [n for n in self.nodes if n.os == "linux"]

    @property
    def ready_windows_nodes(self) -> list[NodeProfile]:
        return [n for n in self.windows_nodes if n.ready]

    @property
    def windows_builds(self) -> list[int]:
        return sorted({n.windows_build for n in self.windows_nodes if n.windows_build})

    @property
    def windows_os_versions(self) -> list[str]:
        return sorted({n.os_version for n in self.windows_nodes if n.os_version})

    @property
    def k8s_version(self) -> str:
        """'1.34.4' from 'v1.34.4' or 'v1.34.4-gke.100'; '' when unparseable (unknown, never '0.0')."""
        match = re.match(r"v?(\d+\.\d+(?:\.\d+)?)", self.server_version)
        return match.group(1) if match else ""

    @property
    def k8s_minor(self) -> str:
        """'1.34' of the API server's version; '' when unparseable (:func:`wincon.documents.releases.minor_name`)."""
        return releases.minor_name(self.k8s_version)

    @property
    def runtime(self) -> str:
        runtimes = {n.runtime for n in self.windows_nodes if n.runtime}
        return runtimes.pop() if len(runtimes) == 1 else ("mixed" if runtimes else "unknown")

    @property
    def runtime_version(self) -> str:
        versions = sorted({n.runtime_version for n in self.windows_nodes if n.runtime_version})
        return ",".join(versions)

    @property
    def data_plane(self) -> bool:
        """True when the Windows nodes are real machines that run containers; simulated nodes have none."""
        return bool(self.windows_nodes) and not any(n.simulated for n in self.windows_nodes)

    @property
    def simulated(self) -> bool:
        return any(n.simulated for n in self.nodes)

    @property
    def cni_aliases(self) -> frozenset[str]:
        """Every name a limitation condition may use for this cluster's CNI."""
        known = CNI_ALIASES.get((self.cni, self.cni_backend)) or CNI_ALIASES.get((self.cni, None))
        return known or frozenset({self.cni})

    def restrict_to_build(self, build: int) -> ClusterProfile:
        """The same cluster seen through `--windows-build`: the suite's pods go to Windows nodes of that build
        only; the others stay in ``other_nodes`` (whole-cluster checks and node lookups still see them)."""
        every = self.all_nodes
        nodes = [n for n in every if n.os != "windows" or n.windows_build == build]
        others = [n for n in every if n not in nodes]
        return ClusterProfile(**{**self.__dict__, "nodes": nodes, "other_nodes": others})

    def to_dict(self) -> dict[str, Any]:
        return {
            "server_version": self.server_version,
            "k8s_version": self.k8s_version,
            "windows_builds": [f"10.0.{b}" for b in self.windows_builds],
            "windows_os_versions": self.windows_os_versions,
            "cni": self.cni,
            "cni_backend": self.cni_backend,
            "cni_source": self.cni_source,
            "network_policy": self.network_policy,
            "network_policy_source": self.network_policy_source,
            "runtime": self.runtime,
            "runtime_version": self.runtime_version,
            "kube_proxy_mode": self.kube_proxy_mode,
            "cloud": self.cloud,
            "ip_families": list(self.ip_families),
            "load_balancers": self.load_balancers,
            "data_plane": self.data_plane,
            "simulated": self.simulated,
            "nodes": [_node_dict(n) for n in self.nodes],
            "other_nodes": [_node_dict(n) for n in self.other_nodes],
            "runtime_classes": None
            if self.runtime_classes is None
            else [{"name": name, "handler": handler} for name, handler in self.runtime_classes],
            "cluster_dns": self.cluster_dns,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterProfile:
        known = set(NodeProfile.__dataclass_fields__)

        def gates(node: dict[str, Any]) -> tuple[tuple[str, bool], ...] | None:
            value = node.get("kubelet_feature_gates")
            return None if value is None else tuple((str(k), bool(v)) for k, v in dict(value).items())

        def nodes(key: str) -> list[NodeProfile]:
            return [
                NodeProfile(
                    **{k: v for k, v in n.items() if k in known}
                    | {"taints": tuple(n.get("taints", ())), "kubelet_feature_gates": gates(n)}
                )
                for n in data.get(key) or []
            ]

        runtime_classes = data.get("runtime_classes")
        if runtime_classes is not None:
            runtime_classes = [(str(c["name"]), str(c.get("handler", ""))) for c in runtime_classes]
        return cls(
            server_version=data["server_version"],
            nodes=nodes("nodes"),
            other_nodes=nodes("other_nodes"),
            cni=data.get("cni", "unknown"),
            cni_backend=data.get("cni_backend"),
            cni_source=data.get("cni_source", "detected"),
            network_policy=data.get("network_policy", "unknown"),
            network_policy_source=data.get("network_policy_source", "detected"),
            kube_proxy_mode=data.get("kube_proxy_mode"),
            cloud=data.get("cloud", "other"),
            ip_families=list(data.get("ip_families") or []),
            load_balancers=data.get("load_balancers"),
            runtime_classes=runtime_classes,
            cluster_dns=data.get("cluster_dns"),
        )

    def summary_lines(self) -> list[str]:
        wins = ", ".join(
            f"{n.name} ({n.os_version or 'build ' + str(n.windows_build)}{', simulated' if n.simulated else ''})"
            for n in self.windows_nodes
        )
        cni = self.cni + (f" ({self.cni_backend})" if self.cni_backend else "")
        return [
            f"kubernetes {self.server_version}; cloud {self.cloud}; runtime {self.runtime} {self.runtime_version}",
            f"windows nodes: {wins or 'none'}",
            f"linux nodes: {len(self.linux_nodes)}; pod network: {cni} [{self.cni_source}]; "
            f"network policy: {self.network_policy} [{self.network_policy_source}]; "
            f"kube-proxy: {self.kube_proxy_mode or 'unknown'}",
            self.data_plane_line(),
        ]

    def data_plane_line(self) -> str:
        """The nodes with a data plane and those without (simulated), by name, and what that means for the run."""
        real = [n.name for n in self.all_nodes if n.data_plane]
        none = [n.name for n in self.all_nodes if not n.data_plane]
        windows = [n.data_plane for n in self.windows_nodes]
        if windows and all(windows):
            effect = "Windows data-plane checks run"
        elif any(windows):
            effect = "Windows data-plane checks run where their pods land on a real node, skip elsewhere"
        else:
            effect = "Windows data-plane checks skip"
        if any(n.data_plane for n in self.linux_nodes):
            effect += "; Linux controls run"
        parts = ([f"real on {_names(real)}"] if real else []) + (
            [f"none (simulated nodes) on {_names(none)}"] if none else []
        )
        return f"data plane: {'; '.join(parts) or 'no nodes'}: {effect}"


def _names(names: list[str], shown: int = 8) -> str:
    """Node names for one header line: the first ``shown``, then how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _node_dict(node: NodeProfile) -> dict[str, Any]:
    gates = None if node.kubelet_feature_gates is None else dict(node.kubelet_feature_gates)
    return asdict(node) | {"taints": list(node.taints), "data_plane": node.data_plane, "kubelet_feature_gates": gates}


# --- pure detection functions over API objects (dicts as returned by the API, camelCase keys) ---


def node_profile(node: dict[str, Any]) -> NodeProfile:
    meta = node.get("metadata", {})
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    spec = node.get("spec") or {}
    os_name = labels.get("kubernetes.io/os") or info.get("operatingSystem") or "linux"
    build = None
    if os_name == "windows":
        build = parse_build(labels.get(WINDOWS_BUILD_LABEL)) or parse_build(info.get("kernelVersion"))
    runtime_full = info.get("containerRuntimeVersion") or ""
    runtime, _, runtime_version = runtime_full.partition("://")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    taints = tuple(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in spec.get("taints") or [] if "key" in t)
    internal_ip = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "")
    cpu = (status.get("capacity") or {}).get("cpu")
    return NodeProfile(
        name=meta.get("name", ""),
        os=os_name,
        arch=labels.get("kubernetes.io/arch") or info.get("architecture") or "",
        ready=ready,
        simulated=annotations.get(SIMULATED_ANNOTATION) == "fake" or labels.get("type") == "kwok",
        kubelet_version=info.get("kubeletVersion", ""),
        kube_proxy_version=info.get("kubeProxyVersion", ""),
        os_image=info.get("osImage", ""),
        kernel_version=info.get("kernelVersion", ""),
        runtime=runtime,
        runtime_version=runtime_version,
        provider_id=spec.get("providerID", ""),
        windows_build=build,
        os_version=os_version_for_build(build),
        taints=taints,
        internal_ip=internal_ip,
        cpu_capacity=str(cpu) if cpu is not None else "",
    )


def gate_stage(gate: str, kubelet_version: str) -> tuple[bool, str] | None:
    """(default, stage) of a KUBELET_GATES gate at a kubelet version ('v1.37.2', '1.38.0-beta.0'); None where the
    version is unknown or older than the gate."""
    minor = releases.minor_of(kubelet_version)
    if minor is None:
        return None
    stage = None
    for major, since, default, name in KUBELET_GATE_STAGES[gate]:
        if minor >= (major, since):
            stage = (default, name)
    return stage


def kubelet_feature_gates(config: dict[str, Any], kubelet_version: str = "") -> tuple[tuple[str, bool], ...]:
    """KUBELET_GATES as a kubelet runs them, from its KubeletConfiguration (the ``kubeletconfig`` of /configz):
    its ``featureGates``, which the --feature-gates flag fills too (k8s.io/kubernetes@v1.34.4
    cmd/kubelet/app/options/options.go:432); a gate it does not list is at its default at ``kubelet_version``
    (off where the version is unknown: the default of an unknown kubelet cannot be told, and off is what a kubelet
    older than a gate runs); a gate removed or locked at that version is at the value its behaviour is fixed at,
    whatever is listed."""
    listed = config.get("featureGates") or {}
    if not isinstance(listed, dict):
        raise ValueError(f"the KubeletConfiguration's featureGates is not a map: {listed!r}")
    gates = []
    for gate in KUBELET_GATES:
        default, stage = gate_stage(gate, kubelet_version) or (False, "")
        gates.append((gate, default if stage in FIXED_STAGES else bool(listed.get(gate, default))))
    return tuple(gates)


def _kubelet_gates(api_client: Any, node: str, kubelet_version: str = "") -> tuple[tuple[str, bool], ...] | None:
    """The node's KUBELET_GATES from its /configz through the API server's node proxy; None (unknown) where it
    cannot be read: a refusal (403 without nodes/proxy), a timeout, an answer that is not a KubeletConfiguration."""
    from wincon.cluster.kubelet import kubelet_config, kubelet_json

    try:
        configz, _ = kubelet_json(api_client, node, "configz", timeout=KUBELET_CONFIGZ_TIMEOUT)
        return kubelet_feature_gates(kubelet_config(configz), kubelet_version)
    except (InfrastructureError, ValueError):
        return None


def set_kubelet_gates(profile: ClusterProfile, gates: dict[str, tuple[tuple[str, bool], ...] | None]) -> None:
    """Give the nodes named in ``gates`` the kubelet feature gates read for them (the others are unchanged)."""
    profile.nodes = [replace(n, kubelet_feature_gates=gates[n.name]) if n.name in gates else n for n in profile.nodes]


def configz_nodes(nodes: Iterable[NodeProfile]) -> list[str]:
    """The nodes whose kubelet feature gates discovery reads: Ready Windows nodes with a data plane (a simulated
    kubelet has no /configz; a NotReady one would only hold discovery up to its timeout), and the first
    LINUX_CONFIGZ_NODES such Linux nodes a Linux control may be scheduled to (a check reads a later one only where
    these cannot serve it, wincon.checks.scheduling.gate_on_placement)."""
    real = [n for n in nodes if n.data_plane and n.ready]
    linux = [n.name for n in real if n.os == "linux" and schedulable_untolerated(n)][:LINUX_CONFIGZ_NODES]
    return [n.name for n in real if n.os == "windows"] + linux


def tolerated(taint: str, tolerations: Iterable[dict[str, str]]) -> bool:
    """Whether a taint ("key=value:Effect") is tolerated; PreferNoSchedule never blocks placement. The one rule
    of what a taint blocks: discovery asks it here, the node picks through wincon.clusterinfo.nodes.schedulable."""
    key_value, _, effect = taint.rpartition(":")
    if effect == "PreferNoSchedule":
        return True
    key, _, value = key_value.partition("=")
    for tol in tolerations:
        if tol.get("effect") not in (None, "", effect):
            continue
        if tol.get("operator") == "Exists" and tol.get("key") in (None, "", key):
            return True
        if tol.get("key") == key and tol.get("value", "") == value:
            return True
    return False


def schedulable_untolerated(node: NodeProfile) -> bool:
    """Whether a pod without tolerations (a Linux control's) may be scheduled to ``node``: no NoSchedule or
    NoExecute taint ("key=value:Effect"); wincon.clusterinfo.nodes.schedulable without its readiness."""
    return all(tolerated(taint, ()) for taint in node.taints)


def detect_cloud(nodes: Iterable[NodeProfile]) -> str:
    """The provider of the Windows nodes (their providerID scheme; of any node where there is no Windows node):
    azure, gce, aws or kwok; 'other' when unknown."""
    every = list(nodes)
    windows = [n for n in every if n.os == "windows"]
    for node in windows or every:
        scheme = node.provider_id.partition("://")[0]
        if scheme in ("azure", "gce", "aws", "kwok"):
            return scheme
    return "other"


def _name_matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name.startswith(p) if p.endswith("-") else name == p for p in patterns)


@dataclass
class NetworkObjects:
    """What discovery reads to tell the pod network and the policy engine apart (plain API dicts)."""

    daemonsets: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> DaemonSet
    configmaps: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> data
    nodes: list[dict[str, Any]] = field(default_factory=list)
    cloud: str = "other"


def _pod_spec(daemonset: dict[str, Any]) -> dict[str, Any]:
    return ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}


def runs_on_windows(name: str, daemonset: dict[str, Any]) -> bool:
    """Whether a DaemonSet's pods run on Windows nodes: its name says so, or it selects kubernetes.io/os windows."""
    if name.endswith(("-windows", "-win")) or "-windows-" in name:
        return True
    spec = _pod_spec(daemonset)
    if (spec.get("nodeSelector") or {}).get("kubernetes.io/os") == "windows":
        return True
    affinity = json.dumps(spec.get("affinity") or {})
    return '"kubernetes.io/os"' in affinity and '"windows"' in affinity


def _env(daemonset: dict[str, Any], name: str) -> str:
    for container in _pod_spec(daemonset).get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == name and isinstance(env.get("value"), str):
                return str(env["value"])
    return ""


def _windows_nodes(objects: NetworkObjects) -> list[dict[str, Any]]:
    return [
        n for n in objects.nodes if ((n.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/os") == "windows"
    ]


def detect_pod_network(objects: NetworkObjects) -> tuple[str, str | None]:
    """The pod network and its backend from what the providers deploy: ("unknown", None) when nothing shows it."""
    # AKS's node labels say its mode (wincon.clusterinfo.aks)
    if objects.cloud == "azure" and aks.is_aks(objects.nodes):
        return aks.pod_network(objects.nodes)[0]
    names = list(objects.daemonsets)
    for cni, patterns in CNI_DAEMONSETS:
        if not any(_name_matches(n, patterns) for n in names):
            continue
        if cni == "calico" and objects.cloud == "gce":
            break  # GKE's Calico is its network policy engine; the pod network is GKE's own (below)
        backend = None
        if cni == "flannel":
            backend = flannel_backend(objects.configmaps.get("kube-flannel-cfg", {}).get("net-conf.json"))
        elif cni == "calico":
            backend = calico_backend(objects.configmaps.get("calico-config", {}))
            env = next(
                (
                    _env(ds, "CALICO_NETWORKING_BACKEND")
                    for n, ds in objects.daemonsets.items()
                    if n.startswith("calico-node")
                ),
                "",
            )
            backend = backend or {"vxlan": "vxlan", "bird": "bgp"}.get(env)
        elif cni == "aws-vpc-cni":
            backend = (
                "windows-ipam"
                if objects.configmaps.get("amazon-vpc-cni", {}).get("enable-windows-ipam") == "true"
                else None
            )
        return cni, backend
    if objects.configmaps.get("amazon-vpc-cni", {}).get("enable-windows-ipam") == "true":
        return "aws-vpc-cni", "windows-ipam"  # the VPC resource controller runs on the control plane, unseen
    if objects.cloud == "gce" and any(
        GKE_NODEPOOL_LABEL in ((n.get("metadata") or {}).get("labels") or {}) for n in objects.nodes
    ):
        return "gke", None
    for node in _windows_nodes(objects):  # Calico run as a Windows service (rke2): only its node annotations show
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        if any(a in annotations for a in CALICO_NODE_ANNOTATIONS):
            return "calico", "vxlan" if "projectcalico.org/IPv4VXLANTunnelAddr" in annotations else None
    return "unknown", None


def detect_network_policy(objects: NetworkObjects) -> tuple[str, str]:
    """The NetworkPolicy engine on the Windows nodes, and how it was seen. "unknown" where nothing shows one
    there (an engine seen on Linux nodes only says nothing of the Windows nodes); "none" where the provider says
    no engine runs (AKS's node label; the local cluster where it shows no engine's DaemonSet: nothing else could
    provide one there). The local cluster's kube-router (built) shows its DaemonSet, read here as on any cluster."""
    engines = [
        engine for engine, patterns in POLICY_DAEMONSETS for n in objects.daemonsets if _name_matches(n, patterns)
    ]
    if objects.cloud == "kwok" and not engines:
        return "none", "the local cluster deploys no policy engine (no policy engine's DaemonSet)"
    aks_policy = aks.network_policy(objects.nodes, objects.daemonsets) if objects.cloud == "azure" else None
    if aks_policy and aks.is_aks(objects.nodes):  # AKS's network-policy node label (wincon.clusterinfo.aks)
        return aks_policy
    linux_only = []
    for engine, patterns in POLICY_DAEMONSETS:
        for name, ds in objects.daemonsets.items():
            if _name_matches(name, patterns):
                if runs_on_windows(name, ds):
                    return engine, f"DaemonSet {name} on the Windows nodes"
                linux_only.append(f"{engine} (DaemonSet {name})")
    for node in _windows_nodes(objects):
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        if any(a in annotations for a in CALICO_NODE_ANNOTATIONS):
            return "calico", "Calico's annotations on the Windows nodes (run as a Windows service)"
    if linux_only:
        return "unknown", f"seen on Linux nodes only: {', '.join(dict.fromkeys(linux_only))}"
    return "unknown", "no policy engine seen"


def detect_cni(daemonset_names: Iterable[str], configmaps: dict[str, dict[str, str]]) -> tuple[str, str | None]:
    """The pod network and its backend from DaemonSet names and ConfigMaps alone (see detect_pod_network)."""
    return detect_pod_network(NetworkObjects(daemonsets=dict.fromkeys(daemonset_names, {}), configmaps=configmaps))


def flannel_backend(net_conf: str | None) -> str | None:
    if not net_conf:
        return None
    try:
        backend = json.loads(net_conf).get("Backend", {}).get("Type", "")
    except (ValueError, AttributeError):
        return None
    return backend.lower() or None


def calico_backend(data: dict[str, str]) -> str | None:
    mode = data.get("calico_backend", "")
    return {"vxlan": "vxlan", "bird": "bgp"}.get(mode) if mode else None


def detect_kube_proxy_mode(daemonsets: dict[str, list[str]], configmaps: dict[str, dict[str, str]]) -> str | None:
    """The Windows kube-proxy mode where visible: the args of a Windows kube-proxy DaemonSet (kernelspace, the
    only mode Windows kube-proxy has, unless they say otherwise). The shared kube-proxy ConfigMap is the Linux
    kube-proxy's: its mode counts only where it is kernelspace (Windows's own). Otherwise unknown: on AKS the
    Windows kube-proxy runs as a Windows service and the ConfigMap says nothing of it."""
    for name, args in daemonsets.items():
        if "kube-proxy" in name and "windows" in name:
            for arg in args:
                if arg.startswith("--proxy-mode="):
                    return arg.split("=", 1)[1] or None
            return "kernelspace"
    config = configmaps.get("kube-proxy", {}).get("config.conf", "")
    match = re.search(r"^mode:\s*\"?([a-z]*)\"?", config, re.MULTILINE)
    return "kernelspace" if match and match.group(1) == "kernelspace" else None


# --- discovery against a live cluster ---


def iter_nodes(core_api: Any, page_size: int = 500) -> Iterator[dict[str, Any]]:
    """Every node, page by page, as plain dicts."""
    token = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        response = core_api.list_node(**kwargs)
        data = json.loads(response.data)
        yield from data.get("items", [])
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return


# Discovery's reads are independent of each other (about 35 of them): issued together, a run's start waits for
# the slowest, not for their sum (on a remote cluster each is a round trip).
DISCOVERY_THREADS = 8


def discover(api_client: Any, cni_override: str | None = None, policy_override: str | None = None) -> ClusterProfile:
    """Read the profile of the cluster behind ``api_client`` (a kubernetes.client.ApiClient)."""
    from concurrent.futures import ThreadPoolExecutor

    from kubernetes import client

    core = client.CoreV1Api(api_client)
    # DaemonSets are read as plain objects: the generic API asks the same path as AppsV1Api's list would, without
    # importing the apps group's models into a run whose checks may never use them.
    custom = client.CustomObjectsApi(api_client)
    with ThreadPoolExecutor(DISCOVERY_THREADS, thread_name_prefix="wincon-discovery") as pool:
        version = pool.submit(lambda: client.VersionApi(api_client).get_code().git_version)
        listed = pool.submit(lambda: list(iter_nodes(core)))
        daemonsets = [pool.submit(_daemonsets, custom, namespace) for namespace in CNI_NAMESPACES]
        configmaps = [
            (name, pool.submit(_configmap_data, core, namespace, name))
            for namespace in CNI_NAMESPACES
            for name in CNI_CONFIGMAPS
        ]
        load_balancers = pool.submit(_load_balancer_services, core)
        runtime_classes = pool.submit(_runtime_classes, api_client)
        cluster_dns = pool.submit(_cluster_dns, core)
        raw_nodes = listed.result()
        ip_families = pool.submit(_service_ip_families, core, raw_nodes)
        nodes = [node_profile(n) for n in raw_nodes]
        versions = {n.name: n.kubelet_version for n in nodes}
        gates = {name: pool.submit(_kubelet_gates, api_client, name, versions[name]) for name in configz_nodes(nodes)}
        objects = NetworkObjects(nodes=raw_nodes, cloud=detect_cloud(nodes))
        for found in daemonsets:  # merged in the order of CNI_NAMESPACES, as read one after another before
            objects.daemonsets.update(found.result())
        for name, read in configmaps:
            data = read.result()
            if data is not None:
                objects.configmaps[name] = data
        profile = profile_from(version.result(), objects)
        profile.ip_families = ip_families.result()
        profile.load_balancers = load_balancers.result()
        profile.runtime_classes = runtime_classes.result()
        profile.cluster_dns = cluster_dns.result()
        set_kubelet_gates(profile, {name: read.result() for name, read in gates.items()})
    if cni_override:
        apply_cni_override(profile, cni_override)
    if policy_override:
        apply_network_policy_override(profile, policy_override)
    return profile


def profile_from(server_version: str, objects: NetworkObjects) -> ClusterProfile:
    """The profile the objects a cluster shows make: a pure function, so real clusters' shapes are unit-tested."""
    nodes = [node_profile(n) for n in objects.nodes]
    profile = ClusterProfile(server_version=server_version, nodes=nodes, cloud=objects.cloud)
    args = {name: _args(ds) for name, ds in objects.daemonsets.items()}
    profile.kube_proxy_mode = detect_kube_proxy_mode(args, objects.configmaps)
    profile.cni, profile.cni_backend = detect_pod_network(objects)
    profile.network_policy, profile.network_policy_source = detect_network_policy(objects)
    return profile


def network_objects(items: Iterable[dict[str, Any]]) -> NetworkObjects:
    """``NetworkObjects`` from a list of API objects (Nodes, DaemonSets, ConfigMaps; others are ignored)."""
    objects = NetworkObjects()
    for item in items:
        kind, name = item.get("kind"), (item.get("metadata") or {}).get("name", "")
        if kind == "Node":
            objects.nodes.append(item)
        elif kind == "DaemonSet":
            objects.daemonsets[name] = item
        elif kind == "ConfigMap" and name in CNI_CONFIGMAPS:
            objects.configmaps[name] = dict(item.get("data") or {})
    objects.cloud = detect_cloud([node_profile(n) for n in objects.nodes])
    return objects


def service_families(primary: Iterable[str], cidrs: Iterable[str]) -> list[str]:
    """The cluster's Service IP families, primary first: default/kubernetes's ``ipFamilies`` (that Service is
    single-stack, of the primary family, even on a dual-stack cluster), then the family of every other Service
    range (``cidrs``: the ServiceCIDR objects' ``spec.cidrs``)."""
    import ipaddress

    families = list(primary)
    for cidr in cidrs:
        family = f"IPv{ipaddress.ip_network(cidr, strict=False).version}"
        if family not in families:
            families.append(family)
    return families


def _service_ip_families(core: Any, raw_nodes: Iterable[dict[str, Any]] = ()) -> list[str]:
    """The IP families of the cluster's Services: default/kubernetes's (the primary) and its ServiceCIDRs'
    (networking.k8s.io/v1, the ranges the API server was given, GA in 1.33); where the ServiceCIDRs cannot be read
    (an older server, or no right to list them), the nodes' podCIDRs stand in for them (a dual-stack cluster's
    node IPAM gives each node one of each family)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        primary = list(core.read_namespaced_service("kubernetes", "default").spec.ip_families or [])
    except ApiException:
        return []
    try:
        items = client.NetworkingV1Api(core.api_client).list_service_cidr(_request_timeout=30).items
    except (ApiException, AttributeError):
        return service_families(primary, node_pod_cidrs(raw_nodes))
    return service_families(primary, [c for item in items for c in (item.spec.cidrs if item.spec else None) or []])


def node_pod_cidrs(raw_nodes: Iterable[dict[str, Any]]) -> list[str]:
    """Every node's ``spec.podCIDRs`` (or its single ``podCIDR``), in node order."""
    cidrs: list[str] = []
    for node in raw_nodes:
        spec = node.get("spec") or {}
        cidrs += spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
    return cidrs


def load_balancer_ingress(services: Iterable[Any]) -> list[str]:
    """ "namespace/name address" of each Service of type LoadBalancer that has an ingress address."""
    found = []
    for svc in services:
        if svc.spec.type != "LoadBalancer":
            continue
        ingress = (svc.status and svc.status.load_balancer and svc.status.load_balancer.ingress) or []
        addresses = [i.ip or i.hostname for i in ingress if i.ip or i.hostname]
        if addresses:
            found.append(f"{svc.metadata.namespace}/{svc.metadata.name} {','.join(addresses)}")
    return found


def _load_balancer_services(core: Any) -> list[str] | None:
    """The cluster's Services of type LoadBalancer with an address (a provider serves it); None where unreadable."""
    from kubernetes.client.rest import ApiException

    try:
        return load_balancer_ingress(core.list_service_for_all_namespaces(_request_timeout=30).items)
    except ApiException:
        return None


def runtime_class_pairs(items: Iterable[Any]) -> list[tuple[str, str]]:
    """(name, handler) of each RuntimeClass (node.k8s.io/v1 objects as the client gives them)."""
    return [(str(c.metadata.name), str(c.handler or "")) for c in items]


def _runtime_classes(api_client: Any) -> list[tuple[str, str]] | None:
    """The cluster's RuntimeClasses; None where they cannot be listed (a runner without the right)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        return runtime_class_pairs(client.NodeV1Api(api_client).list_runtime_class(_request_timeout=30).items)
    except ApiException:
        return None


def _cluster_dns(core: Any) -> str | None:
    """kube-system/kube-dns's cluster IP: "" where the Service does not exist or has none (headless), None where
    it cannot be read (a refusal: unknown, never absent)."""
    import ipaddress

    from kubernetes.client.rest import ApiException

    try:
        ip = core.read_namespaced_service("kube-dns", "kube-system").spec.cluster_ip
    except ApiException as exc:
        if exc.status == 404:
            return ""
        return None
    try:
        return str(ipaddress.ip_address(ip or ""))
    except ValueError:
        return ""


def apply_cni_override(profile: ClusterProfile, value: str) -> None:
    """`--cni` replaces detection: 'flannel-vxlan' -> flannel/vxlan; 'flannel:host-gw' -> flannel/host-gw."""
    name, _, backend = value.partition(":")
    if not backend and name.startswith("flannel-"):
        name, backend = "flannel", name.removeprefix("flannel-")
    profile.cni, profile.cni_backend, profile.cni_source = name, backend or None, "--cni"


def apply_network_policy_override(profile: ClusterProfile, value: str) -> None:
    """`--network-policy` replaces detection of the policy engine alone (the pod network stays as detected)."""
    profile.network_policy, profile.network_policy_source = value, "--network-policy"


def load_profile_file(path: str | Path) -> ClusterProfile:
    """A profile saved by `wincon profile --json`; UsageError naming the file when it is not one."""
    try:
        return ClusterProfile.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"profile file {path} is not a wincon profile: {exc}", "write one with `wincon profile --json`"
        ) from exc


def _daemonsets(custom: Any, namespace: str) -> dict[str, dict[str, Any]]:
    """The DaemonSets of ``namespace`` by name (``custom``: a CustomObjectsApi), {} where they cannot be read."""
    from kubernetes.client.exceptions import ApiException

    try:
        listed = custom.list_namespaced_custom_object("apps", "v1", namespace, "daemonsets")
    except ApiException as exc:
        if exc.status in (403, 404):
            return {}
        raise
    return {item["metadata"]["name"]: item for item in listed.get("items", [])}


def _args(daemonset: dict[str, Any]) -> list[str]:
    containers = _pod_spec(daemonset).get("containers") or []
    return [a for c in containers for a in (c.get("command") or []) + (c.get("args") or [])]


def _configmap_data(core: Any, namespace: str, name: str) -> dict[str, str] | None:
    from kubernetes.client.exceptions import ApiException

    try:
        return core.read_namespaced_config_map(name, namespace).data or {}
    except ApiException as exc:
        if exc.status in (403, 404):
            return None
        raise
