"""Storage features documented as unsupported on Windows: each test asserts what Linux gives, and the
limitation (limitations.yaml, area storage) makes the documented deviation an expected failure."""

from __future__ import annotations

import re

import pytest
from kubernetes.utils import parse_quantity

from wincon.checks import hostprocess
from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED
from wincon.checks.pods import (
    Rejected,
    await_pod,
    create_or_reject,
    os_pod,
    run_or_refused,
    run_os_pod,
    run_unless_mount_refused,
    run_windows_pod,
    windows_nodes_of_build,
)
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import BehaviourNotObserved, pod_failure, pod_running
from wincon.commandline.errors import InfrastructureError, SuiteError, expect_deviation
from wincon.windows import connectivity as conn
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.storage]


def mounted_pod(wincon, name, build, mounts, volumes, node=None, target_os="windows", **spec):
    return os_pod(
        wincon, name, target_os, build, node=node, container_extra={"volumeMounts": mounts}, volumes=volumes, **spec
    )


RAW_BLOCK_UNAVAILABLE = (
    "no Windows command with evidence shows a raw block device inside a pod: upstream's only in-pod block checks at "
    "v1.34.4 are sh's `test -b` and dd (framework/volume/fixtures.go:671, storage/utils/utils.go:452), whose block "
    "patterns carry no Windows tag (only the ntfs ones do, storage/framework/testpattern.go), test/e2e/windows has no "
    "block-volume e2e, and no public recording of diskpart, Get-Disk or busybox-w32's test -b inside a Windows "
    "container was found (searched GitHub issues and pages: moby/moby#38479 asks how a Windows container reaches a "
    "host disk and has none): the Linux control still runs"
)

# agnhost mounttest on both OSes (upstream's volume tests use it): it writes a new file with this content and
# prints a file's content as: content of file "PATH": CONTENT (test/images/agnhost/mounttest/mt.go).
NEW_FILE = "mount-tester new file"


def write_new(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--new-file-0644={file}"]


def read(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--file-content={file}"]


def content(result, file: str) -> str | None:
    """The content mounttest printed for ``file``, stripped; None when it printed none."""
    return conn.mounttest_content(result.stdout or "", file) if result.ok else None


def answered(*pairs) -> bool:
    """mounttest spoke of each (result, file): the documented deviation's own evidence (see expect_deviation)."""
    return all(conn.mounttest_answered(result.stdout or "", file) for result, file in pairs)


def at(target_os: str, path: str) -> str:
    """A container path written as on Windows (C:\\a\\b) in the Linux control's form (/a/b)."""
    return path if target_os == "windows" else path.removeprefix("C:").replace("\\", "/")


# What busybox stat's %a prints: a file's permission bits in octal, nothing else (an error word is not a mode).
OCTAL_MODE = re.compile(r"[0-7]{1,4}")


def secret_manifest(name="creds", data=None):
    """The checks' Secret: a username and a password (or ``data``)."""
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}
    body["stringData"] = data or {"username": "wincon-user", "password": "s3cr3t-wincon"}
    return body


def host_process_pod(kube, name, build, node, command):
    """A HostProcess pod on ``node`` (it sees the node's disk); skips where the cluster forbids HostProcess."""
    body = hostprocess.host_process_pod(kube, name, build, command, node=node, restart_policy=None)
    created, rejection = kube.submit(body)
    if rejection is not None and HOST_PROCESS_DISALLOWED in rejection.describe():
        pytest.skip(f"the check needs a HostProcess pod on the node: {HOST_PROCESS_DISALLOWED}")
    return body


def memory_medium_pod(wincon, target_os: str, build: int | None) -> dict:
    """The Memory emptyDir check's pod: a Memory-medium emptyDir at C:\\mem, its container limited to 64 MiB."""
    body = mounted_pod(
        wincon,
        "memory-medium",
        build,
        [{"name": "mem", "mountPath": at(target_os, "C:\\mem")}],
        [{"name": "mem", "emptyDir": {"medium": "Memory"}}],
        target_os=target_os,
    )
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "64Mi"}, "requests": {"memory": "64Mi"}}
    return body


