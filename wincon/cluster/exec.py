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


def exit_code_from_status(status_text: str, what: str = "exec") -> int:
    """The exit code from the error channel's Status document.

    Success is 0 and NonZeroExitCode carries the code. Anything else is no exit code at all: a missing
    status (the stream closed early), or a Failure of the exec itself (container not running, internal
    error). Those raise InfrastructureError, so a negative check never takes a broken exec for a refusal.
    """
    if not status_text or not status_text.strip():
        raise InfrastructureError(
            f"{what} ended without an exit status (the exec stream closed before the command finished)",
            "the node or the API server dropped the connection; see the attached diagnostics",
        )
    try:
        status = yaml.safe_load(status_text)
    except yaml.YAMLError:
        status = None
    if not isinstance(status, dict):
        raise InfrastructureError(f"{what} ended with an unreadable status: {status_text[:200]!r}")
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message"))
            except (TypeError, ValueError):
                break
    raise InfrastructureError(
        f"{what} did not run: {status.get('reason') or 'Failure'}: {status.get('message') or status_text[:200]}",
        "the container may not be running; see the attached diagnostics",
    )


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
    what = f"exec {command!r} in {namespace}/{pod}"
    return ExecResult(exit_code_from_status(status_text, what), "".join(out), "".join(err))
