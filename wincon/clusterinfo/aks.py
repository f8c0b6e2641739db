"""AKS's pod network and NetworkPolicy engine, read from what AKS itself writes on its nodes.

On AKS the DaemonSets alone mislead: Calico there is a policy engine only (its pods never give pods addresses),
Azure NPM's DaemonSets say nothing of the pod network, and AKS lists the Windows CNS DaemonSet before any
Windows node exists (azure-cns-win with DESIRED 0 in a fresh overlay cluster's kube-system). What AKS's resource provider writes on every node says which mode the cluster runs in.
Every fact used here, with its public source:

* AKS nodes carry ``kubernetes.azure.com/cluster`` (the node resource group), always: Azure/karpenter-provider-
  azure pkg/providers/labels/labels.go ("Add labels that are always there": kubernetes.azure.com/role and
  kubernetes.azure.com/cluster), written as the kubelet's --node-labels by Azure/AgentBaker
  pkg/agent/datamodel/types.go GetKubernetesLabels (the resource provider's CustomNodeLabels). A CAPZ cluster,
  also on Azure, has no such label and is not read here.
* Azure CNI Overlay: ``kubernetes.azure.com/podnetwork-type=overlay`` and ``kubernetes.azure.com/azure-cni-overlay=
  true`` on Linux and Windows nodes: Azure/azure-container-networking test/validate/validate.go ("IPv4 overlay
  Linux and windows nodes must have this label"), karpenter-provider-azure labels.go (IsAzureCNIOverlay: both
  labels), AgentBaker e2e/scenario_test.go (the resource provider's overlay node labels).
* Azure CNI Pod Subnet (dynamic IP allocation): the node carries the pod subnet it draws from,
  ``kubernetes.azure.com/podnetwork-subnet`` and ``kubernetes.azure.com/podnetwork-delegationguid``
  (azure-container-networking test/internal/kubernetes/utils.go SubnetNameLabel and DelegatedSubnetIDLabel, the
  labels its tests select the pod subnet's nodes by; .pipelines/swiftv2-long-running/scripts/byon_helper.sh
  PODNETWORK_LABEL_KEYS, the "podnetwork labels that must be copied from managed nodes").
* Azure CNI Node Subnet (legacy): none of those labels. AKS Windows node pools run only Azure CNI
  (MicrosoftDocs/azure-aks-docs articles/aks/windows-best-practices.md, "AKS clusters with Windows node pools only
  support Azure Container Networking Interface (Azure CNI)"; configure-kubenet.md, "The kubenet network model isn't available for Windows Server
  containers"; azure-cni-powered-by-cilium.md: "Available only for Linux and not for Windows"),
  so an AKS cluster with Windows nodes and neither the overlay nor the pod subnet labels runs Azure CNI in node
  subnet mode. Without Windows nodes the same objects fit kubenet as well: that cluster's pod network is unknown
  (never guessed: a Calico DaemonSet there is still only the policy engine).
* Cilium (Azure CNI powered by Cilium): ``kubernetes.azure.com/ebpf-dataplane=cilium`` on its nodes, "required
  for the cilium agent daemonset because we select the nodes for the daemonset based on this label"
  (karpenter-provider-azure labels.go); Linux only.
* The policy engine: ``kubernetes.azure.com/network-policy`` = none | azure | calico | cilium, the cluster's
  networkProfile.networkPolicy, on every node (karpenter-provider-azure designs/0006-requirements-and-labels.md
  marks it in its "AKS (observed or code)" column, values "none or calico or azure"). ``--network-policy calico`` "enables Calico on both Linux and
  Windows node pools" (azure-aks-docs use-network-policies.md); on Windows AKS's node setup installs Calico as
  the CalicoNode and CalicoFelix services with CALICO_NETWORKING_BACKEND none and KUBE_NETWORK azure.*
  (AgentBaker staging/cse/windows/calicofunc.ps1 Start-InstallCalico): policy only, no DaemonSet on Windows.
  Azure NPM runs on Windows only as the azure-npm-win DaemonSet (azure-container-networking
  npm/examples/windows/azure-npm.yaml), only on Windows Server 2022 behind the WindowsNetworkPolicyPreview feature,
  and AKS ends it there on 2026-09-30 (use-network-policies.md and its NPM-on-Windows retirement include): with
  ``network-policy=azure`` and no azure-npm-win DaemonSet, the Windows nodes' engine is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

LABEL_DOMAIN = "kubernetes.azure.com/"
CLUSTER_LABEL = LABEL_DOMAIN + "cluster"
POD_NETWORK_TYPE_LABEL = LABEL_DOMAIN + "podnetwork-type"
OVERLAY_LABEL = LABEL_DOMAIN + "azure-cni-overlay"
POD_SUBNET_LABELS = (LABEL_DOMAIN + "podnetwork-subnet", LABEL_DOMAIN + "podnetwork-delegationguid")
EBPF_DATAPLANE_LABEL = LABEL_DOMAIN + "ebpf-dataplane"
NETWORK_POLICY_LABEL = LABEL_DOMAIN + "network-policy"

# The pod network modes AKS documents, as (cni, backend) in the profile.
NODE_SUBNET = ("azure-cni", "node-subnet")
OVERLAY = ("azure-cni", "overlay")
POD_SUBNET = ("azure-cni", "pod-subnet")
CILIUM = ("cilium", None)
UNKNOWN = ("unknown", None)

# network-policy label values and the engine each names on the profile.
POLICY_ENGINES = {"none": "none", "azure": "azure-npm", "calico": "calico", "cilium": "cilium"}
NPM_WINDOWS_DAEMONSET = "azure-npm-win"


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def _os(node: dict[str, Any]) -> str:
    return _labels(node).get("kubernetes.io/os", "")


def is_aks(nodes: Iterable[dict[str, Any]]) -> bool:
    """Whether these are an AKS cluster's nodes: AKS writes kubernetes.azure.com/cluster on every one."""
    return any(CLUSTER_LABEL in _labels(n) for n in nodes)