@pytest.mark.test_id("e04dae75-7c50-4a32-82f6-bf7172b94151")
@pytest.mark.dataplane
@pytest.mark.limitation("emptydir-medium-memory")
@pytest.mark.documents("k8s-windows-intro", "V1.emptyDirVolumeSource")
@pytest.mark.windows_form(forms.BUSYBOX_W32_DD, forms.BUSYBOX_SH_PROBE, same_as_control=True)
@waves.ahead(memory_medium_pod)
def test_memory_medium_empty_dir_counts_against_the_memory_limit(wincon, namespace, build, kube, target_os):
    """ "V1.emptyDirVolumeSource - the Node default medium is disk on Windows. Memory is not supported, as Windows does not have a built-in RAM disk" (000_4130a90def37a825.txt)."""
    body = memory_medium_pod(wincon, target_os, build)

    root = "C:" if target_os == "windows" else ""  # busybox's dd and stat on both OSes (C:\bin on Windows)

    def create(file: str, size: int) -> list[str]:
        """busybox dd writes ``size`` bytes of zeros (real data, so a RAM-backed medium fills): the Windows image's
        busybox-w32 carries dd (test/images/busybox/Dockerfile_windows); fsutil's createnew, the former Windows form,
        allocates without writing."""
        return ["sh", "-c", f"dd if=/dev/zero of={root}/mem/{file} bs=1048576 count={size // 1048576}"]

    # A pod that does not start is the cluster's error (its FailedMount events in the diagnostics), never the
    # deviation: the Windows kubelet never refuses the medium, its mounter makes a plain directory for "tmpfs"
    # (k8s.io/mount-utils mount_windows.go at v0.37.2), so the volume's own writes below are the evidence.
    pod = run_os_pod(wincon, namespace, body)
    restarts = sum(s.restart_count for s in pod.status.container_statuses or [])
    # The probe works: the same command writes 1 MiB into the volume.
    small = kube.exec(pod.metadata.name, create("small.bin", 1048576))
    size = kube.exec(pod.metadata.name, ["sh", "-c", f"stat -c %s {root}/mem/small.bin"])
    if not (small.ok and size.ok and size.stdout.strip() == "1048576"):
        raise SuiteError(
            "dd did not write 1 MiB into the volume (stat reads back its size), so nothing can be judged",
            image="the OS's agnhost image (busybox dd and stat)",
            tool="dd",
            output=f"dd: {small.stdout} {small.stderr}; stat: {size.stdout} {size.stderr}"[:300],
        )
    # 200 MiB into a RAM-backed volume of a container limited to 64 MiB: on Linux the write fails or the
    # container is OOM-killed, because tmpfs pages count against the container's memory.
    try:
        result = kube.exec(pod.metadata.name, create("big.bin", 209715200))
    except InfrastructureError:
        result = None  # the exec died with its container: the restart count below tells
    after = call(kube.core.read_namespaced_pod, "memory-medium", namespace)
    restarted = sum(s.restart_count for s in after.status.container_statuses or []) > restarts
    # The deviation's own evidence: dd exited 0 and the volume holds all 200 MiB, read back with the stat shown to
    # work above (a dd that died without a restart, or a short file, is not a disk-backed medium observed).
    held = None
    if result is not None and result.ok and not restarted:
        held = kube.exec(pod.metadata.name, ["sh", "-c", f"stat -c %s {root}/mem/big.bin"])
    with expect_deviation(
        "emptydir-medium-memory",
        accepts=lambda: held is not None and held.ok and held.stdout.strip() == "209715200",
        deviation="dd wrote 200 MiB and stat reads 209715200 bytes back from the volume",
    ):
        assert restarted or (result is not None and not result.ok), (
            "200 MiB were written to a Memory emptyDir of a 64 MiB container: it is disk-backed"
        )


def subpath_pod(wincon, target_os: str, build: int | None) -> dict:
    """The subPath check's pod: one emptyDir mounted whole at C:\\data and its subdirectory sub at C:\\sub."""
    mounts = [
        {"name": "data", "mountPath": at(target_os, "C:\\data")},
        {"name": "data", "mountPath": at(target_os, "C:\\sub"), "subPath": "sub"},
    ]
    return mounted_pod(wincon, "subpath", build, mounts, [{"name": "data", "emptyDir": {}}], target_os=target_os)


@pytest.mark.test_id("29aa9b27-9c9b-4ae6-b316-696cb12de18f")
@pytest.mark.dataplane
@pytest.mark.limitation("subpath-volume-mounts")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(subpath_pod)
def test_sub_path_mount_shows_only_its_subdirectory(wincon, namespace, build, kube, target_os):
    """ "Volume subpath mounts. Only the entire volume can be mounted in a Windows container" (002_8a7e76f95009f44f.txt, Storage)."""
    pod = run_os_pod(wincon, namespace, subpath_pod(wincon, target_os, build))
    written, seen = at(target_os, "C:\\sub\\hello.txt"), at(target_os, "C:\\data\\sub\\hello.txt")
    wrote = kube.exec(pod.metadata.name, write_new(written))
    shown = kube.exec(pod.metadata.name, read(seen))
    with expect_deviation(
        "subpath-volume-mounts",
        accepts=lambda: answered((wrote, written), (shown, seen)),
        deviation="mounttest reports the subPath file missing or different",
    ):
        assert content(wrote, written) == NEW_FILE, f"writing through the subPath mount failed: {wrote.stdout!r}"
        assert content(shown, seen) == NEW_FILE, (
            f"the file is not under sub of the whole volume: {shown.stdout!r} {shown.stderr}"
        )


