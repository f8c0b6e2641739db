"""The kubelet reads have one home (issue 43, item 3): wincon/cluster/kubelet.py defines kubelet_get, kubelet_query,
kubelet_json, kubelet_config and KubeletAnswer; no other module of wincon/ or suites/ defines its own, and the old
place (wincon.checks.node) names the very same objects for the users not moved yet."""

from __future__ import annotations

import ast
from pathlib import Path

from wincon.checks import node
from wincon.cluster import kubelet

ROOT = Path(__file__).resolve().parents[2]
READS = ("KubeletAnswer", "kubelet_get", "kubelet_query", "kubelet_json", "kubelet_config")


def test_only_wincon_cluster_kubelet_defines_the_kubelet_reads():
    defined = {
        (str(path.relative_to(ROOT)), stmt.name)
        for top in ("wincon", "suites")
        for path in (ROOT / top).rglob("*.py")
        for stmt in ast.walk(ast.parse(path.read_text()))
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef) and stmt.name in READS
    }
    assert defined == {("wincon/cluster/kubelet.py", name) for name in READS}


def test_the_old_place_names_the_same_objects():
    for name in READS:
        assert getattr(node, name) is getattr(kubelet, name), name


def test_kubelet_config_unwraps_configz():
    assert kubelet.kubelet_config({"kubeletconfig": {"cgroupRoot": "/"}}) == {"cgroupRoot": "/"}
