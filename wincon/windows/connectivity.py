"""The network flows' command lines, per operating system, and parsers of what they print.

One module for every command a networking or DNS check runs inside a pod, so each flow is unit-tested
for Windows and Linux without a cluster:

* the upstream agnhost ``netexec`` dial check, the same on both operating systems: a client pod runs
  ``netexec --http-port=9080``; it is asked over HTTP to dial a target
  (``/dial?request=hostname&protocol=http|udp&host=<target>&port=<p>&tries=1``) and answers JSON whose
  ``responses`` are the hostnames of the pods that answered, which must equal the endpoint pod names;
* per-OS command lines only where the operating system differs: ``curl.exe`` against ``curl``,
  ``ping -n 1 -w 5000`` against ``ping -c 1 -W 5``, PowerShell ``Resolve-DnsName`` (the resolver the
  documentation recommends on Windows) against the C library's resolver (through busybox ``ping``, which
  applies the search list as applications do) or ``nslookup``, ``ipconfig /all`` against
  ``/etc/resolv.conf``, ``cmd /c set`` against ``env``.

Every builder returns an argv list for an exec without a shell, so nothing is quoted twice. Retries
are bounded (:func:`dial_tries`, :func:`collect_dial`), never an open-ended loop. A parser that cannot read a
tool's output raises ``UnreadableOutput`` (a SuiteError, and a ValueError) quoting what the tool printed: the
suite's gap, reported as an error, never the behaviour failing nor a documented deviation.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from tenacity import RetryCallState, RetryError, Retrying, retry_if_result, stop_after_attempt, stop_any, wait_fixed
from tenacity.stop import stop_base

from wincon.commandline.errors import UnreadableOutput

OS = Literal["windows", "linux"]
OPERATING_SYSTEMS: tuple[str, ...] = ("windows", "linux")

# The ports of the upstream networking checks (k/k test/e2e/framework/network).
NETSERVER_HTTP_PORT = 8083  # netexec --http-port of the endpoint pods
NETSERVER_UDP_PORT = 8081  # netexec --udp-port of the endpoint pods
CLIENT_HTTP_PORT = 9080  # netexec --http-port of the client ("test container") pod
SERVICE_HTTP_PORT = 80  # the Services' TCP port, targeting NETSERVER_HTTP_PORT
SERVICE_UDP_PORT = 90  # the Services' UDP port, targeting NETSERVER_UDP_PORT
KUBELET_PORT = 10250  # every node's kubelet listens here: a TCP target on the node itself
READINESS_PERIOD_SECONDS = 3  # a netexec pod's readiness probe, from its start (upstream's service jig.go:686)

CONNECT_TIMEOUT_SECONDS = 10  # curl --connect-timeout, as upstream's Windows checks use
MAX_TIME_SECONDS = 30  # curl --max-time: no single request may hang an exec
PING_TIMEOUT_SECONDS = 5  # one echo request, 5 s for its reply (ping -w 5000 / -W 5)
DIAL_RETRY_DELAY_SECONDS = 2.0  # upstream's delay between dial attempts
DIAL_BASE_TRIES = 30  # upstream: endpoints^2 + 30 attempts
# When nothing at all has answered after this many tries, or after this long, more tries cannot show more
# endpoints: the flow does not work, and the check fails now instead of after endpoints^2 + 30 timeouts. No
# try starts after DIAL_SILENT_SECONDS and none lasts longer than curl's --max-time: a silent target fails
# its check within DIAL_SILENT_SECONDS + MAX_TIME_SECONDS (55 s).
DIAL_SILENT_TRIES = 10
DIAL_SILENT_SECONDS = 25.0
# When some endpoints answered, the missing ones are judged only once the Service is shown complete from the
# client's side (collect_dial's ``witness``: its EndpointSlices list each missing endpoint ready and each answered
# the client by its own pod IP): from then on they get judged_tries(endpoints), the fewer of upstream's
# endpoints^2 + 30 and the tries after which a Service that picks at random would have missed one of its working
# endpoints with a chance of at most DIAL_MISS_CHANCE per dial (a node's proxy learns of ready endpoints at its own
# pace: before they are shown, a miss says nothing about the Service). While a missing endpoint is not shown, the
# dial waits for it at most DIAL_SILENT_TRIES tries after its first answer, or DIAL_SILENT_SECONDS once the witness
# was asked WITNESS_MIN_QUESTIONS times. (The rule this replaces, fair_tries, stopped a 2-endpoint dial 9 tries
# after its first answer: a working endpoint missed with a chance of 1/512 per such dial at random.)
DIAL_MISS_CHANCE = 1e-6
# The witness is first asked once the missing endpoints went this many tries, the first answer's included, without
# answering: a healthy Service shows every endpoint within a few tries, and asking costs a read of the Service and
# its EndpointSlices and a dial per missing endpoint. Asking later only starts the judged tries later (more of them).
WITNESS_AFTER_TRIES = 5
# A missing endpoint never shown ends the dial DIAL_SILENT_TRIES tries after the first answer, or DIAL_SILENT_SECONDS
# after it once the witness was asked at least this many times (one question that meets a passing hiccup never
# decides alone, however slow the tries).
WITNESS_MIN_QUESTIONS = 3

_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$")


def _check_os(os_name: str) -> str:
    if os_name not in OPERATING_SYSTEMS:
        raise ValueError(f"unknown operating system {os_name!r}: expected one of {', '.join(OPERATING_SYSTEMS)}")
    return os_name


def check_host(host: str) -> str:
    """``host`` if it is an IP address or a DNS name; ValueError otherwise (it ends up in a command line)."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if len(host) > 253 or not _NAME_RE.match(host):
        raise ValueError(f"{host!r} is neither an IP address nor a DNS name")
    return host