def secret_subpath_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The Secret creds, then the pod secret-subpath mounting its key username with subPath at C:\\app\\username."""
    mounts = [{"name": "creds", "mountPath": at(target_os, "C:\\app\\username"), "subPath": "username"}]
    volumes = [{"name": "creds", "secret": {"secretName": "creds"}}]
    return [secret_manifest(), mounted_pod(wincon, "secret-subpath", build, mounts, volumes, target_os=target_os)]


@pytest.mark.test_id("83f6e438-d85a-42a4-ae30-f9d2f75378de")
@pytest.mark.dataplane
@pytest.mark.limitation("subpath-secret-volume")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(secret_subpath_objects)
def test_secret_key_mounted_with_sub_path_is_readable(wincon, namespace, build, kube, target_os):
    """ "Subpath volume mounting for Secrets" is not supported (002_8a7e76f95009f44f.txt, Storage)."""
    secret, body = secret_subpath_objects(wincon, target_os, build)
    kube.create(secret)  # the test's own namespace: no Secret creds there before
    pod = run_os_pod(wincon, namespace, body)
    file = at(target_os, "C:\\app\\username")
    result = kube.exec(pod.metadata.name, read(file))
    with expect_deviation(
        "subpath-secret-volume",
        accepts=lambda: answered((result, file)),
        deviation="mounttest reports the secret's subPath file missing or different",
    ):
        assert content(result, file) == "wincon-user", f"{result.stdout!r} {result.stderr}"


def single_file_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The ConfigMap settings, then the pod single-file mounting its key settings.txt onto C:\\app\\settings.txt."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"settings.txt": "level=debug"},
    }
    mounts = [{"name": "settings", "mountPath": at(target_os, "C:\\app\\settings.txt"), "subPath": "settings.txt"}]
    volumes = [{"name": "settings", "configMap": {"name": "settings"}}]
    return [cm, mounted_pod(wincon, "single-file", build, mounts, volumes, target_os=target_os)]


@pytest.mark.test_id("8bf23c2c-d652-4866-926e-6e5cd0c05ad2")
@pytest.mark.dataplane
@pytest.mark.limitation("single-file-volume-mount")
@pytest.mark.documents("k8s-windows-intro", "Storage")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(single_file_objects)
def test_config_map_key_mounted_onto_a_single_file(wincon, namespace, build, kube, target_os):
    """ "Volume mounts can only target a directory in the container, not an individual file" (000_4130a90def37a825.txt, Storage); "Single file mapping: to be implemented with CRI-ContainerD"."""
    cm, body = single_file_objects(wincon, target_os, build)
    kube.create(cm)
    pod = run_os_pod(wincon, namespace, body)
    file = at(target_os, "C:\\app\\settings.txt")
    result = kube.exec(pod.metadata.name, read(file))
    with expect_deviation(
        "single-file-volume-mount",
        accepts=lambda: answered((result, file)),
        deviation="mounttest reports the single-file mount missing or different",
    ):
        assert content(result, file) == "level=debug", f"{result.stdout!r} {result.stderr}"


def modes_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The Secret creds, then the pod modes mounting it at C:\\creds with defaultMode 0400 and password's mode 0440."""
    volume = {
        "name": "creds",
        "secret": {
            "secretName": "creds",
            "defaultMode": 0o400,
            "items": [{"key": "username", "path": "username"}, {"key": "password", "path": "password", "mode": 0o440}],
        },
    }
    mounts = [{"name": "creds", "mountPath": at(target_os, "C:\\creds")}]
    return [secret_manifest(), mounted_pod(wincon, "modes", build, mounts, [volume], target_os=target_os)]


