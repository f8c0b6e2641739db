"""The kubelet's own answers, read through the API server's node proxy: GET a path (``stats/summary``,
``metrics/resource``, ``configz``, ``logs/``), timed, as text or JSON, and the KubeletConfiguration inside
/configz. Discovery (wincon.clusterinfo.profile), the capabilities, the checks and the suites read the kubelet here."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.commandline.errors import InfrastructureError


@dataclass(frozen=True)
class KubeletAnswer:
    path: str
    status: int
    body: str
    seconds: float


def kubelet_get(api_client: client.ApiClient, node: str, path: str, timeout: float = 60.0) -> KubeletAnswer:
    """GET ``path`` (``stats/summary``, ``metrics/resource``, ``configz``) from the node's kubelet through
    the API server's node proxy, timed. A refused proxy answers with its status, never raises."""
    core = client.CoreV1Api(api_client)
    path = path.lstrip("/")
    start = time.monotonic()
    try:
        response = core.connect_get_node_proxy_with_path(node, path, _preload_content=False, _request_timeout=timeout)
        body = response.data.decode(errors="replace")
        status = int(getattr(response, "status", 200))
    except ApiException as exc:
        body, status = str(exc.body or exc.reason or ""), int(exc.status or 0)
    except Exception as exc:  # a timeout or reset: the kubelet did not answer in time
        raise InfrastructureError(
            f"the kubelet of {node} did not answer GET /{path} through the node proxy within {timeout:.0f}s: {exc}",
            "check the API server can reach the kubelet port (10250) of the node",
        ) from exc
    return KubeletAnswer(path, status, body, time.monotonic() - start)


def kubelet_query(
    api_client: client.ApiClient, node: str, path: str, query: list[tuple[str, str]], timeout: float = 60.0
) -> KubeletAnswer:
    """``kubelet_get`` with a query string (``/logs/?query=...``): the generated client's node-proxy call escapes
    a ``?`` inside its path parameter, so the kubelet would be asked for a path named ``logs/?query=...`` (its 404);
    the query goes as the request's own parameters instead, which the node proxy passes on."""
    path = path.lstrip("/")
    request = api_client.param_serialize(
        method="GET",
        resource_path="/api/v1/nodes/{name}/proxy/{path}",
        path_params={"name": node, "path": path},
        query_params=list(query),
        header_params={"Accept": "*/*"},
        auth_settings=["BearerToken"],
    )
    start = time.monotonic()
    try:
        response = api_client.call_api(*request, _request_timeout=timeout)
        response.read()
        body, status = response.data.decode(errors="replace"), int(response.status)
    except Exception as exc:  # a timeout or reset: the kubelet did not answer in time
        raise InfrastructureError(
            f"the kubelet of {node} did not answer GET /{path} through the node proxy within {timeout:.0f}s: {exc}",
            "check the API server can reach the kubelet port (10250) of the node",
        ) from exc
    shown = "&".join(f"{k}={v}" for k, v in query)
    return KubeletAnswer(f"{path}?{shown}", status, body, time.monotonic() - start)


def kubelet_json(api_client: client.ApiClient, node: str, path: str, timeout: float = 60.0) -> tuple[Any, float]:
    """The kubelet's JSON answer and the seconds it took; a non-200 answer is an infrastructure error."""
    answer = kubelet_get(api_client, node, path, timeout)
    if answer.status != 200:
        raise InfrastructureError(
            f"GET /{path} on the kubelet of {node} answered {answer.status}: {answer.body[:300]}",
            "the runner needs nodes/proxy (see manifests/rbac/runner.yaml); the kubelet must serve the endpoint",
        )
    try:
        return json.loads(answer.body), answer.seconds
    except ValueError as exc:
        raise InfrastructureError(f"GET /{path} on {node} did not answer JSON: {answer.body[:200]}") from exc


def kubelet_config(configz: dict[str, Any]) -> dict[str, Any]:
    """The KubeletConfiguration inside /configz's ``{"kubeletconfig": {...}}`` wrapper."""
    config = configz.get("kubeletconfig")
    if not isinstance(config, dict):
        raise ValueError("the /configz answer has no kubeletconfig object")
    return config