def pod_network(nodes: list[dict[str, Any]]) -> tuple[tuple[str, str | None], str]:
    """The AKS cluster's pod network as (cni, backend), and the evidence read. ("unknown", None) where its
    nodes do not tell the modes apart (no Windows node, none of the mode labels: node subnet or kubenet)."""
    for node in nodes:
        labels = _labels(node)
        name = (node.get("metadata") or {}).get("name", "")
        if labels.get(EBPF_DATAPLANE_LABEL) == "cilium":
            return CILIUM, f"node {name}: {EBPF_DATAPLANE_LABEL}=cilium"
        if labels.get(POD_NETWORK_TYPE_LABEL) == "overlay" or labels.get(OVERLAY_LABEL) == "true":
            return OVERLAY, f"node {name}: {POD_NETWORK_TYPE_LABEL}=overlay / {OVERLAY_LABEL}=true"
        if any(labels.get(label) for label in POD_SUBNET_LABELS):
            return POD_SUBNET, f"node {name}: {POD_SUBNET_LABELS[0]}={labels.get(POD_SUBNET_LABELS[0], '')}"
    windows = [n for n in nodes if _os(n) == "windows"]
    if windows:
        name = (windows[0].get("metadata") or {}).get("name", "")
        return NODE_SUBNET, (
            f"Windows node {name} without the overlay or pod subnet labels: AKS Windows pools run only Azure CNI"
        )
    return UNKNOWN, "no Windows node and none of AKS's pod network labels: node subnet and kubenet look alike"


def network_policy(nodes: list[dict[str, Any]], daemonsets: Iterable[str]) -> tuple[str, str] | None:
    """The policy engine on the AKS cluster's Windows nodes and how it was seen; None where no node carries
    AKS's network-policy label (the caller then reads the DaemonSets as on any cluster)."""
    ordered = sorted(nodes, key=lambda n: _os(n) != "windows")  # a Windows node's own label first
    for node in ordered:
        value = _labels(node).get(NETWORK_POLICY_LABEL)
        if value not in POLICY_ENGINES:
            continue
        name = (node.get("metadata") or {}).get("name", "")
        seen = f"node {name}: {NETWORK_POLICY_LABEL}={value}"
        if value == "azure" and NPM_WINDOWS_DAEMONSET not in set(daemonsets):
            return "unknown", f"{seen}, but no {NPM_WINDOWS_DAEMONSET} DaemonSet: Azure NPM runs on Linux nodes only"
        return POLICY_ENGINES[value], seen
    return None