@pytest.mark.test_id("4d1427c3-357e-4649-8d00-b8d7dfb77409")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-defaultmode")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(forms.BUSYBOX_SH_PROBE, same_as_control=True)
@waves.ahead(modes_objects)
def test_secret_volume_default_mode_and_item_mode_apply(wincon, namespace, build, kube, target_os):
    """ "DefaultMode (due to UID/GID dependency)" is not supported (002_8a7e76f95009f44f.txt, Storage): files should carry modes 0400 and 0440."""
    secret, body = modes_objects(wincon, target_os, build)
    kube.create(secret)  # the test's own namespace: no Secret creds there before
    pod = run_os_pod(wincon, namespace, body)
    root = "C:" if target_os == "windows" else ""  # stat of the image's busybox on both OSes
    result = kube.exec(pod.metadata.name, ["sh", "-c", f"stat -L -c %a {root}/creds/username {root}/creds/password"])
    assert result.ok and len(result.stdout.split()) == 2, (
        f"stat did not report two modes: {result.stdout!r} {result.stderr}"
    )
    with expect_deviation(
        "volume-defaultmode",
        accepts=lambda: all(OCTAL_MODE.fullmatch(mode) for mode in result.stdout.split()),
        deviation="stat reports other permission modes than 400 and 440",
    ):
        assert result.stdout.split() == ["400", "440"], f"modes reported: {result.stdout.split()}"


def fs_group_pod(wincon, target_os: str, build: int | None) -> dict:
    """The fsGroup check's pod: an emptyDir at C:\\data, the pod's fsGroup 2000."""
    mounts = [{"name": "data", "mountPath": at(target_os, "C:\\data")}]
    body = mounted_pod(wincon, "fsgroup", build, mounts, [{"name": "data", "emptyDir": {}}], target_os=target_os)
    body["spec"]["securityContext"] = {"fsGroup": 2000}
    return body


@pytest.mark.test_id("12b219f8-1986-4fe2-8af8-8284f3892a90")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-ownership-permissions")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(forms.BUSYBOX_SH_PROBE, same_as_control=True)
@waves.ahead(fs_group_pod)
def test_fs_group_owns_files_created_in_a_volume(wincon, namespace, build, kube, target_os):
    """ "Volume user-masks and permissions are not available ... All permissions are resolved within the context of the container" (002_8a7e76f95009f44f.txt, Storage): files should belong to fsGroup 2000."""
    body = fs_group_pod(wincon, target_os, build)
    root = "C:" if target_os == "windows" else ""
    command = ["sh", "-c", f"touch {root}/data/owned && stat -c %g {root}/data/owned"]
    kube.gate(command, where="pod fsgroup")  # before the API server's answer decides anything
    pod = run_or_refused(wincon, namespace, body, "volume-ownership-permissions")
    result = kube.exec(pod.metadata.name, command)
    assert result.ok and result.stdout.strip().isdigit(), f"stat printed no group: {result.stdout!r} {result.stderr}"
    with expect_deviation("volume-ownership-permissions"):
        assert result.stdout.strip() == "2000", f"the file belongs to group {result.stdout.strip()}, not fsGroup 2000"


def read_only_root_pod(wincon, target_os: str, build: int | None) -> dict:
    """The read-only root check's pod: its container's securityContext sets readOnlyRootFilesystem."""
    return os_pod(
        wincon, "ro-root", target_os, build, container_extra={"securityContext": {"readOnlyRootFilesystem": True}}
    )


@pytest.mark.test_id("b08d526f-64bc-4357-b3bd-7cab1b9bd4f5")
@pytest.mark.dataplane
@pytest.mark.limitation("readonly-root-filesystem")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(forms.ACCESS_DENIED, same_as_control=True)
@waves.ahead(read_only_root_pod)
def test_read_only_root_filesystem_refuses_writes(wincon, namespace, build, kube, target_os):
    """ "Read-only root filesystem. Mapped volumes still support readOnly" is not supported (002_8a7e76f95009f44f.txt, Storage): a write to C:\\ should be denied."""
    body = read_only_root_pod(wincon, target_os, build)
    command = write_new(at(target_os, "C:\\probe.txt"))
    kube.gate(command, where="pod ro-root")  # before the API server's answer decides anything
    pod = run_or_refused(wincon, namespace, body, "readonly-root-filesystem")
    result = kube.exec(pod.metadata.name, command)
    # The deviation's own evidence: the write went through, so mounttest reads the new file's content back from the
    # root filesystem (an exit 0 that left no such file is not a writable root observed).
    probe = at(target_os, "C:\\probe.txt")
    written = kube.exec(pod.metadata.name, read(probe)) if result.ok else None
    with expect_deviation(
        "readonly-root-filesystem",
        accepts=lambda: written is not None and content(written, probe) == NEW_FILE,
        deviation="mounttest wrote the file and reads its content back from the root filesystem",
    ):
        assert not result.ok, "a write to the root filesystem succeeded" + (
            f"; reading it back printed {written.stdout!r}" if written is not None else ""
        )
    # mounttest prints Go's error: the OS's own message (Windows' is what upstream expects for a refused write,
    # test/e2e/windows/volumes.go:106).
    refusal = "access is denied" if target_os == "windows" else "read-only file system"
    assert refusal in (result.stdout + result.stderr).lower(), f"the write failed otherwise: {result.stdout!r}"


