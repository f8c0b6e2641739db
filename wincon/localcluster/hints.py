"""What a local cluster hands to the suite: its simulated external host and its image repo list.

``wincon cluster up`` writes them into the ConfigMap ``kube-public/wincon-local-cluster`` (readable by every
authenticated user); the plugin reads it once and uses it where ``--external-ip``, ``--external-host`` or
``--image-repo-list`` were not given. On any other cluster the ConfigMap does not exist and nothing changes.
"""

from __future__ import annotations

import json
from typing import Any

NAMESPACE = "kube-public"
NAME = "wincon-local-cluster"


def configmap(data: dict[str, str]) -> dict[str, Any]:
    """The ConfigMap object carrying ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "wincon"}},
        "data": data,
    }


def read(api_client: Any) -> dict[str, str]:
    """The hints of the cluster behind ``api_client``; empty when it is not a wincon local cluster."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        cm = client.CoreV1Api(api_client).read_namespaced_config_map(NAME, NAMESPACE, _request_timeout=10)
    except ApiException as exc:
        if exc.status in (401, 403, 404):
            return {}
        raise
    return dict(cm.data or {})


def repo_list(hints: dict[str, str]) -> dict[str, str] | None:
    """The hinted image repo list (upstream's format, read as a map), or None."""
    from wincon.workloads.catalog import parse_repo_list

    text = hints.get("image-repo-list")
    if not text:
        return None
    return parse_repo_list(text, f"in ConfigMap {NAMESPACE}/{NAME}")


def images(hints: dict[str, str]) -> dict[str, str]:
    """Image key -> reference of the images the local cluster's real nodes carry."""
    return json.loads(hints.get("images") or "{}")
