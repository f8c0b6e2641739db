"""Pod helpers the suites share (``wincon.checks.pods``; not to be confused with ``wincon.workloads``, which
renders and deploys manifests): pinned Windows pods, controller templates, the pods a controller owns.

They build pinned manifests, list the pods a controller owns, check where they ran, and wait for
the few observations the framework's waits do not cover (events). Waiting itself goes through
``wincon.cluster.waits.wait_for`` or tenacity; there is no hand-written polling loop here.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from kubernetes import client
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from wincon.cluster.client import call
from wincon.clusterinfo import nodes
from wincon.clusterinfo.nodes import nodes_for, windows_nodes_of_build  # noqa: F401 - the picks' one home, named here too
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import FrameworkFailure, InfrastructureError
from wincon.workloads.deploy import await_pod, container, pod_manifest
from wincon.workloads.pinning import WINDOWS_TOLERATIONS, WrongNode, assert_ran_on, pin_linux, pin_windows

# A label every workload of the suites carries, so a controller's pods are found by selector.
APP_LABEL = "app"


def windows_pod(
    wincon: Any,
    name: str,
    build: int | None,
    image_key: str = "agnhost",
    args: list[str] | None = None,
    command: list[str] | None = None,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    container_extra: dict[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod pinned to Windows (and ``build``) running one container of the catalog image ``image_key``."""
    return os_pod(wincon, name, "windows", build, image_key, args, command, node, labels, container_extra, **spec_extra)