# Not made ahead (waves.ahead): declared unavailable, so collection skips it; and its host-side junction must
# follow the pod's start.
@pytest.mark.test_id("29a26445-c0cd-4b59-bc43-4a5a25ff7fc7")
@pytest.mark.requires("host-process")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-host-projection")
@pytest.mark.windows_only("the host side is a HostProcess pod making an NTFS junction on the Windows node")
@pytest.mark.documents("k8s-windows-intro", "Storage/API")
@pytest.mark.windows_form(
    unavailable="mklink /J (an NTFS junction made on the host from a HostProcess pod) has no evidence: upstream's e2e "
    "at v1.34.4 runs no mklink in a pod (its one mklink is a build step of test/images/windows/powershell-helper), "
    "and no public recording of it in a HostProcess pod was found (searched GitHub issues and pages; "
    "docker/for-win#1205 shows a junction seen through a docker volume on Windows 10, not a Windows Server pod)"
)
def test_host_to_container_propagation_shows_what_the_host_mounts_later(wincon, namespace, build, kube):
    """ "Volume mounts cannot project files or directories back to the host filesystem" and "mount propagation is not supported on Windows" (000_4130a90def37a825.txt, Storage/API)."""
    nodes = windows_nodes_of_build(wincon.profile, build)
    if not nodes:
        pytest.skip("no Ready Windows node")
    node = nodes[0].name
    base = f"C:\\wincon-tests\\{namespace}-prop"
    volumes = [{"name": "host", "hostPath": {"path": base, "type": "DirectoryOrCreate"}}]
    mounts = [{"name": "host", "mountPath": "C:\\host", "mountPropagation": "HostToContainer"}]
    pod = run_windows_pod(wincon, namespace, mounted_pod(wincon, "propagation", build, mounts, volumes, node=node))
    # After the container started, the host mounts another directory under the hostPath (a junction,
    # the Windows counterpart of a bind mount), from a HostProcess pod on the same node.
    mount_on_host = f"mkdir {base}-src & echo projected> {base}-src\\f.txt & mklink /J {base}\\mnt {base}-src"
    helper = host_process_pod(kube, "host-mounter", build, node, ["cmd", "/c", mount_on_host + " & ping -t 127.0.0.1"])
    run_windows_pod(wincon, namespace, helper)
    result = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\host\\mnt\\f.txt"])
    with expect_deviation("volume-host-projection"):
        assert result.ok and "projected" in result.stdout, (
            f"the host's later mount is not visible: {result.stdout!r} {result.stderr}"
        )


