"""NetworkPolicy over Windows pods (operational readiness Extend.NetworkPolicy: "should deny ingress from pods on
other namespaces"): a policy that admits only the namespace's own pods stops a client in another namespace
from reaching a Windows pod while a client in the same namespace still does, and a policy naming the other
namespace lets it in again; and a policy on one Windows pod admits only the clients carrying the label it names
(the spec's commented-out "block specific pod connectivity" case).

The policies are validated by the real API server on any cluster. Enforcement is the CNI's: the check skips
with the reason where the detected CNI enforces no policy on Windows nodes (Flannel, win-bridge, win-overlay
alone), and the traffic passes the ``data_plane`` gate first. Every "blocked" is preceded by the same probe
answering, from the same client, before the policy exists.
"""

from __future__ import annotations

import dataclasses

import pytest

from wincon.checks.pods import create_or_reject, eventually
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.kube import Kube
from wincon.cluster.waits import pod_failure, wait_for_pod
from wincon.clusterinfo import capabilities
from wincon.commandline.errors import InfrastructureError
from wincon.network.flows import FlowChecks
from wincon.network.pods import NETSERVER_LABEL, check_windows_nodes, schedulable_linux_node
from wincon.windows import connectivity as conn
from wincon.windows import forms
from wincon.workloads.deploy import pod_manifest

pytestmark = [pytest.mark.networking]

# CNIs that enforce NetworkPolicy on Windows nodes (their Windows agents program HNS ACLs).
ROLE_LABEL = "wincon.io/role"

DENY_OTHER_NAMESPACES = {
    "metadata": {"name": "deny-other-namespaces"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]},
}


def allow_namespace(other: str) -> dict:
    selector = {"matchLabels": {"kubernetes.io/metadata.name": other}}
    return {
        "metadata": {"name": "allow-from-other"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": selector}]}],
        },
    }


def outside_manifest(wincon, os_name: str, node_name: str) -> dict:
    """A netexec client of ``os_name`` named ``outside``, pinned to node ``node_name``."""
    if os_name == "windows":
        node = next(n for n in wincon.profile.ready_windows_nodes if n.name == node_name)
        image = wincon.catalog.image("agnhost", "windows", node.windows_build)
        pin = {"os_name": "windows", "build": node.windows_build, "node": node.name}
    else:
        image = wincon.catalog.image("agnhost", "linux")
        pin = {"os_name": "linux", "node": node_name}
    return pod_manifest(
        "outside", [conn.netexec_container("netexec", image, http_port=conn.CLIENT_HTTP_PORT, udp_port=None)], **pin
    )


def outside_pod(wincon, target_os: str) -> list[dict]:
    """What the check creates first, made ahead (``waves.ahead``): its outside client, on the node the module's
    client of its OS is pinned to (the first of ``check_windows_nodes``, or ``schedulable_linux_node``: the
    conftest's client plan). Where the profile has no such node, nothing: the fixtures meet that themselves."""
    try:
        node = (
            check_windows_nodes(wincon.profile)[0] if target_os == "windows" else schedulable_linux_node(wincon.profile)
        )
    except (InfrastructureError, pytest.skip.Exception):
        return []
    return [outside_manifest(wincon, target_os, node.name)]


@pytest.fixture
def outside_client(wincon, fresh_namespace, client):
    """A netexec client of the item's OS in a namespace of its own, on the main client's node (made ahead where
    the check declared it: the create adopts it where it is the same manifest, or the suite errs)."""
    body = outside_manifest(wincon, client.os, client.node)
    create_or_reject(wincon.api_client, fresh_namespace, body)
    pod = wait_for_pod(
        wincon.api_client, fresh_namespace, "outside", timeout=wincon.pod_start_timeout, failure=pod_failure
    )
    return dataclasses.replace(
        client,
        name="outside",
        ip=pod.status.pod_ip,
        ips=(pod.status.pod_ip,),
        node=pod.spec.node_name,
        host_ip=pod.status.host_ip or "",
        container="netexec",
        tools=None,
    )


def create_policy(kube, body: dict) -> None:
    """Create the policy in the module's namespace and register its deletion: the next test starts without it."""
    name = body["metadata"]["name"]
    kube.cleanup(call, kube.networking.delete_namespaced_network_policy, name, kube.namespace, what=f"delete {name}")
    call(kube.networking.create_namespaced_network_policy, kube.namespace, body)


def enforcing_cni(profile, os_name: str) -> None:
    """Skip where the profile shows no policy engine (requires("network-policy") already skips those at
    collection, so the plan agrees); where the engine is unknown the check runs and its verdict decides."""
    if capabilities.has(profile, "network-policy") is False:
        pytest.skip(f"{capabilities.reason(profile, 'network-policy')} ({os_name} pods)")


