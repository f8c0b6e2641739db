"""Scheduling checks: node taints set and removed by a test, free allocatable, RuntimeClasses.

Everything a test changes outside its namespace (a node's taints, a cluster-scoped RuntimeClass) is
undone by a function the test registers as a finalizer before making the change.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from wincon.cluster.client import call
from wincon.cluster.namespaces import MANAGED_BY, MANAGER, RUN_ID
from wincon.errors import InfrastructureError

# The Windows release names the KEP's taint example uses ("os=Win1809:NoSchedule"), per build.
TAINT_VALUES = {17763: "Win1809", 20348: "Win2022", 26100: "Win2025"}
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def _node_taints(api_client: client.ApiClient, node: str) -> list[dict[str, Any]]:
    core = client.CoreV1Api(api_client)
    current = call(core.read_node, node)
    return [api_client.sanitize_for_serialization(t) for t in current.spec.taints or []]


def add_taint(api_client: client.ApiClient, node: str, taint: dict[str, str]) -> None:
    """Add ``taint`` to the node (replacing one with the same key and effect)."""
    taints = [t for t in _node_taints(api_client, node) if (t["key"], t["effect"]) != (taint["key"], taint["effect"])]
    call(client.CoreV1Api(api_client).patch_node, node, {"spec": {"taints": taints + [taint]}})


def remove_taint(api_client: client.ApiClient, node: str, key: str) -> None:
    """Remove every taint with ``key`` from the node; a node without it is left alone."""
    taints = _node_taints(api_client, node)
    kept = [t for t in taints if t["key"] != key]
    if len(kept) != len(taints):
        call(client.CoreV1Api(api_client).patch_node, node, {"spec": {"taints": kept}})


def node_has_taint(api_client: client.ApiClient, node: str, key: str) -> bool:
    return any(t["key"] == key for t in _node_taints(api_client, node))


def requested(api_client: client.ApiClient, node: str, resource: str) -> Decimal:
    """The sum of ``resource`` requests of the non-terminated pods bound to ``node`` (init containers as the scheduler counts them)."""
    return sum((pod_request(pod, resource) for pod in _bound_pods(api_client, node)), Decimal(0))


def _bound_pods(api_client: client.ApiClient, node: str) -> list[Any]:
    """The non-terminated pods bound to ``node``."""
    core = client.CoreV1Api(api_client)
    pods = call(core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}").items
    return [pod for pod in pods if not (pod.status and pod.status.phase in TERMINAL_PHASES)]


def pod_request(pod: Any, resource: str) -> Decimal:
    """What ``pod`` requests of ``resource`` as the scheduler counts it (init containers, overhead)."""
    containers = sum(
        (parse_quantity(((c.resources.requests if c.resources else None) or {}).get(resource, "0")))
        for c in pod.spec.containers
    )
    inits = [
        parse_quantity(((c.resources.requests if c.resources else None) or {}).get(resource, "0"))
        for c in pod.spec.init_containers or []
    ]
    overhead = parse_quantity((pod.spec.overhead or {}).get(resource, "0"))
    return Decimal(max([containers, *inits]) + overhead)


def terminating_requests(api_client: client.ApiClient, node: str, resource: str) -> list[str]:
    """The pods bound to ``node`` that request ``resource`` and are being deleted (deletionTimestamp set, not yet
    gone): ``requested`` and the scheduler count them until they go, so a check that fills the node from a reading
    taken meanwhile finds room it did not fill once they have gone (a previous test's namespace being deleted)."""
    return [
        f"{pod.metadata.namespace}/{pod.metadata.name}"
        for pod in _bound_pods(api_client, node)
        if pod.metadata.deletion_timestamp is not None and pod_request(pod, resource) > 0
    ]


def unrequested_once_settled(api_client: client.ApiClient, node: str, resource: str, timeout: float) -> Decimal:
    """Allocatable minus requested ``resource`` of ``node``, read once no pod there that requests it is being
    deleted (``terminating_requests``; polled every 2 s). Still some after ``timeout``: an infrastructure error
    naming them."""
    from wincon.checks.pods import eventually

    left: list[str] = []

    def settled() -> bool:
        left[:] = terminating_requests(api_client, node, resource)
        return not left

    try:
        eventually(settled, timeout, f"pods requesting {resource} on {node} gone", interval=2)
    except InfrastructureError as exc:
        raise InfrastructureError(
            f"pods requesting {resource} on {node} still being deleted after {timeout:.0f}s: {', '.join(left)}",
            "the node must let deleted pods go before the check can fill it",
        ) from exc
    return allocatable(api_client, node, resource) - requested(api_client, node, resource)


def allocatable(api_client: client.ApiClient, node: str, resource: str) -> Decimal:
    core = client.CoreV1Api(api_client)
    return parse_quantity((call(core.read_node, node).status.allocatable or {}).get(resource, "0"))


def millicores(value: Decimal) -> str:
    return f"{int(value * 1000)}m"


def create_runtime_class(
    api_client: client.ApiClient,
    name: str,
    handler: str,
    node_selector: dict[str, str],
    tolerations: list[dict[str, str]],
    run_id: str,
) -> Any:
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER, RUN_ID: run_id}},
        "handler": handler,
        "scheduling": {"nodeSelector": node_selector, "tolerations": tolerations},
    }
    return call(client.NodeV1Api(api_client).create_runtime_class, body)


def delete_runtime_class(api_client: client.ApiClient, name: str) -> None:
    try:
        call(client.NodeV1Api(api_client).delete_runtime_class, name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def node_avoiding(names: list[str], unsuitable: list[str], why: str) -> str | None:
    """The node a check's pod must be pinned to, read before anything is created: None where none of ``names`` is
    unsuitable (the pod's placement decides, as without this), else the first of the others; where every one is
    unsuitable, the check skips with ``why`` (naming them)."""
    if not unsuitable:
        return None
    others = [name for name in names if name not in unsuitable]
    if not others:
        import pytest

        pytest.skip(why)
    return others[0]
