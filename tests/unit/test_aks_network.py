"""AKS read as AKS deploys it (issue 31 item 3): for each pod network mode AKS documents (Azure CNI node subnet,
Overlay, Pod Subnet with dynamic IP allocation, kubenet) with each policy engine (none, Azure NPM, Calico), the
nodes and add-on objects such a cluster carries (tests/data/clouds/aks-*.yaml, each with its .source) give the
pod network and the policy engine the sources name. A mode the objects cannot tell apart is unknown."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from wincon.clusterinfo import aks
from wincon.clusterinfo.profile import CNI_ALIASES, CNI_DAEMONSETS, network_objects, profile_from
from wincon.documents.limitations import load, match

CLOUDS = Path(__file__).resolve().parents[1] / "data" / "clouds"
NAMES = sorted(p.name.removesuffix(".yaml") for p in CLOUDS.glob("aks-*.yaml"))
MODES = {"node-subnet", "overlay", "pod-subnet", "kubenet"}


def cluster(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    objects = [o for o in yaml.safe_load_all((CLOUDS / f"{name}.yaml").read_text()) if o]
    return objects, yaml.safe_load((CLOUDS / f"{name}.yaml.source").read_text())


def test_every_documented_mode_and_engine_has_cited_objects():
    seen = {(n.split("-", 1)[1].rsplit("-", 1)[0].removesuffix("-azure"), n.rsplit("-", 1)[1]) for n in NAMES}
    for mode in MODES - {"kubenet"}:
        for engine in ("none", "npm", "calico"):
            assert (mode, engine) in seen, (mode, engine)
    assert {("kubenet", "none"), ("kubenet", "calico")} <= seen  # Azure NPM needs Azure CNI (use-network-policies)
    for name in NAMES:
        _, source = cluster(name)
        assert source["cluster"] == name and len(source["sources"]) >= 3, name


@pytest.mark.parametrize("name", NAMES)
def test_an_aks_cluster_gives_its_pod_network_and_policy_engine(name):
    objects, source = cluster(name)
    profile = profile_from("v1.33.5", network_objects(objects))
    expect = source["expect"]
    assert (profile.cloud, profile.cni, profile.cni_backend, profile.network_policy) == (
        "azure",
        expect["cni"],
        expect["cni_backend"],
        expect["network_policy"],
    )


def test_calico_on_aks_is_never_the_pod_network():
    """The issue's first case: Azure CNI with Calico policy was read as a Calico pod network. Calico on AKS runs
    with CALICO_NETWORKING_BACKEND none (policy only), in every mode."""
    for name in (n for n in NAMES if n.endswith("-calico")):
        objects, _ = cluster(name)
        profile = profile_from("v1.33.5", network_objects(objects))
        assert profile.cni != "calico" and profile.network_policy == "calico", name


def test_node_subnet_with_npm_is_azure_cni_not_unknown():
    """The issue's second case: node subnet with Azure NPM (no CNS DaemonSet, no mode label) was unknown."""
    objects, _ = cluster("aks-node-subnet-azure-npm")
    assert not [o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("azure-cns")]
    profile = profile_from("v1.33.5", network_objects(objects))
    assert (profile.cni, profile.cni_backend, profile.network_policy) == ("azure-cni", "node-subnet", "azure-npm")


def without_label(objects: list[dict[str, Any]], label: str, os: str) -> list[dict[str, Any]]:
    changed = copy.deepcopy(objects)
    for obj in changed:
        labels = obj["metadata"].get("labels") or {}
        if obj["kind"] == "Node" and labels.get("kubernetes.io/os") == os:
            labels.pop(label, None)
    return changed


def test_the_policy_label_of_a_linux_node_speaks_for_the_cluster():
    """network-policy is the cluster's setting (networkProfile.networkPolicy): a Windows node without the label
    (an older node object) still reads Calico from the Linux nodes, as AKS installs it on both pools."""
    objects, _ = cluster("aks-overlay-calico")
    profile = profile_from("v1.33.5", network_objects(without_label(objects, aks.NETWORK_POLICY_LABEL, "windows")))
    assert profile.network_policy == "calico"


def test_npm_label_without_the_windows_daemonset_is_unknown_on_windows():
    objects, _ = cluster("aks-overlay-azure-npm")
    linux_only = [o for o in objects if o["metadata"]["name"] != aks.NPM_WINDOWS_DAEMONSET]
    profile = profile_from("v1.33.5", network_objects(linux_only))
    assert profile.network_policy == "unknown"
    assert aks.NPM_WINDOWS_DAEMONSET in aks.network_policy(network_objects(linux_only).nodes, [])[1]


def test_no_policy_label_falls_back_to_what_the_daemonsets_show():
    objects, _ = cluster("aks-overlay-azure-npm")
    for os in ("linux", "windows"):
        objects = without_label(objects, aks.NETWORK_POLICY_LABEL, os)
    profile = profile_from("v1.33.5", network_objects(objects))
    assert profile.network_policy == "azure-npm"  # azure-npm-win runs on the Windows nodes
    calico, _ = cluster("aks-overlay-calico")
    for os in ("linux", "windows"):
        calico = without_label(calico, aks.NETWORK_POLICY_LABEL, os)
    assert profile_from("v1.33.5", network_objects(calico)).network_policy == "unknown"  # calico-node: Linux only


def test_cilium_and_a_capz_cluster():
    objects, _ = cluster("aks-overlay-none")
    cilium = copy.deepcopy(objects)
    for obj in cilium:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"][aks.EBPF_DATAPLANE_LABEL] = "cilium"
    assert profile_from("v1.33.5", network_objects(cilium)).cni == "cilium"
    # Without AKS's cluster label (CAPZ on Azure) nothing here applies: the DaemonSets are read as before.
    capz = without_label(without_label(objects, aks.CLUSTER_LABEL, "linux"), aks.CLUSTER_LABEL, "windows")
    assert not aks.is_aks(network_objects(capz).nodes)
    assert profile_from("v1.33.5", network_objects(capz)).cni == "azure-cni"  # azure-cns, read by name


def test_limitation_conditions_name_the_cni_the_profile_gives():
    """limitations.yaml's cni conditions: every name used resolves for the AKS modes through CNI_ALIASES, and the
    azure-cni entries apply to all three Azure CNI modes (the backend never hides the CNI's own name)."""
    entries = load()
    objects, _ = cluster("aks-overlay-none")
    names = {n for entry in entries.values() for n in (entry.applies_when or {}).get("cni", [])}
    known = {alias for aliases in CNI_ALIASES.values() for alias in aliases} | {cni for cni, _ in CNI_DAEMONSETS}
    assert "azure-cni" in names and names <= known, names - known  # each a name detection can give
    icmp = entries["icmp-egress-through-vfp"]
    for mode in ("node-subnet", "overlay", "pod-subnet"):
        objects, _ = cluster(f"aks-{mode}-none")
        profile = profile_from("v1.33.5", network_objects(objects))
        assert "azure-cni" in profile.cni_aliases
        assert match(icmp, profile).applies, mode
    unknown = profile_from("v1.33.5", network_objects(cluster("aks-kubenet-calico")[0]))
    unread = match(icmp, unknown, nodes=unknown.nodes)  # kubenet has no Windows node: asked of its Linux nodes
    assert not unread.applies and unread.unknown == ("cni",)  # an unknown pod network never matches a condition