def os_pod(
    wincon: Any,
    name: str,
    target_os: str,
    build: int | None,
    image_key: str = "agnhost",
    args: list[str] | None = None,
    command: list[str] | None = None,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    container_extra: dict[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """``windows_pod`` for the OS a check targets (``target_os``): a Linux control's pod is pinned to Linux
    (``build`` applies to Windows only) and runs the catalog's Linux variant of ``image_key``."""
    build = build if target_os == "windows" else None
    image = wincon.catalog.image(image_key, target_os, build)
    if args is None and command is None and image_key == "agnhost":
        args = ["pause"]
    extra = {"imagePullPolicy": "IfNotPresent"} if target_os == "linux" else {}
    main = container("main", image, command=command, args=args, **{**extra, **(container_extra or {})})
    return pod_manifest(name, [main], os_name=target_os, build=build, node=node, labels=labels, **spec_extra)


def pin_template(manifest: dict[str, Any], build: int | None) -> dict[str, Any]:
    """A copy of a controller manifest whose pod template can only run on Windows (of ``build``)."""
    body = copy.deepcopy(manifest)
    spec = body["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if body.get("kind") == "CronJob" else spec["template"]
    template["spec"] = pin_windows(template["spec"], build=build)
    return body


def pin_template_linux(manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of a controller manifest for a Linux control: its pod template pinned to Linux, a ``cmd /c``
    command run by sh instead, and images never pulled (the local cluster's Linux nodes pull nothing)."""
    body = copy.deepcopy(manifest)
    spec = body["spec"]["jobTemplate"]["spec"] if body.get("kind") == "CronJob" else body["spec"]
    spec["template"]["spec"] = pin_linux(spec["template"]["spec"])
    for main in spec["template"]["spec"]["containers"]:
        if (main.get("command") or [])[:2] == ["cmd", "/c"]:
            main["command"] = ["sh", "-c", " ".join(main["command"][2:])]
        main["imagePullPolicy"] = "IfNotPresent"
    return body


def label_selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def pods_with(api_client: client.ApiClient, namespace: str, labels: dict[str, str]) -> list[Any]:
    """The live (not terminating) pods in ``namespace`` with ``labels``, sorted by name."""
    core = client.CoreV1Api(api_client)
    items = call(core.list_namespaced_pod, namespace, label_selector=label_selector(labels)).items
    return sorted((p for p in items if p.metadata.deletion_timestamp is None), key=lambda p: p.metadata.name)


def assert_all_ran_on(
    pods: Iterable[Any], profile: ClusterProfile, os_name: str = "windows", build: int | None = None
) -> list[NodeProfile]:
    """The nodes of ``pods``, after checking each pod ran on the intended OS (and build). No pod at all is WrongNode:
    nothing shows the check's pods ran on a node of that OS (an empty list would pass every pod's check)."""
    placed = [assert_ran_on(p, profile, os_name=os_name, build=build) for p in pods]
    if not placed:
        raise WrongNode(f"no pod to check: nothing shows the check's pods ran on a {os_name} node")
    return placed


def schedulable_windows_nodes(
    profile: ClusterProfile, tolerations: Iterable[dict[str, str]] = WINDOWS_TOLERATIONS
) -> list[str]:
    """Ready Windows nodes whose NoSchedule/NoExecute taints ``tolerations`` (by default the suite's Windows
    tolerations) all tolerate: ``wincon.clusterinfo.nodes.schedulable_windows_nodes``."""
    return nodes.schedulable_windows_nodes(profile, tolerations)


def events_for(api_client: client.ApiClient, namespace: str, name: str, reason: str) -> list[Any]:
    core = client.CoreV1Api(api_client)
    selector = f"involvedObject.name={name},reason={reason}"
    return call(core.list_namespaced_event, namespace, field_selector=selector).items


def wait_for_event(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    reason: str,
    timeout: float = 60.0,
    behaviour: bool = False,
) -> list[Any]:
    """The events with ``reason`` about object ``name``, once at least one exists.

    Event recording is asynchronous: the object's status may show a condition a moment before the
    event that explains it is stored. With ``behaviour=True`` the event is the behaviour checked (a
    probe failing, a hook running): no such event is a failure (BehaviourNotObserved), not an error.
    """
    retrying = Retrying(
        retry=retry_if_result(lambda events: not events),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(1),
    )
    try:
        return retrying(events_for, api_client, namespace, name, reason)
    except RetryError as exc:
        if behaviour:
            from wincon.cluster.waits import BehaviourNotObserved

            others = sorted(
                {
                    e.reason
                    for e in call(
                        client.CoreV1Api(api_client).list_namespaced_event,
                        namespace,
                        field_selector=f"involvedObject.name={name}",
                    ).items
                }
            )
            raise BehaviourNotObserved(
                f"no {reason} event about {namespace}/{name} within {timeout:.0f}s; its events: {others or 'none'}"
            ) from exc
        raise InfrastructureError(
            f"no {reason} event about {namespace}/{name} within {timeout:.0f}s",
            "check the scheduler and controller-manager are running (see the attached diagnostics)",
        ) from exc


def pod_unschedulable(pod: Any) -> bool:
    """The scheduler tried and found no node: condition PodScheduled=False, reason Unschedulable."""
    for cond in (pod.status.conditions if pod.status else None) or []:
        if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
            return True
    return False


def pod_running_failure(pod: Any) -> str | None:
    """A reason a pod will not run by itself; like ``pod_failure`` but an Unschedulable pod may still wait."""
    from wincon.cluster.waits import pod_failure

    reason = pod_failure(pod)
    if reason and reason.startswith("Unschedulable"):
        return None
    return reason


class Rejected(FrameworkFailure):
    """The API server refused an object the check needed to create: the documented rule, or a deviation."""


def create_or_reject(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> Any:
    """Create the pod for real; a 400/403/422 answer becomes ``Rejected`` naming the server's causes."""
    from wincon.checks.api_rules import submit_pod

    created, rejection = submit_pod(api_client, namespace, body, dry_run=False)
    if rejection is not None:
        raise Rejected(f"the API server refused pod {body['metadata']['name']}: {rejection.describe()}")
    return created


def judge_refusal(rejection: Any, paths: list[str], limitation: str, body: dict[str, Any]) -> NoReturn:
    """A refusal of ``body``: ``DeviationObserved`` where the API server's own Windows rule names one of ``paths``
    (the limitation's fields), else ``Rejected`` (a refusal the check did not ask about)."""
    from wincon.commandline.errors import DeviationObserved

    refusal = rejection.describe()
    named = rejection.windows_rule_for(*paths)
    if named is not None:
        raise DeviationObserved(
            f"{limitation}: the API server refuses {named.get('field')} for a Windows pod: {refusal}"
        )
    raise Rejected(
        f"the API server refused pod {body['metadata']['name']}, but not for "
        f"{', '.join(paths) or 'a field the check set'} under its Windows rule: {refusal}"
    )


def run_or_refused(
    wincon: Any,
    namespace: str,
    body: dict[str, Any],
    limitation: str,
    ready: bool = True,
    fields: Iterable[str] | None = None,
) -> Any:
    """``run_windows_pod`` for a check whose documented deviation may be the API server's Windows rule.

    A refusal is that deviation, observed (``DeviationObserved``), only where the API server's own Windows rule
    (422, a Forbidden cause "cannot be set for a windows pod") names one of ``fields``: the field paths the
    limitation is about, by default every Linux-only field ``body`` itself sets (``forbidden_paths_in``). Any
    other refusal stays ``Rejected``: a webhook's, Pod Security, a quota, or the rule refusing a field the check
    did not set (a mutating webhook's seccompProfile is not the readOnlyRootFilesystem deviation). Pass the
    data-plane gate first.
    """
    from wincon.checks.api_rules import forbidden_paths_in, submit_pod

    _, rejection = submit_pod(wincon.api_client, namespace, body, dry_run=False)
    if rejection is not None:
        judge_refusal(rejection, list(fields) if fields is not None else forbidden_paths_in(body), limitation, body)
    return await_pod(wincon, namespace, body, ready)  # on the OS its spec pins (a Linux control's: Linux)


def run_unless_mount_refused(
    wincon: Any, kube: Any, namespace: str, body: dict[str, Any], refusal: Callable[[str], bool], observed: str
) -> Any:
    """Create ``body``; wait until it runs, or until the kubelet reports a FailedMount event whose message
    ``refusal`` accepts: the documented deviation, observed (``DeviationObserved``: "``observed``: <message>"),
    once the pod is shown to sit where its spec pins it. Any other end (a pod failure, the wait running out) is
    what ``await_pod`` makes of it. The storage checks whose deviation is a volume the kubelet cannot mount."""
    from wincon.cluster.waits import pod_failure, pod_running_ready
    from wincon.commandline.errors import DeviationObserved
    from wincon.workloads.deploy import check_placement

    name = body["metadata"]["name"]
    create_or_reject(wincon.api_client, namespace, body)
    refused: list[str] = []

    def settled(pod: Any) -> bool:
        if pod_running_ready(pod):
            return True
        refused[:] = [event.message for event in kube.events(name, "FailedMount") if refusal(event.message or "")]
        return bool(refused)

    describe = "Running and Ready, or its volume refused (FailedMount)"
    pod = kube.wait_pod(name, done=settled, failure=pod_failure, describe=describe)
    if not pod_running_ready(pod) and refused:
        check_placement(pod, body, wincon.profile)
        raise DeviationObserved(f"{observed}: {refused[-1]}")
    return await_pod(wincon, namespace, body)


def admitted_and_scheduled(wincon: Any, namespace: str, body: dict[str, Any]) -> Any:
    """Create ``body`` (refusal: ``Rejected``), wait until the scheduler binds it, check the node is a Windows
    node of its pinned build, and return the pod as the API server stores it.

    For API-level checks (admitted, stored, placed): the API server and the scheduler decide all of it, on
    simulated nodes too. No container status is read, so a simulated node's fake Running proves nothing here.
    """
    from wincon.cluster.waits import pod_failure, pod_scheduled, wait_for_pod
    from wincon.clusterinfo.profile import WINDOWS_BUILD_LABEL, parse_build

    create_or_reject(wincon.api_client, namespace, body)
    name = body["metadata"]["name"]
    pod = wait_for_pod(
        wincon.api_client, namespace, name, done=pod_scheduled, timeout=wincon.pod_start_timeout, failure=pod_failure
    )
    build = parse_build((body["spec"].get("nodeSelector") or {}).get(WINDOWS_BUILD_LABEL))
    assert_ran_on(pod, wincon.profile, os_name="windows", build=build)
    return call(client.CoreV1Api(wincon.api_client).read_namespaced_pod, name, namespace)


def run_windows_pod(wincon: Any, namespace: str, body: dict[str, Any], ready: bool = True) -> Any:
    """Create ``body`` (refusal: ``Rejected``), wait until it runs, and check it is on a Windows node of its build."""
    create_or_reject(wincon.api_client, namespace, body)
    return await_pod(wincon, namespace, body, ready, os_name="windows")


def run_os_pod(wincon: Any, namespace: str, body: dict[str, Any], ready: bool = True) -> Any:
    """``run_windows_pod`` for a pod of ``os_pod``: it must run on the OS (and build) its spec pins."""
    create_or_reject(wincon.api_client, namespace, body)
    return await_pod(wincon, namespace, body, ready)


def run_os_pods(wincon: Any, namespace: str, bodies: list[dict[str, Any]], os_name: str | None = None) -> list[Any]:
    """``run_os_pod`` for several pods of one check whose starts may overlap: every pod is created before any is
    waited for (one pod start's wait, not one per pod), then each is waited for and checked to have run where its
    spec pins it (``os_name``: as ``run_windows_pod`` does), in order: the first one's error is the check's."""
    for body in bodies:
        create_or_reject(wincon.api_client, namespace, body)
    return [await_pod(wincon, namespace, body, os_name=os_name) for body in bodies]


def slug(text: str, limit: int = 40) -> str:
    """A DNS-1123 label fragment from any text: 'podSecurityContext.runAsUser' -> 'podsecuritycontext-runasuser'."""
    out = "".join(ch if ch.isalnum() else "-" for ch in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:limit].strip("-")


def eventually(
    check: Any, timeout: float, describe: str, interval: float = 1.0, behaviour: bool = False, seen: Any = None
) -> Any:
    """``check()``'s first truthy result within ``timeout`` seconds (tenacity polls it).

    For observations no single object's watch expresses (a set of pods matching a label). Out of time: a
    setup wait raises InfrastructureError; a behaviour wait (``behaviour=True``) raises BehaviourNotObserved
    with ``seen()``, what was observed instead.
    """
    retrying = Retrying(
        retry=retry_if_result(lambda value: not value), stop=stop_after_delay(timeout), wait=wait_fixed(interval)
    )
    try:
        return retrying(check)
    except RetryError as exc:
        if behaviour:
            from wincon.cluster.waits import BehaviourNotObserved

            observed = f"; observed: {seen()}" if seen is not None else ""
            raise BehaviourNotObserved(f"{describe}: not observed within {timeout:.0f}s{observed}") from exc
        raise InfrastructureError(
            f"{describe}: not observed within {timeout:.0f}s", "see the attached diagnostics"
        ) from exc


def resource_version_now(api_client: client.ApiClient, namespace: str) -> str:
    """The pod list's resourceVersion: a point in time to replay pod events from."""
    core = client.CoreV1Api(api_client)
    return call(core.list_namespaced_pod, namespace, limit=1).metadata.resource_version


PodEvent = tuple[str, str, bool]  # (event type, pod name, Ready)


class PodHistory:
    """The changes to a namespace's pods (those with ``labels``) in the order the API server stored them, watched
    live from when it is entered until ``events()``.

    It replaces replaying a watch from a resourceVersion once the check is over, which fails with 410 Gone when the
    API server's watch cache has moved past that resourceVersion: seen under the Windows pod-latency model, where
    a StatefulSet of 3 Windows pods took 99 s while the run's other namespaces filled the cache. A watch opened at
    the start is served as the changes happen; when the server ends it (every ``window`` seconds) it is resumed from
    the last resourceVersion it saw, which bookmarks keep fresh.
    """

    def __init__(self, api_client: client.ApiClient, namespace: str, labels: dict[str, str], window: int = 20) -> None:
        self.api_client, self.namespace, self.labels, self.window = api_client, namespace, labels, window
        self._events: list[PodEvent] = []
        self._error: Exception | None = None
        self._stopping = threading.Event()
        self._stream: Any = None
        self._resource_version = ""
        self._thread = threading.Thread(target=self._watch, daemon=True, name=f"pod-history-{namespace}")

    def __enter__(self) -> PodHistory:
        self._resource_version = resource_version_now(self.api_client, self.namespace)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _watch(self) -> None:
        from kubernetes import watch

        from wincon.cluster.waits import pod_running_ready

        core = client.CoreV1Api(self.api_client)
        while not self._stopping.is_set():
            self._stream = watch.Watch()
            try:
                for event in self._stream.stream(
                    core.list_namespaced_pod,
                    self.namespace,
                    label_selector=label_selector(self.labels),
                    resource_version=self._resource_version,
                    timeout_seconds=self.window,
                    allow_watch_bookmarks=True,
                ):
                    version = (event.get("raw_object") or {}).get("metadata", {}).get("resourceVersion")
                    if event["type"] != "BOOKMARK":
                        pod = event["object"]
                        self._events.append((event["type"], pod.metadata.name, pod_running_ready(pod)))
                    self._resource_version = version or self._resource_version
            except Exception as exc:  # a 410 or a broken stream; or the connection closed by _stop
                if not self._stopping.is_set():
                    self._error = exc
                return

    def _stop(self) -> None:
        self._stopping.set()
        response = getattr(self._stream, "_resp", None)
        if self._stream is not None:
            # The client's own stop shuts the socket down, which ends a read blocked in it; closing the response
            # alone did not (events() then waited for the server to end the watch: 17.7 s of a StatefulSet check).
            self._stream.stop()
        if response is not None:
            try:
                response.close()  # the connection released, once the read has ended
            except Exception:  # noqa: BLE001  # closing a stream that is already closed
                pass
        if self._thread.is_alive():
            self._thread.join(timeout=self.window + 5)

    def events(self, until: Callable[[list[PodEvent]], bool] | None = None, timeout: float = 15.0) -> list[PodEvent]:
        """What the watch saw, once ``until(events)`` holds (changes already stored may still be on the way) or
        ``timeout`` seconds passed; then the watch stops. InfrastructureError where the watch itself failed."""
        deadline = time.monotonic() + timeout
        while until is not None and not until(list(self._events)) and time.monotonic() < deadline:
            if self._error is not None or not self._thread.is_alive():
                break
            time.sleep(0.2)
        self._stop()
        if self._error is not None:
            raise InfrastructureError(
                f"the pod watch of {self.namespace} failed while the check ran: {self._error}",
                "rerun the test; if it recurs, the API server ends watches early (see its log)",
            )
        return list(self._events)


def without_os(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without ``spec.os``: still placed by its nodeSelector (kubernetes.io/os, the build, the node)
    and its tolerations, as upstream's pods are (they set the OS label only)."""
    body["spec"].pop("os", None)
    assert body["spec"]["nodeSelector"]["kubernetes.io/os"] in ("windows", "linux"), body["spec"]["nodeSelector"]
    return body
