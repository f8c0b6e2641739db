"""A pod with many subPath mounts terminates cleanly (upstream test/e2e/windows/subpath_cleanup.go, the fix for
kubernetes#112630: leaked handles from subPath preparation left emptyDir volumes behind and the pod stuck in
Terminating). The pod is created and scheduled for real everywhere; its termination on a real kubelet is the
behaviour, checked after the ``data_plane`` gate."""

from __future__ import annotations

import pytest

from wincon.checks.pods import create_or_reject, eventually, os_pod
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running_ready, pod_scheduled

pytestmark = [pytest.mark.storage]

TERMINATION_LIMIT = 300.0  # upstream waits 5 minutes for the pod to be gone


def linux_form(path: str) -> str:
    """A Windows path of this check in the Linux control's form: C:\\etc\\x -> /etc/x, C:\\wincon -> /tmp/wincon."""
    path = path.removeprefix("C:").replace("\\", "/")
    return "/tmp" + path if path.startswith("/wincon/") else path


def mounts_and_volumes(target_os: str = "windows") -> tuple[list[dict], list[dict]]:
    mounts = [
        {"name": "config", "mountPath": f"C:\\etc\\config\\{k}", "subPath": k} for k in ("key1", "key2", "key3")
    ] + [
        {"name": "host-outer", "mountPath": "C:\\data"},
        {"name": "host-inner", "mountPath": "C:\\data\\nested\\deep"},
        {"name": "host-middle", "mountPath": "C:\\data\\nested"},
        {"name": "scratch-1", "mountPath": "C:\\scratch\\dir1"},
        {"name": "scratch-2", "mountPath": "C:\\scratch\\dir2"},
        {"name": "memory-1", "mountPath": "C:\\scratch\\mem1"},
        {"name": "memory-2", "mountPath": "C:\\scratch\\mem2"},
        {"name": "secret", "mountPath": "C:\\etc\\secret\\s1", "subPath": "s1"},
        {"name": "secret", "mountPath": "C:\\etc\\secret\\s2", "subPath": "s2"},
        {"name": "projected", "mountPath": "C:\\etc\\projected\\key1", "subPath": "key1"},
        {"name": "projected", "mountPath": "C:\\etc\\projected\\s1", "subPath": "s1"},
        {"name": "downward", "mountPath": "C:\\etc\\podinfo\\labels", "subPath": "labels"},
        {"name": "downward", "mountPath": "C:\\etc\\podinfo\\name", "subPath": "name"},
    ]
    volumes = [
        {"name": "config", "configMap": {"name": "subpath-config"}},
        {"name": "host-outer", "hostPath": {"path": "C:\\wincon\\subpath\\outer", "type": "DirectoryOrCreate"}},
        {"name": "host-middle", "hostPath": {"path": "C:\\wincon\\subpath\\middle", "type": "DirectoryOrCreate"}},
        {"name": "host-inner", "hostPath": {"path": "C:\\wincon\\subpath\\inner", "type": "DirectoryOrCreate"}},
        {"name": "scratch-1", "emptyDir": {}},
        {"name": "scratch-2", "emptyDir": {}},
        {"name": "memory-1", "emptyDir": {"medium": "Memory"}},
        {"name": "memory-2", "emptyDir": {"medium": "Memory"}},
        {"name": "secret", "secret": {"secretName": "subpath-secret"}},
        {
            "name": "projected",
            "projected": {
                "sources": [{"configMap": {"name": "subpath-config"}}, {"secret": {"name": "subpath-secret"}}]
            },
        },
        {
            "name": "downward",
            "downwardAPI": {
                "items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                ]
            },
        },
    ]
    if target_os == "linux":
        for mount in mounts:
            mount["mountPath"] = linux_form(mount["mountPath"])
        for volume in volumes:
            if "hostPath" in volume:
                volume["hostPath"]["path"] = linux_form(volume["hostPath"]["path"])
    return mounts, volumes


def subpath_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The ConfigMap subpath-config and the Secret subpath-secret the pod mounts, then the pod subpaths."""
    data = {"key1": "value1", "key2": "value2", "key3": "value3"}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "subpath-config"}, "data": data}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "subpath-secret"},
        "stringData": {"s1": "secret-1", "s2": "secret-2"},
    }
    mounts, volumes = mounts_and_volumes(target_os)
    body = os_pod(
        wincon,
        "subpaths",
        target_os,
        build,
        container_extra={"volumeMounts": mounts},
        volumes=volumes,
        restartPolicy="Never",
    )
    return [config, secret, body]


@pytest.mark.test_id("841260f2-4ea9-460d-9625-82f7fb1ade3a")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "API")
@pytest.mark.windows_form(no_command="reads the pod's termination through the API")
# Safe ahead: what is timed (TERMINATION_LIMIT) starts at the check's own deletion, after the pod runs; its
# scheduling and start are only awaited, never timed from its creation.
@waves.ahead(subpath_objects)
def test_pod_with_many_sub_path_mounts_terminates_cleanly(kube, wincon, namespace, build, data_plane, target_os):
    """ "V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work" (002_8a7e76f95009f44f.txt, API): a pod mounting them through many subPaths, nested hostPaths and memory emptyDirs is gone within 5 minutes of its deletion (upstream subpath_cleanup.go)."""
    core = kube.core
    config, secret, body = subpath_objects(wincon, target_os, build)
    kube.create(config)
    kube.create(secret)
    create_or_reject(wincon.api_client, namespace, body)
    kube.wait_pod("subpaths", done=pod_scheduled, timeout=60, failure=None)
    data_plane("delete pod subpaths --grace-period=30; wait until it is gone", where=f"the pod's {target_os} node")
    kube.wait_pod(
        "subpaths",
        timeout=wincon.pod_start_timeout,
        done=pod_running_ready,
        failure=pod_failure,
    )
    call(core.delete_namespaced_pod, "subpaths", namespace, grace_period_seconds=30)

    def gone() -> bool:
        names = {p.metadata.name for p in call(core.list_namespaced_pod, namespace).items}
        return "subpaths" not in names

    assert eventually(gone, TERMINATION_LIMIT, "pod subpaths deleted after its termination", 5, behaviour=True)
