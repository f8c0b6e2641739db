"""The storage suite's expected failures accept only their own evidence (issue 22 follow-up, h5): each check is
run with a fake client; the documented deviation's form is the expected failure (DeviationObserved), a failed
assertion of another kind is NotTheDeviation or a plain failure, and a kubelet refusal of another kind stays an
error (the wait running out)."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.checks import pods as PODS
from wincon.cluster.exec import ExecResult
from wincon.cluster.waits import WaitTimeout
from wincon.commandline.errors import DeviationObserved, InfrastructureError, NotTheDeviation
from wincon.workloads import deploy as DEPLOY

LIM = suites.load("suites/storage/test_volume_limitations.py")
TYPES = suites.load("suites/storage/test_volume_types.py")


def running(name: str, restarts: int = 0) -> Any:
    return NS(
        metadata=NS(name=name),
        spec=NS(node_name="win-0"),
        status=NS(
            phase="Running",
            conditions=[NS(type="Ready", status="True")],
            container_statuses=[NS(restart_count=restarts)],
            pod_ip="10.0.0.5",
        ),
    )


def pending(name: str) -> Any:
    return NS(
        metadata=NS(name=name),
        spec=NS(node_name="win-0"),
        status=NS(phase="Pending", conditions=[], container_statuses=[], init_container_statuses=[]),
    )


class FakeKube(fakes.CommandKube):
    """Answers each exec by its command line (an exception is raised); FailedMount events as given."""

    def __init__(self, answers: dict[str, Any], pods: dict[str, Any] | None = None, mounts: tuple = ()) -> None:
        super().__init__(answers, pods)
        self.mounts = list(mounts)
        self.core = NS(
            read_namespaced_pod=lambda name, namespace: self.pods[name],
            read_namespaced_secret=lambda name, namespace: NS(),
            read_namespaced_persistent_volume_claim=lambda name, namespace: NS(spec=NS(volume_name="pvc-123")),
        )

    def events(self, name, reason):
        return [NS(message=message) for message in self.mounts] if reason == "FailedMount" else []


def body_of(name: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main"}]}}


WINCON = NS(api_client=None, profile=None, pod_start_timeout=5, catalog=NS(registries={"promoterE2eRegistry": "r"}))


def mounttest_content(file: str, text: str) -> ExecResult:
    return ExecResult(0, f"content of file {json.dumps(file)}: {text}\n", "")


# --------------------------------------------------------------------------- Memory emptyDir


def memory(big: Any, held: ExecResult | None, monkeypatch, restarts: int = 0) -> FakeKube:
    monkeypatch.setattr(LIM, "mounted_pod", lambda *a, **k: body_of("memory-medium"))
    monkeypatch.setattr(LIM, "run_os_pod", lambda *a, **k: running("memory-medium"))
    dd = "sh -c dd if=/dev/zero of=C:/mem/{} bs=1048576 count={}"
    answers = {
        dd.format("small.bin", 1): ExecResult(0, "", "1+0 records out"),
        "sh -c stat -c %s C:/mem/small.bin": ExecResult(0, "1048576\n", ""),
        dd.format("big.bin", 200): big,
    }
    if held is not None:
        answers["sh -c stat -c %s C:/mem/big.bin"] = held
    kube = FakeKube(answers, {"memory-medium": running("memory-medium", restarts)})
    LIM.test_memory_medium_empty_dir_counts_against_the_memory_limit(WINCON, "ns", 20348, kube, "windows")
    return kube


def test_a_refused_write_is_the_behaviour_holding(monkeypatch):
    kube = memory(ExecResult(1, "", "dd: error writing: No space left on device"), None, monkeypatch)
    assert "sh -c stat -c %s C:/mem/big.bin" not in kube.ran
    memory(InfrastructureError("exec ended without an exit status"), None, monkeypatch, restarts=1)


def test_200_mib_held_by_the_volume_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="emptydir-medium-memory"):
        memory(ExecResult(0, "", "200+0 records out"), ExecResult(0, "209715200\n", ""), monkeypatch)


def test_a_short_file_or_a_dead_exec_without_a_restart_is_not_the_deviation(monkeypatch):
    """Before: both read as a disk-backed medium."""
    with pytest.raises(NotTheDeviation):
        memory(ExecResult(0, "", ""), ExecResult(0, "67108864\n", ""), monkeypatch)
    with pytest.raises(NotTheDeviation):
        memory(InfrastructureError("exec ended without an exit status"), None, monkeypatch)


def test_a_pod_that_never_started_is_an_error_whatever_its_mount_events_say(monkeypatch):
    """Before, a setup timeout with a FailedMount event that merely contained "memory" was the deviation; the
    Windows kubelet's mounter never refuses the medium (mount-utils makes a directory for "tmpfs")."""
    monkeypatch.setattr(LIM, "mounted_pod", lambda *a, **k: body_of("memory-medium"))

    def never_ready(*args, **kwargs):
        raise WaitTimeout("pod memory-medium did not become Ready within 5s")

    monkeypatch.setattr(LIM, "run_os_pod", never_ready)
    kube = FakeKube({}, {})
    kube.mounts = ['MountVolume.SetUp failed for volume "mem" : cannot allocate memory']
    with pytest.raises(WaitTimeout):
        LIM.test_memory_medium_empty_dir_counts_against_the_memory_limit(WINCON, "ns", 20348, kube, "windows")


