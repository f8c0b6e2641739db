"""Watch-based waits with a timeout and a failure condition.

A wait ends as soon as the object is done, or as soon as its failure condition names a reason
(CrashLoopBackOff, ErrImagePull, Unschedulable, ...), instead of running into its timeout. Image and
scheduling problems are infrastructure errors; a container that crashes is a workload failure. A
controller's wait (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) also watches the controller's
pods, so an Unschedulable replica ends the rollout wait within seconds with the scheduler's message. An
Unschedulable for capacity only (Insufficient cpu, Too many pods, a host port held: what other pods will free) is
given CAPACITY_GRACE seconds first.

Two kinds of wait:
- setup waits (the default): the pod must run before the check can start. Running out of time is a
  ``WaitTimeout`` (an infrastructure error), with the hint for the last reason seen.
- behaviour waits (``behaviour=True``): the probe must restart the container, the hook must write its
  file, the HPA must scale. Running out of time is ``BehaviourNotObserved``, a test failure that says
  what was observed instead.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from wincon.cluster.client import call, is_transient
from wincon.commandline.errors import FrameworkFailure, InfrastructureError
from wincon.results.podwaits import LEDGER_ENV

Condition = Callable[[Any], bool]
Failure = Callable[[Any], "str | None"]

IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
CRASH_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
        "PostStartHookError",
    }
)


class WorkloadFailed(FrameworkFailure):
    """The workload itself failed on the node (it crashed): a test failure, not an infrastructure error."""


class WaitTimeout(InfrastructureError):
    """A setup wait ran out: the object never reached the state the check needs to start."""


class BehaviourNotObserved(AssertionError):
    """A behaviour wait ran out: what the check waited for did not happen; the message says what did.

    A test failure. It is the documented deviation only where a check wraps the wait in
    ``expect_deviation`` because the deviation is exactly that the behaviour never happens.
    """


# The fix for each reason a wait can end with, named after the cluster's own words.
HINTS: tuple[tuple[str, str], ...] = (
    (
        "Unschedulable",
        "no node can take the pod (see the scheduler's message): untaint or add Ready Windows nodes of the build, "
        "or free capacity; wincon tolerates only the usual Windows taints",
    ),
    ("ErrImagePull", "the node cannot pull the image: check --image-repo-list and the registry's reachability"),
    ("ImagePullBackOff", "the node cannot pull the image: check --image-repo-list and the registry's reachability"),
    ("InvalidImageName", "the image reference is malformed: check --image-repo-list"),
    ("ErrImageNeverPull", "imagePullPolicy Never and the image is not on the node: run `wincon prepull`"),
    ("CrashLoopBackOff", "the container keeps exiting: see its logs in the attached diagnostics"),
    ("CreateContainer", "the runtime could not create the container: see the pod's events"),
    ("RunContainerError", "the runtime could not start the container: see the pod's events"),
    ("ProgressDeadlineExceeded", "the rollout stalled: see the ReplicaSet's and the pods' events"),
    ("ReplicaFailure", "the controller could not create pods (quota, admission): see its events"),
)
PULLING_HINT = "raise --pod-start-timeout if Windows images are still pulling (try `wincon prepull`)"


def hint_for(reason: str) -> str:
    """The fix for the cluster's reason (Unschedulable, ErrImagePull, ...), or the events to read."""
    return next((fix for key, fix in HINTS if key in reason), "see the pod's events in the attached diagnostics")


