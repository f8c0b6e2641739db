"""The Linux security-field suite's process checks (issue 18, item 3): pidof must first find the container's own
process; only pidof's own "no such process" is the deviation, and the API refusal is judged by the effect's field."""

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
    with pytest.raises(SuiteError, match="pidof does not find the container's own agnhost process"):
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
