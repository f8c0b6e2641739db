"""``--image-pull-secret``: every pod the suite creates pulls with the user's registry credentials.

One place does it for every path a pod takes into the cluster (``kube.create``, ``utils.create_from_dict`` of the
workloads, the checks' own ``create_namespaced_pod`` calls, the prepull DaemonSet): :func:`install` wraps the
ApiClient's ``call_api``, through which each of them goes, so that

- the body of a POST or PUT of a pod, or of a workload's pod template (Deployment, DaemonSet, StatefulSet,
  ReplicaSet, ReplicationController, Job, CronJob), gets the secret in its ``imagePullSecrets`` (added once; the
  body the caller passed is left unchanged);
- each test namespace created through it (labelled with a run id: the run's, the prepull's; not wincon-system,
  which outlives the runs) gets a copy of the secret, read
  once from the namespace the user named (``NAMESPACE/NAME``, or ``NAME`` in the ``default`` namespace), under the
  same name: a pod can only use a pull secret of its own namespace. The copies go with the test namespaces, which
  the run deletes at its end.

A pod created in a namespace the suite did not create (kube-system, say) names the secret too; where that
namespace has no such secret the kubelet pulls without it, as for any missing pull secret.
"""

from __future__ import annotations

import copy
import re
import urllib.parse
from typing import Any

from wincon.cluster.namespaces import RUN_ID
from wincon.workloads.registryauth import read_secret, split_secret

# resource (the path's last segment) -> the path of its pod spec in the body
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "pods": ("spec",),
    "deployments": ("spec", "template", "spec"),
    "daemonsets": ("spec", "template", "spec"),
    "statefulsets": ("spec", "template", "spec"),
    "replicasets": ("spec", "template", "spec"),
    "replicationcontrollers": ("spec", "template", "spec"),
    "jobs": ("spec", "template", "spec"),
    "cronjobs": ("spec", "jobTemplate", "spec", "template", "spec"),
}
KIND_RESOURCES = {
    "Pod": "pods",
    "Deployment": "deployments",
    "DaemonSet": "daemonsets",
    "StatefulSet": "statefulsets",
    "ReplicaSet": "replicasets",
    "ReplicationController": "replicationcontrollers",
    "Job": "jobs",
    "CronJob": "cronjobs",
}
WORKLOAD_PATH = re.compile(r"/namespaces/[^/]+/(" + "|".join(POD_SPEC_PATHS) + r")(/[^/]+)?$")
NAMESPACES_PATH = re.compile(r"^/api/v1/namespaces/?$")
MARK = "_wincon_pull_secret"  # the attribute of an ApiClient whose call_api is wrapped


def add_pull_secret(body: dict[str, Any], resource: str, name: str) -> dict[str, Any]:
    """A copy of ``body`` (a ``resource`` of POD_SPEC_PATHS) whose pod spec names the pull secret ``name`` in
    ``imagePullSecrets`` (once, after those it already names)."""
    result = copy.deepcopy(body)
    spec = result
    for key in POD_SPEC_PATHS[resource]:
        spec = spec.setdefault(key, {})
    secrets = spec.setdefault("imagePullSecrets", [])
    if not any(isinstance(s, dict) and s.get("name") == name for s in secrets):
        secrets.append({"name": name})
    return result


def pod_spec(body: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a manifest of a kind of KIND_RESOURCES (None for another kind)."""
    resource = KIND_RESOURCES.get(str(body.get("kind")))
    if resource is None:
        return None
    spec: Any = body
    for key in POD_SPEC_PATHS[resource]:
        spec = (spec or {}).get(key)
    return spec if isinstance(spec, dict) else None


def secret_copy(secret: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    """The body of the secret's copy in ``namespace`` (its type and data, none of its metadata but the name)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "wincon"}},
        "type": secret["type"],
        "data": secret["data"],
    }


def install(api_client: Any, spec: str, secret: dict[str, Any] | None = None) -> None:
    """Make every pod created through ``api_client`` name the pull secret ``spec`` (``[NAMESPACE/]NAME``), and
    every namespace created through it hold a copy. The secret is read from the cluster now (``secret``: already
    read) and a UsageError (exit 4) names a missing one. Installing again on the same client changes nothing."""
    if getattr(api_client, MARK, None):
        return
    _, name = split_secret(spec)
    secret = secret or read_secret(api_client, spec)
    original = api_client.call_api

    def call_api(*args: Any, **kwargs: Any) -> Any:
        request = _Request(args, kwargs)
        match = WORKLOAD_PATH.search(request.path)
        if request.body is not None and match and request.method in ("POST", "PUT"):
            plain = api_client.sanitize_for_serialization(request.body)
            if isinstance(plain, dict):
                request.body = add_pull_secret(plain, match.group(1), name)
        answer = original(*request.args, **request.kwargs)
        if request.method == "POST" and NAMESPACES_PATH.match(request.path) and request.body is not None:
            plain = api_client.sanitize_for_serialization(request.body)
            meta = ((plain or {}).get("metadata") or {}) if isinstance(plain, dict) else {}
            created, labels = meta.get("name"), meta.get("labels") or {}
            status = getattr(answer, "status", None) if request.raw else 201
            # a run's test namespace only (wincon.cluster.namespaces labels it with the run): not wincon-system,
            # which holds the runs' Leases and outlives every run
            if created and RUN_ID in labels and isinstance(status, int) and 200 <= status <= 299:
                _copy_into(api_client, secret, name, str(created))
        return answer

    api_client.call_api = call_api
    setattr(api_client, MARK, spec)


HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class _Request:
    """The arguments of ``ApiClient.call_api`` in either of the client's layouts: ``(method, url, header_params,
    body, post_params)`` of the client's releases from 37 on (after ``param_serialize``: it answers the raw
    response, whatever its status), ``(resource_path, method, ..., body=...)`` before (it raises on an error)."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args, self.kwargs = list(args), dict(kwargs)
        self.raw = bool(args) and args[0] in HTTP_METHODS
        if self.raw:
            self.method = str(args[0])
            self.path = urllib.parse.urlsplit(str(args[1] if len(args) > 1 else kwargs.get("url", ""))).path
        else:
            self.path = str(args[0] if args else kwargs.get("resource_path", ""))
            self.method = str(args[1] if len(args) > 1 else kwargs.get("method", ""))
        self._at = 3 if self.raw and len(args) > 3 else None  # the body's position, where it is positional

    @property
    def body(self) -> Any:
        return self.args[self._at] if self._at is not None else self.kwargs.get("body")

    @body.setter
    def body(self, value: Any) -> None:
        if self._at is not None:
            self.args[self._at] = value
        else:
            self.kwargs["body"] = value


def _copy_into(api_client: Any, secret: dict[str, Any], name: str, namespace: str) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from wincon.cluster.client import call

    try:
        call(client.CoreV1Api(api_client).create_namespaced_secret, namespace, secret_copy(secret, name, namespace))
    except ApiException as exc:
        if exc.status != 409:  # already there (a retried create)
            raise
