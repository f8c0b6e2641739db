"""The Linux security-field suite's effect checks (issue 18, item 3): pidof must first find the container's own
process; only pidof's own "no such process" is the deviation, and the API refusal is judged by the effect's field.
Since the twenty-seventh session the other effects' tools are shown to work too (cmd's type, findstr and dir read
the suite's own file first), and `echo %username%` / `whoami /groups` are the deviation only where they worked."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.unit.test_os_pods import Catalog
from tests.unit.test_refusal_fields import load_suite_module, windows_rule
from wincon.checks.pods import Rejected
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation, SuiteError
from wincon.workloads.deploy import container, pod_manifest

SUITE = load_suite_module()
EFFECTS = {param.values[0].label: param.values[0] for param in SUITE.EFFECTS}


class FakeKube:
    def __init__(self, answers: dict[str, ExecResult], rejection: Any = None) -> None:
        self.answers, self.rejection, self.ran = answers, rejection, []

    def gate(self, command, where=""):
        pass

    def submit(self, body, dry_run=True):
        return (None, self.rejection) if self.rejection is not None else (body, None)

    def exec(self, pod, command, container=None, where=None):
        self.ran.append(command)
        return self.answers[" ".join(command)]


def run(effect: str, answers: dict[str, ExecResult], monkeypatch, rejection: Any = None) -> FakeKube:
    monkeypatch.setattr(SUITE, "await_pod", lambda *a, **k: NS(metadata=NS(name="p")))
    kube = FakeKube(answers, rejection)

    def make_pod(name):
        return pod_manifest(
            name, [container("main", "agnhost-windows", args=["pause"])], os_name="windows", build=20348
        )

    SUITE.test_linux_security_setting_takes_effect_in_windows_pod(
        kube, NS(catalog=Catalog()), "ns", make_pod, EFFECTS[effect]
    )
    return kube


OWN = ExecResult(0, "5132\n", "")
NOT_FOUND = ExecResult(1, "", "")


def test_the_tool_must_find_its_own_process_before_not_found_counts(monkeypatch):
    """Before: tasklist's rejected arguments (or any failure) read as the host's processes being invisible."""
    with pytest.raises(SuiteError, match="`pidof agnhost` does not answer for what must be there"):
        run("host-pid", {"pidof agnhost": NOT_FOUND, "pidof kubelet.exe": NOT_FOUND}, monkeypatch)


def test_pidofs_own_not_found_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="host-pid"):
        run("host-pid", {"pidof agnhost": OWN, "pidof kubelet.exe": NOT_FOUND}, monkeypatch)


def test_pidof_failing_otherwise_is_not_the_deviation(monkeypatch):
    broken = ExecResult(2, "", "pidof: invalid option -- 'x'")
    with pytest.raises(NotTheDeviation):
        run("privileged", {"pidof agnhost": OWN, "pidof kubelet.exe": broken}, monkeypatch)


def test_the_host_process_listed_is_the_behaviour_holding(monkeypatch):
    kube = run("host-pid", {"pidof agnhost": OWN, "pidof kubelet.exe": ExecResult(0, "2210 1984\n", "")}, monkeypatch)
    assert kube.ran == [["pidof", "agnhost"], ["pidof", "kubelet.exe"]]


def test_a_refusal_of_another_field_is_not_this_effects_deviation(monkeypatch):
    seccomp = "spec.containers[0].securityContext.seccompProfile"
    with pytest.raises(Rejected):
        run("host-pid", {}, monkeypatch, rejection=windows_rule(seccomp))
    with pytest.raises(DeviationObserved, match="spec.hostPID"):
        run("host-pid", {}, monkeypatch, rejection=windows_rule("spec.hostPID"))


def test_no_effect_runs_tasklist_any_more():
    assert not any("tasklist" in " ".join(effect.command).lower() for effect in EFFECTS.values())


PROBE = SUITE.PROBE_FILE
WROTE = ExecResult(0, "", "")
TYPE_PROBE = f"cmd /c type {PROBE}"
WRITE = " ".join(SUITE.WRITE_PROBE)
NO_PATH = ExecResult(1, "", "The system cannot find the path specified.")  # any failure: not matched on its words


def test_a_proc_file_absent_is_the_deviation_once_type_read_the_suites_own_file(monkeypatch):
    """Before: any failure of `type C:\\proc\\...` (cmd missing, access denied, an exec error) was the deviation."""
    selinux = "cmd /c type C:\\proc\\self\\attr\\current"
    answers = {WRITE: WROTE, TYPE_PROBE: ExecResult(0, "wincon-probe \r\n", ""), selinux: NO_PATH}
    with pytest.raises(DeviationObserved, match="selinux-options"):
        run("selinux-options", answers, monkeypatch)
    with pytest.raises(SuiteError, match="`cmd /c type .*wincon-probe.txt` does not answer"):
        run("selinux-options", {**answers, TYPE_PROBE: NO_PATH}, monkeypatch)
    kube = FakeKube({**answers, selinux: ExecResult(0, "s0:c123,c456", "")})
    monkeypatch.setattr(SUITE, "await_pod", lambda *a, **k: NS(metadata=NS(name="p")))
    made: list[Any] = []
    monkeypatch.setattr(kube, "submit", lambda body, dry_run=True: (made.append(body), (body, None))[1])
    SUITE.test_linux_security_setting_takes_effect_in_windows_pod(
        kube,
        NS(catalog=Catalog()),
        "ns",
        lambda name: pod_manifest(name, [container("main", "x")]),
        EFFECTS["selinux-options"],
    )
    assert kube.ran[0] == SUITE.WRITE_PROBE and " ".join(kube.ran[1]) == TYPE_PROBE, kube.ran
    mounts = made[0]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "wincon-probe", "mountPath": SUITE.PROBE_DIR} in mounts
    assert {"name": "wincon-probe", "emptyDir": {}} in made[0]["spec"]["volumes"]


def test_each_effect_without_its_own_deviation_form_shows_its_tool_first():
    for effect in EFFECTS.values():
        assert effect.tool is not None or effect.shows is not None, effect.label


@pytest.mark.parametrize(
    "effect, command, printed",
    [
        # upstream's own expectation of `echo %username%` in a Windows pod (security_context.go): the default account
        ("run-as-user", "cmd /S /C echo %username%", "ContainerUser\r\n"),
        ("supplemental-groups", "cmd /c whoami /groups", "(whoami's groups, without the one asked for)"),
    ],
)
def test_a_command_that_worked_without_the_effect_is_the_deviation_and_a_failed_one_is_not(
    effect, command, printed, monkeypatch
):
    with pytest.raises(DeviationObserved, match=effect):
        run(effect, {command: ExecResult(0, printed, "")}, monkeypatch)
    with pytest.raises(NotTheDeviation):
        run(effect, {command: ExecResult(1, "", "(cmd's error)")}, monkeypatch)


def test_the_pipe_listing_must_find_the_suites_own_file_first(monkeypatch):
    listing = f"cmd /c dir {SUITE.PROBE_DIR} | findstr /i wincon-probe"
    pipes = "cmd /c dir \\\\.\\pipe\\ | findstr /i containerd"
    with pytest.raises(SuiteError, match="does not answer"):
        run("host-ipc", {WRITE: WROTE, listing: ExecResult(1, "", ""), pipes: ExecResult(1, "", "")}, monkeypatch)
    found = ExecResult(0, "wincon-probe.txt", "")  # the line findstr kept; dir's other columns are not read
    with pytest.raises(DeviationObserved, match="host-ipc"):
        run("host-ipc", {WRITE: WROTE, listing: found, pipes: ExecResult(1, "", "")}, monkeypatch)
