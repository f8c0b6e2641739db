"""Controller checks: rollout history and undo done as kubectl does them, readiness predicates, and
invariants observed while a controller works.

There is no ``rollout undo`` API: kubectl (k8s.io/kubectl/pkg/polymorphichelpers/rollback.go) finds the
ReplicaSet of the wanted revision among those the Deployment owns and patches the Deployment's pod
template (and annotations) back to it. ``undo`` below does the same with the Python client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from wincon.checks.pods import label_selector, pin_template, pin_template_linux
from wincon.cluster.client import call
from wincon.commandline.errors import FrameworkFailure
from wincon.workloads.render import render

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
CHANGE_CAUSE = "kubernetes.io/change-cause"
POD_TEMPLATE_HASH = "pod-template-hash"
# Annotations that belong to the Deployment and are never copied back from a ReplicaSet on undo.
DEPLOYMENT_ONLY_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
    }
)


# The kinds whose pod template is pinned: what a controller makes its pods from.
POD_TEMPLATE_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob"}
)


def pinned(
    template: str, build: int | None, pin_build: bool = True, target_os: str = "windows", **params: Any
) -> list[dict[str, Any]]:
    """The documents of manifests/controllers/<template>.yaml, pod templates pinned to Windows and ``build`` (to
    Linux with ``target_os="linux"``: a Linux control's), Services and other kinds unchanged. The controllers
    suite's ``pinned`` fixture, and the builders its checks declare in ``waves.ahead``, both build with it."""
    docs = render(f"controllers/{template}.yaml", **params)
    if target_os == "linux":
        return [pin_template_linux(d) if d["kind"] in POD_TEMPLATE_KINDS else d for d in docs]
    return [pin_template(d, build if pin_build else None) if d["kind"] in POD_TEMPLATE_KINDS else d for d in docs]


class RolloutError(FrameworkFailure):
    """The rollout history does not allow the requested undo."""


@dataclass(frozen=True)
class Revision:
    number: int
    replicaset: str
    uid: str
    images: tuple[str, ...]
    change_cause: str | None
    replicas: int


def owned_replicasets(api_client: client.ApiClient, namespace: str, deployment: Any) -> list[Any]:
    """The ReplicaSets controlled by ``deployment`` (matched by owner uid, not only by labels)."""
    apps = client.AppsV1Api(api_client)
    selector = label_selector(deployment.spec.selector.match_labels or {})
    items = call(apps.list_namespaced_replica_set, namespace, label_selector=selector).items
    uid = deployment.metadata.uid
    return [rs for rs in items if any(o.uid == uid and o.controller for o in rs.metadata.owner_references or [])]


def revision_of(obj: Any) -> int:
    value = (obj.metadata.annotations or {}).get(REVISION, "")
    return int(value) if value.isdigit() else 0


def history(api_client: client.ApiClient, namespace: str, name: str) -> list[Revision]:
    """`kubectl rollout history`: one entry per revision, oldest first."""
    apps = client.AppsV1Api(api_client)
    deployment = call(apps.read_namespaced_deployment, name, namespace)
    revisions = []
    for rs in owned_replicasets(api_client, namespace, deployment):
        number = revision_of(rs)
        if not number:
            continue
        revisions.append(
            Revision(
                number=number,
                replicaset=rs.metadata.name,
                uid=rs.metadata.uid,
                images=tuple(c.image for c in rs.spec.template.spec.containers),
                change_cause=(rs.metadata.annotations or {}).get(CHANGE_CAUSE),
                replicas=rs.status.replicas or 0,
            )
        )
    return sorted(revisions, key=lambda r: r.number)


def _template_without_hash(api_client: client.ApiClient, template: Any) -> dict[str, Any]:
    data = api_client.sanitize_for_serialization(template)
    labels = dict((data.get("metadata") or {}).get("labels") or {})
    labels.pop(POD_TEMPLATE_HASH, None)
    data.setdefault("metadata", {})["labels"] = labels
    return data


def undo(api_client: client.ApiClient, namespace: str, name: str, to_revision: int = 0) -> int:
    """`kubectl rollout undo`: restore the pod template of ``to_revision`` (0: the previous one).

    Returns the revision restored. Raises RolloutError when there is nothing to roll back to, or the
    Deployment is paused (kubectl refuses those too).
    """
    apps = client.AppsV1Api(api_client)
    deployment = call(apps.read_namespaced_deployment, name, namespace)
    if deployment.spec.paused:
        raise RolloutError(f"deployment {name} is paused: resume it before rolling back")
    replicasets = [rs for rs in owned_replicasets(api_client, namespace, deployment) if revision_of(rs)]
    ordered = sorted(replicasets, key=revision_of)
    if to_revision:
        target = next((rs for rs in ordered if revision_of(rs) == to_revision), None)
        if target is None:
            raise RolloutError(f"deployment {name} has no revision {to_revision}")
    else:
        if len(ordered) < 2:
            raise RolloutError(f"deployment {name} has no rollout history to roll back to")
        target = ordered[-2]
    template = _template_without_hash(api_client, target.spec.template)
    current = _template_without_hash(api_client, deployment.spec.template)
    if template == current:
        return revision_of(target)  # kubectl: "skipped rollback (current template already matches)"
    annotations = {k: v for k, v in (deployment.metadata.annotations or {}).items() if k in DEPLOYMENT_ONLY_ANNOTATIONS}
    annotations.update(
        {k: v for k, v in (target.metadata.annotations or {}).items() if k not in DEPLOYMENT_ONLY_ANNOTATIONS}
    )
    patch = [
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": annotations},
    ]
    call(apps.patch_namespaced_deployment, name, namespace, patch)
    return revision_of(target)


def set_image(
    api_client: client.ApiClient, namespace: str, name: str, container: str, image: str, change_cause: str = ""
) -> None:
    """`kubectl set image deployment/<name> <container>=<image>` (with --record: the change-cause annotation)."""
    apps = client.AppsV1Api(api_client)
    body: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}}}
    if change_cause:
        body["metadata"] = {"annotations": {CHANGE_CAUSE: change_cause}}
    call(apps.patch_namespaced_deployment, name, namespace, body)


