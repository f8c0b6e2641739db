"""Deploy workloads into a test namespace: build pinned pod specs, create objects, wait, verify placement.

Objects live in the test's namespace, whose deletion at teardown removes them all: cleanup is registered
when the namespace is created, never left to the end of a test.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client, utils

from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running, pod_running_ready, wait_for_pod
from wincon.clusterinfo.profile import WINDOWS_BUILD_LABEL, parse_build
from wincon.results import steps
from wincon.workloads.pinning import WrongNode, assert_ran_on, pin_linux, pin_windows


def container(
    name: str,
    image: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "image": image}
    if command:
        spec["command"] = command
    if args:
        spec["args"] = args
    spec.update(extra)
    return spec


def pod_manifest(
    name: str,
    containers: list[dict[str, Any]],
    os_name: str = "windows",
    build: int | None = None,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod manifest pinned to ``os_name`` (and Windows ``build`` / ``node``)."""
    spec: dict[str, Any] = {"containers": containers, **spec_extra}
    spec = pin_windows(spec, build=build, node=node) if os_name == "windows" else pin_linux(spec, node=node)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": spec,
    }


def apply(api_client: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> Any:
    """Create one object of any kind the client knows; transient API errors are retried. An object made ahead for
    the check (``wincon.cluster.waves.ahead``) is adopted: what creating it returned then."""
    made = waves.adopt(namespace, manifest, waves.OBJECT_CREATE)
    if made is not None:
        return made.result
    created = call(utils.create_from_dict, api_client, manifest, namespace=namespace)
    return created[0] if isinstance(created, list) and len(created) == 1 else created


def run_pod(
    wincon: Any,
    namespace: str,
    manifest: dict[str, Any],
    ready: bool = True,
) -> Any:
    """Create the pod, wait until it runs (Ready unless ``ready=False``), and check it is on the intended OS."""
    core = client.CoreV1Api(wincon.api_client)
    name = manifest["metadata"]["name"]
    with steps.deploy(f"pod {namespace}/{name} ({manifest['spec'].get('os', {}).get('name', 'linux')})"):
        waves.adopt(namespace, manifest, "deploy.run_pod")  # a pod made ahead is created with run_os_pod: errs
        call(core.create_namespaced_pod, namespace, manifest)
    return await_pod(wincon, namespace, manifest, ready)


def read_ready(api_client: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> Any | None:
    """The created pod where it runs, is ready and has its IP now (one read, no wait), else None. Nothing is
    checked of where it runs: ``await_pod`` does that for whoever uses it."""
    pod = call(client.CoreV1Api(api_client).read_namespaced_pod, manifest["metadata"]["name"], namespace)
    return pod if pod_running_ready(pod) and pod.status.pod_ip else None


def await_pod(
    wincon: Any,
    namespace: str,
    manifest: dict[str, Any],
    ready: bool = True,
    os_name: str | None = None,
) -> Any:
    """Wait until the created pod runs, then check it ran on the OS (default: its ``spec.os.name``) and the
    Windows build its nodeSelector pins. Nothing a pod reports is trusted before this check."""
    name = manifest["metadata"]["name"]
    os_name = os_name or manifest["spec"].get("os", {}).get("name", "linux")
    with steps.wait(f"pod {name} {'Ready' if ready else 'Running'}"):
        pod = wait_for_pod(
            wincon.api_client,
            namespace,
            name,
            done=pod_running_ready if ready else pod_running,
            timeout=wincon.pod_start_timeout,
            failure=pod_failure,
        )
    build = parse_build((manifest["spec"].get("nodeSelector") or {}).get(WINDOWS_BUILD_LABEL))
    with steps.check(f"pod {name} ran on a {os_name} node" + (f" of build {build}" if build else "")):
        check_placement(pod, manifest, wincon.profile, os_name)
    return pod


def check_placement(pod: Any, manifest: dict[str, Any], profile: Any, os_name: str | None = None) -> None:
    """The pod ran on the OS (default: the manifest's ``spec.os.name``), the Windows build and the node its
    manifest pins: otherwise nothing it reports is trusted (WrongNode)."""
    spec = manifest["spec"]
    selector = spec.get("nodeSelector") or {}
    assert_ran_on(
        pod,
        profile,
        os_name=os_name or (spec.get("os") or {}).get("name", "linux"),
        build=parse_build(selector.get(WINDOWS_BUILD_LABEL)),
    )
    wanted = selector.get("kubernetes.io/hostname")
    if wanted and pod.spec.node_name != wanted:
        raise WrongNode(f"pod {pod.metadata.name} ran on {pod.spec.node_name}, not on {wanted}: result discarded")
