"""hostPath mounts in the ways upstream's Windows tests use them: read-only (volumes.go "container should have
readOnly permissions on hostMapPath": one container's readOnly mount refuses the write its neighbour's
read-write mount of the same host directory makes) and named pipes (``\\\\.\\pipe\\...`` mounted into the
container, the way a container reaches the runtime's pipe). The commands come from wincon/checks/node.py, one
place per OS."""

from __future__ import annotations

import uuid

import pytest

from wincon.checks.node import path_exists_command, read_file_command, write_file_command
from wincon.checks.pods import os_pod, run_os_pod, run_windows_pod, windows_pod
from wincon.cluster import waves
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.storage]

HOST_DIR = {"windows": "C:\\wincon\\readonly-hostpath", "linux": "/tmp/wincon/readonly-hostpath"}
MOUNT = {"windows": "C:\\data", "linux": "/data"}
REFUSAL = {"windows": "Access is denied", "linux": "Read-only file system"}
RUNTIME_PIPE = "\\\\.\\pipe\\containerd-containerd"


def read_only_pair_pod(wincon, target_os: str, build: int | None) -> dict:
    """The read-only check's pod: its main container mounts the hostPath HOST_DIR readOnly at MOUNT, its writer
    container (the same image, idle) mounts it read-write there."""
    volume = {"name": "host", "hostPath": {"path": HOST_DIR[target_os], "type": "DirectoryOrCreate"}}
    mount = MOUNT[target_os]
    body = os_pod(
        wincon,
        "ro-hostpath",
        target_os,
        build,
        container_extra={"volumeMounts": [{"name": "host", "mountPath": mount, "readOnly": True}]},
        volumes=[volume],
    )
    main = body["spec"]["containers"][0]
    pull = {"imagePullPolicy": main["imagePullPolicy"]} if "imagePullPolicy" in main else {}
    body["spec"]["containers"].append(
        container("writer", main["image"], args=["pause"], volumeMounts=[{"name": "host", "mountPath": mount}], **pull)
    )
    return body


@pytest.mark.test_id("e1df6cac-0ebc-44a2-815d-533617352a02")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE, forms.CMD_TYPE, forms.ACCESS_DENIED)
# Safe ahead: the writes and reads start after the pod runs, and nothing is timed from its start.
@waves.ahead(read_only_pair_pod)
def test_read_only_host_path_mount_refuses_writes_and_reads_what_the_writer_wrote(
    wincon, namespace, build, kube, target_os
):
    """ "Read-only filesystems are not supported ... However, read-only volumes are supported" (002_8a7e76f95009f44f.txt, Storage), hostPath included ("V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work", 002_8a7e76f95009f44f.txt): a readOnly hostPath mount refuses writes and reads what a read-write mount of it wrote."""
    mount = MOUNT[target_os]
    pod = run_os_pod(wincon, namespace, read_only_pair_pod(wincon, target_os, build))
    separator = "\\" if target_os == "windows" else "/"
    path = f"{mount}{separator}{uuid.uuid4().hex[:8]}.txt"
    written = kube.exec(pod, write_file_command(target_os, path, "wincon-hostpath"), container="writer")
    assert written.ok, f"the read-write hostPath mount refused a write: {written.stdout} {written.stderr}"
    refused = kube.exec(pod, write_file_command(target_os, path, "overwrite"), container="main")
    read = kube.exec(pod, read_file_command(target_os, path), container="main")
    if target_os == "linux":  # the Linux worker's hostPath is this machine's /tmp: leave no file behind
        kube.exec(pod, ["rm", "-f", path], container="writer")
    assert not refused.ok, "a write through the readOnly hostPath mount succeeded"
    assert REFUSAL[target_os] in refused.stdout + refused.stderr, f"{refused.stdout!r} {refused.stderr!r}"
    assert read.ok and read.stdout.strip() == "wincon-hostpath", f"read back {read.stdout!r} {read.stderr!r}"


def named_pipe_pod(wincon, build: int | None) -> dict:
    """The named-pipe check's pod: the runtime's pipe RUNTIME_PIPE mounted by hostPath at the same path."""
    return windows_pod(
        wincon,
        "named-pipe",
        build,
        container_extra={"volumeMounts": [{"name": "pipe", "mountPath": RUNTIME_PIPE}]},
        volumes=[{"name": "pipe", "hostPath": {"path": RUNTIME_PIPE, "type": ""}}],
    )


@pytest.mark.test_id("79fc640f-ca2c-4105-9a55-9560f0f538af")
@pytest.mark.dataplane
@pytest.mark.windows_only("named pipes (\\\\.\\pipe\\...) are Windows host objects")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(forms.POWERSHELL_BUSYBOX)
# Safe ahead: the pipe's presence is read after the pod runs; nothing is timed from its start.
@waves.ahead(named_pipe_pod)
def test_named_pipe_host_mount_reaches_the_hosts_pipe(wincon, namespace, build, kube):
    """ "Named pipe host mounts" are supported for Windows pods (002_8a7e76f95009f44f.txt, Pods; 003_414b2f1c5dd978a2.txt, What works today): the runtime's named pipe, mounted by hostPath, exists in the container."""
    pod = run_windows_pod(wincon, namespace, named_pipe_pod(wincon, build))
    assert pod.spec.volumes[0].host_path.path == RUNTIME_PIPE, "the API server changed the pipe path"
    found = kube.exec(pod, path_exists_command("windows", RUNTIME_PIPE))
    assert found.ok and "present" in found.stdout, (
        f"{RUNTIME_PIPE} is not visible in the container: exit {found.exit_code} {found.stdout!r} {found.stderr!r}"
    )
