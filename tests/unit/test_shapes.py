"""Real clusters' shapes (tests/data/shapes/, issue 19 item 4): for each provider shape, the objects that identify
it give the facts and the plan its facts file names (pod network and policy engine apart, kube-proxy mode, cloud,
NetworkPolicy and LoadBalancer checks, limitation applicability). tests/integration/test_shapes.py loads the same
objects into a local cluster and checks `wincon profile` and `wincon plan` there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile, network_objects, profile_from
from wincon.documents.limitations import load, match

SHAPES = Path(__file__).resolve().parents[1] / "data" / "shapes"
NAMES = sorted(p.name.removesuffix(".facts.yaml") for p in SHAPES.glob("*.facts.yaml"))
REQUIRED = {  # the shapes issue 19 names, each at least once
    "aks-azure-cni-azure-npm",
    "aks-azure-cni-calico",
    "eks-vpc-cni-windows-ipam",
    "eks-vpc-cni-calico",
    "gke-windows-pool",
    "capz-calico-vxlan",
    "capz-flannel-vxlan",
    "rke2-calico",
}


def shape(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    objects = [o for o in yaml.safe_load_all((SHAPES / f"{name}.yaml").read_text()) if o]
    return objects, yaml.safe_load((SHAPES / f"{name}.facts.yaml").read_text())


def facts_of(profile: ClusterProfile) -> dict[str, Any]:
    return {
        "cloud": profile.cloud,
        "cni": profile.cni,
        "cni_backend": profile.cni_backend,
        "network_policy": profile.network_policy,
        "kube_proxy_mode": profile.kube_proxy_mode,
    }


def plan_of(profile: ClusterProfile, limitation_ids: list[str]) -> dict[str, Any]:
    """What the plan decides from these facts: the capabilities' skip or run, each limitation's applicability."""
    entries = load()
    return {
        "network_policy_checks": "skip" if capabilities.has(profile, "network-policy") is False else "run",
        "load_balancer_checks": "skip" if capabilities.has(profile, "load-balancer") is False else "run",
        "limitations": {
            lid: "applies" if match(entries[lid], profile).applies else "does not apply" for lid in limitation_ids
        },
    }


def test_the_corpus_covers_every_shape_with_its_sources():
    assert REQUIRED <= set(NAMES), REQUIRED - set(NAMES)
    for name in NAMES:
        _, facts = shape(name)
        assert facts["shape"] == name and len(facts["sources"]) >= 2, name
        assert (SHAPES / f"{name}.yaml").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_a_shape_gives_the_facts_and_plan_its_sources_name(name):
    objects, expected = shape(name)
    profile = profile_from("v1.31.5", network_objects(objects))
    assert facts_of(profile) == expected["facts"]
    assert plan_of(profile, list(expected["plan"]["limitations"])) == expected["plan"]


def test_a_policy_only_calico_is_not_taken_for_the_pod_network():
    """AKS with Calico network policy used to be detected as azure-cni for both questions; EKS with Calico as
    calico for the pod network. Each answer now comes from its own component."""
    for name, cni in (("aks-azure-cni-calico", "azure-cni"), ("eks-vpc-cni-calico", "aws-vpc-cni")):
        objects, _ = shape(name)
        profile = profile_from("v1.31.5", network_objects(objects))
        assert (profile.cni, profile.network_policy) == (cni, "calico")
