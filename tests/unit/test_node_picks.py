"""One definition of schedulable nodes and of the node a check asks (issue 43, item 3): wincon.clusterinfo.nodes.schedulable
(the taint rule itself is wincon.clusterinfo.profile.tolerated, which discovery asks below wincon.clusterinfo.nodes), the network suite's
``pods.schedulable`` is that function, and the profile's ``schedulable_untolerated`` is the same rule without
readiness."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from wincon.checks import pods as check_pods
from wincon.clusterinfo import nodes, profile
from wincon.network import pods as network_pods
from wincon.workloads.pinning import WINDOWS_TOLERATIONS

EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]


def node(name: str, os_name: str = "linux", taints: list[str] | None = None, **facts) -> NS:
    base = {"ready": True, "data_plane": True, "windows_build": 26100 if os_name == "windows" else None}
    return NS(name=name, os=os_name, taints=taints or [], **{**base, **facts})


@pytest.mark.parametrize("effect", EFFECTS)
@pytest.mark.parametrize("ready", [True, False])
def test_the_three_former_rules_agree_with_the_one_left(effect, ready):
    """The definitions this replaced (network/pods.schedulable, profile.schedulable_untolerated) said the same
    for every taint effect: a NoSchedule or NoExecute taint blocks an untolerating pod, PreferNoSchedule never."""
    n = node("n", taints=[f"node-role.kubernetes.io/control-plane=:{effect}"], ready=ready)
    former_network = n.ready and not any(t.endswith((":NoSchedule", ":NoExecute")) for t in n.taints)
    former_profile = not any(t.rpartition(":")[2] in ("NoSchedule", "NoExecute") for t in n.taints)
    assert nodes.schedulable(n) is former_network  # type: ignore[arg-type]
    assert profile.schedulable_untolerated(n) is former_profile  # type: ignore[arg-type]
    assert network_pods.schedulable is nodes.schedulable


def test_windows_tolerations_make_a_windows_tainted_node_schedulable():
    tainted = node("win-a", "windows", taints=["os=windows:NoSchedule"])
    other = node("win-b", "windows", taints=["dedicated=gpu:NoSchedule"])
    cluster = NS(ready_windows_nodes=[other, tainted], linux_nodes=[])
    assert nodes.schedulable_windows_nodes(cluster, WINDOWS_TOLERATIONS) == ["win-a"]  # type: ignore[arg-type]
    assert check_pods.schedulable_windows_nodes(cluster) == ["win-a"]  # type: ignore[arg-type]
    assert not nodes.schedulable(tainted)  # type: ignore[arg-type]


def test_pick_node_takes_the_first_schedulable_node_of_the_build_or_a_linux_worker_with_a_data_plane():
    cluster = NS(
        ready_windows_nodes=[
            node("win-c", "windows"),
            node("win-b", "windows", windows_build=20348),
            node("win-a", "windows", taints=["dedicated=gpu:NoSchedule"]),
        ],
        linux_nodes=[node("worker-1"), node("worker-0", data_plane=False), node("worker-2", ready=False)],
    )
    pick = nodes.pick_node
    assert pick(cluster, "windows", 26100, WINDOWS_TOLERATIONS).name == "win-c"  # type: ignore[arg-type, union-attr]
    assert pick(cluster, "windows", 20348, WINDOWS_TOLERATIONS).name == "win-b"  # type: ignore[arg-type, union-attr]
    assert pick(cluster, "windows", 17763, WINDOWS_TOLERATIONS) is None  # type: ignore[arg-type]
    assert pick(cluster, "linux", None, WINDOWS_TOLERATIONS).name == "worker-1"  # type: ignore[arg-type, union-attr]
