"""Linux security settings on a Windows pod: each test asserts the effect the field has on Linux.

The documented limitation (limitations.yaml, area security/compute) turns the deviation into an
expected failure. From v1.25 the deviation is the API server refusing the field for
``spec.os.name: windows`` (a real create, observed on every cluster); before, the pod runs and the
check inside the container shows the field had no effect.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from wincon.checks.api_rules import forbidden_paths_in
from wincon.checks.pods import create_or_reject, judge_refusal, windows_pod
from wincon.cluster import waves
from wincon.cluster.waits import pod_failure
from wincon.clusterinfo.profile import WINDOWS_BUILD_LABEL, parse_build
from wincon.commandline.errors import SuiteError, expect_deviation
from wincon.windows import forms
from wincon.workloads.deploy import await_pod, container

pytestmark = [pytest.mark.api]

DEFAULT_USERS = ("containeradministrator", "containeruser")


@dataclass(frozen=True)
class Effect:
    """A Linux field, the command that shows its effect in the pod, and what that command prints where it holds.

    Before the effect's command can fail as the documented deviation, its tool is shown to work: ``tool`` is the
    same tool against a target that must answer, with what it must print (pidof finds the container's own process;
    cmd's type, findstr and dir read the suite's own file). ``shows`` says what the deviation itself looks like
    where the command's failure alone is not it (pidof's own "no such process"; the image's default account named).
    """

    label: str
    apply: Callable[[dict[str, Any], Any], dict[str, Any]]
    command: list[str]
    holds: Callable[[str], bool]
    promise: str
    tool: tuple[list[str], Callable[[str], bool]] | None = None
    shows: Callable[[Any], bool] | None = None


def pod_context(**fields: Any) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    def apply(body: dict[str, Any], wincon: Any) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["spec"].setdefault("securityContext", {}).update(copy.deepcopy(fields))
        return body

    return apply


def container_context(**fields: Any) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    def apply(body: dict[str, Any], wincon: Any) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["spec"]["containers"][0].setdefault("securityContext", {}).update(copy.deepcopy(fields))
        return body

    return apply


def pod_spec(**fields: Any) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    def apply(body: dict[str, Any], wincon: Any) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["spec"].update(copy.deepcopy(fields))
        return body

    return apply


def shared_process_namespace(body: dict[str, Any], wincon: Any) -> dict[str, Any]:
    body = pod_spec(shareProcessNamespace=True)(body, wincon)
    build = parse_build(body["spec"]["nodeSelector"].get(WINDOWS_BUILD_LABEL))
    body["spec"]["containers"].append(container("sidecar", wincon.catalog.image("pause", "windows", build)))
    return body


def effect_fields(effect: Effect, base: dict[str, Any], wincon: Any) -> list[str]:
    """The Linux-only field paths ``effect`` sets on ``base``: the fields whose refusal is its deviation."""
    before = set(forbidden_paths_in(base))
    return [path for path in forbidden_paths_in(effect.apply(base, wincon)) if path not in before]


# Processes are listed with busybox's pidof, not `cmd /c tasklist /FI "IMAGENAME eq x"` (hcsshim escapes the inner
# quotes, so tasklist rejects its arguments; no upstream e2e test runs tasklist). Evidence, k8s.io/kubernetes
# v1.34.4: test/images/agnhost/BASEIMAGE (the Windows agnhost image is built FROM the busybox Windows image),
# test/images/busybox/Dockerfile_windows:25 (pidof among the busybox.exe applets it links), and the agnhost binary
# is /agnhost without an extension (test/images/image-util.sh:273 `-o ${TARGET}/${SRC}`, agnhost/Dockerfile_windows
# :71,78), pause /pause.exe (build/pause/Dockerfile_windows:18,20). busybox-w32 names a process by its executable's
# file name (github.com/rmyorston/busybox-w32 win32/process.c, procps_scan: CreateToolhelp32Snapshot, comm from
# szExeFile), which pidof matches. pidof prints the PIDs and exits 0, or exits 1 printing nothing.
def pidof(image: str) -> list[str]:
    return ["pidof", image]


# The target that must answer before any "not found" counts: the container's own agnhost process.
OWN_PROCESS = pidof("agnhost")


def pids_listed(out: str) -> bool:
    return bool(out.split()) and all(word.isdigit() for word in out.split())


def pidof_found_nothing(result: Any) -> bool:
    """pidof's own "no such process": exit 1 and no output (anything else is the tool failing otherwise)."""
    return result.exit_code == 1 and not result.stdout.strip()


