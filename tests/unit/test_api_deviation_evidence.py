"""The api suite's expected failures accept only their own evidence (issue 22 follow-up, h5): each check is run
with a fake client; the documented deviation's form is the expected failure (DeviationObserved), a failed
assertion of another kind is NotTheDeviation (a failure)."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import DeviationObserved, NotTheDeviation

HOST = suites.load("suites/api/test_host_process.py")
SECURITY = suites.load("suites/api/test_linux_security_fields_on_windows.py")
CONVENTIONS = suites.load("suites/api/test_windows_conventions.py")


class FakeKube:
    """Answers each exec by its command line; records what ran."""

    def __init__(self, answers: dict[str, ExecResult], pod: Any = None) -> None:
        self.answers, self.pod = answers, pod
        self.ran: list[str] = []

    def gate(self, command, where="", pod_node=None):
        pass

    def submit(self, body, dry_run=False):
        return body, None

    def wait_pod(self, name, **kwargs):
        return self.pod

    def exec(self, pod, command, container=None, where=None):
        self.ran.append(" ".join(command))
        return self.answers[" ".join(command)]


def make_pod(name: str, **spec: Any) -> dict:
    container: dict[str, Any] = {"name": "main", "image": "agnhost"}
    container.update(spec.pop("container_extra", {}))
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


# --------------------------------------------------------------------------- HostProcess: hostname


def host_process(stdout: str, monkeypatch) -> None:
    pod = NS(metadata=NS(name="hp-on-host"), spec=NS(node_name="win-node-0"))
    monkeypatch.setattr(HOST, "windows_pod", lambda wincon, name, build, **k: make_pod(name, **k))
    monkeypatch.setattr(HOST, "await_pod", lambda *a, **k: pod)
    kube = FakeKube({"powershell.exe -Command hostname": ExecResult(0, stdout, "")})
    HOST.test_host_process_container_runs_on_the_host(kube, NS(), "ns", None)


def test_hostname_of_the_node_is_the_behaviour_holding(monkeypatch):
    host_process("WIN-NODE-0\r\n", monkeypatch)


def test_another_host_name_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="host-privileges-unavailable"):
        host_process("hp-on-host\r\n", monkeypatch)


def test_a_message_printed_with_exit_0_is_not_the_deviation(monkeypatch):
    """Before: any output other than the node's name was taken for the container being off the host."""
    with pytest.raises(NotTheDeviation):
        host_process("WARNING: something went wrong\r\nwin-node-0\r\n", monkeypatch)


# --------------------------------------------------------------------------- runAsNonRoot with ContainerAdministrator


def container_state(running: bool) -> Any:
    waiting = None if running else NS(reason="CreateContainerConfigError")
    return NS(name="main", state=NS(running=NS() if running else None, waiting=waiting))


def non_root(running: bool, username: ExecResult | None, monkeypatch) -> FakeKube:
    pod = NS(metadata=NS(name="nonroot"), status=NS(container_statuses=[container_state(running)]))
    monkeypatch.setattr(SECURITY, "create_or_reject", lambda *a, **k: None)
    monkeypatch.setattr(SECURITY, "windows_pod", lambda wincon, name, build, **k: make_pod(name, **k))
    answers = {"cmd /S /C echo %username%": username} if username is not None else {}
    kube = FakeKube(answers, pod)
    SECURITY.test_run_as_non_root_keeps_container_administrator_from_starting(
        kube, NS(api_client=None, pod_start_timeout=5), "ns", None, "ContainerAdministrator"
    )
    return kube


def test_a_refused_container_is_the_behaviour_holding_and_nothing_is_exec_d(monkeypatch):
    assert non_root(False, None, monkeypatch).ran == []


def test_a_container_started_as_the_administrator_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="run-as-non-root-no-root-user"):
        non_root(True, ExecResult(0, "ContainerAdministrator\r\n", ""), monkeypatch)


def test_a_started_container_that_runs_as_another_account_is_not_the_deviation(monkeypatch):
    """Before: any running container was the deviation, whoever it ran as."""
    with pytest.raises(NotTheDeviation, match="ContainerUser"):
        non_root(True, ExecResult(0, "ContainerUser\r\n", ""), monkeypatch)
    with pytest.raises(NotTheDeviation):
        non_root(True, ExecResult(1, "", "'cmd' is not recognized"), monkeypatch)


# --------------------------------------------------------------------------- env var name with ':'


def env_colon(stdout: str, monkeypatch) -> None:
    pod = NS(metadata=NS(name="env-colon"), spec=NS(containers=[NS(env=[NS(name="Logging:LogLevel")])]))
    monkeypatch.setattr(CONVENTIONS, "submit_pod", lambda *a, **k: (a[2], None))
    monkeypatch.setattr(CONVENTIONS, "run_windows_pod", lambda *a, **k: pod)
    monkeypatch.setattr(CONVENTIONS, "windows_pod", lambda wincon, name, build, **k: make_pod(name, **k))
    kube = FakeKube({"sh -c env": ExecResult(0, stdout, "")})
    CONVENTIONS.test_environment_variable_name_with_a_colon_is_accepted_and_set(kube, NS(api_client=None), "ns", None)


