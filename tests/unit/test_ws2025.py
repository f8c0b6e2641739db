"""Windows Server 2025 (build 26100) on containerd 2.x, read as the suite reads any Windows node (issue 31 part 4).

A real AKS Windows Server 2025 node, as AKS's own documentation lists it (MicrosoftDocs/azure-aks-docs,
articles/aks/upgrade-windows-os.md, "Apply the updated YAML file to the existing workload", `kubectl get nodes
-o wide`: akswspool000000, v1.33.12, "Windows Server 2025 Datacenter", 10.0.26100.32995, containerd://2.0.4+azure,
beside Windows Server 2022 nodes on containerd://1.6.6+azure), the local cluster's simulated nodes of the new default
topology (ltsc2022 and ltsc2025), and the limitations' matcher and the plan of the whole suite on them.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

import pytest

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile, node_profile
from wincon.commandline.commands import collect
from wincon.documents.limitations import Limitation, component_version, load, match, parse_version
from wincon.localcluster.topology import DEFAULT_WINDOWS_VERSIONS, WINDOWS_RELEASES, Topology

# The columns of that documented `kubectl get nodes -o wide` table, as the Node object carries them (its labels
# beyond the OS are not shown there, so the build is read from the kernel version, as for any node without the
# node.kubernetes.io/windows-build label).
AKS_DOC = "MicrosoftDocs/azure-aks-docs articles/aks/upgrade-windows-os.md"


def aks_node(name: str, os_image: str, kernel: str, runtime: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64"}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {
                "operatingSystem": "windows",
                "osImage": os_image,
                "kernelVersion": kernel,
                "containerRuntimeVersion": runtime,
                "kubeletVersion": "v1.33.12",
            },
        },
    }


AKS_WS2025 = aks_node(
    "akswspool000000", "Windows Server 2025 Datacenter", "10.0.26100.32995", "containerd://2.0.4+azure"
)
AKS_WS2022 = aks_node("akspoolws000000", "Windows Server 2022 Datacenter", "10.0.20348.825", "containerd://1.6.6+azure")


def test_a_real_aks_windows_server_2025_node_is_ltsc2025_on_containerd_2():
    node = node_profile(AKS_WS2025)
    assert (node.os, node.windows_build, node.os_version) == ("windows", 26100, "ltsc2025")
    assert (node.runtime, node.runtime_version) == ("containerd", "2.0.4+azure")
    assert component_version("containerd_version", ClusterProfile("v1.33.12", nodes=[node]), node) == (
        "containerd version of node akswspool000000",
        parse_version("2.0.4"),
    )


@pytest.mark.parametrize(
    "reported, runtime, version, parsed",
    [
        ("containerd://2.0.4+azure", "containerd", "2.0.4+azure", "2.0.4"),  # AKS Windows2025 pools (AKS_DOC)
        ("containerd://2.1.6", "containerd", "2.1.6", "2.1.6"),  # EKS Windows Server 2025 AMIs (issue 31)
        ("containerd://1.6.6+azure", "containerd", "1.6.6+azure", "1.6.6"),  # AKS Windows2022 pools (AKS_DOC)
        ("containerd://1.7.33-1", "containerd", "1.7.33-1", "1.7.33"),  # AKS Ubuntu pool (AKS_DOC)
        ("containerd://1.4.4+unknown", "containerd", "1.4.4+unknown", "1.4.4"),  # Azure/azure-workload-identity#46
        ("docker://19.3.14", "docker", "19.3.14", "19.3.14"),  # Azure/aks-engine#4176 (a Windows node on Docker)
    ],
)
def test_runtime_versions_are_read_with_their_build_suffixes(reported, runtime, version, parsed):
    node = node_profile(aks_node("n", "Windows Server 2025 Datacenter", "10.0.26100.1", reported))
    assert (node.runtime, node.runtime_version) == (runtime, version)
    assert parse_version(node.runtime_version) == parse_version(parsed)
    if runtime == "containerd":
        profile = ClusterProfile("v1.37.2", nodes=[node])
        assert component_version("containerd_version", profile, node)[1] == parse_version(parsed)


def limitation(**kw: Any) -> Limitation:
    base = dict(
        id="x", title="t", area="runtime", statement="s", sources=({"file": "f", "section": "s"},), mode="xfail"
    )
    return Limitation(**{**base, **kw})


def test_containerd_2_versions_decide_applies_when_and_lifted_in():
    ws2025 = node_profile(AKS_WS2025)
    ws2022 = node_profile(AKS_WS2022)
    profile = ClusterProfile("v1.33.12", nodes=[ws2025, ws2022])
    before_2 = limitation(applies_when={"containerd_version": "<2.0"})
    assert not match(before_2, profile, ws2025).applies and match(before_2, profile, ws2022).applies
    lifted_in_2_1 = limitation(lifted_in={"containerd_version": "2.1", "note": "fixed in containerd 2.1"})
    held = match(lifted_in_2_1, profile, ws2025)
    assert held.applies and "containerd 2.0.4 < 2.1" in " ".join(held.facts)
    eks = node_profile(aks_node("eks", "Windows Server 2025 Datacenter", "10.0.26100.1", "containerd://2.1.6"))
    lifted = match(lifted_in_2_1, ClusterProfile("v1.35.0", nodes=[eks]), eks)
    assert not lifted.applies and "containerd 2.1.6 >= 2.1" in " ".join(lifted.facts)


def test_every_limitation_decides_the_same_on_a_ws2025_node_as_on_a_ws2022_node_of_the_same_versions():
    """The review of limitations.yaml for Windows Server 2025 (docs/limitations.md): no entry is lifted or newly
    applies on build 26100 (none is gated on a build above 17763, and no source lifts one there), so every entry
    decides the same on an ltsc2025 node as on an ltsc2022 node running the same kubelet and containerd."""
    compared = 0
    for runtime_version in ("1.7.27", "2.0.4+azure"):
        nodes = [
            NodeProfile(
                name=f"w{build}",
                os="windows",
                arch="amd64",
                ready=True,
                simulated=False,
                kubelet_version="v1.37.2",
                windows_build=build,
                runtime="containerd",
                runtime_version=runtime_version,
            )
            for build in (20348, 26100)
        ]
        profile = ClusterProfile("v1.37.2", nodes=nodes, cni="flannel", cni_backend="vxlan")
        for entry in load().values():
            for isolation in ("process", "hyperv"):
                on_2022, on_2025 = (match(entry, profile, node, isolation) for node in nodes)
                assert on_2022.applies == on_2025.applies, (entry.id, isolation, on_2022, on_2025)
                compared += 1
    assert compared > 100


def test_the_local_cluster_defaults_to_windows_server_2022_and_2025():
    topology = Topology()
    assert topology.windows_versions == list(DEFAULT_WINDOWS_VERSIONS) == ["ltsc2022", "ltsc2025"]
    nodes = {n["metadata"]["name"]: node_profile(n) for n in topology.nodes("v1.37.2")}
    windows = {name: n for name, n in nodes.items() if n.os == "windows"}
    assert {name: (n.windows_build, n.os_version) for name, n in windows.items()} == {
        "win2022-0": (20348, "ltsc2022"),
        "win2025-0": (26100, "ltsc2025"),
    }
    assert windows["win2025-0"].runtime_version == "2.0.4+azure"  # as AKS's Windows2025 pools report it
    assert windows["win2022-0"].runtime_version == "1.7.27"
    assert all(n.simulated for n in windows.values())
    assert Topology(windows_versions=["ltsc2019"]).nodes("v1")[0]["metadata"]["name"] == "win2019-0"  # still offered
    assert set(WINDOWS_RELEASES) == {"ltsc2019", "ltsc2022", "ltsc2025"}


def local_profile(windows_versions: list[str]) -> dict[str, Any]:
    """The profile file of a local cluster of this topology: its simulated Windows nodes as node_profile reads
    them from their Node objects, and the two real Linux workers."""
    nodes = [asdict(node_profile(n)) for n in Topology(windows_versions=windows_versions).nodes("v1.37.2")]
    for node in nodes:
        node["taints"] = list(node["taints"])
    workers = [
        {"name": f"worker-{i}", "os": "linux", "arch": "amd64", "ready": True, "simulated": False} for i in range(2)
    ]
    return {
        "server_version": "v1.37.2",
        "cni": "flannel",
        "cni_backend": "vxlan",
        "cloud": "kwok",
        "nodes": nodes + workers,
    }


def plan_rows(tmp_path, windows_versions: list[str], rename: dict[str, str]) -> dict[str, tuple[str, str]]:
    """`wincon plan` of every suite file on that profile: (outcome, reason) by test id, with node names, builds and
    versions renamed to their place in the topology so two topologies compare."""
    path = tmp_path / f"{'-'.join(windows_versions)}.json"
    path.write_text(json.dumps(local_profile(windows_versions)))
    dump, output = collect(["suites"], ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output[-2000:]
    pattern = re.compile("|".join(re.escape(k) for k in sorted(rename, key=len, reverse=True)))

    def norm(text: str) -> str:
        return pattern.sub(lambda m: rename[m.group(0)], text)

    return {norm(row["nodeid"]): (row["outcome"], norm(row["reason"])) for row in dump["tests"]}


def test_the_suite_plans_on_the_new_default_nodes_as_on_the_former_ones(tmp_path):
    """Before: ltsc2019 + ltsc2022 (win2019-0, win2022-0). Now: ltsc2022 + ltsc2025 (win2022-0, win2025-0). Every
    check plans the same (run, skip or xfail, with the same reason) once each node is named by its place."""
    former = plan_rows(
        tmp_path,
        ["ltsc2019", "ltsc2022"],
        {
            **{"win2019-0": "WIN-A", "win2022-0": "WIN-B", "17763": "BUILD-A", "20348": "BUILD-B"},
            **{"ltsc2019": "V-A", "ltsc2022": "V-B", "Win1809": "T-A", "Win2022": "T-B"},
        },
    )
    now = plan_rows(
        tmp_path,
        ["ltsc2022", "ltsc2025"],
        {
            **{"win2022-0": "WIN-A", "win2025-0": "WIN-B", "20348": "BUILD-A", "26100": "BUILD-B"},
            **{"ltsc2022": "V-A", "ltsc2025": "V-B", "Win2022": "T-A", "Win2025": "T-B"},
        },
    )
    assert len(now) == len(former) > 300
    assert set(now) == set(former)
    changed = {test: (former[test], now[test]) for test in former if former[test] != now[test]}
    assert not changed, json.dumps(changed, indent=1)[:3000]
    outcomes = {outcome for outcome, _ in now.values()}
    assert {"run", "skip"} <= outcomes  # the simulated nodes still run the API checks and skip the data-plane ones


def test_build_26100_is_read_where_a_build_is_read():
    """Placement (the pinning selector and its read back), the KEP-style taint value, the catalog's image choice and
    the limitations' build specifiers, for the WS2025 node of each topology."""
    from wincon.checks.scheduling import TAINT_VALUES
    from wincon.clusterinfo.profile import WINDOWS_BUILD_LABEL, parse_build
    from wincon.workloads.catalog import Catalog
    from wincon.workloads.pinning import pin_windows

    simulated = next(n for n in Topology().nodes("v1.37.2") if n["metadata"]["name"] == "win2025-0")
    label = simulated["metadata"]["labels"][WINDOWS_BUILD_LABEL]
    assert (label, parse_build(label)) == ("10.0.26100", 26100)
    spec = pin_windows({"containers": []}, build=26100)
    assert spec["nodeSelector"][WINDOWS_BUILD_LABEL] == label  # the pinned pod selects that node
    assert TAINT_VALUES[26100] == "Win2025"
    catalog = Catalog.load()
    assert catalog.windows_builds["ltsc2025"] == 26100
    assert all("ltsc2025" in spec.windows_versions for spec in catalog.images.values() if "windows" in spec.os)
    gated = limitation(applies_when={"windows_build": ">=26100"})
    node = node_profile(AKS_WS2025)
    assert match(gated, ClusterProfile("v1.33.12", nodes=[node]), node).applies
    older = node_profile(AKS_WS2022)
    assert not match(gated, ClusterProfile("v1.33.12", nodes=[older]), older).applies