def proc_status(key: str) -> list[str]:
    return ["cmd", "/c", f"findstr {key} C:\\proc\\self\\status"]


# The suite's own file that cmd's type, findstr and dir are first shown to read, so that their failure on a /proc
# path means the path is not there, not that the tool failed: written as upstream's Windows volume test writes one
# into an emptyDir mounted at its path (test/e2e/windows/volumes.go:102 `cmd /c "echo windows-volume-test" > file`,
# :44 C:\test-volume), read back with its read (volumes.go:148 `cmd /c type file`, stdout the text).
PROBE_DIR = "C:\\test-volume"
PROBE_NAME = "wincon-probe.txt"
PROBE_FILE = f"{PROBE_DIR}\\{PROBE_NAME}"
PROBE_TEXT = "wincon-probe"
WRITE_PROBE = ["cmd", "/c", f"echo {PROBE_TEXT}", ">", PROBE_FILE]
TYPE_WORKS = (["cmd", "/c", f"type {PROBE_FILE}"], lambda out: PROBE_TEXT in out)
FINDSTR_WORKS = (["cmd", "/c", f"findstr {PROBE_TEXT} {PROBE_FILE}"], lambda out: PROBE_TEXT in out)
DIR_WORKS = (["cmd", "/c", f"dir {PROBE_FILE}"], lambda out: PROBE_NAME in out.lower())
DIR_FINDSTR_WORKS = (["cmd", "/c", f"dir {PROBE_DIR} | findstr /i {PROBE_TEXT}"], lambda out: PROBE_TEXT in out.lower())
PIDOF_WORKS = (OWN_PROCESS, pids_listed)


