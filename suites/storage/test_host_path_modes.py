"""hostPath mounts in the ways upstream's Windows tests use them: read-only (volumes.go "container should have
readOnly permissions on hostMapPath": one container's readOnly mount refuses the write its neighbour's
read-write mount of the same host directory makes) and named pipes (``\\\\.\\pipe\\...`` mounted into the
container, the way a container reaches the runtime's pipe). The commands come from wincon/checks/node.py, one
place per OS."""

from __future__ import annotations

import uuid

import pytest

from wincon.checks.node import path_exists_command, read_file_command, write_file_command
from wincon.checks.pods import run_windows_pod, windows_pod
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.storage]

HOST_DIR = "C:\\wincon\\readonly-hostpath"
MOUNT = "C:\\data"
RUNTIME_PIPE = "\\\\.\\pipe\\containerd-containerd"


@pytest.mark.test_id("e1df6cac-0ebc-44a2-815d-533617352a02")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Storage")
def test_read_only_host_path_mount_refuses_writes_and_reads_what_the_writer_wrote(wincon, namespace, build, kube):
    """ "Read-only filesystems are not supported ... However, read-only volumes are supported" (002_8a7e76f95009f44f.txt, Storage), hostPath included ("V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work", 002_8a7e76f95009f44f.txt): a readOnly hostPath mount refuses writes and reads what a read-write mount of it wrote."""
    volume = {"name": "host", "hostPath": {"path": HOST_DIR, "type": "DirectoryOrCreate"}}
    image = wincon.catalog.image("agnhost", "windows", build)
    body = windows_pod(
        wincon,
        "ro-hostpath",
        build,
        container_extra={"volumeMounts": [{"name": "host", "mountPath": MOUNT, "readOnly": True}]},
        volumes=[volume],
    )
    body["spec"]["containers"].append(
        container("writer", image, args=["pause"], volumeMounts=[{"name": "host", "mountPath": MOUNT}])
    )
    pod = run_windows_pod(wincon, namespace, body)
    path = f"{MOUNT}\\{uuid.uuid4().hex[:8]}.txt"
    written = kube.exec(pod, write_file_command("windows", path, "wincon-hostpath"), container="writer")
    assert written.ok, f"the read-write hostPath mount refused a write: {written.stdout} {written.stderr}"
    refused = kube.exec(pod, write_file_command("windows", path, "overwrite"), container="main")
    assert not refused.ok, "a write through the readOnly hostPath mount succeeded"
    assert "Access is denied" in refused.stdout + refused.stderr, f"{refused.stdout!r} {refused.stderr!r}"
    read = kube.exec(pod, read_file_command("windows", path), container="main")
    assert read.ok and read.stdout.strip() == "wincon-hostpath", f"read back {read.stdout!r} {read.stderr!r}"


@pytest.mark.test_id("79fc640f-ca2c-4105-9a55-9560f0f538af")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.documents("kep-windows-node-support", "What works today")
def test_named_pipe_host_mount_reaches_the_hosts_pipe(wincon, namespace, build, kube):
    """ "Named pipe host mounts" are supported for Windows pods (002_8a7e76f95009f44f.txt, Pods; 003_414b2f1c5dd978a2.txt, What works today): the runtime's named pipe, mounted by hostPath, exists in the container."""
    body = windows_pod(
        wincon,
        "named-pipe",
        build,
        container_extra={"volumeMounts": [{"name": "pipe", "mountPath": RUNTIME_PIPE}]},
        volumes=[{"name": "pipe", "hostPath": {"path": RUNTIME_PIPE, "type": ""}}],
    )
    pod = run_windows_pod(wincon, namespace, body)
    assert pod.spec.volumes[0].host_path.path == RUNTIME_PIPE, "the API server changed the pipe path"
    found = kube.exec(pod, path_exists_command("windows", RUNTIME_PIPE))
    assert found.ok and "present" in found.stdout, (
        f"{RUNTIME_PIPE} is not visible in the container: exit {found.exit_code} {found.stdout!r} {found.stderr!r}"
    )