ENV = "KUBERNETES_SERVICE_HOST=10.96.0.1\nPATH=C:\\bin\n"


def test_the_variable_set_is_the_behaviour_holding(monkeypatch):
    env_colon(ENV + "Logging:LogLevel=Debug\n", monkeypatch)


def test_the_variable_absent_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="env-var-name-colon"):
        env_colon(ENV, monkeypatch)


def test_the_variable_with_another_value_is_not_the_deviation(monkeypatch):
    with pytest.raises(NotTheDeviation, match="Logging:LogLevel"):
        env_colon(ENV + "Logging:LogLevel=Information\n", monkeypatch)


# --------------------------------------------------------------------------- '/' in a path cmd interprets


def slash_path(result: ExecResult, monkeypatch) -> None:
    monkeypatch.setattr(CONVENTIONS, "run_windows_pod", lambda *a, **k: NS(metadata=NS(name="slash-paths")))
    monkeypatch.setattr(CONVENTIONS, "windows_pod", lambda wincon, name, build, **k: make_pod(name, **k))
    kube = FakeKube(
        {"cmd /c echo slash-ok> C:\\data\\file.txt": ExecResult(0, "", ""), "cmd /c type C:/data/file.txt": result}
    )
    CONVENTIONS.test_forward_slash_path_works_in_a_container_command(kube, NS(), "ns", None)


def test_the_file_read_through_slashes_is_the_behaviour_holding(monkeypatch):
    slash_path(ExecResult(0, "slash-ok\r\n", ""), monkeypatch)


def test_cmds_syntax_error_is_the_deviation(monkeypatch):
    """The recorded form (superuser.com/a/1060315): `type d:/bat/so/second.bat` -> the syntax message."""
    with pytest.raises(DeviationObserved, match="backslash-paths-in-commands"):
        slash_path(ExecResult(1, "", "The syntax of the command is incorrect.\r\n"), monkeypatch)


def test_another_failure_of_type_is_not_the_deviation(monkeypatch):
    """Before: an exec that failed for any reason (a missing cmd, a file not found) read as the '/' refused."""
    with pytest.raises(NotTheDeviation, match="syntax of the command is incorrect"):
        slash_path(ExecResult(1, "", "The system cannot find the file specified.\r\n"), monkeypatch)
    with pytest.raises(NotTheDeviation):
        slash_path(ExecResult(0, "other\r\n", ""), monkeypatch)


# --------------------------------------------------------------------------- a pod without spec.os, runAsNonRoot

WITHOUT_OS = suites.load("suites/api/test_pods_without_os.py")


class LogKube(FakeKube):
    def __init__(self, log: str) -> None:
        super().__init__({}, NS(status=NS(phase="Succeeded")))
        self.log = log

    def logs(self, pod, container=None, previous=False, tail=None):
        return self.log


def without_os_pod(kind: str, log: str, monkeypatch) -> None:
    body = {"metadata": {"name": "p"}, "spec": {"nodeSelector": {"kubernetes.io/os": "windows"}, "containers": [{}]}}
    refusal = WITHOUT_OS.NON_ROOT_REFUSAL.format(user="ContainerAdministrator")
    found = [NS(message=refusal)] if kind == "event" else NS()
    monkeypatch.setattr(WITHOUT_OS, "windows_pod", lambda *a, **k: body)
    monkeypatch.setattr(WITHOUT_OS, "create_or_reject", lambda *a, **k: None)
    monkeypatch.setattr(WITHOUT_OS, "placed", lambda *a, **k: NS(spec=NS(node_name="win-0")))
    monkeypatch.setattr(WITHOUT_OS, "eventually", lambda *a, **k: (kind, found))
    WITHOUT_OS.test_run_as_non_root_refuses_container_administrator_with_the_kubelets_event(
        LogKube(log), NS(api_client=None, pod_start_timeout=5), "ns", 20348, "ContainerAdministrator"
    )


def test_the_kubelets_refusal_event_is_the_behaviour_holding(monkeypatch):
    without_os_pod("event", "", monkeypatch)


def test_the_container_that_printed_the_administrator_is_the_deviation(monkeypatch):
    with pytest.raises(DeviationObserved, match="run-as-non-root-no-root-user"):
        without_os_pod("started", "ContainerAdministrator\r\n", monkeypatch)


def test_a_started_container_that_printed_another_account_is_not_the_deviation(monkeypatch):
    """Before: any container that started was taken for the administrator running."""
    with pytest.raises(NotTheDeviation, match="ContainerUser"):
        without_os_pod("started", "ContainerUser\r\n", monkeypatch)