def with_probe_volume(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with an emptyDir mounted at PROBE_DIR in its first container (upstream's volume test's mount)."""
    body = copy.deepcopy(body)
    body["spec"].setdefault("volumes", []).append({"name": "wincon-probe", "emptyDir": {}})
    mounts = body["spec"]["containers"][0].setdefault("volumeMounts", [])
    mounts.append({"name": "wincon-probe", "mountPath": PROBE_DIR})
    return body


def default_account_named(result: Any) -> bool:
    """`echo %username%` worked and named one of the image's default accounts: the UID had no effect."""
    return result.ok and result.stdout.strip().lower() in DEFAULT_USERS


def groups_listed(result: Any) -> bool:
    """`whoami /groups` worked and printed its groups (without the one asked for)."""
    return result.ok and bool(result.stdout.strip())


EFFECTS = [
    pytest.param(
        Effect(
            "privileged",
            container_context(privileged=True),
            pidof("kubelet.exe"),
            pids_listed,
            "a privileged container sees the host's processes",
            tool=PIDOF_WORKS,
            shows=pidof_found_nothing,
        ),
        marks=pytest.mark.limitation("privileged-containers-unsupported"),
        id="privileged",
    ),
    pytest.param(
        Effect(
            "run-as-user",
            pod_context(runAsUser=1000),
            ["cmd", "/S", "/C", "echo %username%"],
            # Positive evidence: a user name was printed, and it is not one of the image's default accounts.
            lambda out: (
                bool(out.strip()) and "%username%" not in out.lower() and out.strip().lower() not in DEFAULT_USERS
            ),
            "the process runs as UID 1000, not as the image's default account",
            shows=default_account_named,
        ),
        marks=pytest.mark.limitation("run-as-user-unsupported"),
        id="run-as-user",
    ),
    pytest.param(
        Effect(
            "run-as-group",
            pod_context(runAsGroup=3000),
            ["cmd", "/c", "whoami /groups"],
            lambda out: "3000" in out,
            "the process runs with primary group 3000",
            shows=groups_listed,
        ),
        marks=pytest.mark.limitation("run-as-group-unsupported"),
        id="run-as-group",
    ),
    pytest.param(
        Effect(
            "supplemental-groups",
            pod_context(supplementalGroups=[4000]),
            ["cmd", "/c", "whoami /groups"],
            lambda out: "4000" in out,
            "the process is a member of group 4000",
            shows=groups_listed,
        ),
        marks=pytest.mark.limitation("supplemental-groups-unsupported"),
        id="supplemental-groups",
    ),
    pytest.param(
        Effect(
            "selinux-options",
            pod_context(seLinuxOptions={"level": "s0:c123,c456"}),
            ["cmd", "/c", "type C:\\proc\\self\\attr\\current"],
            lambda out: "s0:c123,c456" in out,
            "the process carries the SELinux level s0:c123,c456",
            tool=TYPE_WORKS,
        ),
        marks=pytest.mark.limitation("selinux-options-unsupported"),
        id="selinux-options",
    ),
    pytest.param(
        Effect(
            "apparmor",
            container_context(appArmorProfile={"type": "RuntimeDefault"}),
            ["cmd", "/c", "type C:\\proc\\self\\attr\\apparmor\\current"],
            lambda out: "enforce" in out,
            "the runtime's default AppArmor profile is enforced",
            tool=TYPE_WORKS,
        ),
        marks=pytest.mark.limitation("apparmor-unsupported"),
        id="apparmor",
    ),
    pytest.param(
        Effect(
            "seccomp",
            container_context(seccompProfile={"type": "RuntimeDefault"}),
            proc_status("Seccomp"),
            lambda out: out.strip().endswith("2"),
            "seccomp filtering is on (Seccomp: 2)",
            tool=FINDSTR_WORKS,
        ),
        marks=pytest.mark.limitation("seccomp-unsupported"),
        id="seccomp",
    ),
    pytest.param(
        Effect(
            "capabilities",
            container_context(capabilities={"drop": ["ALL"]}),
            proc_status("CapEff"),
            lambda out: "0000000000000000" in out,
            "no effective capabilities remain",
            tool=FINDSTR_WORKS,
        ),
        marks=pytest.mark.limitation("capabilities-unsupported"),
        id="capabilities",
    ),
    pytest.param(
        Effect(
            "allow-privilege-escalation",
            container_context(allowPrivilegeEscalation=False),
            proc_status("NoNewPrivs"),
            lambda out: out.strip().endswith("1"),
            "no_new_privs is set",
            tool=FINDSTR_WORKS,
        ),
        marks=pytest.mark.limitation("allow-privilege-escalation-unsupported"),
        id="allow-privilege-escalation",
    ),
    pytest.param(
        Effect(
            "proc-mount",
            container_context(procMount="Unmasked"),
            ["cmd", "/c", "dir C:\\proc\\kcore"],
            lambda out: "kcore" in out,
            "/proc is mounted unmasked",
            tool=DIR_WORKS,
        ),
        marks=pytest.mark.limitation("proc-mount-unsupported"),
        id="proc-mount",
    ),
    pytest.param(
        Effect(
            "sysctls",
            pod_context(sysctls=[{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}]),
            ["cmd", "/c", "type C:\\proc\\sys\\net\\ipv4\\ip_local_port_range"],
            lambda out: out.split()[:1] == ["1024"],
            "the pod's sysctl is applied",
            tool=TYPE_WORKS,
        ),
        marks=pytest.mark.limitation("sysctls-unsupported"),
        id="sysctls",
    ),
    pytest.param(
        Effect(
            "share-process-namespace",
            shared_process_namespace,
            pidof("pause.exe"),
            pids_listed,
            "one container sees the other container's process",
            tool=PIDOF_WORKS,
            shows=pidof_found_nothing,
        ),
        marks=pytest.mark.limitation("share-process-namespace"),
        id="share-process-namespace",
    ),
    pytest.param(
        Effect(
            "host-pid",
            pod_spec(hostPID=True),
            pidof("kubelet.exe"),
            pids_listed,
            "the pod sees the host's processes",
            tool=PIDOF_WORKS,
            shows=pidof_found_nothing,
        ),
        marks=pytest.mark.limitation("host-ipc-pid-unsupported"),
        id="host-pid",
    ),
    pytest.param(
        Effect(
            "host-ipc",
            pod_spec(hostIPC=True),
            ["cmd", "/c", "dir \\\\.\\pipe\\ | findstr /i containerd"],
            lambda out: "containerd" in out.lower(),
            "the pod shares the host's IPC objects (the runtime's named pipes)",
            tool=DIR_FINDSTR_WORKS,
        ),
        marks=pytest.mark.limitation("host-ipc-pid-unsupported"),
        id="host-ipc",
    ),
]


@pytest.mark.test_id("fa224c1c-1386-4ea8-b482-4295032a4c81")
@pytest.mark.dataplane
@pytest.mark.parametrize("effect", EFFECTS)
@pytest.mark.documents("k8s-windows-intro", "Security")
@pytest.mark.windows_form(
    forms.CMD_ECHO_USERNAME, forms.CMD_WHOAMI, forms.CMD_TYPE, forms.CMD_ECHO_TO_FILE, forms.CMD_DIR
)
# Not made ahead: the data-plane gate comes before the create (on simulated nodes nothing is created), and the
# API server refuses most of these fields for a Windows pod, so no pod start is waited for.
def test_linux_security_setting_takes_effect_in_windows_pod(kube, wincon, namespace, make_pod, effect):
    """ "Linux specific pod security context privileges such as SELinux, AppArmor, Seccomp, Capabilities (POSIX Capabilities), and others are not supported" (000_4130a90def37a825.txt, Security): each should take effect."""
    base = make_pod(f"effect-{effect.label}")
    body = effect.apply(base, wincon)
    probed = effect.tool is not None and PROBE_DIR in " ".join(effect.tool[0])
    if probed:
        body = with_probe_volume(body)
    # The gate first: on simulated nodes nothing below may decide the verdict (the plan says skip).
    kube.gate(effect.command, where=f"pod {body['metadata']['name']}")
    created, rejection = kube.submit(body, dry_run=False)
    if rejection is not None:
        # The deviation only where the API server's Windows rule names the very field this effect sets.
        judge_refusal(rejection, effect_fields(effect, base, wincon), effect.label, body)
    pod = await_pod(wincon, namespace, body, os_name="windows")
    where = f"pod {pod.metadata.name}"
    if effect.tool is not None:
        # The tool must answer for what must be there (the container's own process, the suite's own file) before
        # its failure on what the field would bring means anything.
        if probed:
            kube.exec(pod, WRITE_PROBE, container="main", where=where)
        command, answers = effect.tool
        shown = kube.exec(pod, command, container="main", where=where)
        if not (shown.ok and answers(shown.stdout)):
            raise SuiteError(
                f"`{' '.join(command)}` does not answer for what must be there, so it cannot tell whether "
                f"{effect.promise}",
                image=body["spec"]["containers"][0]["image"],
                tool=" ".join(command),
                output=f"exit {shown.exit_code}: {shown.stdout} {shown.stderr}",
            )
    result = kube.exec(pod, effect.command, container="main", where=where)
    accepts = (lambda: effect.shows(result)) if effect.shows is not None else None
    # Without `shows`, the tool was shown to work just above: a failed assertion is the field having no effect.
    with expect_deviation(effect.label, accepts=accepts, deviation=f"not: {effect.promise}"):
        # The command's own exit code counts: a findstr that found nothing is the field having no effect.
        assert result.ok and effect.holds(result.stdout), (
            f"expected: {effect.promise}; `{' '.join(effect.command)}` exited {result.exit_code}, "
            f"printed {result.stdout!r} {result.stderr!r}"
        )


def started_despite_non_root(pod: Any) -> str | None:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.state and status.state.running:
            return f"container {status.name} started as ContainerAdministrator although runAsNonRoot is true"
    return None


USERNAME_COMMAND = ["cmd", "/S", "/C", "echo %username%"]


def ran_as_administrator(result: Any) -> bool:
    """cmd's ``echo %username%`` (``USERNAME_COMMAND``) exited 0 and printed ContainerAdministrator alone (in any
    letter case: the check asks for it as ``containeradministrator`` too)."""
    return bool(result.ok) and result.stdout.strip().lower() == "containeradministrator"


def refused_by_kubelet(pod: Any) -> bool:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        waiting = status.state.waiting if status.state else None
        if waiting and waiting.reason == "CreateContainerConfigError":
            return True
    return False


def non_root_pod(wincon, build: int | None, user: str) -> dict[str, Any]:
    """The runAsNonRoot check's pod: runAsNonRoot and runAsUserName ``user`` (made ahead: ``waves.ahead``)."""
    body = windows_pod(wincon, f"nonroot-{user.lower()}-{'upper' if user[0].isupper() else 'lower'}", build)
    body["spec"]["securityContext"] = {"runAsNonRoot": True, "windowsOptions": {"runAsUserName": user}}
    return body


@pytest.mark.test_id("5cd2b084-a08a-4b18-9283-1a6742e0e3dd")
@pytest.mark.dataplane
@pytest.mark.limitation("run-as-non-root-no-root-user")
@pytest.mark.parametrize("user", ["ContainerAdministrator", "containeradministrator"])
@pytest.mark.documents("k8s-windows-intro", "V1.Container.SecurityContext.runAsNonRoot")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
# Safe ahead: what is read is the container's state, which stays (the kubelet's CreateContainerConfigError is set
# again at every sync; a started container keeps running), and the account it runs as; no event, nothing timed.
@waves.ahead(non_root_pod)
def test_run_as_non_root_keeps_container_administrator_from_starting(kube, wincon, namespace, build, user):
    """ "Windows does not have a root user. The closest equivalent is ContainerAdministrator" (000_4130a90def37a825.txt, V1.Container.SecurityContext.runAsNonRoot): runAsNonRoot must refuse it, in any letter case."""
    body = non_root_pod(wincon, build, user)
    create_or_reject(wincon.api_client, namespace, body)
    name = body["metadata"]["name"]
    kube.gate(f"wait for container main of pod {name} to be refused with CreateContainerConfigError", where=name)
    pod = kube.wait_pod(
        name,
        done=lambda p: refused_by_kubelet(p) or started_despite_non_root(p) is not None,
        timeout=wincon.pod_start_timeout,
        failure=pod_failure,  # image pulls and scheduling end the wait early; the two outcomes above come first
        describe="its container refused by the kubelet (runAsNonRoot) or started",
    )
    started = started_despite_non_root(pod)
    # The deviation's own evidence: the started container runs as the administrator. Read as upstream reads a
    # container's account, cmd's %username% (security_context.go:132; ContainerAdministrator is the output it
    # expects for that runAsUserName, :135); any other account, an error or nothing is not this deviation.
    account = kube.exec(pod, USERNAME_COMMAND) if started is not None else None
    with expect_deviation(
        "run-as-non-root-no-root-user",
        accepts=lambda: account is not None and ran_as_administrator(account),
        deviation="the container started and runs as ContainerAdministrator",
    ):
        assert started is None, f"{started}" + (f"; %username% printed {account.stdout!r}" if account else "")
    assert refused_by_kubelet(pod)