# Not made ahead: the data-plane gate is passed before the pod is created.
@pytest.mark.test_id("323ed5dd-11c4-4481-a786-faa043a12531")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-host-projection")
@pytest.mark.documents("k8s-windows-intro", "V1.VolumeMount.mountPropagation")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE, forms.CMD_TYPE)
def test_bidirectional_propagation_mount_is_accepted_for_a_privileged_container(wincon, namespace, build, kube):
    """ "V1.VolumeMount.mountPropagation - mount propagation is not supported on Windows" (000_4130a90def37a825.txt): Bidirectional needs a privileged container, which a Windows pod cannot have."""
    mounts = [{"name": "host", "mountPath": "C:\\host", "mountPropagation": "Bidirectional"}]
    volumes = [
        {"name": "host", "hostPath": {"path": f"C:\\wincon-tests\\{namespace}-bidi", "type": "DirectoryOrCreate"}}
    ]
    body = mounted_pod(wincon, "bidirectional", build, mounts, volumes)
    body["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    command = ["cmd", "/c", "echo bidi> C:\\host\\f.txt && type C:\\host\\f.txt"]
    kube.gate(command, where="pod bidirectional")  # before the API server's answer decides anything
    pod = run_or_refused(wincon, namespace, body, "volume-host-projection")
    result = kube.exec(pod.metadata.name, command)
    assert result.ok and "bidi" in result.stdout, (
        f"the Bidirectional mount is not usable: {result.stdout!r} {result.stderr}"
    )


# Idle as upstream's HostProcess pods do (test/e2e/windows/host_process.go:648).
IDLE = ["powershell.exe", "-Command", "Write-Host 'Hello'; sleep -Seconds 600"]


def secret_on_disk_objects(wincon, build: int | None) -> list[dict]:
    """The clear-text check's Secret creds, then on the first Ready Windows node of the build the idle HostProcess
    pod disk-inspector and the pod secret-holder mounting creds at C:\\creds; none where no such node is Ready (the
    check skips)."""
    nodes = windows_nodes_of_build(wincon.profile, build)
    if not nodes:
        return []
    node = nodes[0].name
    holder = mounted_pod(
        wincon,
        "secret-holder",
        build,
        [{"name": "creds", "mountPath": "C:\\creds"}],
        [{"name": "creds", "secret": {"secretName": "creds"}}],
        node=node,
    )
    inspector = hostprocess.host_process_pod(wincon, "disk-inspector", build, IDLE, node=node, restart_policy=None)
    return [secret_manifest(), inspector, holder]


@pytest.mark.test_id("e5aee157-8dbc-457d-9925-5b6333716d52")
@pytest.mark.requires("host-process")
@pytest.mark.dataplane
@pytest.mark.limitation("secrets-clear-text-on-node")
@pytest.mark.windows_only("inspects the Windows kubelet's pod directory on NTFS from a HostProcess pod")
@pytest.mark.documents("k8s-windows-guide", "Security")
@pytest.mark.windows_form(forms.CMD_TYPE, forms.GET_VOLUME_OUTPUT, forms.HOST_BINARY_BY_PATH, forms.HOSTPROCESS_IDLE)
# Safe ahead: the node is the profile's (as host_path_pair's in test_volume_types), the Secret is made before its
# holder as the check makes it, and the file and its volume are read after both pods run; nothing is timed.
@waves.ahead(secret_on_disk_objects)
def test_secret_volume_is_not_stored_on_the_nodes_disk(wincon, namespace, build, kube):
    """ "Secrets are written in clear text on the node's volume (as compared to tmpfs/in-memory on linux)" (002_8a7e76f95009f44f.txt, Security)."""
    objects = secret_on_disk_objects(wincon, build)
    if not objects:
        pytest.skip("no Ready Windows node")
    secret, inspector, holder = objects
    kube.create(secret)  # the test's own namespace: no Secret creds there before
    # The inspector first, for real (a server-side dry run of a pod made ahead would meet the pod itself): where the
    # cluster forbids HostProcess the check skips before the holder is created.
    _, rejection = kube.submit(inspector, dry_run=False)
    if rejection is not None:
        if HOST_PROCESS_DISALLOWED in rejection.describe():
            pytest.skip(f"the check needs a HostProcess pod on the node: {HOST_PROCESS_DISALLOWED}")
        raise Rejected(f"the API server refused pod disk-inspector: {rejection.describe()}")
    # Both created before either is awaited (the inspector only idles until the reads below): one start's wait.
    create_or_reject(wincon.api_client, namespace, holder)
    consumer = await_pod(wincon, namespace, holder, os_name="windows")
    await_pod(wincon, namespace, inspector, os_name="windows")
    path = f"C:\\var\\lib\\kubelet\\pods\\{consumer.metadata.uid}\\volumes\\kubernetes.io~secret\\creds\\password"
    # The tool works on a target that must answer: the secret's file is there, read from the host.
    result = kube.exec("disk-inspector", ["cmd", "/c", "type", path])
    assert result.ok and "s3cr3t-wincon" in result.stdout, f"the secret file was not found at {path}: {result.stderr}"
    volume = kube.exec("disk-inspector", conn.get_volume_command(path))
    try:
        systems = conn.parse_get_volume(volume.stdout) if volume.ok else None
    except ValueError:
        systems = None
    if not systems or len(systems) != 1 or not systems[0]:
        raise SuiteError(
            f"Get-Volume -FilePath named no single volume for {path} (exit {volume.exit_code})",
            image="the host's Windows PowerShell (HostProcess pod)",
            tool="Get-Volume",
            output=(volume.stdout + volume.stderr)[:300],
        )
    filesystem = systems[0]
    with expect_deviation("secrets-clear-text-on-node"):
        assert filesystem.upper() not in ("NTFS", "REFS"), (
            f"the secret lies in clear text on the node's {filesystem} disk"
        )


NFS_INDEX = "Hello from NFS!"
FILE_NOT_FOUND = "The system cannot find the file specified."


def storage_class_where(kube, predicate):
    classes = call(kube.storage.list_storage_class).items
    default = "storageclass.kubernetes.io/is-default-class"
    ordered = sorted(classes, key=lambda c: (c.metadata.annotations or {}).get(default) != "true")
    return next((c for c in ordered if predicate(c)), None)


# Not made ahead: its claim names a StorageClass chosen at run time from a live list (a builder has no client),
# and the check may skip on it before creating anything.
@pytest.mark.test_id("6a4681a0-95c1-4fe8-90fa-6ea4efdcb8ee")
@pytest.mark.dataplane
@pytest.mark.limitation("block-device-mapping")
@pytest.mark.documents("k8s-windows-intro", "V1.Pod.volumeDevices")
@pytest.mark.windows_form(unavailable=RAW_BLOCK_UNAVAILABLE)
@pytest.mark.requires("block-storage-class")
def test_raw_block_volume_is_attached_as_a_device(wincon, namespace, build, kube, target_os, block_capable_class):
    """ "V1.Pod.volumeDevices - ... Windows cannot attach raw block devices to pods" (000_4130a90def37a825.txt)."""
    storage_class = storage_class_where(kube, block_capable_class)
    if storage_class is None:
        pytest.skip("no StorageClass of a block-capable (disk) provisioner")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "block"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": "Block",
            "storageClassName": storage_class.metadata.name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    kube.create(claim)
    device = "\\\\.\\PhysicalDrive9" if target_os == "windows" else "/dev/xvdw"
    body = os_pod(
        wincon,
        "block-user",
        target_os,
        build,
        container_extra={"volumeDevices": [{"name": "block", "devicePath": device}]},
    )
    body["spec"]["volumes"] = [{"name": "block", "persistentVolumeClaim": {"claimName": "block"}}]
    pod = run_os_pod(wincon, namespace, body)
    if target_os == "windows":  # declared unavailable (windows_form): collection skips it; never a guess
        pytest.skip(RAW_BLOCK_UNAVAILABLE)
    # The Linux control: the claim is a block device node at its devicePath.
    result = kube.exec(pod.metadata.name, ["sh", "-c", f"test -b {device} && echo block-device"])
    attached = "block-device" in result.stdout
    with expect_deviation("block-device-mapping"):
        assert result.ok and attached, f"{result.stdout!r} {result.stderr}"


# Not made ahead: the data-plane gate comes first, and the client pod holds the NFS server pod's IP once it runs.
@pytest.mark.test_id("b835961f-a127-4b5f-940b-1ba593b88651")
@pytest.mark.dataplane
@pytest.mark.hybrid
@pytest.mark.limitation("nfs-volumes-unsupported")
@pytest.mark.documents("k8s-windows-intro", "Storage")
@pytest.mark.windows_form(forms.CMD_TYPE, "tests/data/windows-outputs/cmd-type-quoted-forward-slash-path-not-found.txt")
def test_nfs_volume_exported_from_a_linux_pod_is_readable(wincon, namespace, build, kube):
    """ "NFS based storage/volume support" is not supported on Windows nodes (000_4130a90def37a825.txt, Storage)."""
    # The gate first: without a Windows data plane nothing here can decide a verdict, not even the server's setup.
    kube.gate(["cmd", "/c", "type C:\\nfs\\index.html"], where="pod nfs-client (an NFS volume from a Linux pod)")
    image = f"{wincon.catalog.registries['promoterE2eRegistry'].rstrip('/')}/volume/nfs:1.4"
    server = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nfs-server", "labels": {"app": "nfs-server"}},
        "spec": {
            "os": {"name": "linux"},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "containers": [
                container(
                    "server",
                    image,
                    args=["/exports"],
                    securityContext={"privileged": True},
                    ports=[{"name": "nfs", "containerPort": 2049}],
                )
            ],
        },
    }
    kube.create(server)
    nfs = kube.wait_pod(
        "nfs-server",
        done=pod_running,
        timeout=wincon.pod_start_timeout,
        failure=pod_failure,
    )
    volumes = [{"name": "nfs", "nfs": {"server": nfs.status.pod_ip, "path": "/"}}]
    body = mounted_pod(wincon, "nfs-client", build, [{"name": "nfs", "mountPath": "C:\\nfs"}], volumes)
    # The documented deviation, as the kubelet reports it: its NFS SetUp fails, in a FailedMount event naming the
    # volume ("MountVolume.SetUp failed for volume "nfs" : ...", operation_generator.go:606 with the message of
    # operation_executor.go:322; on Windows mount-utils mounts only cifs, mount_windows.go). The pod then never
    # starts: without this, the check ended as an error after the whole pod-start wait.
    pod = run_unless_mount_refused(
        wincon,
        kube,
        namespace,
        body,
        lambda message: message.startswith('MountVolume.SetUp failed for volume "nfs"'),
        "the kubelet could not mount the volume",
    )
    result = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\nfs\\index.html"])
    # The export's index.html, which the server image writes into every export (test/images/volume/nfs/index.html,
    # run_nfs.sh:39). A started pod whose mount holds no such file is the deviation too, where cmd's type says so
    # with the words it printed for a file it could not find, as recorded on Windows (https://superuser.com/a/1060315:
    # type "d:/bat/so/second.bat"; tests/data/windows-outputs/cmd-type-quoted-forward-slash-path-not-found.txt); any
    # other failure (another message, other content) is not it.
    with expect_deviation(
        "nfs-volumes-unsupported",
        accepts=lambda: FILE_NOT_FOUND in result.stdout + result.stderr,
        deviation=f"cmd's type: {FILE_NOT_FOUND!r}",
    ):
        assert result.ok and NFS_INDEX in result.stdout, f"{result.stdout!r} {result.stderr}"


