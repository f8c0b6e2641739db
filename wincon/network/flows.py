"""``FlowChecks``: the traffic checks a test runs in pods (the ``checks`` fixture).

Every check goes through ``Kube.exec``, which records its exact command through the data-plane gate (and
skips on simulated nodes) before anything runs, so nothing runs where nothing could answer. The command
lines and the parsing of their output live in ``wincon.connectivity``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wincon import connectivity as conn
from wincon.cluster.exec import ExecResult
from wincon.errors import InfrastructureError, UnreadableOutput
from wincon.network.pods import PodRef

EXEC_TIMEOUT = 90.0
# A target that answered nothing to a dial of this module (process) already, or a client whose dials over
# that protocol reached nothing at all in this module: the next check that dials it (from it) stops after this
# many silent tries instead of DIAL_SILENT_TRIES, so a module whose shared servers cannot be reached fails its
# checks together instead of one silent timeout each. Each check still dials for itself, an answer on the first
# tries passes it as before, and any answer (even a partial one) lifts the bound for the target and the client;
# the partial bound (fair_tries) applies as before. On a cluster where the client's flows work, nothing changes.
SILENT_AGAIN_TRIES = 2

# curl's exit codes for a server that never answered: could not connect, timed out, empty reply, failure receiving
# data (conn.CURL_EXIT_MEANINGS). curl.exe on Windows is the same curl with the same exit codes.
CURL_NO_ANSWER = frozenset({7, 28, 52, 56})


def no_answer(result: ExecResult) -> bool:
    """curl ran and nothing answered on the path: the evidence of a flow that does not carry the traffic (a
    node-to-pod or Service-VIP deviation), never of a wrong answer, a bad URL or a missing tool."""
    return result.exit_code in CURL_NO_ANSWER


# ping.exe's lines for a request that went out and got no echo reply, as recorded (forms.PING_OUTPUTS,
# tests/data/windows-outputs). Not "General failure.": that one is the sender's own stack failing to transmit
# (recorded with the adapter disabled), not ICMP that is not routed back.
WINDOWS_PING_NO_REPLY = ("Request timed out.", "Destination host unreachable.")


def ping_unanswered(os_name: str, result: ExecResult) -> bool:
    """ping sent its echo requests and no echo reply came from the target: the ICMP deviation's own evidence.

    On Windows, ping.exe printed a "Request timed out." or "Destination host unreachable." line (which it counts
    as received: only a reply with a time is one) and no reply from the target; on Linux, the statistics say
    requests were sent and none received. Never a missing tool, an unknown host or an unreadable output.
    """
    if os_name == "windows":
        lines = [line.strip() for line in result.stdout.splitlines()]
        failed = any(line.endswith(WINDOWS_PING_NO_REPLY) for line in lines)
        return failed and not conn.ping_succeeded(os_name, 0, result.stdout)
    try:
        ping = conn.parse_ping(os_name, result.stdout)
    except ValueError:
        return False
    return ping.sent > 0 and not ping.ok


class FlowChecks:
    """Checks run from pods of one namespace, through a ``Kube`` bound to it (with the test's gate)."""

    # (namespace, target, port, protocol) of dials nothing answered, in this process (an xdist worker runs a
    # module's tests together).
    silent_targets: set[tuple[str, str, int, str]] = set()
    # (namespace, client pod, protocol) whose last dial reached nothing (issue 22, item 5: under a silenced data
    # plane the module's checks dial many targets, names and Services, all over one client: 2.36x the clean run).
    silent_clients: set[tuple[str, str, str]] = set()

    def __init__(self, kube: Any) -> None:
        self.kube = kube

    @staticmethod
    def where(pod: PodRef) -> str:
        return f"{pod.os} pod {pod.name} on {pod.node}"

    def gate(self, command: str | list[str], where: str = "") -> None:
        """The data-plane gate, for a check that is not an exec (e.g. a wait for a probe to act)."""
        self.kube.gate(command, where=where)

    def exec(
        self, pod: PodRef, command: list[str], container: str | None = None, timeout: float = EXEC_TIMEOUT
    ) -> ExecResult:
        """Gate, then run ``command`` once in ``pod`` (default container: the pod's own)."""
        return self.kube.exec(pod, command, container or pod.container, where=self.where(pod), timeout=timeout)

    def run(self, pod: PodRef, command: list[str], container: str | None = None) -> ExecResult:
        """Gate, then run ``command`` once."""
        return self.exec(pod, command, container)

    def dial(
        self,
        client_pod: PodRef,
        target: str,
        port: int,
        protocol: str,
        expected: Iterable[str],
        max_tries: int | None = None,
        min_tries: int = 1,
    ) -> conn.DialOutcome:
        """Upstream's dial check: ask the client's netexec to dial ``target:port`` until ``expected`` answered."""
        expected = set(expected)
        command = conn.dial_command(client_pod.os, client_pod.ip, target, port, protocol)
        self.gate(command, where=self.where(client_pod))

        def once() -> str:
            try:
                result = self.exec(client_pod, command)
            except InfrastructureError as exc:  # an exec that fails counts as a try, as upstream counts it
                return f"exec failed: {exc}"
            # curl exited 0: the client's own answer (unreadable, it is the suite's error, never a failed try)
            return (
                conn.DialAnswer(result.stdout)
                if result.ok
                else f"exit {result.exit_code}: {result.stderr or result.stdout}"
            )

        namespace = str(getattr(self.kube, "namespace", ""))
        key, client_key = (namespace, target, port, protocol), (namespace, client_pod.name, protocol)
        again = key in self.silent_targets or client_key in self.silent_clients
        silent_tries = SILENT_AGAIN_TRIES if again else conn.DIAL_SILENT_TRIES
        outcome = conn.collect_dial(
            once, expected, max_tries or conn.dial_tries(len(expected)), min_tries, silent_tries=silent_tries
        )
        if outcome.responses:
            self.silent_targets.discard(key)
            self.silent_clients.discard(client_key)
        else:
            self.silent_targets.add(key)
            self.silent_clients.add(client_key)
            if again:
                outcome.note = (
                    f"at most {SILENT_AGAIN_TRIES} silent tries: {target}:{port} or {client_pod.name}'s {protocol} "
                    "dials answered nothing earlier in this module"
                )
        return outcome

    def until(
        self,
        pod: PodRef,
        command: list[str],
        ok: Callable[[ExecResult], bool],
        tries: int = 5,
        container: str | None = None,
    ) -> tuple[bool, ExecResult]:
        """Gate, then run ``command`` until ``ok(result)`` or ``tries`` runs: (succeeded, last result)."""
        self.gate(command, where=self.where(pod))
        last: list[ExecResult] = []

        def once() -> bool:
            result = self.exec(pod, command, container)
            last[:] = [result]
            return ok(result)

        # A target that never answers fails within 60 s (no try starts after DIAL_SILENT_SECONDS; none lasts
        # beyond curl's --max-time), not after tries x (timeout + delay).
        succeeded, _ = conn.attempts(once, tries, seconds=conn.DIAL_SILENT_SECONDS)
        return succeeded, last[0]

    def http_get(self, pod: PodRef, url: str, accept: Iterable[str], tries: int = 5) -> tuple[bool, ExecResult]:
        """GET ``url`` from ``pod`` (curl.exe/curl) until the body is one of ``accept``."""
        wanted = {a.lower() for a in accept}
        return self.until(
            pod,
            conn.http_get_command(pod.os, url),
            lambda r: r.ok and r.stdout.strip().lower() in wanted,
            tries,
            container=pod.tool_container,
        )

    def lookup(self, pod: PodRef, name: str, tries: int = 3, tool: str | None = None) -> conn.Lookup:
        """Resolve ``name`` in ``pod`` (default: the OS's recommended resolver); the last answer."""
        tool = tool or pod.dns_tool
        command = conn.dns_lookup_command(pod.os, name, tool)
        _, result = self.until(
            pod,
            command,
            lambda r: conn.parse_lookup(tool, r.stdout, r.exit_code, r.stderr).ok,
            tries,
            container=pod.tool_container,
        )
        return conn.parse_lookup(tool, result.stdout, result.exit_code, result.stderr)

    def ping(self, pod: PodRef, target: str, tries: int = 3) -> tuple[bool, ExecResult]:
        """One echo request per try, until a real echo reply comes back."""
        return self.until(
            pod,
            conn.ping_command(pod.os, target),
            lambda r: conn.ping_succeeded(pod.os, r.exit_code, r.stdout),
            tries,
            container=pod.tool_container,
        )

    def dial_each(self, client_pod: PodRef, target: str, port: int, protocol: str, times: int) -> list[str]:
        """``times`` single dials in a row: the endpoint that answered each ('' where none did)."""
        command = conn.dial_command(client_pod.os, client_pod.ip, target, port, protocol)
        self.gate(command, where=self.where(client_pod))
        return [self.dial_once(client_pod, command) for _ in range(times)]

    def dial_once(self, client_pod: PodRef, command: list[str]) -> str:
        """The endpoint one dial reached ('' where none did, or curl got no answer). An answer of a curl that
        exited 0 which the suite cannot read raises UnreadableOutput: neither a miss nor a denial."""
        result = self.exec(client_pod, command)
        try:
            responses = conn.parse_dial(result.stdout).responses
        except UnreadableOutput:
            if result.ok:
                raise
            return ""
        return responses[0] if responses else ""

    def port_forward_get(self, pod: PodRef, port: int, path: str) -> str:
        """GET ``path`` from ``pod``'s ``port`` through the API server's port-forward (kubectl port-forward)."""
        from kubernetes.stream import portforward

        self.gate(f"kubectl port-forward pod/{pod.name} {port} && GET http://localhost:{port}{path}", self.where(pod))
        forward = portforward(
            self.kube.core.connect_get_namespaced_pod_portforward, pod.name, self.kube.namespace, ports=str(port)
        )
        sock = forward.socket(port)
        sock.settimeout(30)
        try:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            chunks: list[bytes] = []
            while sum(map(len, chunks)) < 65536:  # bounded: the server closes after a short body
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError as exc:
            return f"port-forward error: {exc}; {forward.error(port) or ''}"
        finally:
            sock.close()
            forward.close()
        _, _, body = b"".join(chunks).decode(errors="replace").partition("\r\n\r\n")
        return body.strip() or f"no data; {forward.error(port) or ''}"
