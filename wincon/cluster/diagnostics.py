"""Failure diagnostics: pod specs and statuses, events and container logs of a test's namespaces.

Collected only when a test fails, bounded in size, and scrubbed of anything that looks like a credential.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from kubernetes import client

MAX_LOG_BYTES = 16_000
MAX_PODS = 20

_SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)((?:token|password|client-key-data|client-certificate-data)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"),
    re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"),  # JWTs (service-account tokens)
)


def scrub(text: str) -> str:
    """Replace anything that looks like a token, password or key material with <redacted>."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "<redacted>", text)
    return text


def collect(api_client: client.ApiClient, namespace: str) -> dict[str, str]:
    """Name -> text of the diagnostics of one namespace; never raises (a failing cluster is the point)."""
    core = client.CoreV1Api(api_client)
    result: dict[str, str] = {}
    try:
        pods = core.list_namespaced_pod(namespace, _request_timeout=15).items[:MAX_PODS]
    except Exception as exc:
        return {f"{namespace}/error": f"could not list pods: {type(exc).__name__}: {exc}"}
    for pod in pods:
        data: dict[str, Any] = api_client.sanitize_for_serialization(pod)
        data.get("metadata", {}).pop("managedFields", None)
        result[f"{namespace}/pod/{pod.metadata.name}.yaml"] = scrub(
            yaml.safe_dump({"spec": data.get("spec"), "status": data.get("status")}, sort_keys=False)
        )
        for container in pod.spec.containers:
            try:
                log = core.read_namespaced_pod_log(
                    pod.metadata.name,
                    namespace,
                    container=container.name,
                    tail_lines=200,
                    limit_bytes=MAX_LOG_BYTES,
                    _request_timeout=15,
                )
            except Exception as exc:
                log = f"(no log: {type(exc).__name__})"
            result[f"{namespace}/log/{pod.metadata.name}/{container.name}.txt"] = scrub(log or "(empty)")
    try:
        events = core.list_namespaced_event(namespace, _request_timeout=15).items
        lines = [
            f"{e.last_timestamp or e.event_time or ''} {e.type} {e.reason} "
            f"{e.involved_object.kind}/{e.involved_object.name}: {e.message}"
            for e in events
        ]
        result[f"{namespace}/events.txt"] = scrub("\n".join(lines) or "(no events)")
    except Exception as exc:
        result[f"{namespace}/events.txt"] = f"could not list events: {type(exc).__name__}"
    return result
