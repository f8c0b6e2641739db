"""The simulated nodes: which ones a cluster has, and the Node objects that describe them.

Each node carries what the kubelet of a real AKS or GCE node reports (labels, ``status.nodeInfo``,
capacity, addresses, a providerID) plus the marks by which the suite tells from the API that it is
simulated: the annotation ``kwok.x-k8s.io/node: fake``, the label ``type: kwok`` and a providerID
``kwok://<node-name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wincon.commandline.errors import UsageError

# Windows Server LTSC releases as a kubelet reports them (kernelVersion is the full build.revision), with the
# containerd each release's nodes run on the cloud the nodes imitate (AKS): 1.7 on Windows Server 2019 and 2022
# pools, 2.0 on Windows Server 2025 pools (Azure/AKS#4700: containerd 2.0 for Windows from Kubernetes 1.33), whose
# kubelet reports it with AKS's build suffix, as `containerd://2.0.4+azure`.
WINDOWS_RELEASES: dict[str, dict[str, str]] = {
    "ltsc2019": {
        "build": "10.0.17763",
        "kernel": "10.0.17763.7009",
        "os_image": "Windows Server 2019 Datacenter",
        "short": "win2019",
        "runtime": "containerd://1.7.27",
    },
    "ltsc2022": {
        "build": "10.0.20348",
        "kernel": "10.0.20348.3328",
        "os_image": "Windows Server 2022 Datacenter",
        "short": "win2022",
        "runtime": "containerd://1.7.27",
    },
    "ltsc2025": {
        "build": "10.0.26100",
        "kernel": "10.0.26100.3476",
        "os_image": "Windows Server 2025 Datacenter",
        "short": "win2025",
        "runtime": "containerd://2.0.4+azure",
    },
}
LINUX_OS_IMAGE = "Ubuntu 22.04.5 LTS"
LINUX_KERNEL = "5.15.0-1081-azure"
CONTAINERD_VERSION = "containerd://1.7.27"  # the simulated Linux nodes'; each Windows release has its own
# The Windows Server releases of a cluster that names none: the two current LTSC releases (Windows Server 2019 left
# mainstream support in 2024 and clouds retire its pools), one node each by default.
DEFAULT_WINDOWS_VERSIONS = ("ltsc2022", "ltsc2025")
CNI_CHOICES = ("flannel-vxlan", "flannel-host-gw", "calico", "azure-cni", "antrea", "none")
DATAPLANE_CHOICES = ("linux", "none")
MAX_REAL_NODES = 4
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TAINT_RE = re.compile(
    r"^(?P<key>([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)"
    r"(=(?P<value>[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)?:(?P<effect>\w+)$"
)
SIMULATED_ANNOTATION = "kwok.x-k8s.io/node"


def parse_taint(text: str) -> dict[str, str]:
    """``KEY[=VALUE]:EFFECT`` -> a Node taint; a UsageError naming the expected shape otherwise."""
    match = _TAINT_RE.match(text.strip())
    if not match or match["effect"] not in TAINT_EFFECTS:
        raise UsageError(
            f"invalid Windows taint {text!r}",
            f"write KEY=VALUE:EFFECT with EFFECT one of {', '.join(TAINT_EFFECTS)} (for example os=windows:NoSchedule)",
        )
    taint = {"key": match["key"], "effect": match["effect"]}
    if match["value"]:
        taint["value"] = match["value"]
    return taint


@dataclass
class Topology:
    """Which nodes a cluster has. The default: simulated ltsc2022 and ltsc2025 nodes and two real Linux workers.

    Windows node ``i`` runs ``windows_versions[i % len(windows_versions)]``; simulated nodes are named after
    their release and their rank within it (``win2022-0``, ``win2025-0``, ``win2025-1``, ``linux-0``); real
    Linux nodes (``dataplane: linux``) are ``worker-0``, ``worker-1``. Simulated Linux nodes default to none
    beside a real data plane and to one without it (``dataplane: none``, the all-simulated cluster).
    """

    windows_nodes: int = 2
    linux_nodes: int | None = None
    windows_versions: list[str] = field(default_factory=lambda: list(DEFAULT_WINDOWS_VERSIONS))
    windows_taint: str | None = None
    cni: str = "flannel-vxlan"
    dataplane: str = "linux"
    real_nodes: int = 2
    windows_pod_latency: str | None = None  # a latency.LatencyModel spec: simulated Windows pods run and delete slowly
    ip_family: str = "ipv4"  # ipv4, dual or ipv6 (ipfamily.py)

    def __post_init__(self) -> None:
        if self.dataplane not in DATAPLANE_CHOICES:
            raise UsageError(
                f"unknown data plane {self.dataplane!r}", f"pass --dataplane as one of {', '.join(DATAPLANE_CHOICES)}"
            )
        if self.dataplane == "none":
            self.real_nodes = 0
        if self.linux_nodes is None:
            self.linux_nodes = 0 if self.dataplane == "linux" else 1
        if self.windows_nodes < 0 or self.linux_nodes < 0 or self.real_nodes < 0:
            raise UsageError(
                "node counts cannot be negative", "pass --windows-nodes/--linux-nodes/--real-nodes of 0 or more"
            )
        if self.real_nodes > MAX_REAL_NODES:
            raise UsageError(
                f"{self.real_nodes} real Linux nodes requested", f"ask for at most {MAX_REAL_NODES} (--real-nodes)"
            )
        if self.windows_nodes + self.linux_nodes + self.real_nodes == 0:
            raise UsageError("a cluster without nodes was requested", "pass --windows-nodes or --linux-nodes >= 1")
        if self.windows_nodes + self.linux_nodes > 50:
            raise UsageError("more than 50 simulated nodes requested", "ask for 50 nodes or fewer")
        unknown = [v for v in self.windows_versions if v not in WINDOWS_RELEASES]
        if unknown or not self.windows_versions:
            raise UsageError(
                f"unknown Windows version(s) {', '.join(unknown) or '(none given)'}",
                f"pass --windows-versions as a comma-separated list of {', '.join(WINDOWS_RELEASES)}",
            )
        if 0 < self.windows_nodes < len(self.windows_versions):
            raise UsageError(
                f"{len(self.windows_versions)} Windows versions requested but only {self.windows_nodes} "
                "Windows node(s)",
                "raise --windows-nodes to at least the number of --windows-versions",
            )
        if self.windows_taint is not None:
            parse_taint(self.windows_taint)
        if self.cni not in CNI_CHOICES:
            raise UsageError(f"unknown CNI {self.cni!r}", f"pass --cni as one of {', '.join(CNI_CHOICES)}")
        if self.windows_pod_latency is not None:
            from wincon.localcluster.latency import LatencyModel

            LatencyModel.parse(self.windows_pod_latency)
        from wincon.localcluster import ipfamily

        ipfamily.check(self.ip_family, self.dataplane)

    def to_dict(self) -> dict[str, Any]:
        return {
            "windows_nodes": self.windows_nodes,
            "linux_nodes": self.linux_nodes,
            "windows_versions": list(self.windows_versions),
            "windows_taint": self.windows_taint,
            "cni": self.cni,
            "dataplane": self.dataplane,
            "real_nodes": self.real_nodes,
            "windows_pod_latency": self.windows_pod_latency,
            **({} if self.ip_family == "ipv4" else {"ip_family": self.ip_family}),  # ipv4 records stay as they were
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Topology:
        known = (
            "windows_nodes",
            "linux_nodes",
            "windows_versions",
            "windows_taint",
            "cni",
            "dataplane",
            "real_nodes",
            "windows_pod_latency",
            "ip_family",
        )
        return cls(**{k: data[k] for k in known if k in data})

    def simulated_count(self) -> int:
        """How many simulated nodes (and so pod subnets ``10.244.0-<n-1>.0/24``) the cluster has."""
        return self.windows_nodes + (self.linux_nodes or 0)

    def node_names(self) -> list[str]:
        return [node["metadata"]["name"] for node in self.nodes("")]

    def windows_node_names(self) -> list[str]:
        """The simulated Windows nodes' names (``win2022-0``, ``win2025-0``, ...)."""
        return [
            n["metadata"]["name"] for n in self.nodes("") if n["metadata"]["labels"]["kubernetes.io/os"] == "windows"
        ]

    def nodes(self, kubelet_version: str) -> list[dict[str, Any]]:
        """The Node objects (with status) of this topology."""
        from wincon.localcluster import ipfamily

        result: list[dict[str, Any]] = []
        per_release: dict[str, int] = {}
        for i in range(self.windows_nodes):
            release = self.windows_versions[i % len(self.windows_versions)]
            index = per_release[release] = per_release.get(release, -1) + 1
            result.append(self._node(index, "windows", release, kubelet_version, len(result)))
        for i in range(self.linux_nodes or 0):
            result.append(self._node(i, "linux", None, kubelet_version, len(result)))
        return [ipfamily.adjust_simulated_node(node, self.ip_family) for node in result]

    def _node(self, index: int, os_name: str, release: str | None, kubelet_version: str, ordinal: int) -> dict:
        labels = {
            "kubernetes.io/os": os_name,
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": os_name,
            "beta.kubernetes.io/arch": "amd64",
            "type": "kwok",
        }
        if release:
            info = WINDOWS_RELEASES[release]
            name = f"{info['short']}-{index}"
            labels["node.kubernetes.io/windows-build"] = info["build"]
            node_info = {"osImage": info["os_image"], "kernelVersion": info["kernel"]}
            runtime = info["runtime"]
            capacity = {"cpu": "4", "memory": "16776700Ki", "pods": "30", "ephemeral-storage": "133703676Ki"}
            allocatable = {"cpu": "3860m", "memory": "13420348Ki", "pods": "30", "ephemeral-storage": "123221877Ki"}
        else:
            name = f"linux-{index}"
            node_info = {"osImage": LINUX_OS_IMAGE, "kernelVersion": LINUX_KERNEL}
            runtime = CONTAINERD_VERSION
            capacity = {"cpu": "4", "memory": "16374584Ki", "pods": "110", "ephemeral-storage": "129886128Ki"}
            allocatable = {"cpu": "3860m", "memory": "12880184Ki", "pods": "110", "ephemeral-storage": "119703055Ki"}
        labels["kubernetes.io/hostname"] = name
        spec: dict[str, Any] = {"providerID": f"kwok://{name}", "podCIDR": f"10.244.{ordinal}.0/24"}
        spec["podCIDRs"] = [spec["podCIDR"]]
        if release and self.windows_taint:
            spec["taints"] = [parse_taint(self.windows_taint)]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {
                    SIMULATED_ANNOTATION: "fake",
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": spec,
            "status": {
                "capacity": capacity,
                "allocatable": allocatable,
                "addresses": [
                    {"type": "InternalIP", "address": f"10.224.0.{4 + ordinal}"},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": os_name,
                    "containerRuntimeVersion": runtime,
                    "kubeletVersion": kubelet_version,
                    "kubeProxyVersion": "",
                    "bootID": "",
                    "machineID": "",
                    "systemUUID": "",
                    **node_info,
                },
            },
        }