@pytest.mark.test_id("97bab085-189e-42e4-aa68-c54a0c0895c0")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.requires("network-policy")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
@waves.ahead(outside_pod)
def test_policy_denies_ingress_from_other_namespaces_and_allows_it_again(
    kube, wincon, namespace, fresh_namespace, checks, client, local_server, outside_client, data_plane
):
    """Windows pods support network policy where the CNI enforces it ("Calico network plugin only supports Policy-Only mode", 002_8a7e76f95009f44f.txt, Networking; operational readiness Extend.NetworkPolicy): ingress from another namespace is denied by a same-namespace-only policy and allowed again by one naming that namespace."""
    networking = kube.networking
    # The API part, on every cluster: both policies pass validation (server-side dry run).
    for body in (DENY_OTHER_NAMESPACES, allow_namespace(fresh_namespace)):
        stored = call(networking.create_namespaced_network_policy, namespace, body, dry_run="All")
        assert stored.spec.policy_types == ["Ingress"], stored.spec
    enforcing_cni(wincon.profile, client.os)
    other_kube = Kube(wincon, fresh_namespace, data_plane)
    other = FlowChecks(other_kube)
    target, port = local_server.ip, conn.NETSERVER_HTTP_PORT
    before = other.dial(outside_client, target, port, "http", {local_server.name})
    assert before.reached_all, f"before any policy, outside -> {local_server.name}: {before.describe()}"

    create_policy(kube, DENY_OTHER_NAMESPACES)
    blocked = eventually(
        lambda: not any(other.dial_each(outside_client, target, port, "http", times=3)),
        60,
        f"the policy stopping outside ({fresh_namespace}) -> {local_server.name}",
        interval=3,
        behaviour=True,
    )
    assert blocked
    inside = checks.dial(client, target, port, "http", {local_server.name})
    assert inside.reached_all, f"same-namespace client blocked by the policy too: {inside.describe()}"

    create_policy(kube, allow_namespace(fresh_namespace))
    after = other.dial(outside_client, target, port, "http", {local_server.name})
    assert after.reached_all, f"allowed again, outside -> {local_server.name}: {after.describe()}"


def allow_only_role(target: str) -> dict:
    return {
        "metadata": {"name": "allow-only-role"},
        "spec": {
            "podSelector": {"matchLabels": {NETSERVER_LABEL: target}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {ROLE_LABEL: "allowed"}}}]}],
        },
    }


@pytest.mark.test_id("20c2b405-2dfa-45b0-aad5-92d162049351")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Networking")
@pytest.mark.requires("network-policy")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
def test_policy_on_a_windows_pod_admits_only_the_pods_it_selects(kube, wincon, checks, client, local_server):
    """Windows pods support network policy where the CNI enforces it ("Calico network plugin only supports Policy-Only mode", 002_8a7e76f95009f44f.txt, Networking; operational readiness Extend.NetworkPolicy, "block specific pod connectivity"): a policy on one Windows pod admits only clients with the label it names, and the same client is let in once it carries the label."""
    body = allow_only_role(local_server.name)
    stored = call(kube.networking.create_namespaced_network_policy, kube.namespace, body, dry_run="All")
    assert stored.spec.pod_selector.match_labels == {NETSERVER_LABEL: local_server.name}, stored.spec
    enforcing_cni(wincon.profile, client.os)
    target, port = local_server.ip, conn.NETSERVER_HTTP_PORT
    before = checks.dial(client, target, port, "http", {local_server.name})
    assert before.reached_all, f"before any policy, {client.name} -> {local_server.name}: {before.describe()}"

    create_policy(kube, body)
    blocked = eventually(
        lambda: not any(checks.dial_each(client, target, port, "http", times=3)),
        60,
        f"the policy stopping {client.name} (no {ROLE_LABEL} label) -> {local_server.name}",
        interval=3,
        behaviour=True,
    )
    assert blocked

    patch = {"metadata": {"labels": {ROLE_LABEL: "allowed"}}}
    kube.cleanup(
        call,
        kube.core.patch_namespaced_pod,
        client.name,
        kube.namespace,
        {"metadata": {"labels": {ROLE_LABEL: None}}},
        what=f"unlabel {client.name}",
    )
    call(kube.core.patch_namespaced_pod, client.name, kube.namespace, patch)
    after = checks.dial(client, target, port, "http", {local_server.name})
    assert after.reached_all, f"labelled {ROLE_LABEL}=allowed, {client.name} -> {local_server.name}: {after.describe()}"
