"""The local cluster's default StorageClass (wincon/localcluster/storage.py), for real.

The module starts a cluster of its own (default topology: two real Linux nodes) under the name
``$WINCON_STORAGE_CLUSTER`` (default: a fresh ``lps-test-<hex>``) and removes it in its last test. The default
StorageClass is served by rancher/local-path-provisioner: a claim without ``storageClassName`` used by a pod on a
real node is bound to a ``hostPath`` volume in that node's directory of the cluster, what the pod writes is in
that directory on the host, deleting the claim removes the volume and its directory (the provisioner's teardown
helper pod), and ``down`` leaves nothing (processes, the volume directories, the state directory).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.clusters import own_cluster, real_nodes
from tests.support.waits import eventually
from wincon.localcluster import cluster, dataplane, images, paths, storage

pytestmark = pytest.mark.xdist_group("local-storage")  # one worker: the tests share one cluster, the last removes it

WAIT = 120.0
NAMESPACE = "lps-test"
TEXT = "written through the claim by wincon"


def _wait(what: str, probe: Any, timeout: float = WAIT) -> Any:
    return eventually(what, probe, timeout, interval=1, errors=(ApiException, OSError))


@pytest.fixture(scope="module")
def name(localcluster_binaries: Path) -> Iterator[str]:
    if storage.binary() is None:
        pytest.skip("local-path-provisioner is not built: run `wincon cluster build`")
    with own_cluster("lps-test", env="WINCON_STORAGE_CLUSTER") as (name, _):
        yield name


@pytest.fixture(scope="module")
def kubeconfig(name: str) -> Path:
    """This module's own cluster is the cluster under test (conftest's ``api`` and ``core`` follow)."""
    return cluster.kubeconfig_path(name)


def test_the_default_storage_class_is_local_path_and_status_names_it(name, api):
    classes = client.StorageV1Api(api).list_storage_class().items
    defaults = storage.default_classes(classes)
    assert [c.metadata.name for c in defaults] == [storage.STORAGE_CLASS], [c.metadata.name for c in classes]
    (sc,) = defaults
    assert sc.provisioner == storage.PROVISIONER
    assert sc.volume_binding_mode == "WaitForFirstConsumer"
    assert not sc.allow_volume_expansion
    addon = cluster.status(name)["addons"][storage.NAME]
    assert addon["storage_class"] == storage.STORAGE_CLASS
    assert addon["process"] and addon["process"]["running"], addon


def _real_node(api: Any) -> Any:
    real = real_nodes(client.CoreV1Api(api))
    assert real, "no real node"
    return real[-1]  # the last one: not the node the provisioner runs in, so the helper pod crosses nodes


def _write_through_a_claim(name: str, core: Any, namespace: str, node: Any) -> tuple[Any, Path]:
    """A claim of the default class and a pod on ``node`` writing TEXT to it; return the PV and the file the pod
    wrote, as found on the host, once the pod runs."""
    hostname = node.metadata.labels["kubernetes.io/hostname"]
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}},
        },
    )
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "writer"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": hostname},
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "writer",
                        "image": images.references()["busybox"],
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c", f"echo '{TEXT}' > /data/f && sleep 3600"],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )

    def running() -> bool:
        return core.read_namespaced_pod("writer", namespace).status.phase == "Running"

    _wait("the claim's pod to run", running)
    claim = core.read_namespaced_persistent_volume_claim("data", namespace)
    assert claim.status.phase == "Bound" and claim.spec.storage_class_name == storage.STORAGE_CLASS
    pv = core.read_persistent_volume(claim.spec.volume_name)
    directory = Path(pv.spec.host_path.path)
    assert directory.parent == storage.node_path(name, node.metadata.name), directory
    terms = pv.spec.node_affinity.required.node_selector_terms
    assert [e.values for t in terms for e in t.match_expressions] == [[hostname]]
    # What the pod wrote is in that node's directory of the cluster on the host.
    written = _wait(f"{directory / 'f'} on the host", lambda: (directory / "f").is_file() and directory / "f")
    assert written.read_text() == TEXT + "\n"
    return pv, written


def test_a_claim_of_the_default_class_is_a_directory_of_the_pods_node_and_is_removed_with_it(name, api):
    core = client.CoreV1Api(api)
    try:
        pv, written = _write_through_a_claim(name, core, NAMESPACE, _real_node(api))
        directory = written.parent
        core.delete_namespaced_pod("writer", NAMESPACE, grace_period_seconds=0)
        _wait("the pod to be gone", lambda: not core.list_namespaced_pod(NAMESPACE).items)
        core.delete_namespaced_persistent_volume_claim("data", NAMESPACE)

        def volume_gone() -> bool:
            names = {p.metadata.name for p in core.list_persistent_volume().items}
            return pv.metadata.name not in names and not directory.exists()

        _wait(f"the volume {pv.metadata.name} and {directory} to be removed", volume_gone)
        _wait(
            "the helper pods to be gone",
            lambda: not core.list_namespaced_pod(storage.NAMESPACE).items,
        )
    finally:
        core.delete_namespace(NAMESPACE)


def test_down_leaves_nothing_even_with_a_volume_in_use(name, api):
    """``down`` with a claim still bound and its pod running: the volume's directory goes with the cluster."""
    _, written = _write_through_a_claim(name, client.CoreV1Api(api), f"{NAMESPACE}-kept", _real_node(api))
    base = storage.base_dir(name)
    assert written.is_relative_to(base)
    cluster.down(name)
    assert not written.exists() and not base.exists()
    left = {k: v for k, v in dataplane.leftovers(name).items() if v}
    assert left == {}, f"cluster {name} left behind: {left}"
    assert cluster.cluster_pids(name) == []
    assert not paths.state_dir(name).exists()