# --------------------------------------------------------------------------- defaultMode


def modes(stdout: str, monkeypatch) -> None:
    monkeypatch.setattr(LIM, "mounted_pod", lambda *a, **k: body_of("modes"))
    monkeypatch.setattr(LIM, "run_os_pod", lambda *a, **k: running("modes"))
    command = "sh -c stat -L -c %a C:/creds/username C:/creds/password"
    kube = FakeKube({command: ExecResult(0, stdout, "")})
    LIM.test_secret_volume_default_mode_and_item_mode_apply(WINCON, "ns", 20348, kube, "windows")


def test_the_modes_asked_for_are_the_behaviour_holding(monkeypatch):
    modes("400\n440\n", monkeypatch)


def test_other_octal_modes_are_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="volume-defaultmode"):
        modes("644\n644\n", monkeypatch)


def test_two_words_that_are_not_modes_are_not_the_deviation(monkeypatch):
    """Before: any two words other than 400 440 were the modes having no effect."""
    with pytest.raises(NotTheDeviation):
        modes("-rw-r--r-- -rw-r--r--\n", monkeypatch)


# --------------------------------------------------------------------------- readOnlyRootFilesystem

PROBE = "C:\\probe.txt"
WRITE = f"/agnhost mounttest --new-file-0644={PROBE}"
READ = f"/agnhost mounttest --file-content={PROBE}"


def read_only_root(answers: dict[str, ExecResult], monkeypatch) -> None:
    monkeypatch.setattr(LIM, "os_pod", lambda *a, **k: body_of("ro-root"))
    monkeypatch.setattr(LIM, "run_or_refused", lambda *a, **k: running("ro-root"))
    LIM.test_read_only_root_filesystem_refuses_writes(WINCON, "ns", 20348, FakeKube(answers), "windows")


def test_a_denied_write_is_the_behaviour_holding(monkeypatch):
    denied = f"error writing new file {json.dumps(PROBE)}: open {PROBE}: Access is denied.\n"
    read_only_root({WRITE: ExecResult(1, denied, "")}, monkeypatch)


def test_the_file_written_and_read_back_is_the_deviation(monkeypatch):
    answers = {WRITE: ExecResult(0, "", ""), READ: mounttest_content(PROBE, LIM.NEW_FILE)}
    with pytest.raises(DeviationObserved, match="readonly-root-filesystem"):
        read_only_root(answers, monkeypatch)


def test_an_exit_0_that_left_no_file_is_not_the_deviation(monkeypatch):
    """Before: the write's exit code alone was taken for a writable root."""
    missing = f"error reading file content for {json.dumps(PROBE)}: open {PROBE}: not found\n"
    with pytest.raises(NotTheDeviation):
        read_only_root({WRITE: ExecResult(0, "", ""), READ: ExecResult(1, missing, "")}, monkeypatch)


# --------------------------------------------------------------------------- NFS

TYPE_INDEX = "cmd /c type C:\\nfs\\index.html"
NFS_REFUSED = (
    'MountVolume.SetUp failed for volume "nfs" : mount options([]) should have at least 2 options, current '
    'number:0, source:"10.0.0.5:/", target:"c:\\var\\lib\\kubelet\\pods\\u\\volumes\\kubernetes.io~nfs\\nfs"'
)


def nfs(client: Any, mounts: tuple, answers: dict[str, ExecResult], monkeypatch) -> list[Any]:
    placed: list[Any] = []
    monkeypatch.setattr(LIM, "mounted_pod", lambda *a, **k: body_of("nfs-client"))
    monkeypatch.setattr(PODS, "create_or_reject", lambda *a, **k: None)
    monkeypatch.setattr(DEPLOY, "check_placement", lambda pod, body, profile: placed.append(pod))
    monkeypatch.setattr(PODS, "await_pod", lambda *a, **k: client)
    kube = FakeKube(answers, {"nfs-server": running("nfs-server"), "nfs-client": client}, mounts)
    LIM.test_nfs_volume_exported_from_a_linux_pod_is_readable(WINCON, "ns", 20348, kube)
    return placed


