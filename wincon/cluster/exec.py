"""Run a command in a container with a timeout; get its exit code, stdout and stderr."""

from __future__ import annotations

import time
from dataclasses import dataclass

import yaml
from kubernetes import client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL

from wincon.errors import InfrastructureError


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def exit_code_from_status(status_text: str) -> int:
    """The exit code from the error channel's Status document ('' or Success means 0)."""
    if not status_text:
        return 0
    status = yaml.safe_load(status_text) or {}
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", 1))
    return 1


def exec_in_pod(
    api_client: client.ApiClient,
    namespace: str,
    pod: str,
    command: list[str],
    container: str | None = None,
    timeout: float = 60.0,
) -> ExecResult:
    """Run ``command`` in the pod; InfrastructureError if it does not finish within ``timeout``."""
    core = client.CoreV1Api(api_client)
    kwargs = {"container": container} if container else {}
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=command,
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
        **kwargs,
    )
    out: list[str] = []
    err: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while ws.is_open():
            if time.monotonic() > deadline:
                raise InfrastructureError(
                    f"exec {command!r} in {namespace}/{pod} did not finish within {timeout:.0f}s",
                    "the node may be overloaded; see the attached diagnostics",
                )
            ws.update(timeout=1)
            if ws.peek_stdout():
                out.append(ws.read_stdout())
            if ws.peek_stderr():
                err.append(ws.read_stderr())
        status_text = ws.read_channel(ERROR_CHANNEL)
    finally:
        ws.close()
    return ExecResult(exit_code_from_status(status_text), "".join(out), "".join(err))
