"""Watch-based waits with a timeout and a failure condition.

A wait ends as soon as the object is done, or as soon as its failure condition names a reason
(CrashLoopBackOff, ErrImagePull, Unschedulable, ...), instead of running into its timeout. Image and
scheduling problems are infrastructure errors; a container that crashes is a workload failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from wincon.cluster.client import call, is_transient
from wincon.errors import FrameworkFailure, InfrastructureError

Condition = Callable[[Any], bool]
Failure = Callable[[Any], "str | None"]

IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
CRASH_REASONS = frozenset(
    {"CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError"}
)


class WorkloadFailed(FrameworkFailure):
    """The workload itself failed on the node (it crashed): a test failure, not an infrastructure error."""


class WaitTimeout(InfrastructureError):
    """The object never reached the state within the timeout."""


def wait_for(
    list_fn: Callable[..., Any],
    name: str,
    done: Condition,
    failure: Failure | None = None,
    timeout: float = 300.0,
    describe: str = "",
    **list_kwargs: Any,
) -> Any:
    """Watch ``list_fn(**list_kwargs)`` for the object ``name`` until ``done(obj)`` holds.

    ``failure(obj)`` returning a reason ends the wait at once with that reason. A missing object is
    waited for. Returns the object in its final state.
    """
    deadline = time.monotonic() + timeout
    selector = f"metadata.name={name}"
    what = describe or name
    last: Any = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(
                f"{what} did not become ready within {timeout:.0f}s" + _state_hint(last, failure),
                "raise --pod-start-timeout if Windows images are still pulling (try `wincon prepull`)",
            )
        listing = call(list_fn, field_selector=selector, **list_kwargs)
        for obj in listing.items:
            last = obj
            _check(obj, done, failure, what)
            if done(obj):
                return obj
        stream = watch.Watch()
        try:
            for event in stream.stream(
                list_fn,
                field_selector=selector,
                resource_version=listing.metadata.resource_version,
                timeout_seconds=max(1, int(min(remaining, 60))),
                **list_kwargs,
            ):
                if event["type"] == "ERROR":
                    break  # expired resource version: list again
                obj = event["object"]
                last = obj
                if event["type"] == "DELETED":
                    continue
                _check(obj, done, failure, what)
                if done(obj):
                    return obj
                if time.monotonic() >= deadline:
                    break
        except ApiException as exc:
            if exc.status != 410 and not is_transient(exc):
                raise
        except Exception as exc:
            if not is_transient(exc):
                raise
        finally:
            stream.stop()


def _check(obj: Any, done: Condition, failure: Failure | None, what: str) -> None:
    if failure is None or done(obj):
        return
    reason = failure(obj)
    if reason:
        if any(r in reason for r in CRASH_REASONS) or reason.startswith("container "):
            raise WorkloadFailed(f"{what}: {reason}")
        raise InfrastructureError(f"{what}: {reason}", "see the pod's events in the attached diagnostics")


def _state_hint(obj: Any, failure: Failure | None) -> str:
    if obj is None:
        return " (it never appeared)"
    status = getattr(obj, "status", None)
    phase = getattr(status, "phase", None)
    return f" (last phase: {phase})" if phase else ""


# --- pods ---


def pod_running_ready(pod: Any) -> bool:
    status = pod.status
    if not status or status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in status.conditions or [])


def pod_running(pod: Any) -> bool:
    return bool(pod.status and pod.status.phase == "Running")


def pod_scheduled(pod: Any) -> bool:
    return bool(pod.spec and pod.spec.node_name)


def pod_succeeded(pod: Any) -> bool:
    return bool(pod.status and pod.status.phase == "Succeeded")


def pod_failure(pod: Any) -> str | None:
    """A reason the pod will not get to Running by itself, or None while it still may."""
    status = pod.status
    if not status:
        return None
    if status.phase == "Failed":
        return f"pod failed: {status.reason or ''} {status.message or ''}".strip()
    for cond in status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
            return f"Unschedulable: {cond.message}"
    for cs in (status.init_container_statuses or []) + (status.container_statuses or []):
        waiting = cs.state.waiting if cs.state else None
        if waiting and (waiting.reason in IMAGE_REASONS or waiting.reason in CRASH_REASONS):
            return f"{waiting.reason} in container {cs.name}: {waiting.message or ''}".strip()
    return None


def wait_for_pod(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    done: Condition = pod_running_ready,
    timeout: float = 300.0,
    failure: Failure | None = pod_failure,
) -> Any:
    core = client.CoreV1Api(api_client)
    return wait_for(
        core.list_namespaced_pod,
        name,
        done,
        failure,
        timeout,
        describe=f"pod {namespace}/{name}",
        namespace=namespace,
    )


# --- controllers ---


def deployment_available(dep: Any) -> bool:
    spec, status = dep.spec, dep.status
    if not status or status.observed_generation is None or status.observed_generation < dep.metadata.generation:
        return False
    want = spec.replicas if spec.replicas is not None else 1
    return (
        (status.updated_replicas or 0) == want
        and (status.available_replicas or 0) == want
        and (status.replicas or 0) == want
    )


def deployment_failure(dep: Any) -> str | None:
    for cond in (dep.status.conditions if dep.status else None) or []:
        if cond.type == "Progressing" and cond.status == "False" and cond.reason == "ProgressDeadlineExceeded":
            return f"ProgressDeadlineExceeded: {cond.message}"
        if cond.type == "ReplicaFailure" and cond.status == "True":
            return f"ReplicaFailure: {cond.message}"
    return None


def wait_for_deployment(api_client: client.ApiClient, namespace: str, name: str, timeout: float = 300.0) -> Any:
    apps = client.AppsV1Api(api_client)
    return wait_for(
        apps.list_namespaced_deployment,
        name,
        deployment_available,
        deployment_failure,
        timeout,
        describe=f"deployment {namespace}/{name}",
        namespace=namespace,
    )