# Not made ahead: its claim names a StorageClass chosen at run time from a live list (a builder has no client),
# and the check may skip on it before creating anything.
@pytest.mark.test_id("1da1c09c-d199-44dc-8431-a5f6b3130da8")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-expansion-resizefs")
@pytest.mark.documents("k8s-windows-intro", "Storage")
@pytest.mark.windows_form(
    no_command="the claim's status.capacity and conditions once the kubelet resized its file system, as upstream's "
    "volume expansion suite reads them on Windows nodes (WaitForFSResize, volume_expand.go:258-262; its "
    "'Dynamic PV (ntfs)(allowExpansion)' pattern is tagged Windows); the Linux control also reads df in the pod"
)
@pytest.mark.requires("expandable-storage-class")
def test_expanded_claim_grows_the_filesystem_the_pod_sees(wincon, namespace, build, kube, target_os):
    """ "Expanding the mounted volume (resizefs)" is not supported on Windows nodes (000_4130a90def37a825.txt, Storage)."""
    storage_class = storage_class_where(kube, lambda c: bool(c.allow_volume_expansion))
    if storage_class is None:
        pytest.skip("no StorageClass allows volume expansion")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "growing"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class.metadata.name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    kube.create(claim)
    mounts = [{"name": "data", "mountPath": at(target_os, "C:\\data")}]
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "growing"}}]
    pod = run_os_pod(wincon, namespace, mounted_pod(wincon, "grower", build, mounts, volumes, target_os=target_os))
    # The Linux control also reads the file system's size in the pod, from df. A Windows pod has no such reading
    # with evidence (Get-Volume needs Windows PowerShell's Storage module, the images carry PowerShell Core 6.2.7;
    # the one public recording of busybox-w32's df found lists a drive, C:, rmyorston/busybox-w32#281, and none
    # shows a volume mounted on a directory).
    command = ["sh", "-c", "df -kP /data | tail -1 | awk '{printf \"%.0f\", $2 * 1024}'"]
    if target_os == "linux":
        before = kube.exec(pod.metadata.name, command)
        assert before.ok, before.stderr
    core = kube.core
    call(
        core.patch_namespaced_persistent_volume_claim,
        "growing",
        namespace,
        {"spec": {"resources": {"requests": {"storage": "3Gi"}}}},
    )
    from wincon.checks.pods import eventually

    seen = {"claim": "not read yet"}

    def resized():
        """Upstream's reading (WaitForFSResize and the no-conditions check after it, volume_expand.go:258-262):
        status.capacity reached the request and no condition (FileSystemResizePending) is left."""
        claim = call(core.read_namespaced_persistent_volume_claim, "growing", namespace)
        capacity = (claim.status.capacity or {}).get("storage")
        conditions = [c.type for c in claim.status.conditions or []]
        seen["claim"] = f"status.capacity {capacity}, conditions {conditions or 'none'}"
        return bool(capacity) and parse_quantity(capacity) >= 3 * 1024**3 and not conditions

    with expect_deviation(
        "volume-expansion-resizefs",
        accepts=BehaviourNotObserved,
        deviation="the claim's file system resize never finished (status.capacity below 3Gi, or a condition left)",
    ):
        eventually(
            resized,
            300,
            "the claim's file system resized to 3Gi (status.capacity, no condition left)",
            interval=10,
            behaviour=True,
            seen=lambda: seen["claim"],
        )
    if target_os == "linux":  # the control's in-pod reading: the file system the pod sees grew past 2 GiB

        def grown():
            after = kube.exec(pod.metadata.name, command)
            return after if after.ok and int(after.stdout.strip() or 0) > 2 * 1024**3 else None

        eventually(
            grown,
            120,
            "the filesystem in the pod growing past 2 GiB",
            interval=10,
            behaviour=True,
            seen=lambda: f"size {before.stdout.strip()} bytes before the expansion, unchanged",
        )
