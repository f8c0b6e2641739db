"""Real clusters' shapes on a live API server (issue 19, item 4): each shape of tests/data/shapes/ is loaded into an
otherwise empty local cluster (`--dataplane none`, one simulated Linux node, no CNI objects), and `wincon profile`
and `wincon plan` must derive the facts and the plan its facts file names (pod network, policy engine, kube-proxy
mode, cloud; NetworkPolicy and LoadBalancer checks; limitation applicability). Each shape is removed before the
next. The cluster has a name of its own (``WINCON_SHAPES_CLUSTER`` to choose it) and is removed at the end.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_aks_network import NAMES as AKS_NAMES
from tests.unit.test_aks_network import cluster as aks_cluster
from tests.unit.test_shapes import NAMES, shape
from wincon.cli import main

SUITES = Path(__file__).resolve().parents[2] / "suites" / "networking"
PLANNED = [
    str(SUITES / "test_network_policy.py"),
    str(SUITES / "test_services.py") + "::test_loadbalancer_service_reaches_windows_pods",
    str(SUITES / "test_egress.py") + "::test_pod_pings_external_ip",
]


@pytest.fixture(scope="module")
def empty_cluster(localcluster_binaries: Path) -> Iterator[str]:
    from wincon.localcluster.cluster import down, lock_path, up
    from wincon.localcluster.topology import Topology

    name = os.environ.get("WINCON_SHAPES_CLUSTER") or f"wincon-shapes-{uuid.uuid4().hex[:6]}"
    try:
        topology = Topology(windows_nodes=0, linux_nodes=1, dataplane="none", cni="none")
        kubeconfig = str(up(name=name, topology=topology))
        empty(_api(kubeconfig))
        yield kubeconfig
    finally:
        down(name)
        lock_path(name).unlink(missing_ok=True)


def _api(kubeconfig: str) -> Any:
    from wincon.cluster.client import load_api_client

    return load_api_client(kubeconfig)  # leaves none of the kubeconfig's embedded credentials in /tmp


def empty(api: Any) -> None:
    """Remove what the local cluster itself deploys where the shapes put theirs (its kube-proxy DaemonSet and
    ConfigMap, on a cluster where nothing really runs), so that only the shape's objects speak."""
    from kubernetes import client

    from wincon.clusterinfo.profile import CNI_CONFIGMAPS

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    found = [
        {"kind": "DaemonSet", "metadata": {"name": d.metadata.name, "namespace": "kube-system"}}
        for d in apps.list_namespaced_daemon_set("kube-system").items
    ] + [
        {"kind": "ConfigMap", "metadata": {"name": c.metadata.name, "namespace": "kube-system"}}
        for c in core.list_namespaced_config_map("kube-system").items
        if c.metadata.name in CNI_CONFIGMAPS
    ]
    remove(api, found)


def load(api: Any, objects: list[dict[str, Any]]) -> None:
    """Create the shape's objects as kubectl would, then write each Node's status as its kubelet would."""
    from kubernetes import client

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    for obj in objects:
        body = {k: v for k, v in obj.items() if k != "status"}
        kind, ns = obj["kind"], obj["metadata"].get("namespace")
        if kind == "Namespace":
            core.create_namespace(body)
        elif kind == "Node":
            core.create_node(body)
            core.patch_node_status(obj["metadata"]["name"], {"status": obj["status"]})
        elif kind == "DaemonSet":
            apps.create_namespaced_daemon_set(ns, body)
        elif kind == "ConfigMap":
            core.create_namespaced_config_map(ns, body)
        else:
            raise AssertionError(f"a shape holds an object this test cannot load: {kind}")


def remove(api: Any, objects: list[dict[str, Any]], timeout: float = 120) -> None:
    """Delete the shape's objects and wait until each is gone (the next shape reuses names such as kube-proxy)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

    def calls(obj: dict[str, Any]) -> tuple[Any, Any]:
        name, ns = obj["metadata"]["name"], obj["metadata"].get("namespace")
        return {
            "Namespace": (lambda: core.delete_namespace(name), lambda: core.read_namespace(name)),
            "Node": (lambda: core.delete_node(name), lambda: core.read_node(name)),
            "DaemonSet": (
                lambda: apps.delete_namespaced_daemon_set(name, ns, propagation_policy="Background"),
                lambda: apps.read_namespaced_daemon_set(name, ns),
            ),
            "ConfigMap": (
                lambda: core.delete_namespaced_config_map(name, ns),
                lambda: core.read_namespaced_config_map(name, ns),
            ),
        }[obj["kind"]]

    for obj in objects:
        try:
            calls(obj)[0]()
        except ApiException as exc:
            if exc.status != 404:
                raise
    deadline = time.monotonic() + timeout
    for obj in objects:
        while True:
            try:
                calls(obj)[1]()
            except ApiException as exc:
                if exc.status == 404:
                    break
                raise
            assert time.monotonic() < deadline, f"{obj['kind']} {obj['metadata']['name']} still there"
            time.sleep(0.5)


def wincon_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    return json.loads(out.out)


@pytest.mark.parametrize("name", NAMES)
def test_a_shape_loaded_into_a_cluster_gives_its_facts_and_plan(empty_cluster, capsys, name):
    objects, expected = shape(name)
    api = _api(empty_cluster)
    load(api, objects)
    try:
        profile = wincon_json(capsys, "profile", "--json", "--kubeconfig", empty_cluster)
        facts = {key: profile[key] for key in expected["facts"]}
        assert facts == expected["facts"], yaml.safe_dump(profile)
        # The shapes' Windows nodes read as real, so the plan would read the images' registries (no network here).
        rows = wincon_json(capsys, "plan", "--json", "--kubeconfig", empty_cluster, "--", "--no-image-verify", *PLANNED)
        plan = expected["plan"]
        policy = [r for r in rows if "test_network_policy.py" in r["nodeid"] and "requires" in r["markers"]]
        balancer = [r for r in rows if "test_loadbalancer_service_reaches_windows_pods" in r["nodeid"]]
        icmp = [r for r in rows if "test_pod_pings_external_ip[windows]" in r["nodeid"]]
        assert policy and balancer and icmp, [r["nodeid"] for r in rows]
        for row in policy:
            skipped_for_policy = row["outcome"] == "skip" and "NetworkPolicy engine" in row["reason"]
            assert skipped_for_policy == (plan["network_policy_checks"] == "skip"), row
        for row in balancer:
            assert "LoadBalancer provider" not in row["reason"], row  # the capability is unknown: it runs
        applied = {lim["id"] for row in icmp for lim in row["limitations"]}
        wanted = plan["limitations"]["icmp-egress-through-vfp"] == "applies"
        assert ("icmp-egress-through-vfp" in applied) == wanted, icmp
    finally:
        remove(api, objects)


@pytest.mark.parametrize("name", AKS_NAMES)
def test_an_aks_cluster_loaded_into_a_cluster_gives_its_pod_network_and_policy(empty_cluster, capsys, name):
    """Issue 31 item 3, as the issue found it: the node and add-on objects of each AKS mode (tests/data/clouds/,
    each with its .source) loaded into an empty cluster; `wincon profile` reads the pod network and the policy
    engine the sources name."""
    objects, source = aks_cluster(name)
    api = _api(empty_cluster)
    load(api, objects)
    try:
        profile = wincon_json(capsys, "profile", "--json", "--kubeconfig", empty_cluster)
        facts = {key: profile[key] for key in ("cni", "cni_backend", "network_policy")}
        assert facts == source["expect"], yaml.safe_dump(profile)
    finally:
        remove(api, objects)