def wait_for(
    list_fn: Callable[..., Any],
    name: str,
    done: Condition,
    failure: Failure | None = None,
    timeout: float = 300.0,
    describe: str = "",
    behaviour: bool = False,
    recheck: float | None = None,
    **list_kwargs: Any,
) -> Any:
    """Watch ``list_fn(**list_kwargs)`` for the object ``name`` until ``done(obj)`` holds.

    ``failure(obj)`` returning a reason ends the wait at once with that reason; so does a pod of a
    controller (an object with ``spec.selector.matchLabels``) that cannot run. A missing object is
    waited for. Where ``failure`` also reads something outside the object (an APIService behind it), which
    changes without an event on the object, ``recheck`` seconds: the object is read again at least that
    often, so the failure is seen within that long instead of the watch's minute. Returns the object in its
    final state. Out of time: ``WaitTimeout`` for a setup wait, ``BehaviourNotObserved`` for a behaviour wait
    (``behaviour=True``).
    """
    deadline = time.monotonic() + timeout
    selector = f"metadata.name={name}"
    what = describe or name
    last: Any = None
    pods_check = _controller_pods_check(list_fn, list_kwargs.get("namespace"))
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            state = _state_hint(last, failure)
            if behaviour:
                raise BehaviourNotObserved(f"{what}: not observed within {timeout:.0f}s" + state)
            raise WaitTimeout(f"{what} did not become ready within {timeout:.0f}s" + state, _timeout_hint(last))
        listing = call(list_fn, field_selector=selector, **list_kwargs)
        for obj in listing.items:
            last = obj
            _check(obj, done, failure, what)
            if done(obj):
                return obj
            if pods_check is not None:
                _check_pods(pods_check, obj, what)
        poll_pods = pods_check is not None and bool(_selector_labels(last))
        window = min(CONTROLLER_POLL if poll_pods else 60.0, recheck or 60.0)
        if waiting_for_capacity(last):
            window = min(window, CAPACITY_RECHECK)
        stream = watch.Watch()
        try:
            for event in stream.stream(
                list_fn,
                field_selector=selector,
                resource_version=listing.metadata.resource_version,
                # A controller's pods change without an event on the controller: look at them every few seconds.
                timeout_seconds=max(1, int(min(remaining, window))),
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


CONTROLLER_POLL = 5


def _check(obj: Any, done: Condition, failure: Failure | None, what: str) -> None:
    if failure is None or done(obj):
        return
    reason = failure(obj)
    if reason:
        _raise_for(reason, what)


def _raise_for(reason: str, what: str) -> None:
    if any(r in reason for r in CRASH_REASONS) or reason.startswith("container "):
        raise WorkloadFailed(f"{what}: {reason}")
    raise InfrastructureError(f"{what}: {reason}", hint_for(reason))


def _controller_pods_check(list_fn: Callable[..., Any], namespace: str | None) -> Callable[[Any], Any] | None:
    """For waits on namespaced objects: a function listing the pods an object's selector picks."""
    api = getattr(list_fn, "__self__", None)
    api_client = getattr(api, "api_client", None)
    if namespace is None or api_client is None or getattr(list_fn, "__name__", "").endswith("_pod"):
        return None
    core = client.CoreV1Api(api_client)

    def pods(labels: dict[str, str]) -> Any:
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return call(core.list_namespaced_pod, namespace, label_selector=selector).items

    return pods


def _check_pods(list_pods: Callable[[Any], Any], obj: Any, what: str) -> None:
    """End a controller's wait with the first of its pods that cannot run (Unschedulable, image, crash)."""
    labels = _selector_labels(obj)
    if not labels:
        return
    for pod in list_pods(labels):
        if pod.metadata.deletion_timestamp or (pod.status and pod.status.phase in ("Failed", "Succeeded")):
            continue  # a finished pod is the controller's business (a Job's retries), not a blocked one
        reason = pod_failure(pod)
        if reason:
            _raise_for(reason, f"{what}: pod {pod.metadata.name}")


def _selector_labels(obj: Any) -> dict[str, str]:
    selector = getattr(getattr(obj, "spec", None), "selector", None)
    labels = getattr(selector, "match_labels", None)
    return labels if isinstance(labels, dict) else {}


def _state_hint(obj: Any, failure: Failure | None) -> str:
    if obj is None:
        return " (it never appeared)"
    status = getattr(obj, "status", None)
    parts = []
    phase = getattr(status, "phase", None)
    if phase:
        parts.append(f"last phase: {phase}")
    for cs in getattr(status, "container_statuses", None) or []:
        state = cs.state
        current = (
            f"waiting {state.waiting.reason}"
            if state and state.waiting
            else f"terminated {state.terminated.reason} exit {state.terminated.exit_code}"
            if state and state.terminated
            else "running"
        )
        parts.append(f"container {cs.name} {current}, ready {cs.ready}, restarts {cs.restart_count}")
    for cond in getattr(status, "conditions", None) or []:
        if getattr(cond, "status", None) == "False" and getattr(cond, "reason", None):
            parts.append(f"{cond.type}=False {cond.reason}")
    return f" ({'; '.join(parts)})" if parts else ""


def _timeout_hint(obj: Any) -> str:
    """A timeout's hint: pulling only where the pod was still creating its containers."""
    status = getattr(obj, "status", None)
    for cs in getattr(status, "container_statuses", None) or []:
        waiting = cs.state.waiting if cs.state else None
        if waiting and waiting.reason in ("ContainerCreating", "PodInitializing"):
            return PULLING_HINT
    if getattr(status, "phase", None) == "Pending" and not getattr(status, "container_statuses", None):
        return PULLING_HINT + "; or the pod is still waiting for a node: see its events"
    return "see the object's events in the attached diagnostics"


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


# A container's end the kubelet records when it lost the container (a node or kubelet restart): not the workload's.
LOST_REASONS = frozenset({"ContainerStatusUnknown"})


def terminated_in_failure(statuses: list[Any]) -> str | None:
    """'container <name> terminated <reason> (exit N): <message>' for the first of ``statuses`` (container statuses)
    that ended other than Completed with exit 0, the kubelet's LOST_REASONS aside; None where none did."""
    for cs in statuses:
        ended = cs.state.terminated if cs.state else None
        if ended is None or ended.reason in LOST_REASONS or (ended.reason == "Completed" and not ended.exit_code):
            continue
        return f"container {cs.name} terminated {ended.reason or ''} (exit {ended.exit_code}): {ended.message or ''}"
    return None


def pod_failure(pod: Any) -> str | None:
    """A reason the pod will not get to Running (or, restartPolicy Never, to Ready) by itself, or None while it still
    may."""
    status = pod.status
    if not status:
        return None
    every = (status.init_container_statuses or []) + (status.container_statuses or [])
    if status.phase == "Failed":
        # The pod's own reason (Evicted, OutOfcpu, NodeAffinity, ...: the node refused or dropped it) is the
        # cluster's; without one, a container that ended in failure is the workload's (WorkloadFailed, as a crash).
        ended = None if status.reason else terminated_in_failure(every)
        return ended or f"pod failed: {status.reason or ''} {status.message or ''}".strip()
    if getattr(getattr(pod, "spec", None), "restart_policy", None) == "Never":
        # A container of a restartPolicy Never pod that ended in failure never runs again, so the pod is never Ready,
        # though it stays Running while another container runs: the workload's failure now, not a wait running out.
        # (An init container that failed fails the pod: phase Failed, above.)
        ended = terminated_in_failure(status.container_statuses or [])
        if ended:
            return ended
    for cond in status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
            return _unschedulable(pod, cond.message or "")
    for cs in every:
        waiting = cs.state.waiting if cs.state else None
        if waiting and (waiting.reason in IMAGE_REASONS or waiting.reason in CRASH_REASONS):
            return f"{waiting.reason} in container {cs.name}: {waiting.message or ''}".strip()
    return None


# The scheduler's words for a node that would take the pod once other pods free what they hold (NodeResourcesFit,
# NodePorts, the volume limits plugins): another run's pods on the same cluster (a nightly beside a contributor's run)
# hold it for a while, so a setup wait gives the pod CAPACITY_GRACE seconds before it ends with the message. Any other
# reason (taints, selectors, affinity) ends the wait at once, as before.
CAPACITY_REASONS = ("Insufficient ", "Too many pods", "didn't have free ports", "exceed max volume count")
CAPACITY_GRACE = 90.0
CAPACITY_RECHECK = 5.0  # while a pod waits for capacity, read it this often (the scheduler's retries change nothing)
_capacity_since: dict[str, float] = {}  # pod uid -> when this process first saw it wait for capacity (or a claim)


# The scheduler's words for a claim it has not seen yet: a check creates its PersistentVolumeClaim, then its pod,
# and the scheduler's informer may not have the claim when it first tries the pod (make fresh-check at cd05e04:
# "0/4 nodes are available: persistentvolumeclaim "data" not found", the claim created just before). The scheduler
# tries the pod again once it sees the claim, so a setup wait gives it CLAIM_GRACE seconds; a claim that never
# appears still ends the wait with the scheduler's message then.
CLAIM_NOT_SEEN = re.compile(r'persistentvolumeclaim "[^"]+" not found')
CLAIM_GRACE = 30.0


def claim_not_seen(message: str) -> bool:
    """Whether the scheduler's message says it has not found the pod's claim (see CLAIM_NOT_SEEN)."""
    return bool(CLAIM_NOT_SEEN.search(message))


def capacity_only(message: str) -> bool:
    """Whether the scheduler's message names a reason other pods will free (see CAPACITY_REASONS)."""
    return any(reason in message for reason in CAPACITY_REASONS)


def _pod_key(pod: Any) -> str:
    meta = getattr(pod, "metadata", None)
    uid = getattr(meta, "uid", None)
    return str(uid) if uid else f"{getattr(meta, 'namespace', '')}/{getattr(meta, 'name', '')}"


def _unschedulable(pod: Any, message: str) -> str | None:
    """The reason a pod cannot be scheduled; None while it waits for capacity and CAPACITY_GRACE has not passed, or
    for a claim the scheduler has not seen yet and CLAIM_GRACE has not passed (both remembered in _capacity_since)."""
    capacity = capacity_only(message)
    if not capacity and not claim_not_seen(message):
        return f"Unschedulable: {message}"
    now = time.monotonic()
    since = _capacity_since.setdefault(_pod_key(pod), now)
    if now - since < (CAPACITY_GRACE if capacity else CLAIM_GRACE):
        return None
    if not capacity:
        return f"Unschedulable for {now - since:.0f} s, its claim still not found by the scheduler: {message}"
    return f"Unschedulable for {now - since:.0f} s, the capacity it needs still held by other pods: {message}"


def waiting_for_capacity(obj: Any) -> bool:
    """Whether ``pod_failure`` is deferring this pod's Unschedulable (so its wait reads it again soon)."""
    return obj is not None and _pod_key(obj) in _capacity_since and not getattr(obj.spec, "node_name", None)


def wait_for_pod(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    done: Condition = pod_running_ready,
    timeout: float = 300.0,
    failure: Failure | None = pod_failure,
    behaviour: bool = False,
    describe: str = "",
) -> Any:
    """Wait for the pod; a setup wait by default, a behaviour wait (see ``wait_for``) with ``behaviour=True``.

    Where ``$WINCON_POD_LEDGER`` names a file (``wincon run`` sets it), the wait is recorded there (``record_wait``).
    """
    core = client.CoreV1Api(api_client)
    start = time.time()
    pod: Any = None
    try:
        pod = wait_for(
            core.list_namespaced_pod,
            name,
            done,
            failure,
            timeout,
            describe=f"pod {namespace}/{name}" + (f": {describe}" if describe else ""),
            behaviour=behaviour,
            namespace=namespace,
        )
        return pod
    except WaitTimeout as exc:
        claims = unbound_claims(core, namespace, name)
        if not claims:
            raise
        raise WaitTimeout(f"{exc.message}; {claims}", CLAIM_HINT) from exc
    finally:
        record_wait(namespace, name, pod, start, time.time())


CLAIM_HINT = "nothing provisioned the claim's volume: check that its StorageClass's provisioner runs (its events)"


def unbound_claims(core: Any, namespace: str, name: str) -> str:
    """The cluster's reason a pod's claims are not bound: each unbound claim's phase and newest event (the PV
    controller's, e.g. ExternalProvisioning naming the provisioner it waits for); '' when every claim is bound,
    the pod has none, or they cannot be read (the timeout's own message stands)."""
    try:
        pod = core.read_namespaced_pod(name, namespace, _request_timeout=10)
        said = []
        for volume in pod.spec.volumes or []:
            if volume.persistent_volume_claim is None:
                continue
            claim = volume.persistent_volume_claim.claim_name
            pvc = core.read_namespaced_persistent_volume_claim(claim, namespace, _request_timeout=10)
            phase = pvc.status.phase if pvc.status else None
            if phase == "Bound":
                continue
            selector = f"involvedObject.kind=PersistentVolumeClaim,involvedObject.name={claim}"
            events = core.list_namespaced_event(namespace, field_selector=selector, _request_timeout=10).items
            newest = max(
                events, key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp, default=None
            )
            said.append(
                f"claim {claim} {phase or 'without a phase'}"
                + (f": {newest.reason}: {newest.message}" if newest else " (no events)")
            )
        return "; ".join(said)
    except Exception:  # a diagnosis only: never hide the timeout behind a failed read
        return ""


POD_LEDGER_ENV = LEDGER_ENV


def _pod_os(pod: Any) -> str:
    """The OS a pod asked for (``spec.os.name``, else its ``kubernetes.io/os`` node selector); '' if neither."""
    spec = getattr(pod, "spec", None)
    if spec is None:
        return ""
    if getattr(spec, "os", None) is not None and spec.os.name:
        return str(spec.os.name)
    return str((spec.node_selector or {}).get("kubernetes.io/os", ""))


def record_wait(namespace: str, name: str, pod: Any, start: float, end: float) -> None:
    """Append one pod wait to the ledger named by ``$WINCON_POD_LEDGER`` (nothing when unset): the pod, its
    node and OS, when the wait started and ended (epoch seconds), whether the pod got there, and the test and
    xdist worker that waited (``$PYTEST_CURRENT_TEST``, ``$PYTEST_XDIST_WORKER``). One line per wait, written
    with a single append, so the workers of a run share the file."""
    path = os.environ.get(POD_LEDGER_ENV)
    if not path:
        return
    entry = {
        "namespace": namespace,
        "pod": name,
        "node": str(getattr(getattr(pod, "spec", None), "node_name", "") or ""),
        "os": _pod_os(pod),
        "start": round(start, 3),
        "end": round(end, 3),
        "ok": pod is not None,
        "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
    }
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass  # the ledger is a measurement: a wait never fails because it could not be written down


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
