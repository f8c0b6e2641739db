"""Pre-pull the catalog's Windows images on every Windows node, with progress per node and image.

Real Windows image pulls take 10 to 30 minutes; pulling them once, before the tests, keeps pod-start
timeouts honest. A DaemonSet pinned to Windows nodes lists every image as an init container that
exits at once; each init container that has run is an image that is on its node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from wincon.cluster.client import call
from wincon.cluster.namespaces import NamespaceRegistry
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError
from wincon.workloads.catalog import Catalog
from wincon.workloads.pinning import pin_windows

PAUSE_KEY = "pause"


def daemonset_manifest(catalog: Catalog, build: int) -> dict[str, Any]:
    """One DaemonSet per Windows build: each Windows image of the catalog as an init container."""
    keys = [k for k, spec in sorted(catalog.images.items()) if "windows" in spec.os and k != PAUSE_KEY]
    inits = [
        {
            "name": f"pull-{key}"[:63],
            "image": catalog.image(key, "windows", build),
            "command": ["cmd.exe", "/c", "exit 0"],
        }
        for key in keys
    ]
    spec = pin_windows(
        {
            "initContainers": inits,
            "containers": [{"name": "pause", "image": catalog.image(PAUSE_KEY, "windows", build)}],
        },
        build=build,
    )
    name = f"wincon-prepull-{build}"
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def progress(pods: list[Any]) -> dict[str, tuple[int, int]]:
    """Node name -> (images pulled, images wanted), from the init container statuses."""
    result = {}
    for pod in pods:
        statuses = (pod.status.init_container_statuses or []) if pod.status else []
        wanted = len(pod.spec.init_containers or [])
        done = sum(1 for s in statuses if s.state and s.state.terminated and s.state.terminated.exit_code == 0)
        if pod.status and pod.status.phase == "Running":
            done = wanted
        result[pod.spec.node_name or "(unscheduled)"] = (done, wanted)
    return result


def prepull(
    api_client: client.ApiClient,
    profile: ClusterProfile,
    catalog: Catalog,
    run_id: str,
    timeout: float = 1800.0,
    echo: Callable[[str], None] = print,
    pull_secret: str | None = None,
) -> dict[str, tuple[int, int]]:
    """Pull every catalog image on every Windows node; returns the final progress per node. ``pull_secret``
    (``[NAMESPACE/]NAME``): the DaemonSet's pods pull with it, copied into the prepull namespace
    (wincon.workloads.pullsecret; a run's client has it installed already)."""
    if pull_secret:
        from wincon.workloads.pullsecret import install

        install(api_client, pull_secret)
    registry = NamespaceRegistry(api_client, run_id, "prepull")
    apps = client.AppsV1Api(api_client)
    core = client.CoreV1Api(api_client)
    nodes = {n.name for n in profile.ready_windows_nodes}
    try:
        # Inside the try: a namespace whose default ServiceAccount never came is deleted too.
        namespace = registry.create("prepull")
        for build in profile.windows_builds:
            call(apps.create_namespaced_daemon_set, namespace, daemonset_manifest(catalog, build))
        deadline = time.monotonic() + timeout
        last: dict[str, tuple[int, int]] = {}
        while True:
            pods = call(core.list_namespaced_pod, namespace).items
            state = progress(pods)
            for node, (done, wanted) in sorted(state.items()):
                if last.get(node) != (done, wanted):
                    echo(f"prepull: {node}: {done}/{wanted} images")
            last = state
            if nodes and nodes <= {n for n, (d, w) in state.items() if d == w}:
                echo(f"prepull: all {len(nodes)} Windows nodes have every catalog image")
                return state
            if time.monotonic() > deadline:
                missing = sorted(nodes - {n for n, (d, w) in state.items() if d == w})
                raise InfrastructureError(
                    f"prepull did not finish within {timeout:.0f}s on: {', '.join(missing)}",
                    "check the nodes' image pull events (kubectl describe pod) and registry access",
                )
            time.sleep(5)
    finally:
        registry.delete_all()
