"""Run a command in a container with a timeout; get its exit code, stdout and stderr."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import yaml
from kubernetes import client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL

from wincon.commandline.errors import InfrastructureError, SuiteError

# How a runtime says the executable of an exec does not exist in the container's image: the suite's own gap
# (its image lacks the tool), never the cluster's. The text reaches the exec's error channel as the message of
# a Failure Status (reason InternalError) that wraps the runtime's error.
# - Linux, runc (through containerd's CRI exec): 'OCI runtime exec failed: exec failed: unable to start container
#   process: exec: "x": executable file not found in $PATH' (a bare name), or '...: stat /x: no such file or
#   directory' (a path).
# - Windows, hcsshim: the CreateProcess of the exec fails with ERROR_FILE_NOT_FOUND, "The system cannot find the
#   file specified." Recorded outputs: `kubectl exec` into a Windows pod without sh (github.com/lensapp/lens
#   issue 1056: "encountered an error during hcsshim::System::CreateProcess: failure in a Windows system call:
#   The system cannot find the file specified."), and containerd on Windows Server 2019 (github.com/containerd/
#   containerd issue 6300: "hcs::System::CreateProcess <id>: The system cannot find the file specified.: unknown").
MISSING_EXECUTABLE_LINUX = re.compile(
    r'exec: "[^"]*": (executable file not found in \$PATH|stat [^:]*: no such file or directory)'
)
MISSING_EXECUTABLE_WINDOWS = "The system cannot find the file specified"
# A shell of the suite's image (busybox sh, on both OSes' agnhost) that cannot find a command prints
# "sh: <name>: not found" and exits 127 (POSIX: command not found).
SHELL_NOT_FOUND_EXIT = 127


def missing_executable(message: str) -> bool:
    """Whether an exec's Failure message says its executable does not exist in the container (see above)."""
    if MISSING_EXECUTABLE_LINUX.search(message):
        return True
    return MISSING_EXECUTABLE_WINDOWS in message and "CreateProcess" in message


def shell_command_not_found(command: list[str], exit_code: int, stderr: str) -> bool:
    """A ``sh -c`` of the suite whose shell could not find a command it names (exit 127, "...: not found")."""
    shell = command[0].lower().rsplit("/", 1)[-1].removesuffix(".exe") if command else ""
    return shell in ("sh", "ash", "bash") and exit_code == SHELL_NOT_FOUND_EXIT and ": not found" in stderr


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
    message = str(status.get("message") or status_text[:200])
    if missing_executable(message):
        raise SuiteError(
            f"{what} did not run: the executable is not in the container's image ({status.get('reason')})",
            "use a tool the suite's image has (its catalog entry), or add it to the image",
            output=message,
        )
    raise InfrastructureError(
        f"{what} did not run: {status.get('reason') or 'Failure'}: {message}",
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
    stdout, stderr = "".join(out), "".join(err)
    try:
        exit_code = exit_code_from_status(status_text, what)
    except SuiteError as exc:
        raise SuiteError(
            exc.summary,
            exc.fix,
            image=container_image(core, namespace, pod, container),
            tool=command[0] if command else "",
            output=exc.output,
        ) from exc
    if shell_command_not_found(command, exit_code, stderr):
        raise SuiteError(
            f"{what}: the shell found no such command (exit {exit_code})",
            "use a tool the suite's image has (its catalog entry), or add it to the image",
            image=container_image(core, namespace, pod, container),
            tool=command[0],
            output=stderr,
        )
    return ExecResult(exit_code, stdout, stderr)


def container_image(core: client.CoreV1Api, namespace: str, pod: str, container: str | None) -> str:
    """The image of the exec's container, to name it in a suite error ("?" where the pod cannot be read)."""
    try:
        spec = core.read_namespaced_pod(pod, namespace).spec
    except Exception:  # naming the image is a courtesy; the error is raised either way
        return "?"
    containers = list(spec.containers or [])
    chosen = next((c for c in containers if c.name == container), containers[0] if containers else None)
    return str(chosen.image) if chosen is not None else "?"