def test_the_exports_index_read_is_the_behaviour_holding(monkeypatch):
    nfs(running("nfs-client"), (), {TYPE_INDEX: ExecResult(0, "Hello from NFS!\r\n", "")}, monkeypatch)


def test_the_kubelets_refused_nfs_mount_is_the_deviation_on_the_pinned_node(monkeypatch):
    """Before: the pod never started and the check ended as an error after the whole pod-start wait."""
    with pytest.raises(DeviationObserved, match='MountVolume.SetUp failed for volume "nfs"'):
        nfs(pending("nfs-client"), (NFS_REFUSED,), {}, monkeypatch)


def test_another_volumes_failed_mount_is_no_deviation(monkeypatch):
    token = 'MountVolume.SetUp failed for volume "kube-api-access-x" : object "ns"/"kube-root-ca.crt" not registered'
    with pytest.raises(WaitTimeout):
        nfs(pending("nfs-client"), (token,), {}, monkeypatch)


def test_a_started_pod_without_the_file_is_the_deviation_only_with_types_not_found(monkeypatch):
    not_found = ExecResult(1, "", "The system cannot find the file specified.\r\n")
    with pytest.raises(DeviationObserved):
        nfs(running("nfs-client"), (), {TYPE_INDEX: not_found}, monkeypatch)
    with pytest.raises(NotTheDeviation):  # before: any failure of type, or any output at all, read as NFS refused
        nfs(running("nfs-client"), (), {TYPE_INDEX: ExecResult(1, "", "Access is denied.\r\n")}, monkeypatch)


# --------------------------------------------------------------------------- CSI node plugin on the node

DRIVER = "disk.csi.example.com"
CSI_MISSING = (
    'MountVolume.MountDevice failed for volume "pvc-123" : kubernetes.io/csi: attacher.MountDevice failed to create '
    f"newCsiDriverClient: driver name {DRIVER} not found in the list of registered CSI drivers"
)


def csi(client: Any, mounts: tuple, answers: dict[str, ExecResult], monkeypatch, target_os: str = "windows") -> None:
    monkeypatch.setattr(TYPES, "default_storage_class", lambda kube: NS(metadata=NS(name="std"), provisioner=DRIVER))
    monkeypatch.setattr(TYPES, "mounted_pod", lambda *a, **k: body_of("pvc-user"))
    monkeypatch.setattr(PODS, "create_or_reject", lambda *a, **k: None)
    monkeypatch.setattr(DEPLOY, "check_placement", lambda pod, body, profile: None)
    monkeypatch.setattr(PODS, "await_pod", lambda *a, **k: client)
    monkeypatch.setattr(TYPES, "run_os_pod", lambda *a, **k: client)
    kube = FakeKube(answers, {"pvc-user": client}, mounts)
    TYPES.test_persistent_volume_claim_of_the_default_storage_class(WINCON, "ns", 20348, kube, target_os)


FILE = "C:\\data\\class-std.txt"
WRITE_READ = f"/agnhost mounttest --new-file-0644={FILE} --file-content={FILE}"


def test_the_claim_written_and_read_is_the_behaviour_holding(monkeypatch):
    csi(running("pvc-user"), (), {WRITE_READ: mounttest_content(FILE, TYPES.NEW_FILE)}, monkeypatch)


def test_the_kubelet_without_the_classs_node_plugin_is_the_deviation(monkeypatch):
    """Before: the pod never started and the check ended as an error after the whole pod-start wait."""
    with pytest.raises(DeviationObserved, match=f"no node plugin of {DRIVER}"):
        csi(pending("pvc-user"), (CSI_MISSING,), {}, monkeypatch)


def test_another_mount_failure_or_another_driver_is_no_deviation(monkeypatch):
    other = 'MountVolume.SetUp failed for volume "pvc-123" : rpc error: code = Internal desc = mount failed'
    with pytest.raises(WaitTimeout):
        csi(pending("pvc-user"), (other, CSI_MISSING.replace(DRIVER, "other.csi.io")), {}, monkeypatch)


def test_a_failed_write_on_a_mounted_claim_is_a_failure_not_the_deviation(monkeypatch):
    """Before: the write's failure in a running pod was taken for the CSI plugin missing on the node."""
    broken = ExecResult(1, f"error writing new file {json.dumps(FILE)}: disk full\n", "")
    with pytest.raises(AssertionError) as raised:
        csi(running("pvc-user"), (), {WRITE_READ: broken}, monkeypatch)
    assert not isinstance(raised.value, (DeviationObserved, NotTheDeviation))