def host_port(host: str, port: int) -> str:
    """``host:port``, with IPv6 addresses in brackets."""
    check_host(host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ----------------------------------------------------------------------------- agnhost netexec


def netexec_args(http_port: int, udp_port: int | None = None) -> list[str]:
    """The agnhost arguments of a netexec server (the image's entrypoint is agnhost on both OSes)."""
    args = ["netexec", f"--http-port={http_port}"]
    if udp_port is not None:
        args.append(f"--udp-port={udp_port}")
    return args


def netexec_container(
    name: str,
    image: str,
    http_port: int = NETSERVER_HTTP_PORT,
    udp_port: int | None = NETSERVER_UDP_PORT,
) -> dict[str, Any]:
    """A netexec container as upstream's netserver pods run it: ports declared, ready once /healthz answers.

    Readiness is asked from the container's start on, every READINESS_PERIOD_SECONDS, as upstream's Service
    tests ask their netexec backends (k8s.io/kubernetes@v1.34.4 test/e2e/framework/service/jig.go:685-686: no
    initial delay, period 3 s): netexec answers /healthz as soon as it listens, so a delay only postpones Ready.
    Upstream's netserver pods (test/e2e/framework/network/utils.go:588-593) wait 10 s and probe every 10 s, slower
    still. The liveness probe keeps its 30 s grace: it restarts a server that stopped answering, never gates it.
    """
    ports: list[dict[str, Any]] = [{"name": "http", "containerPort": http_port, "protocol": "TCP"}]
    if udp_port is not None:
        ports.append({"name": "udp", "containerPort": udp_port, "protocol": "UDP"})
    healthz = {"httpGet": {"path": "/healthz", "port": http_port}, "failureThreshold": 3}
    return {
        "name": name,
        "image": image,
        "args": netexec_args(http_port, udp_port),
        "ports": ports,
        "readinessProbe": {**healthz, "periodSeconds": READINESS_PERIOD_SECONDS},
        "livenessProbe": {**healthz, "periodSeconds": 5, "initialDelaySeconds": 30},
    }


def dial_url(
    client: str,
    target: str,
    target_port: int,
    protocol: str = "http",
    client_port: int = CLIENT_HTTP_PORT,
    request: str = "hostname",
    tries: int = 1,
) -> str:
    """The URL that asks the netexec server at ``client`` to dial ``target:target_port`` once."""
    if protocol not in ("http", "udp"):
        raise ValueError(f"netexec dial protocol {protocol!r}: expected http or udp")
    check_host(target)
    query = urlencode(
        {"request": request, "protocol": protocol, "host": target, "port": target_port, "tries": tries}, safe=":"
    )
    return f"http://{host_port(client, client_port)}/dial?{query}"


def curl_binary(os_name: str) -> str:
    """curl.exe on Windows (in System32 since Windows Server 1803, and in the agnhost image), curl on Linux."""
    return "curl.exe" if _check_os(os_name) == "windows" else "curl"


def dial_command(
    os_name: str,
    client: str,
    target: str,
    target_port: int,
    protocol: str = "http",
    client_port: int = CLIENT_HTTP_PORT,
) -> list[str]:
    """Ask the client pod's netexec to dial the target; run inside the client pod (or any pod reaching it)."""
    url = dial_url(client, target, target_port, protocol, client_port)
    # -q first (ignore curlrc), -g: no globbing of IPv6 brackets, -s: no progress meter.
    return [curl_binary(os_name), "-q", "-g", "-s", "--max-time", str(MAX_TIME_SECONDS), url]


@dataclass(frozen=True)
class DialResult:
    """What netexec's /dial answered: the responses of the pods it reached, and the errors of each try."""

    responses: tuple[str, ...]
    errors: tuple[str, ...]


class DialAnswer(str):
    """What curl printed in a try in which it exited 0: the client netexec's own answer to /dial. A dial's
    ``run`` returns its output as a DialAnswer; any other text it returns is a try that got no answer (an exec
    that failed, a curl that reached nothing)."""


def parse_dial(text: str) -> DialResult:
    """The JSON netexec's /dial prints; UnreadableOutput quoting the output when it is anything else."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UnreadableOutput("netexec /dial did not answer JSON", tool="netexec /dial", output=text) from exc
    if not isinstance(data, dict) or not isinstance(data.get("responses", []), list):
        raise UnreadableOutput(
            "netexec /dial answered JSON without a responses list", tool="netexec /dial", output=text
        )
    responses = tuple(str(r).strip() for r in data.get("responses") or [] if str(r).strip())
    errors = tuple(str(e) for e in data.get("errors") or [])
    return DialResult(responses, errors)


def dial_tries(endpoints: int) -> int:
    """Upstream's bound: endpoints^2 + 30 attempts, enough to see every endpoint behind a Service."""
    return endpoints * endpoints + DIAL_BASE_TRIES


def judged_tries(endpoints: int) -> int:
    """Tries the endpoints still missing get once the Service is shown complete from the client's side: the fewer of
    upstream's endpoints^2 + 30 (:func:`dial_tries`) and the fewest n for which a Service that picks one of
    ``endpoints`` at random misses any of the (at most endpoints - 1) missing ones in n tries with a chance of at
    most DIAL_MISS_CHANCE (union bound: (endpoints - 1) * (1 - 1/endpoints)^n): 20 for 2 endpoints, 36 for 3,
    then upstream's (46 for 4, 130 for 10). One endpoint: nothing can be missing while another answered, and
    DIAL_SILENT_TRIES."""
    if endpoints < 2:
        return DIAL_SILENT_TRIES
    chance = math.ceil(math.log(DIAL_MISS_CHANCE / (endpoints - 1)) / math.log(1 - 1 / endpoints) - 1e-9)
    return min(dial_tries(endpoints), chance)


def dial_bound(endpoints: int) -> int:
    """The most tries a dial can run by its own rules (the default cap of FlowChecks.dial): silent tries, tries
    waiting for the missing endpoints to be shown, then the judged tries."""
    return 2 * DIAL_SILENT_TRIES + judged_tries(endpoints)


# What a witness says of each endpoint it was asked about: None where the cluster shows it complete from the
# client's side (listed ready in the Service's EndpointSlices and answering the client by its own pod IP), else
# why not, naming whose fault that is ("its pod IP 10.244.1.21 did not answer lin-client (...): the endpoint's
# fault"; "not listed ready in the Service's EndpointSlices (...): the Service's fault"). A witness that returns None
# instead of a dict cannot tell at all (the target is no Service the API names): then judging starts there.
Witness = Callable[[frozenset[str]], "dict[str, str | None] | None"]


@dataclass
class DialOutcome:
    """Every response and error seen over the attempts of one dial check, and how long they took."""

    expected: frozenset[str]
    responses: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    tries: int = 0
    seconds: float = 0.0
    note: str = ""  # why the dial stopped where it did, when not its own bounds alone (FlowChecks.dial)
    first_answer_try: int = 0  # the try of the first answer from any endpoint (0: none)
    first_answer_seconds: float = 0.0
    # The try after which the Service was shown complete from the client's side (0: not yet): the missing
    # endpoints' judged tries are those after it.
    shown_at: int = 0
    shown: set[str] = field(default_factory=set)  # missing endpoints the witness showed complete
    questions: int = 0  # how many times the witness was asked before the Service was shown complete
    unshown: dict[str, str] = field(default_factory=dict)  # the others, with why (the witness's last word)
    # For each endpoint missing when the dial ended, what its own pod IP showed at that moment (the fault named).
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def reached_all(self) -> bool:
        """True when exactly the expected endpoints answered (hostnames compare case-insensitively)."""
        return {r.lower() for r in self.responses} == {e.lower() for e in self.expected}

    def missing_endpoints(self) -> frozenset[str]:
        """The expected endpoints that did not answer (hostnames compare case-insensitively)."""
        seen = {r.lower() for r in self.responses}
        return frozenset(e for e in self.expected if e.lower() not in seen)

    def describe(self) -> str:
        got = ", ".join(sorted(self.responses)) or "none"
        want = ", ".join(sorted(self.expected)) or "none"
        errors = "; ".join(dict.fromkeys(self.errors))[:600] or "none"
        note = f" ({self.note})" if self.note else ""
        text = (
            f"after {self.tries} tries in {self.seconds:.0f} s{note}: answered by [{got}], expected [{want}]; "
            f"errors: {errors}"
        )
        if self.missing:
            text += "; " + "; ".join(f"{name}: {why}" for name, why in sorted(self.missing.items()))
        return text


class _StopByWhatWasShown(stop_base):
    """Stop when nothing answered after ``tries`` attempts or ``seconds``. Once some endpoints answered but not all:
    while a missing one is not shown complete from the client's side, once DIAL_SILENT_TRIES attempts passed since
    the first answer, or ``seconds`` with at least WITNESS_MIN_QUESTIONS questions to the witness; once all are
    shown, when they had judged_tries attempts after that. Never before ``min_tries``."""

    def __init__(self, outcome: DialOutcome, tries: int, seconds: float, min_tries: int) -> None:
        self.outcome, self.tries, self.seconds, self.min_tries = outcome, tries, seconds, min_tries

    def __call__(self, retry_state: RetryCallState) -> bool:
        outcome, attempt = self.outcome, retry_state.attempt_number
        if attempt < self.min_tries:
            return False
        if not outcome.responses:
            return attempt >= self.tries or outcome.seconds >= self.seconds
        if outcome.shown_at:
            return attempt - outcome.shown_at >= judged_tries(len(outcome.expected))
        waited = attempt - outcome.first_answer_try + 1
        late = outcome.seconds - outcome.first_answer_seconds >= DIAL_SILENT_SECONDS
        return waited >= DIAL_SILENT_TRIES or (late and outcome.questions >= WITNESS_MIN_QUESTIONS)


def _ask_witness(outcome: DialOutcome, witness: Witness | None) -> None:
    """After a try with some answers: ask ``witness`` about the missing endpoints not shown yet; once every missing
    one is shown (or no witness can tell), the judged tries start after this try."""
    if outcome.shown_at:
        return
    unshown = outcome.missing_endpoints() - outcome.shown
    said = witness(unshown) if witness is not None and unshown else None
    outcome.questions += said is not None
    if said is None:  # nothing left to show, or nothing can show it: judged from here
        outcome.shown_at = outcome.tries
        return
    for name in unshown:
        why = said.get(name, "the witness said nothing of it")
        if why is None:
            outcome.shown.add(name)
            outcome.unshown.pop(name, None)
        else:
            outcome.unshown[name] = why
    if not outcome.missing_endpoints() - outcome.shown:
        outcome.shown_at = outcome.tries


def _name_the_fault(outcome: DialOutcome, witness: Witness | None) -> None:
    """For each endpoint still missing at the end of a partly answered dial: did it answer the client by its own
    pod IP at that moment (the Service's fault) or not (the endpoint's)?"""
    missing = outcome.missing_endpoints()
    if not outcome.responses or not missing or witness is None:
        return
    if outcome.shown_at:
        said = witness(missing)
        if said is None:
            return
        tries = outcome.tries - outcome.shown_at
        for name in missing:
            why = said.get(name, "the witness said nothing of it")
            outcome.missing[name] = (
                f"answers the client by its own pod IP now, yet not through the Service in {tries} tries after the "
                "Service was shown complete from the client's side: the Service's fault"
                if why is None
                else why
            )
        return
    for name in missing - outcome.shown:
        outcome.missing[name] = f"never shown complete from the client's side: {outcome.unshown.get(name, '?')}"


def collect_dial(
    run: Callable[[], str],
    expected: Iterable[str],
    max_tries: int,
    min_tries: int = 1,
    delay: float = DIAL_RETRY_DELAY_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    silent_tries: int = DIAL_SILENT_TRIES,
    until_any: bool = False,
    witness: Witness | None = None,
) -> DialOutcome:
    """Run the dial up to ``max_tries`` times until exactly ``expected`` answered (and ``min_tries`` ran); with
    ``until_any``, until any endpoint answered at all and the others are shown complete from the client's side (a
    wait for a new Service before a check counts which endpoint answers each dial).

    ``run()`` returns the dial's output: a :class:`DialAnswer` where curl exited 0, else the text of a try that
    got no answer, which counts as a failed try with its text as the error (upstream counts a failed exec as a
    try too). A DialAnswer that is not netexec's JSON raises UnreadableOutput at once: the client's netexec
    answered something the suite cannot read, and counting it as a try would turn it into an endpoint that did
    not answer (a failure, or a documented deviation), or into a denial. Never more than ``max_tries``; fewer
    when nothing answers (DIAL_SILENT_TRIES / DIAL_SILENT_SECONDS; ``silent_tries`` lowers the silent bound: a
    target already seen silent in the module). When some endpoints answered, ``witness`` (see Witness) is asked
    after each try from the WITNESS_AFTER_TRIES-th on (``until_any``: from the first) about the missing ones until it
    shows them all complete; the missing ones then get judged_tries more tries; a missing one it never shows ends
    the dial DIAL_SILENT_TRIES tries or DIAL_SILENT_SECONDS after the first answer. Without a witness, judging starts at the first answer (with
    one that cannot tell, at its first question). A dial that
    ends with endpoints missing asks the witness once more and names, per endpoint, whose fault it is
    (``missing``). The outcome says how long it took (``seconds``).
    """
    if max_tries < 1 or min_tries > max_tries:
        raise ValueError(f"bad dial bounds: max_tries={max_tries}, min_tries={min_tries}")
    outcome = DialOutcome(frozenset(expected))
    start = clock()

    def attempt() -> bool:
        outcome.tries += 1
        try:
            output = run()
        finally:
            outcome.seconds = clock() - start
        try:
            result = parse_dial(output)
        except UnreadableOutput:
            if isinstance(output, DialAnswer):
                raise
            outcome.errors.append(f"netexec /dial did not answer: {output.strip()[:200]!r}")
            return False
        outcome.responses.update(result.responses)
        outcome.errors.extend(result.errors)
        if outcome.responses and not outcome.first_answer_try:
            outcome.first_answer_try, outcome.first_answer_seconds = outcome.tries, outcome.seconds
        waited = outcome.tries - outcome.first_answer_try + 1
        if (
            outcome.responses
            and not outcome.reached_all
            and (until_any or witness is None or waited >= WITNESS_AFTER_TRIES)
        ):
            _ask_witness(outcome, witness)
            outcome.seconds = clock() - start
        if until_any:
            done = bool(outcome.responses) and (outcome.reached_all or bool(outcome.shown_at))
        else:
            done = outcome.reached_all
        return done and outcome.tries >= min_tries

    retrying = Retrying(
        stop=stop_any(
            stop_after_attempt(max_tries),
            _StopByWhatWasShown(outcome, silent_tries, DIAL_SILENT_SECONDS, min_tries),
        ),
        wait=wait_fixed(delay),
        retry=retry_if_result(lambda done: not done),
        sleep=sleep,
    )
    try:
        retrying(attempt)
    except RetryError:
        pass  # the outcome says what was seen; the caller asserts on it
    if not until_any:
        _name_the_fault(outcome, witness)
    outcome.seconds = clock() - start
    return outcome


class _StopAfterSeconds(stop_base):
    """Stop once ``seconds`` have passed on ``clock`` since ``start``."""

    def __init__(self, seconds: float, clock: Callable[[], float], start: float) -> None:
        self.seconds, self.clock, self.start = seconds, clock, start

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.clock() - self.start >= self.seconds


def attempts(
    check: Callable[[], bool],
    tries: int,
    delay: float = DIAL_RETRY_DELAY_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[bool, int]:
    """Run ``check()`` until it returns True, at most ``tries`` times ``delay`` apart: (succeeded, tries run).

    For checks other than the dial (a curl, a ping, a look-up) that may need the data plane a moment to
    program a new Service; bounded like every retry of the suite. With ``seconds``, no try starts once that
    long has passed since the first (a target that never answers fails within ``seconds`` plus one try).
    """
    if tries < 1:
        raise ValueError(f"bad attempt bound: tries={tries}")
    count = 0
    start = clock()

    def once() -> bool:
        nonlocal count
        count += 1
        return bool(check())

    stop: stop_base = stop_after_attempt(tries)
    if seconds is not None:
        stop = stop_any(stop, _StopAfterSeconds(seconds, clock, start))
    retrying = Retrying(stop=stop, wait=wait_fixed(delay), retry=retry_if_result(lambda ok: not ok), sleep=sleep)
    try:
        return bool(retrying(once)), count
    except RetryError:
        return False, count


# ----------------------------------------------------------------------------- HTTP and TCP with curl


def null_device(os_name: str) -> str:
    return "NUL" if _check_os(os_name) == "windows" else "/dev/null"


def http_get_command(os_name: str, url: str) -> list[str]:
    """GET ``url``, failing on connection errors and HTTP errors; the body on stdout.

    Windows: upstream's ``curl.exe <url> --connect-timeout 10 --fail``.
    """
    return [
        curl_binary(os_name),
        "-q",
        "-g",
        "-s",
        "-S",
        "--connect-timeout",
        str(CONNECT_TIMEOUT_SECONDS),
        "--max-time",
        str(MAX_TIME_SECONDS),
        "--fail",
        url,
    ]


def tcp_reach_command(os_name: str, url: str) -> list[str]:
    """Connect to ``url`` and print the HTTP status: exit 0 means the TCP connection worked.

    No ``--fail`` and ``-k``: any answer (a 403 from a proxy, a certificate for another name) proves the
    TCP flow, which is what the documented egress and pod-to-node flows promise.
    """
    return [
        curl_binary(os_name),
        "-q",
        "-g",
        "-s",
        "-S",
        "-k",
        "--connect-timeout",
        str(CONNECT_TIMEOUT_SECONDS),
        "--max-time",
        str(MAX_TIME_SECONDS),
        "-o",
        null_device(os_name),
        "-w",
        "%{http_code}",
        url,
    ]


CURL_EXIT_MEANINGS: dict[int, str] = {
    0: "ok",
    6: "could not resolve host",
    7: "could not connect",
    22: "HTTP error status (--fail)",
    28: "timed out",
    35: "TLS handshake failed",
    52: "empty reply from server",
    56: "failure receiving data",
}


def curl_failure(exit_code: int) -> str:
    """What a curl exit code means, for assertion messages."""
    return CURL_EXIT_MEANINGS.get(exit_code, f"curl exit code {exit_code}")


def curl_could_not_resolve(exit_code: int, stderr: str, name: str) -> bool:
    """curl said the name did not resolve: exit 6 AND its own message for that very name, "curl: (6) Could not
    resolve host: <name>" (curl.exe in a Windows pod, tests/data/windows-outputs/curl-windows-pod-could-not-
    resolve-host.txt; the same curl message on Linux). Exit 6 alone (a wrapper's, another tool's) is not it."""
    return exit_code == 6 and f"Could not resolve host: {name}" in stderr


# ----------------------------------------------------------------------------- ICMP


def ping_command(os_name: str, target: str) -> list[str]:
    """One ICMP echo request with a 5 s wait for the reply."""
    check_host(target)
    if _check_os(os_name) == "windows":
        return ["ping", "-n", "1", "-w", str(PING_TIMEOUT_SECONDS * 1000), target]
    return ["ping", "-c", "1", "-W", str(PING_TIMEOUT_SECONDS), target]


@dataclass(frozen=True)
class PingResult:
    sent: int
    received: int

    @property
    def ok(self) -> bool:
        return self.sent > 0 and self.received > 0


_WIN_STATS = re.compile(r"Packets:\s*Sent\s*=\s*(\d+),\s*Received\s*=\s*(\d+)", re.IGNORECASE)
# Windows ping counts "Destination host unreachable" (and other ICMP errors) as received and exits 0
# (tests/data/windows-outputs/ping-windows-server-destination-host-unreachable.txt): only an echo reply prints
# a round-trip time, and only one from the address pinged ("Pinging <target> [<address>] ...") is the target's.
_WIN_TARGET = re.compile(r"^Pinging (\S+?)(?: \[(\S+?)\])? (?:from \S+ )?with \d+ bytes", re.IGNORECASE | re.MULTILINE)
_WIN_REPLY = re.compile(
    r"^Reply from (\S+?): (?:bytes=\d+ )?time[=<]\d+ms(?: TTL=\d+)?\s*$", re.IGNORECASE | re.MULTILINE
)
_LINUX_STATS = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def parse_ping(os_name: str, output: str) -> PingResult:
    """Echo requests sent and echo replies received; UnreadableOutput when the output has no statistics."""
    if _check_os(os_name) == "windows":
        stats = _WIN_STATS.search(output)
        if not stats:
            raise UnreadableOutput("no ping statistics in the output", tool="ping", output=output)
        header = _WIN_TARGET.search(output)
        targets = {a for a in header.groups() if a} if header else set()
        return PingResult(int(stats.group(1)), sum(1 for r in _WIN_REPLY.findall(output) if r in targets))
    stats = _LINUX_STATS.search(output)
    if not stats:
        raise UnreadableOutput("no ping statistics in the output", tool="ping", output=output)
    return PingResult(int(stats.group(1)), int(stats.group(2)))


# ping.exe's own English lines that say what became of a request when the output has no statistics (recordings
# cut before them: ping-windows-*-cut.txt; "Ping request could not find host" for a name that did not resolve:
# ping-windows-container-could-not-find-host.txt).
_WIN_PING_LINES = re.compile(
    r"^(?:Pinging \S+|Request timed out\.|Reply from \S+: Destination host unreachable\.|"
    r"(?:PING: transmit failed\. )?General failure\.|Ping request could not find host \S+\.)",
    re.MULTILINE,
)


def ping_succeeded(os_name: str, exit_code: int, output: str) -> bool:
    """True only for a real echo reply: exit 0 and a reply in the output (never exit 0 alone). An output without
    statistics is no reply: False, never a pass; it is no evidence of a missing reply either (a deviation needs
    its own: ping's statistics with none received). On Windows that holds only for ping.exe's own English lines
    (a recording cut before its statistics): any other text, such as ping.exe in another language
    (ping-windows-french-success.txt, ping-windows-chinese-success.txt), is UnreadableOutput, never "no echo
    reply". An unknown operating system is the caller's error (ValueError)."""
    try:
        return exit_code == 0 and parse_ping(os_name, output).ok
    except UnreadableOutput:
        if os_name == "windows" and not _WIN_PING_LINES.search(output.replace("\r\n", "\n")):
            raise UnreadableOutput(
                "ping.exe printed neither its English statistics nor any of its English lines (another language?)",
                tool="ping.exe",
                output=output,
            ) from None
        return False


# ----------------------------------------------------------------------------- DNS


def default_dns_tool(os_name: str, powershell: bool) -> str:
    """The pod's own resolver where a tool exposes it: Resolve-DnsName on Windows where the image has Windows
    PowerShell (recommended by the docs), else nslookup; on Linux the C library's (see ``getaddrinfo_command``)."""
    if _check_os(os_name) == "linux":
        return "getaddrinfo"
    return "resolve-dnsname" if powershell else "nslookup"


def getaddrinfo_command(name: str) -> list[str]:
    """Resolve ``name`` as a Linux application does: the C library's resolver, which applies resolv.conf's
    search list and ndots (busybox nslookup does not: it tries the first search domain only, and none for a
    name with a dot). The images' busybox ``ping`` resolves through it and prints ``PING name (address)``
    before sending; one echo request with a 1 s wait (an unanswered echo does not matter: a cluster IP need
    not answer ICMP). The first address only: use nslookup where every record counts (a headless FQDN)."""
    check_host(name)
    return ["ping", "-c", "1", "-W", "1", name]


def resolve_dnsname_command(name: str) -> list[str]:
    """PowerShell ``Resolve-DnsName`` over DNS only, printing one ``TYPE<tab>NAME<tab>DATA`` line per answer."""
    check_host(name)
    script = (
        "$ErrorActionPreference = 'Stop'; "
        f"Resolve-DnsName -Name '{name}' -DnsOnly -QuickTimeout | "
        "Where-Object { $_.Section -eq 'Answer' } | "
        "ForEach-Object { if ($_.Type -eq 'CNAME') { $d = $_.NameHost } else { $d = $_.IPAddress }; "
        '"{0}`t{1}`t{2}" -f $_.Type, $_.Name, $d }'
    )
    return ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", script]


def nslookup_command(name: str, server: str | None = None) -> list[str]:
    """nslookup of ``name`` (Windows' own, BIND's in the agnhost image, or busybox's)."""
    check_host(name)
    return ["nslookup", name] + ([check_host(server)] if server else [])


CONNECT_TIMEOUT = "5s"  # agnhost connect --timeout: bounds the TCP connect after the name resolved


def resolve_command(name: str, port: int) -> list[str]:
    """Resolve ``name`` as an application does and connect to ``name:port``, the same command on both OSes:
    ``/agnhost connect`` (upstream's network-policy e2e runs it in Linux and Windows pods, test/e2e/network/
    netpol/kubemanager.go:169). It resolves with Go's resolver first, which on Windows asks the system
    (GetAddrInfoW: the suffix search list, devolution, dotted names as Windows treats them) and on Linux reads
    resolv.conf (search list, ndots), and prints a failure's kind as a prefix: DNS, TIMEOUT, REFUSED, OTHER."""
    return [AGNHOST, "connect", host_port(name, port), f"--timeout={CONNECT_TIMEOUT}"]


@dataclass(frozen=True)
class Resolution:
    """What ``agnhost connect`` showed about a name: resolved (and connected), or the resolver's error."""

    resolved: bool
    connected: bool
    not_found: bool  # the resolver said the name does not exist (Go's "no such host"), nothing else
    error: str | None


_CONNECT_KINDS = ("DNS:", "TIMEOUT", "REFUSED", "OTHER:", "UNKNOWN:")


def parse_resolve(exit_code: int, stdout: str, stderr: str) -> Resolution:
    """``agnhost connect``'s answer (test/images/agnhost/connect/connect.go): exit 0 is resolved and connected;
    a ``DNS:`` line is the resolver's failure; TIMEOUT, REFUSED or OTHER come only after the name resolved.
    Anything else is not connect's answer: UnreadableOutput (the suite's gap, not the node's)."""
    text = (stderr or stdout).strip()
    if exit_code == 0:
        return Resolution(True, True, False, None)
    first = text.splitlines()[0] if text else ""
    if first.startswith("DNS:"):
        return Resolution(False, False, go_not_found(first), first[:300])
    if first.startswith(("TIMEOUT", "REFUSED", "OTHER:")):
        return Resolution(True, False, False, first[:300])
    raise UnreadableOutput(
        f"agnhost connect answered neither success nor one of {', '.join(_CONNECT_KINDS)}",
        tool="agnhost connect",
        output=text,
    )


def absolute(name: str) -> str:
    """``name`` with its trailing dot: an FQDN every resolver sends as it is (no search list, no devolution), so
    the same ``nslookup name.`` asks the same question on both OSes."""
    check_host(name)
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        return name if name.endswith(".") else name + "."


def dns_lookup_command(os_name: str, name: str, tool: str = "nslookup") -> list[str]:
    _check_os(os_name)
    if tool == "resolve-dnsname":
        if os_name != "windows":
            raise ValueError("Resolve-DnsName is a Windows PowerShell command")
        return resolve_dnsname_command(name)
    if tool == "nslookup":
        return nslookup_command(name)
    if tool == "getaddrinfo":
        if os_name != "linux":
            raise ValueError("the getaddrinfo look-up runs busybox ping, a Linux command line")
        return getaddrinfo_command(name)
    raise ValueError(f"unknown DNS tool {tool!r}: expected resolve-dnsname, nslookup or getaddrinfo")


@dataclass(frozen=True)
class Lookup:
    """The answer to one name: its canonical name, addresses and aliases, or the resolver's error."""

    name: str | None
    addresses: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    error: str | None = None
    # The resolver said the name does not exist (NXDOMAIN): never a timeout, a SERVFAIL or an unreadable output.
    not_found: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.addresses) and self.error is None


def _ip(text: str) -> str | None:
    candidate = text.strip().split("#", 1)[0]
    candidate = candidate.rsplit("%", 1)[0]
    if candidate.count(":") == 1 and "." in candidate:  # 10.0.0.10:53 (busybox)
        candidate = candidate.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return None


_NSLOOKUP_ERRORS = re.compile(
    r"(\*\*\*?\s*.*?(?:can't find|timed out|timed-out|no response).*"
    r"|;; connection timed out.*|nslookup: can't resolve.*)",
    re.IGNORECASE,
)


# The lines of nslookup's output that are neither its server block nor its answer, in the words the suite reads:
# the errors above, nslookup's other diagnostics ("*** ...", "** ...": read below as words the suite does not
# know), Windows' per-query timeout notes ("DNS request timed out." and "    timeout was 2 seconds.",
# tests/data/windows-outputs/nslookup-windows-timeout.txt), and busybox's failed send or receive on stderr beside
# ";; connection timed out; no servers could be reached" ("nslookup: write to '127.0.0.2': Connection refused" from
# busybox 1.35.0, Debian's busybox-static as in the local cluster's Linux images, asking a port nothing listens on;
# its nslookup.c send_queries prints a failed read as "nslookup: read: <error>" the same way: bb_perror_msg("read")).
_NSLOOKUP_NOTES = re.compile(
    r"^(?:DNS request timed out\.|timeout was \d+ seconds\.|nslookup: (?:write to '[^']*'|read): [A-Za-z ]+)$"
)
_NSLOOKUP_DIAGNOSTIC = re.compile(r"^\s*\*\*.*$", re.MULTILINE)
_NSLOOKUP_ADDRESS_KEYS = ("address", "addresses", "address 1", "address 2")


def _unread_line(line: str, output: str) -> UnreadableOutput:
    return UnreadableOutput(
        f"nslookup printed a line the suite does not read: {line!r} (an address counts only inside the answer, "
        "under its Name: line; in an output of another structure, such as headers in another display language, "
        "the server's own address would read as an answer)",
        tool="nslookup",
        output=output,
    )


def parse_nslookup(output: str) -> Lookup:
    """The answer section of nslookup output: Windows' nslookup, BIND's (agnhost, dnsutils) or busybox's.

    The output is read as blocks of lines (a blank line ends one). A block starting ``Server:`` names the DNS
    server: its ``Address:`` lines are never an answer. An answer is a ``Name:`` line and, under it in the same
    block, its ``Address:``/``Addresses:`` lines (an address per continuation line) and ``Aliases:`` (Windows),
    after an optional ``Non-authoritative answer:``; a CNAME shows as ``<alias> canonical name = <name>`` (BIND,
    busybox). The resolver's errors and notes are read as such. Any other line is a structure the suite does not
    know (a header in another display language, another tool's output): :class:`UnreadableOutput`, never an
    address, never "no address".
    """
    name: str | None = None
    addresses: list[str] = []
    aliases: list[str] = []
    block: str | None = None  # "server", "answer" (after "Non-authoritative answer:"), "record" (under a Name:)
    field: str | None = None  # the field whose continuation lines may follow: "server", "addresses", "aliases"
    known = False
    for raw in output.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if not line:
            block = field = None
            continue
        key, sep, value = line.partition(":")
        key_l = key.strip().lower() if sep else ""
        value = value.strip()
        known = True
        if key_l == "server":
            block, field = "server", None
        elif block == "server" and key_l in _NSLOOKUP_ADDRESS_KEYS and _ip(value):
            field = "server"  # the DNS server's address: never an answer
        elif block == "server" and field == "server" and _ip(line):
            pass  # the server's next address
        elif line.lower() == "non-authoritative answer:" and block is None:
            block, field = "answer", None
        elif "canonical name =" in line and block in (None, "answer", "record"):
            alias, _, canonical = line.partition("canonical name =")
            aliases.append(alias.strip().rstrip("."))
            name = canonical.strip().rstrip(".")
            block, field = "answer", None
        elif key_l == "name" and value and block in (None, "answer", "record"):
            name = value.rstrip(".")
            block, field = "record", None
        elif block == "record" and key_l in _NSLOOKUP_ADDRESS_KEYS and _ip(value):
            addresses.append(_ip(value))  # type: ignore[arg-type]
            field = "addresses"
        elif block == "record" and key_l == "aliases":
            if value:
                aliases.append(value.rstrip("."))
            field = "aliases"
        elif block == "record" and field == "addresses" and _ip(line):
            addresses.append(_ip(line))  # type: ignore[arg-type]
        elif block == "record" and field == "aliases" and not sep:
            aliases.append(line.rstrip("."))
        elif _NSLOOKUP_ERRORS.fullmatch(line) or _NSLOOKUP_NOTES.match(line):
            block = field = None
        elif _NSLOOKUP_DIAGNOSTIC.match(line):
            # nslookup's own diagnostic ("*** ...", "** ...") in words the suite does not read (Windows in another
            # display language translates them): unreadable, never "no address", which would read as the name
            # failing to resolve.
            raise UnreadableOutput(
                f"nslookup printed a message the suite does not read: {line!r}", tool="nslookup", output=output
            )
        else:
            raise _unread_line(line, output)
    if not known:
        # Nothing at all: not nslookup's answer (it always prints its server block or an error).
        raise UnreadableOutput("nslookup printed no answer and no resolver error", tool="nslookup", output=output)
    error_match = _NSLOOKUP_ERRORS.search(output)
    error = error_match.group(1).strip() if error_match and not addresses else None
    if not addresses and error is None:
        error = "no address in the answer"
    not_found = not addresses and nslookup_not_found(output)
    return Lookup(name, tuple(dict.fromkeys(addresses)), tuple(dict.fromkeys(aliases)), error, not_found)


# NXDOMAIN as BIND's and busybox's nslookup print it ("** server can't find <name>: NXDOMAIN"), and as Windows'
# own nslookup.exe says it ("*** <server> can't find <name>: Non-existent domain",
# nslookup-windows-container-non-existent-domain.txt); both recorded in tests/data/windows-outputs/. A timeout,
# "Server failed" (SERVFAIL) or "No answer" alone is not it.
_NSLOOKUP_NXDOMAIN = re.compile(
    r"^\*\*\*?\s*\S+ can't find \S+:\s*(?:NXDOMAIN|Non-existent domain)\s*$", re.IGNORECASE | re.MULTILINE
)
_NSLOOKUP_OTHER_FAILURE = re.compile(
    r"timed out|timed-out|SERVFAIL|Server failed|REFUSED|no servers could be reached", re.IGNORECASE
)


def nslookup_not_found(output: str) -> bool:
    """True when nslookup printed NXDOMAIN (Windows: "Non-existent domain") and no other failure (a timeout or
    SERVFAIL of one of the queries makes the answer inconclusive: the name may exist)."""
    return bool(_NSLOOKUP_NXDOMAIN.search(output)) and not _NSLOOKUP_OTHER_FAILURE.search(output)


def parse_resolve_dnsname(output: str, exit_code: int = 0, stderr: str = "") -> Lookup:
    """The ``TYPE<tab>NAME<tab>DATA`` lines of :func:`resolve_dnsname_command`."""
    if exit_code != 0:
        text = (stderr or output).strip()
        message = text.splitlines()
        error = message[0][:300] if message else f"Resolve-DnsName exit code {exit_code}"
        return Lookup(None, (), (), error, resolve_dnsname_not_found(text))
    name: str | None = None
    addresses: list[str] = []
    aliases: list[str] = []
    readable = False
    for raw in output.replace("\r\n", "\n").split("\n"):
        parts = raw.strip().split("\t")
        if len(parts) != 3:
            continue
        readable = True
        rtype, rname, data = (p.strip() for p in parts)
        if rtype.upper() == "CNAME":
            aliases.append(rname.rstrip("."))
            name = data.rstrip(".")
        elif rtype.upper() in ("A", "AAAA") and _ip(data):
            addresses.append(_ip(data))  # type: ignore[arg-type]
            name = name or rname.rstrip(".")
    if not addresses:
        if output.strip() and not readable:  # it printed something, none of it the script's lines
            raise UnreadableOutput(
                "Resolve-DnsName exited 0 without a TYPE<tab>NAME<tab>DATA line", tool="Resolve-DnsName", output=output
            )
        return Lookup(name, (), tuple(aliases), "no address in the answer")
    return Lookup(name, tuple(dict.fromkeys(addresses)), tuple(dict.fromkeys(aliases)))


def resolve_dnsname_not_found(text: str) -> bool:
    """Resolve-DnsName's NXDOMAIN: "<name> : DNS name does not exist" with the error id
    DNS_ERROR_RCODE_NAME_ERROR (tests/data/windows-outputs/resolve-dnsname-nxdomain.txt). A timeout
    ("ERROR_TIMEOUT") or a server failure (DNS_ERROR_RCODE_SERVER_FAILURE) is not."""
    return "DNS_ERROR_RCODE_NAME_ERROR" in text or bool(re.search(r":\s*DNS name does not exist", text))


# Go's resolver (agnhost connect, netexec /dial) on both OSes: "lookup <name>[ on <server>]: no such host" is
# its not-found error (net.DNSError.IsNotFound; on Windows GetAddrInfoW's WSAHOST_NOT_FOUND maps to it).
_GO_NO_SUCH_HOST = re.compile(r"lookup \S+?(?: on \S+)?: no such host")


def go_not_found(text: str) -> bool:
    """True when Go's resolver said the name does not exist (never for a timeout or a server failure)."""
    return bool(_GO_NO_SUCH_HOST.search(text)) and "i/o timeout" not in text and "server misbehaving" not in text


_PING_RESOLVED = re.compile(r"^PING (\S+) \(([0-9A-Fa-f.:]+)\)", re.MULTILINE)


def parse_getaddrinfo(output: str, stderr: str = "") -> Lookup:
    """The address ``ping`` resolved (``PING name (address): ...``), whatever became of the echo request."""
    match = _PING_RESOLVED.search(output)
    address = _ip(match.group(2)) if match else None
    if match and address:
        return Lookup(match.group(1).rstrip("."), (address,))
    message = (stderr or output).strip().splitlines()
    return Lookup(None, (), (), message[0][:300] if message else "the resolver printed nothing")


def parse_lookup(tool: str, output: str, exit_code: int = 0, stderr: str = "") -> Lookup:
    if tool == "resolve-dnsname":
        return parse_resolve_dnsname(output, exit_code, stderr)
    if tool == "nslookup":
        return parse_nslookup(output + ("\n" + stderr if stderr else ""))
    if tool == "getaddrinfo":
        return parse_getaddrinfo(output, stderr)
    raise ValueError(f"unknown DNS tool {tool!r}: expected resolve-dnsname, nslookup or getaddrinfo")


def service_fqdn(service: str, namespace: str, cluster_domain: str = "cluster.local") -> str:
    return f"{service}.{namespace}.svc.{cluster_domain}"


def service_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> dict[str, str]:
    """The forms of a Service's name the documentation distinguishes, by kind."""
    return {
        "single-label": service,
        "with-namespace": f"{service}.{namespace}",
        "with-namespace-svc": f"{service}.{namespace}.svc",
        "fqdn": service_fqdn(service, namespace, cluster_domain),
    }


_COREFILE_KUBERNETES = re.compile(r"^\s*kubernetes\s+([A-Za-z0-9.-]+?)\.?(?:\s|$)", re.MULTILINE)


def cluster_domain_from_corefile(corefile: str) -> str | None:
    """The cluster domain CoreDNS serves (``kubernetes cluster.local in-addr.arpa ...``), or None."""
    match = _COREFILE_KUBERNETES.search(corefile or "")
    return match.group(1) if match else None


# ----------------------------------------------------------------------------- a pod's DNS configuration


@dataclass(frozen=True)
class DnsConfig:
    nameservers: tuple[str, ...]
    searches: tuple[str, ...]


AGNHOST = "/agnhost"  # the agnhost image's binary on both OSes (upstream's Dockerfile and Dockerfile_windows)


def agnhost_dns_commands() -> tuple[list[str], list[str]]:
    """The pod's search list and DNS servers as agnhost prints them, the same command on both OSes.

    ``/agnhost dns-suffix`` and ``/agnhost dns-server-list`` print one comma-separated line each: on Linux
    from resolv.conf, on Windows from the system (the registry's global and per-interface SearchList, and
    GetNetworkParams), k/k test/images/agnhost/dns/. Upstream's conformance test "should support configurable
    pod DNS nameservers" runs exactly these in Linux and Windows pods of the agnhost image
    (k8s.io/kubernetes@v1.34.4 test/e2e/network/dns.go:457, 471, 477).
    """
    return [AGNHOST, "dns-suffix"], [AGNHOST, "dns-server-list"]


# What agnhost's dns-suffix and dns-server-list panic with where resolv.conf has no such line (Linux only:
# test/images/agnhost/dns/dns.go GetDNSSuffixList, getDNSServerList): the list is empty.
AGNHOST_NO_DNS_LIST = "Could not find DNS search list!"


def parse_agnhost_list(output: str) -> tuple[str, ...]:
    """The items of agnhost's comma-separated ``dns-suffix`` / ``dns-server-list`` line, in order, once each."""
    items = (item.strip().rstrip(".") for line in output.splitlines() for item in line.split(","))
    return tuple(dict.fromkeys(item for item in items if item))


def parse_agnhost_dns(suffixes: str, servers: str) -> DnsConfig:
    """A DnsConfig from the outputs of :func:`agnhost_dns_commands`; UnreadableOutput for a server that is not
    an IP (the output is not what agnhost prints)."""
    nameservers = []
    for server in parse_agnhost_list(servers):
        address = _ip(server)
        if address is None:
            raise UnreadableOutput(
                f"agnhost dns-server-list printed {server!r}, not an IP address",
                tool="agnhost dns-server-list",
                output=servers,
            )
        nameservers.append(address)
    return DnsConfig(tuple(dict.fromkeys(nameservers)), parse_agnhost_list(suffixes))


def dns_config_command(os_name: str) -> list[str]:
    """What the pod's resolver is configured with: ``ipconfig /all`` on Windows, resolv.conf on Linux."""
    return ["ipconfig", "/all"] if _check_os(os_name) == "windows" else ["cat", "/etc/resolv.conf"]


def _ipconfig_field(line: str) -> tuple[str, str] | None:
    """('dns servers', '10.0.0.10') for '   DNS Servers . . . . : 10.0.0.10'; None for a continuation line."""
    head, sep, value = line.partition(" :")
    if not sep or (value and not value.startswith(" ")):
        return None
    return re.sub(r"[ .]+$", "", head).strip().lower(), value.strip()


def parse_dns_config(os_name: str, output: str) -> DnsConfig:
    """Nameservers and the search list from ``ipconfig /all`` (all adapters) or ``/etc/resolv.conf``."""
    nameservers: list[str] = []
    searches: list[str] = []
    if _check_os(os_name) == "linux":
        for line in output.splitlines():
            parts = line.split("#", 1)[0].split()
            if len(parts) >= 2 and parts[0] == "nameserver" and _ip(parts[1]):
                nameservers.append(_ip(parts[1]))  # type: ignore[arg-type]
            elif parts and parts[0] in ("search", "domain"):
                searches.extend(p.rstrip(".") for p in parts[1:])
        return DnsConfig(tuple(dict.fromkeys(nameservers)), tuple(dict.fromkeys(searches)))
    current: str | None = None
    for line in output.replace("\r\n", "\n").split("\n"):
        if not line.strip() or not line.startswith(" "):
            current = None  # a blank line or an adapter heading ends a multi-line value
            continue
        field_ = _ipconfig_field(line)
        if field_ is not None:
            key, value = field_
            current = {
                "dns servers": "ns",
                "dns suffix search list": "search",
                # per adapter, after "NetBIOS over Tcpip" (tests/data/windows-outputs/ipconfig-all-*.txt)
                "connection-specific dns suffix search list": "search",
            }.get(key)
            if key == "connection-specific dns suffix" and value:
                searches.append(value.rstrip("."))
        else:
            value = line.strip()
        if not value or current is None:
            continue
        if current == "ns" and _ip(value):
            nameservers.append(_ip(value))  # type: ignore[arg-type]
        elif current == "search":
            searches.append(value.rstrip("."))
    return DnsConfig(tuple(dict.fromkeys(nameservers)), tuple(dict.fromkeys(searches)))


# ----------------------------------------------------------------------------- agnhost mounttest


def mounttest_content(output: str, file: str) -> str | None:
    """What ``agnhost mounttest --file-content=<file>`` (or ``--new-file-*``) printed as ``file``'s content,
    stripped; None when it printed none. mounttest prints ``content of file %q: %v`` (test/images/agnhost/
    mounttest/mt.go): Go's %q escapes a Windows path's backslashes, as JSON does for these ASCII paths."""
    marker = f"content of file {json.dumps(file)}: "
    return output.rsplit(marker, 1)[1].strip() if marker in output else None


MOUNTTEST_ERRORS = ("error reading file content for", "error writing new file")  # mt.go:150, :168


def mounttest_answered(output: str, file: str) -> bool:
    """Whether mounttest ran and spoke of ``file``: its content line, or its own error line for that very file
    (``error reading file content for %q: %v``, ``error writing new file %q: %v``, mt.go:150, :168). A volume's
    documented deviation (the file missing, unreadable or different) shows as one of these; an exec that printed
    neither (a crash, another tool's error) is not that deviation."""
    quoted = json.dumps(file)
    return f"content of file {quoted}: " in output or any(f"{err} {quoted}: " in output for err in MOUNTTEST_ERRORS)


# ----------------------------------------------------------------------------- Get-Volume


# Windows PowerShell 5.1 of the host, with its Storage module (Get-Volume): a HostProcess pod runs host binaries
# by absolute path (upstream: "c:/Windows/System32/cmd.exe", test/e2e/windows/host_process.go:295). Not the
# images' PowerShell Core 6.2.7 ("powershell" on their PATH), which has no Storage module.
WINDOWS_POWERSHELL = "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"


def get_volume_command(path: str) -> list[str]:
    """``Get-Volume -FilePath <path>`` in its default table, run by the host's Windows PowerShell (a HostProcess
    pod only). The path ends up in single quotes: none allowed."""
    if "'" in path:
        raise ValueError(f"a quote in {path!r}")
    return [
        WINDOWS_POWERSHELL,
        "-NoLogo",
        "-NoProfile",
        "-NonInteractive",
        "-Command",
        f"Get-Volume -FilePath '{path}'",
    ]


# The names Get-Volume's table gives its file system column, as recorded: "FileSystem" (Windows PowerShell 5.1's
# default table on Windows Server, get-volume-windows-server.txt; the Storage module's reference page,
# get-volume-docs-example-drive-letter.txt) and "FileSystemType" (PowerShell 7's table,
# get-volume-powershell7-friendlyname-filesystemtype.txt). A table with neither is unreadable.
GET_VOLUME_FILE_SYSTEM_COLUMNS = ("FileSystem", "FileSystemType")


def parse_get_volume(output: str) -> list[str]:
    """The file system column of Get-Volume's table, one entry per volume row, read by the column names it is
    recorded with (GET_VOLUME_FILE_SYSTEM_COLUMNS); UnreadableOutput where there is no such table.

    The columns are found from the dashes under the header: the file system column is left-aligned, so its cell
    runs from its dashes' start to the next column's."""
    lines = output.replace("\r\n", "\n").split("\n")
    for index, line in enumerate(lines[:-1]):
        header = line.split()
        known = [name for name in GET_VOLUME_FILE_SYSTEM_COLUMNS if name in header]
        if len(known) != 1 or not lines[index + 1].strip() or not set(lines[index + 1].strip()) <= {"-", " "}:
            continue
        starts = [m.start() for m in re.finditer(r"-+", lines[index + 1])]
        names = header
        if len(starts) != len(names):
            break
        column = names.index(known[0])
        begin = starts[column]
        end = starts[column + 1] if column + 1 < len(starts) else None
        rows = [row for row in lines[index + 2 :] if row.strip()]
        return [row[begin:end].strip() for row in rows]
    raise UnreadableOutput(
        f"no Get-Volume table with a {' or '.join(GET_VOLUME_FILE_SYSTEM_COLUMNS)} column",
        tool="Get-Volume",
        output=output,
    )


# ----------------------------------------------------------------------------- Service environment variables


def env_command(os_name: str) -> list[str]:
    """busybox's ``env`` through its ``sh`` on both OSes: upstream's conformance test "should allow composing
    env vars into new env vars" runs exactly this in Linux and Windows pods (k8s.io/kubernetes@v1.34.4
    test/e2e/common/node/expansion.go:62; the images' busybox-w32 on Windows)."""
    _check_os(os_name)
    return ["sh", "-c", "env"]


def parse_env(output: str) -> dict[str, str]:
    """``NAME=value`` lines; Windows variable names are case-insensitive, so keys are upper-cased."""
    env: dict[str, str] = {}
    for line in output.replace("\r\n", "\n").split("\n"):
        key, sep, value = line.partition("=")
        if sep and key and not key.startswith(" "):
            env[key.upper()] = value
    return env


def service_env_prefix(service: str) -> str:
    """The prefix kubelet gives a Service's variables: upper case, dashes as underscores."""
    return service.upper().replace("-", "_")


def service_env_expectation(service: str, cluster_ip: str, port: int) -> dict[str, str]:
    """The Docker-links-style variables every container started after the Service must see."""
    prefix = service_env_prefix(service)
    return {f"{prefix}_SERVICE_HOST": cluster_ip, f"{prefix}_SERVICE_PORT": str(port)}
