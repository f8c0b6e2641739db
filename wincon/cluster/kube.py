"""``Kube``: the one client suites use, bound to the test's namespace (the ``kube`` fixture).

Suites talk to the cluster through it instead of raw ``kubernetes.client`` objects (a ruff rule bans
those imports in ``suites/``). It gives:

typed API handles
    ``kube.core`` (CoreV1Api), ``apps``, ``batch``, ``node`` (NodeV1Api: RuntimeClasses), ``scheduling``
    (PriorityClasses), ``discovery`` (EndpointSlices), ``autoscaling`` (v2), ``policy``, ``rbac``,
    ``storage``, ``networking`` (NetworkPolicies), ``apiextensions`` (CRDs),
    ``admissionregistration`` (webhooks), ``apiregistration``, ``custom`` (CustomObjectsApi), ``api_client``; ``ApiException`` for ``except`` clauses.
create and apply, cleanup registered at creation
    ``kube.create(manifest)`` creates any kind in the namespace (or cluster-wide for cluster-scoped kinds)
    and returns the created object. Namespaced objects belong to the namespace, whose deletion at teardown
    was registered when it was created; cluster-scoped objects (RuntimeClass, PriorityClass, ...) get their
    deletion registered here, run when the fixture ends (last created, first deleted).
    ``kube.create_pod(manifest)`` creates a pod without waiting; ``kube.delete_pod(name, grace=None)``;
    ``kube.cleanup(fn, *args)`` registers any other undo.
factories that own what they create
    ``kube.taint(node, taint)`` (removed at teardown), ``kube.runtime_class(handler, node_selector,
    tolerations)`` and ``kube.priority_class(value)`` (deleted at teardown); the fixtures ``taint_node``,
    ``make_runtime_class`` and ``make_priority_class`` are these methods.
waits
    ``kube.run_pod(manifest, ready=True)``: create, wait Running/Ready, check it ran on the pinned OS and
    build. ``kube.start_pods(manifests)``: create all, then wait for each and check placement.
    ``kube.wait_pod(name, done, failure)``, ``kube.wait_for(list_fn, name, done, failure, describe)``
    (watch-based, namespace filled in), ``kube.read_pod(name)``, ``kube.pods(labels)``.
exec through the data-plane gate
    ``kube.exec(pod, command, container=None, where=None, timeout=60)``: records the exact command and the
    pod's node, and skips where a node of the test's pods has no data plane (``data_plane`` gate), then runs
    it; ``kube.gate(command, where)`` for checks that are not an exec (waiting for a probe to restart a
    container). Without a gate (module-scoped setup) ``exec`` refuses: setup never runs commands in pods.
logs, events, API rules
    ``kube.logs(pod, container=None, previous=False, tail=None)``, ``kube.events(name, reason)``,
    ``kube.wait_event(name, reason, timeout=60, behaviour=False)``; ``kube.submit(pod, dry_run=True)`` creates
    (or dry-runs) a pod and returns (created, None) or (None, Rejection) for the API rules checks.

``Kube`` also carries ``profile``, ``catalog``, ``run_id`` and ``pod_start_timeout``, so it can be passed
wherever a framework helper takes the run context (``wincon``).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.exec import ExecResult, exec_in_pod
from wincon.cluster.namespaces import MANAGED_BY, MANAGER, RUN_ID
from wincon.cluster.waits import pod_failure, pod_running_ready, wait_for, wait_for_pod
from wincon.workloads import deploy, pinning

Gate = Callable[..., None]

# Kinds without a namespace: created cluster-wide, so their deletion is registered at creation.
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "RuntimeClass",
        "PriorityClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)


def pod_name(pod: Any) -> str:
    """The name of a pod given as a name, a PodRef (``.name``) or an API object (``.metadata.name``)."""
    if isinstance(pod, str):
        return pod
    metadata = getattr(pod, "metadata", None)
    if metadata is not None:
        return str(metadata.name)
    return str(pod.name)


def exec_where(pod: Any, container: str | None = None) -> str:
    """Where a command runs, as the data-plane gate records it: ``pod NAME[ container C]``."""
    return f"pod {pod_name(pod)}" + (f" container {container}" if container else "")


class Kube:
    """A client bound to one namespace; see the module docstring for its methods."""

    ApiException = ApiException

    def __init__(self, context: Any, namespace: str, gate: Gate | None = None) -> None:
        self.context = context
        self.namespace = namespace
        self._gate = gate
        self._cleanups: list[tuple[str, Callable[[], Any]]] = []

    # ------------------------------------------------------------------ the run context

    @property
    def api_client(self) -> client.ApiClient:
        return self.context.api_client

    @property
    def profile(self) -> Any:
        return self.context.profile

    @property
    def catalog(self) -> Any:
        return self.context.catalog

    @property
    def run_id(self) -> str:
        return str(self.context.run_id)

    @property
    def pod_start_timeout(self) -> float:
        return float(self.context.pod_start_timeout)

    # ------------------------------------------------------------------ typed API handles

    @functools.cached_property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @functools.cached_property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api_client)

    @functools.cached_property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api_client)

    @functools.cached_property
    def node(self) -> client.NodeV1Api:
        return client.NodeV1Api(self.api_client)

    @functools.cached_property
    def scheduling(self) -> client.SchedulingV1Api:
        return client.SchedulingV1Api(self.api_client)

    @functools.cached_property
    def discovery(self) -> client.DiscoveryV1Api:
        return client.DiscoveryV1Api(self.api_client)

    @functools.cached_property
    def autoscaling(self) -> client.AutoscalingV2Api:
        return client.AutoscalingV2Api(self.api_client)

    @functools.cached_property
    def policy(self) -> client.PolicyV1Api:
        return client.PolicyV1Api(self.api_client)

    @functools.cached_property
    def rbac(self) -> client.RbacAuthorizationV1Api:
        return client.RbacAuthorizationV1Api(self.api_client)

    @functools.cached_property
    def storage(self) -> client.StorageV1Api:
        return client.StorageV1Api(self.api_client)

    @functools.cached_property
    def networking(self) -> client.NetworkingV1Api:
        return client.NetworkingV1Api(self.api_client)

    @functools.cached_property
    def apiextensions(self) -> client.ApiextensionsV1Api:
        return client.ApiextensionsV1Api(self.api_client)

    @functools.cached_property
    def admissionregistration(self) -> client.AdmissionregistrationV1Api:
        return client.AdmissionregistrationV1Api(self.api_client)

    @functools.cached_property
    def apiregistration(self) -> client.ApiregistrationV1Api:
        return client.ApiregistrationV1Api(self.api_client)

    @functools.cached_property
    def certificates(self) -> client.CertificatesV1Api:
        return client.CertificatesV1Api(self.api_client)

    @functools.cached_property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)

    # ------------------------------------------------------------------ create, with cleanup registered

    def cleanup(self, fn: Callable[..., Any], *args: Any, what: str = "", **kwargs: Any) -> None:
        """Register ``fn(*args, **kwargs)`` to run when the fixture ends (last registered runs first)."""
        self._cleanups.append((what or getattr(fn, "__name__", "cleanup"), functools.partial(fn, *args, **kwargs)))

    def close(self) -> None:
        """Run every registered cleanup, newest first; all run even if one fails, then the first error raises."""
        errors: list[BaseException] = []
        while self._cleanups:
            _, undo = self._cleanups.pop()
            try:
                undo()
            except ApiException as exc:
                if exc.status != 404:
                    errors.append(exc)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def create(self, manifest: dict[str, Any]) -> Any:
        """Create one object of any kind; a cluster-scoped one gets its deletion registered now."""
        created = deploy.apply(self.api_client, self.namespace, manifest)
        if manifest.get("kind") in CLUSTER_SCOPED:
            self.cleanup(self._delete_cluster_object, manifest, what=f"delete {manifest['kind']}")
        return created

    def apply(self, manifest: dict[str, Any]) -> Any:
        """Same as :meth:`create` (objects are created once per test; nothing is updated in place)."""
        return self.create(manifest)

    def _delete_cluster_object(self, manifest: dict[str, Any]) -> None:
        from kubernetes.dynamic import DynamicClient

        resource = DynamicClient(self.api_client).resources.get(
            api_version=manifest["apiVersion"], kind=manifest["kind"]
        )
        resource.delete(name=manifest["metadata"]["name"])

    def create_pod(self, manifest: dict[str, Any]) -> Any:
        """Create the pod and return at once (for checks that watch it start, or fail to)."""
        waves.adopt(self.namespace, manifest, "kube.create_pod")  # a pod made ahead is created with run_os_pod: errs
        return call(self.core.create_namespaced_pod, self.namespace, manifest)

    def delete_pod(self, name: str, grace: int | None = None) -> None:
        kwargs = {} if grace is None else {"grace_period_seconds": grace}
        call(self.core.delete_namespaced_pod, name, self.namespace, **kwargs)

    def read_pod(self, name: str) -> Any:
        return call(self.core.read_namespaced_pod, name, self.namespace)

    def pods(self, labels: dict[str, str]) -> list[Any]:
        """The live (not terminating) pods of the namespace with all of ``labels``, sorted by name."""
        from wincon.checks.pods import pods_with

        return list(pods_with(self.api_client, self.namespace, labels))

    # ------------------------------------------------------------------ factories that own what they create

    def taint(self, node: str, taint: dict[str, str]) -> None:
        """Add ``taint`` to ``node`` now and register its removal (by key) at teardown."""
        from wincon.checks.scheduling import add_taint, remove_taint

        self.cleanup(remove_taint, self.api_client, node, taint["key"], what=f"untaint {node}")
        add_taint(self.api_client, node, taint)

    def runtime_class(
        self,
        handler: str,
        node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, str]] | None = None,
        name: str | None = None,
    ) -> str:
        """Create a RuntimeClass (scheduling section optional) labelled with the run id; deleted at teardown."""
        name = name or f"wincon-{self.run_id[-6:]}-{secrets.token_hex(3)}"
        body: dict[str, Any] = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER, RUN_ID: self.run_id}},
            "handler": handler,
        }
        if node_selector is not None or tolerations is not None:
            body["scheduling"] = {"nodeSelector": node_selector or {}, "tolerations": tolerations or []}
        self.cleanup(call, self.node.delete_runtime_class, name, what=f"delete RuntimeClass {name}")
        call(self.node.create_runtime_class, body)
        return name

    def priority_class(self, value: int, name: str | None = None, preemption: str | None = None) -> str:
        """Create a PriorityClass labelled with the run id; deleted at teardown."""
        name = name or f"wincon-{self.run_id[-6:]}-{secrets.token_hex(3)}"
        body: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER, RUN_ID: self.run_id}},
            "value": value,
        }
        if preemption:
            body["preemptionPolicy"] = preemption
        self.cleanup(call, self.scheduling.delete_priority_class, name, what=f"delete PriorityClass {name}")
        call(self.scheduling.create_priority_class, body)
        return name

    # ------------------------------------------------------------------ waits

    def run_pod(self, manifest: dict[str, Any], ready: bool = True) -> Any:
        """Create the pod, wait Running (Ready unless ``ready=False``), check the OS and build it ran on."""
        return deploy.run_pod(self, self.namespace, manifest, ready)

    def await_pod(self, manifest: dict[str, Any], ready: bool = True, os_name: str | None = None) -> Any:
        """Wait for a pod created already, and check where it ran (see :meth:`run_pod`)."""
        return deploy.await_pod(self, self.namespace, manifest, ready, os_name)

    def start_pods(
        self, manifests: list[dict[str, Any]], done: Callable[[Any], bool] = pod_running_ready
    ) -> dict[str, Any]:
        """Create every pod first (so they start in parallel), then wait for each and check where it ran."""
        for manifest in manifests:
            self.create_pod(manifest)
        pods = {}
        for manifest in manifests:
            name = manifest["metadata"]["name"]
            pod = self.wait_pod(name, done=done)
            deploy.check_placement(pod, manifest, self.profile)
            pods[name] = pod
        return pods

    def wait_pod(
        self,
        name: str,
        done: Callable[[Any], bool] = pod_running_ready,
        failure: Callable[[Any], str | None] | None = pod_failure,
        timeout: float | None = None,
        behaviour: bool = False,
        describe: str = "",
    ) -> Any:
        """Watch the pod until ``done(pod)``; ``failure(pod)`` returning a reason ends the wait at once.

        A setup wait by default (out of time: an infrastructure error); ``behaviour=True`` for a wait on the
        behaviour checked (out of time: a failure saying what was observed), see wincon/cluster/waits.py.
        """
        return wait_for_pod(
            self.api_client,
            self.namespace,
            name,
            done=done,
            timeout=timeout or self.pod_start_timeout,
            failure=failure,
            behaviour=behaviour,
            describe=describe,
        )

    def wait_for(
        self,
        list_fn: Callable[..., Any],
        name: str,
        done: Callable[[Any], bool],
        failure: Callable[[Any], str | None] | None = None,
        timeout: float = 300.0,
        describe: str = "",
        behaviour: bool = False,
    ) -> Any:
        """Watch ``list_fn(namespace=...)`` for ``name`` until ``done(obj)``; returns the object (``behaviour``:
        as in ``wait_pod``)."""
        return wait_for(
            list_fn, name, done, failure, timeout, describe=describe, behaviour=behaviour, namespace=self.namespace
        )

    # ------------------------------------------------------------------ exec through the gate, logs

    def gate(self, command: str | list[str], where: str = "", pod_node: str | None = None) -> None:
        """Record the check's exact command (and ``pod_node``, the node of the pod it runs in); skip where the
        item's pods sit on a node without a data plane."""
        if self._gate is None:
            raise RuntimeError("this Kube has no data-plane gate: checks run in tests (the `kube` fixture)")
        self._gate(command, where=where, pod_node=pod_node)

    def exec(
        self,
        pod: Any,
        command: list[str],
        container: str | None = None,
        where: str | None = None,
        timeout: float = 60.0,
    ) -> ExecResult:
        """Pass the data-plane gate, then run ``command`` in the pod; ExecResult(exit_code, stdout, stderr)."""
        where = exec_where(pod, container) if where is None else where
        self.gate(command, where=where, pod_node=pinning.pod_node(pod))  # a bare name: placed by this test
        return exec_in_pod(
            self.api_client, self.namespace, pod_name(pod), command, container=container, timeout=timeout
        )

    def logs(self, pod: Any, container: str | None = None, previous: bool = False, tail: int | None = None) -> str:
        kwargs: dict[str, Any] = {"previous": previous}
        if container:
            kwargs["container"] = container
        if tail is not None:
            kwargs["tail_lines"] = tail
        return str(call(self.core.read_namespaced_pod_log, pod_name(pod), self.namespace, **kwargs))

    def events(self, name: str, reason: str) -> list[Any]:
        """The events of ``reason`` about the object ``name`` in the namespace."""
        from wincon.checks.pods import events_for

        return list(events_for(self.api_client, self.namespace, name, reason))

    def wait_event(self, name: str, reason: str, timeout: float = 60.0, behaviour: bool = False) -> list[Any]:
        """The events of ``reason`` about ``name`` once one exists; none within ``timeout`` is an error, or a
        failure with ``behaviour=True`` (the event is the behaviour checked)."""
        from wincon.checks.pods import wait_for_event

        return list(wait_for_event(self.api_client, self.namespace, name, reason, timeout, behaviour))

    def submit(self, body: dict[str, Any], dry_run: bool = True) -> tuple[dict[str, Any] | None, Any]:
        """Create a pod (a server-side dry run unless ``dry_run=False``): (created, None) or (None, Rejection)."""
        from wincon.checks.api_rules import submit_pod

        return submit_pod(self.api_client, self.namespace, body, dry_run=dry_run)