def scale(api_client: client.ApiClient, namespace: str, kind: str, name: str, replicas: int) -> None:
    """`kubectl scale`: through the scale subresource of a Deployment, ReplicaSet, StatefulSet or RC."""
    body = {"spec": {"replicas": replicas}}
    if kind == "ReplicationController":
        call(client.CoreV1Api(api_client).patch_namespaced_replication_controller_scale, name, namespace, body)
        return
    apps = client.AppsV1Api(api_client)
    method = {
        "Deployment": apps.patch_namespaced_deployment_scale,
        "ReplicaSet": apps.patch_namespaced_replica_set_scale,
        "StatefulSet": apps.patch_namespaced_stateful_set_scale,
    }[kind]
    call(method, name, namespace, body)


# --------------------------------------------------------------------------- predicates


def replicas_ready(want: int) -> Callable[[Any], bool]:
    """ReplicaSet, ReplicationController or StatefulSet: exactly ``want`` replicas, all ready, generation observed."""

    def done(obj: Any) -> bool:
        status = obj.status
        if not status or (status.observed_generation or 0) < (obj.metadata.generation or 0):
            return False
        return (status.replicas or 0) == want and (status.ready_replicas or 0) == want

    return done


def daemonset_rolled_out(ds: Any) -> bool:
    status = ds.status
    if not status or (status.observed_generation or 0) < (ds.metadata.generation or 0):
        return False
    desired = status.desired_number_scheduled or 0
    return (
        desired > 0
        and (status.current_number_scheduled or 0) == desired
        and (status.number_ready or 0) == desired
        and (status.updated_number_scheduled or 0) == desired
    )


def job_condition(job: Any, kind: str) -> Any:
    return next(
        (c for c in (job.status.conditions if job.status else None) or [] if c.type == kind and c.status == "True"),
        None,
    )


def job_complete(job: Any) -> bool:
    return job_condition(job, "Complete") is not None


def job_failure(job: Any) -> str | None:
    failed = job_condition(job, "Failed")
    if failed is not None:
        return f"container of job {job.metadata.name} failed: {failed.reason}: {failed.message}"
    return None


def cronjob_succeeded(cronjob: Any) -> bool:
    return bool(cronjob.status and cronjob.status.last_successful_time)


# --------------------------------------------------------------------------- invariants


@dataclass
class Invariant:
    """Wraps a ``done`` predicate and records every observed state that breaks ``rule``.

    ``rule(obj)`` returns a description of the violation, or None. A watch delivers every change,
    so the rule sees each status the controller wrote.
    """

    done: Callable[[Any], bool]
    rule: Callable[[Any], str | None]
    violations: list[str] = field(default_factory=list)
    observed: int = 0

    def __call__(self, obj: Any) -> bool:
        self.observed += 1
        problem = self.rule(obj)
        if problem and problem not in self.violations:
            self.violations.append(problem)
        return self.done(obj)


METRICS_APISERVICE = "v1beta1.metrics.k8s.io"


def metrics_api_installed(kube: Any) -> bool:
    """Whether the cluster registers the resource metrics API at all (its APIService exists). Where it does but
    the API is not Available, the HPA checks cannot run: the cluster failing, not a capability it lacks."""
    try:
        call(kube.apiregistration.read_api_service, METRICS_APISERVICE)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def metrics_api_available(kube: Any) -> str | None:
    """None when the resource metrics API (metrics-server) is served; else why not."""
    registration = kube.apiregistration
    try:
        service = call(registration.read_api_service, METRICS_APISERVICE)
    except client.ApiException as exc:
        if exc.status == 404:
            return f"the APIService {METRICS_APISERVICE} does not exist: metrics-server is not installed"
        raise
    available = next((c for c in service.status.conditions or [] if c.type == "Available"), None)
    if available is None or available.status != "True":
        reason = f"{available.reason}: {available.message}" if available else "no Available condition"
        return f"the APIService {METRICS_APISERVICE} is not available ({reason})"
    return None
