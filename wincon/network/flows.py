"""``FlowChecks``: the traffic checks a test runs in pods (the ``checks`` fixture).

Every check goes through ``Kube.exec``, which records its exact command through the data-plane gate (and
skips on simulated nodes) before anything runs, so nothing runs where nothing could answer. The command
lines and the parsing of their output live in ``wincon.windows.connectivity``.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

from wincon.cluster.client import call
from wincon.cluster.exec import ExecResult
from wincon.commandline.errors import InfrastructureError, UnreadableOutput
from wincon.network.pods import PodRef
from wincon.network.services import endpoint_slice_ips, kubernetes_service, slices_lister
from wincon.windows import connectivity as conn

EXEC_TIMEOUT = 90.0
# A target that answered nothing to a dial of this module (process) already, or a client whose dials over
# that protocol reached nothing at all in this module: the next check that dials it (from it) stops after this
# many silent tries instead of DIAL_SILENT_TRIES, so a module whose shared servers cannot be reached fails its
# checks together instead of one silent timeout each. Each check still dials for itself, an answer on the first
# tries passes it as before, and any answer (even a partial one) lifts the bound for the target and the client;
# a partial answer is judged as before (FlowChecks.witness). On a cluster where the client's flows work, nothing changes.
SILENT_AGAIN_TRIES = 2

# curl's exit codes for a server that never answered: could not connect, timed out, empty reply, failure receiving
# data (conn.CURL_EXIT_MEANINGS). curl.exe on Windows is the same curl with the same exit codes.
CURL_NO_ANSWER = frozenset({7, 28, 52, 56})
# curl's exit codes for an HTTP answer: a status it printed the body of (0), or an error status under --fail (22).
CURL_HTTP_ANSWER = frozenset({0, 22})

# Service proxying shown down on a node (issue 22, item 5). A dial to a Service VIP that ran its full bound with no
# answer says nothing certain about another Service (its rules may lag: upstream waits up to 2 min for kube-proxy,
# KubeProxyLagTimeout, test/e2e/framework/service/const.go:37 at v1.34.4). When, right after it, the `kubernetes`
# Service (default/kubernetes, programmed when the cluster was made; its cluster IP and TCP port read from the API)
# answers nothing either to the very command of the check from the same client pod, the node's Service proxying
# itself is down: FlowChecks.proxy_down records it for that node. A later dial from a pod on that node to any
# Service VIP then stops at its first silent try, and its failure says what was recorded and when. Any answer from
# a Service dialled from that node restores the full bound. The record is trusted for PROXY_DOWN_FRESH_SECONDS
# (upstream's KubeProxyLagTimeout: no older evidence stands for the node's proxying now); after that, a dial's first
# silent try asks the `kubernetes` Service again with the check's own command: silent, the record is renewed and
# the check stops; an answer drops the record and the dial goes on with its full bound. A dial that answers never
# asks the `kubernetes` Service; a healthy cluster sees no change.
PROXY_DOWN_TRIES = 1
PROXY_DOWN_FRESH_SECONDS = 120.0
clock: Callable[[], float] = time.monotonic  # the records' time (tests set it)


# A look-up's own words for "no DNS server answered at all" (never an NXDOMAIN or a SERVFAIL: those are answers).
# BIND's and busybox's nslookup: ";; connection timed out; no servers could be reached" (recorded on the local
# cluster with the Service rules removed, busybox in agnhost 2.56). Windows' nslookup.exe: "DNS request timed
# out." and "*** Request to <server> timed-out" (tests/data/windows-outputs/nslookup-windows-timeout.txt). Go's
# resolver (agnhost connect, Linux): "lookup <name> on <server>:53: read udp ...: i/o timeout" (recorded there
# too). curl: "Resolving timed out after N milliseconds", exit 28 (recorded there on Linux; curl.exe is the same
# curl).
_NSLOOKUP_NO_SERVER = re.compile(
    r"no servers could be reached|^DNS request timed out\.|^\*\*\* Request to \S+ timed-out", re.MULTILINE
)
_GO_NO_SERVER = re.compile(r"lookup \S+ on \S+: .*i/o timeout")
_CURL_RESOLVE_TIMEOUT = re.compile(r"Resolving timed out after \d+ milliseconds")
CURL_COULD_NOT_RESOLVE = 6
LOOKUPS = ("nslookup", "getaddrinfo", "resolve-dnsname")  # the tools conn.parse_lookup reads


def resolver_silent(tool: str, result: ExecResult) -> bool:
    """The output of a look-up by ``tool`` (nslookup, agnhost-connect, curl) says no DNS server answered at all:
    no address, no NXDOMAIN, and the tool's own words for a timeout without any answer."""
    text = f"{result.stdout}\n{result.stderr}"
    if tool == "nslookup":
        try:
            lookup = conn.parse_lookup("nslookup", result.stdout, result.exit_code, result.stderr)
        except UnreadableOutput:
            return False
        return not lookup.addresses and not lookup.not_found and bool(_NSLOOKUP_NO_SERVER.search(text))
    if tool == "agnhost-connect":
        return result.exit_code != 0 and bool(_GO_NO_SERVER.search(text))
    if tool == "curl":
        return result.exit_code == 28 and bool(_CURL_RESOLVE_TIMEOUT.search(text))
    return False


# curl's exit codes that come only after the name resolved: connected or not, a server was found for the name.
CURL_RESOLVED = frozenset({0, 7, 22, 52, 56})
# curl's message when it tried to connect to the name's address (so the name resolved), whatever its exit code:
# "curl: (28) Failed to connect to github.com port 443 after 21365 ms: Could not connect to server" (curl.exe in a
# Windows Server Core ltsc2019 container, tests/data/windows-outputs/curl-windows-servercore-ltsc2019-connect-
# timeout.txt): exit 28 is also curl's "Resolving timed out", so the exit code alone does not tell.
_CURL_CONNECT_ATTEMPT = re.compile(r"^curl: \(\d+\) Failed to connect to \S+ port \d+\b", re.MULTILINE)
_NSLOOKUP_SERVER_ANSWER = re.compile(r"SERVFAIL|Server failed|REFUSED", re.IGNORECASE)


def resolver_answered(tool: str, result: ExecResult) -> bool:
    """The look-up's output shows a DNS server answered: an address, an NXDOMAIN, a SERVFAIL or REFUSED (nslookup),
    a name that resolved or Go's "no such host" / "server misbehaving" (agnhost connect), a curl that got past
    resolving the name (by its exit code, or by its message that it tried to connect to the name's address). A
    missing tool or an output the suite cannot read shows nothing either way."""
    text = f"{result.stdout}\n{result.stderr}"
    if resolver_silent(tool, result):
        return False
    try:
        lookup = conn.parse_lookup(tool, result.stdout, result.exit_code, result.stderr) if tool in LOOKUPS else None
    except UnreadableOutput:
        return False
    if tool == "nslookup" and lookup is not None:
        return lookup.ok or lookup.not_found or bool(_NSLOOKUP_SERVER_ANSWER.search(text))
    if tool == "agnhost-connect":
        try:
            resolution = conn.parse_resolve(result.exit_code, result.stdout, result.stderr)
        except UnreadableOutput:
            return False
        return resolution.resolved or resolution.not_found or "server misbehaving" in text
    if tool == "curl":
        return result.exit_code in CURL_RESOLVED or bool(_CURL_CONNECT_ATTEMPT.search(text))
    if lookup is not None:
        return lookup.ok or lookup.not_found
    return False


def resolver_failed(tool: str, result: ExecResult) -> bool:
    """The try failed at name resolution, whether or not a server answered (curl's exit 6, busybox ping's "bad
    address", Resolve-DnsName's error): what a look-up whose resolver was seen silent stops on."""
    if resolver_silent(tool, result):
        return True
    if tool == "curl":
        return result.exit_code == CURL_COULD_NOT_RESOLVE
    if tool in ("getaddrinfo", "resolve-dnsname"):
        try:
            return not conn.parse_lookup(tool, result.stdout, result.exit_code, result.stderr).ok
        except UnreadableOutput:
            return False
    return False


def curl_url(command: list[str]) -> tuple[int, SplitResult] | None:
    """The position and parts of the URL a curl command line asks for, else None."""
    if not command or not command[0].startswith("curl"):
        return None
    for index, arg in enumerate(command[1:], start=1):
        if "://" in arg:
            return index, urlsplit(arg)
    return None


def url_name(command: list[str]) -> str | None:
    """The host name a curl command line resolves (its URL's host when not an address), else None."""
    found = curl_url(command)
    host = found[1].hostname if found else None
    if not host:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host
    return None


def url_address(command: list[str]) -> str | None:
    """The IP address a curl command line's URL names as its host, else None."""
    found = curl_url(command)
    host = found[1].hostname if found else None
    return normal_ip(host) if host else None


def is_name(target: str) -> bool:
    return normal_ip(target) is None


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


@dataclass(frozen=True)
class ProxyProbe:
    """What the `kubernetes` Service answered one command of a check from its client pod: ``silent`` True (no
    answer at all), False (an answer), None (the command showed nothing either way: the client's own netexec or
    curl failed); ``address`` the `kubernetes` Service's cluster IP and port asked; ``output`` what it printed."""

    silent: bool | None
    address: str
    output: str

    def says(self, client: str) -> str:
        answered = {True: "answered nothing either", False: "answered", None: "showed nothing either way"}
        return f"the `kubernetes` Service ({self.address}) {answered[self.silent]} from {client}: {self.output[:300]}"


def normal_ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        return None


def cluster_ips(spec: Any) -> tuple[str, ...]:
    """A Service spec's cluster IPs (clusterIPs, else clusterIP), primary first, as addresses ("None" dropped)."""
    return tuple(ip for ip in (normal_ip(i) for i in (spec.cluster_ips or [spec.cluster_ip or ""])) if ip)


def joined(first: conn.DialOutcome, rest: conn.DialOutcome) -> conn.DialOutcome:
    """One dial's outcome from two runs of it, one after the other."""
    rest.tries += first.tries
    rest.seconds += first.seconds
    rest.errors[:0] = first.errors
    rest.responses |= first.responses
    return rest


class FlowChecks:
    """Checks run from pods of one namespace, through a ``Kube`` bound to it (with the test's gate)."""

    # (namespace, target, port, protocol) of dials nothing answered, in this process (an xdist worker runs a
    # module's tests together).
    silent_targets: set[tuple[str, str, int, str]] = set()
    # (namespace, client pod, protocol) whose last dial reached nothing (issue 22, item 5: under a silenced data
    # plane the module's checks dial many targets, names and Services, all over one client: 2.36x the clean run).
    silent_clients: set[tuple[str, str, str]] = set()
    # Per resolver (resolver_key: the cluster DNS, a node's resolvers, a dnsConfig's nameservers), the output of
    # the last look-up in this worker (process) that found no DNS server at all, while no look-up through it has
    # had an answer since: then a look-up through it stops at its first try that again finds no server (or, for
    # a tool that cannot tell a silent server from NXDOMAIN, fails to resolve), and a dial or an agnhost connect
    # by name first runs one nslookup of the name (a 5 s try where the Go resolver's takes 50 s). Worker-wide,
    # not per module: the cluster DNS is one Service for the whole cluster, and every module's pods resolve
    # through it (issue 22, item 5: with the Service rules removed each name look-up ran its full bound, 4.52x
    # the clean run). Any answer (an address, an NXDOMAIN) through that resolver empties its entry.
    silent_resolver: dict[str, str] = {}
    # (namespace, pod) -> its resolver_key, read once from the pod's spec.
    resolver_keys: dict[tuple[str, str], str] = {}
    # Per node, in this worker (process): when (clock) and what the `kubernetes` Service answered (nothing) a pod on
    # that node right after a dial from that pod to a Service VIP ran its full bound with no answer
    # (PROXY_DOWN_TRIES). Set only from a pod on the pod network (a Windows node's own host network reaching no VIP
    # is a documented deviation, service-vip-from-node: never evidence about its pods), renewed by a silent probe;
    # dropped by any answer of a Service, or of the `kubernetes` Service, from that node.
    proxy_down: dict[str, tuple[float, str]] = {}
    # namespace -> the cluster IPs of its Services, as last listed (listed again when a target is not among them);
    # read only where a silent dial or a node in proxy_down needs to know whether a target is a Service VIP.
    service_ips: dict[str, set[str]] = {}
    # default/kubernetes: ((its cluster IPs), its TCP port), read once per worker when first needed.
    kubernetes_address: dict[str, tuple[tuple[str, ...], int]] = {}

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
        silent_tries: int = conn.DIAL_SILENT_TRIES,
        until_any: bool = False,
    ) -> conn.DialOutcome:
        """Upstream's dial check: ask the client's netexec to dial ``target:port`` until ``expected`` answered
        (``until_any``: until any endpoint answered at all and the others are shown complete). ``silent_tries`` is
        the bound of a dial nothing answers, where no silence was seen before (SILENT_AGAIN_TRIES,
        PROXY_DOWN_TRIES). A partly answered dial judges the missing endpoints only once the Service is shown
        complete from the client's side (``witness``; conn.collect_dial); ``max_tries`` (default: conn.dial_bound)
        caps every try."""
        expected = set(expected)
        command = conn.dial_command(client_pod.os, client_pod.ip, target, port, protocol)
        self.gate(command, where=self.where(client_pod))
        if is_name(target):
            start = time.monotonic()
            silent = self.resolver_still_silent(client_pod, target)
            if silent is not None:  # the client's netexec would spend curl's --max-time resolving it
                return conn.DialOutcome(
                    frozenset(expected),
                    errors=[f"nslookup {target}: {(silent.stdout + silent.stderr).strip()[:300]}"],
                    seconds=time.monotonic() - start,
                    note=(
                        f"not dialled: a look-up earlier in this worker found no DNS server, and one nslookup of "
                        f"{target} from {client_pod.name} found none either"
                    ),
                )

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
        silent_tries = SILENT_AGAIN_TRIES if again else silent_tries
        tries = max_tries or conn.dial_bound(len(expected))
        witness = self.witness(client_pod, target, port, protocol)
        # The node's Service proxying was shown down: a Service VIP stops at its first silent try (PROXY_DOWN_TRIES).
        short = client_pod.node in self.proxy_down and self.is_service_ip(target)
        outcome = conn.collect_dial(
            once,
            expected,
            tries,
            min_tries,
            silent_tries=PROXY_DOWN_TRIES if short else silent_tries,
            until_any=until_any,
            witness=witness,
        )
        notes: list[str] = []
        if short and not outcome.responses:
            down, said = self.still_down(
                client_pod, lambda: self.dial_probe(client_pod, target), f"{conn.host_port(target, port)} ({protocol})"
            )
            if down:
                notes.append(f"stopped at its first silent try: {said}")
            else:  # the node's proxying is not shown down now: the dial goes on with its full bound
                rest = conn.collect_dial(
                    once, expected, tries, min_tries, silent_tries=silent_tries, until_any=until_any, witness=witness
                )
                outcome = joined(outcome, rest)
                notes.append(f"went on after its first silent try: {said}")
        elif not outcome.responses and not again and self.is_service_ip(target):
            probe = self.dial_probe(client_pod, target)
            if probe is not None:
                notes.append(probe.says(client_pod.name))
                if probe.silent and client_pod.ip != client_pod.host_ip:  # a pod on the pod network
                    self.proxy_down[client_pod.node] = (
                        clock(),
                        f"{conn.host_port(target, port)} ({protocol}) from {client_pod.name} ran its full bound with "
                        f"no answer, and {probe.says(client_pod.name)}",
                    )
        if outcome.responses:
            self.silent_targets.discard(key)
            self.silent_clients.discard(client_key)
            if client_pod.node in self.proxy_down and self.is_service_ip(target):
                self.proxy_down.pop(client_pod.node, None)
        else:
            self.silent_targets.add(key)
            self.silent_clients.add(client_key)
            if again and not short:
                notes.insert(
                    0,
                    f"at most {SILENT_AGAIN_TRIES} silent tries: {target}:{port} or {client_pod.name}'s {protocol} "
                    "dials answered nothing earlier in this module",
                )
        outcome.note = "; ".join(notes)
        return outcome

    def witness(self, client_pod: PodRef, target: str, port: int, protocol: str) -> conn.Witness:
        """What the cluster shows, from ``client_pod``'s side, of the endpoints of the Service behind
        ``target:port`` (conn.Witness): for each endpoint asked about, None where the Service's EndpointSlices list it
        ready and it answered the client's netexec by its own pod IP (one dial, now), else why not and whose fault.
        The Service is found lazily, on the first question (a dial that answers in full asks none): the namespace's
        Service whose cluster IP, LoadBalancer address, name (``svc``, ``svc.ns``, ``svc.ns.svc...``) or node port
        (for a node's address) ``target:port`` is. No such Service, or EndpointSlices that cannot be read: the
        witness cannot tell (None), and the dial judges from its first answer."""
        found: list[tuple[str, Any] | None] = []

        def ask(missing: frozenset[str]) -> dict[str, str | None] | None:
            if not found:
                found.append(self.service_behind(target, port, protocol))
            if found[0] is None:
                return None
            service, service_port = found[0]
            namespace = str(getattr(self.kube, "namespace", ""))
            try:
                slices = call(
                    self.kube.discovery.list_namespaced_endpoint_slice,
                    namespace,
                    label_selector=f"kubernetes.io/service-name={service}",
                ).items
            except Exception:  # noqa: BLE001 - no slices to read (a fake, RBAC, an API error): cannot tell
                return None
            family = "IPv6" if ":" in (normal_ip(target) or client_pod.ip) else "IPv4"
            wanted_protocol = "UDP" if protocol == "udp" else "TCP"
            listed: dict[str, tuple[bool, str, int | None]] = {}
            for eps in slices or []:
                if (eps.address_type or "IPv4") != family:
                    continue
                number = next(
                    (
                        p.port
                        for p in eps.ports or []
                        if (p.protocol or "TCP") == wanted_protocol and (p.name or "") == (service_port.name or "")
                    ),
                    None,
                )
                for ep in eps.endpoints or []:
                    name = ep.target_ref.name if ep.target_ref else None
                    if name and ep.addresses:
                        ready = ep.conditions is None or ep.conditions.ready is not False
                        listed[name.lower()] = (ready, ep.addresses[0], number)
            said: dict[str, str | None] = {}
            where = f"{client_pod.name}'s netexec"
            for name in missing:
                entry = listed.get(name.lower())
                if entry is None:
                    said[name] = f"not listed in the EndpointSlices of Service {service}: the Service's fault"
                elif not entry[0]:
                    said[name] = f"listed not ready in the EndpointSlices of Service {service}: the endpoint's fault"
                elif entry[2] is None:
                    said[name] = f"the EndpointSlices of Service {service} list no {wanted_protocol} port for it"
                else:
                    answered, text = self.answers_by_pod_ip(client_pod, name, entry[1], entry[2], protocol)
                    said[name] = (
                        None
                        if answered
                        else f"its own pod IP {conn.host_port(entry[1], entry[2])} did not answer {where} ({text}): "
                        "the endpoint's fault"
                    )
            return said

        return ask

    def service_behind(self, target: str, port: int, protocol: str, follow: bool = True) -> tuple[str, Any] | None:
        """(name, the Service port) of the namespace's Service that ``target:port`` over ``protocol`` reaches, read
        from the API (an ExternalName Service's name: the Service its externalName names, once); None where none
        does or the API cannot tell."""
        namespace = str(getattr(self.kube, "namespace", ""))
        try:
            services = call(self.kube.core.list_namespaced_service, namespace).items or []
        except Exception:  # noqa: BLE001 - the API cannot tell (a fake, an error)
            return None
        address = normal_ip(target)
        labels = target.rstrip(".").split(".")
        wanted_protocol = "UDP" if protocol == "udp" else "TCP"
        for svc in services:
            name = getattr(getattr(svc, "metadata", None), "name", None)
            spec = svc.spec
            by_name = address is None and labels[0] == name and (len(labels) == 1 or labels[1] == namespace)
            if by_name and getattr(spec, "type", None) == "ExternalName":
                external = getattr(spec, "external_name", None)
                return self.service_behind(external, port, protocol, False) if follow and external else None
            ports = [p for p in spec.ports or [] if (p.protocol or "TCP") == wanted_protocol]
            if not name or not ports:
                continue
            status = getattr(svc, "status", None)
            balancer = getattr(status, "load_balancer", None)
            ingress = {normal_ip(i.ip or "") for i in (getattr(balancer, "ingress", None) or [])}
            if by_name or (address is not None and (address in cluster_ips(spec) or address in ingress)):
                found = next((p for p in ports if p.port == port), None)
            elif address is not None:
                found = next((p for p in ports if getattr(p, "node_port", None) == port), None)
            else:
                found = None
            if found is not None:
                return name, found
        return None

    def answers_by_pod_ip(
        self, client_pod: PodRef, name: str, pod_ip: str, port: int, protocol: str
    ) -> tuple[bool, str]:
        """One dial by the client's netexec of an endpoint's own pod IP: (``name`` answered, what was printed)."""
        command = conn.dial_command(client_pod.os, client_pod.ip, pod_ip, port, protocol)
        self.gate(command, where=self.where(client_pod))
        try:
            result = self.exec(client_pod, command)
        except InfrastructureError as exc:
            return False, f"exec failed: {exc}"
        text = (result.stdout or result.stderr).strip()[:300]
        try:
            responses = conn.parse_dial(result.stdout).responses if result.ok else ()
        except UnreadableOutput:
            return False, text
        return name.lower() in {r.lower() for r in responses}, text

    def still_down(self, pod: PodRef, probe: Callable[[], ProxyProbe | None], what: str) -> tuple[bool, str]:
        """After a first silent try to a Service VIP (``what``) from ``pod``'s node, whose proxying was recorded
        down: (still shown down, what says so). A record younger than PROXY_DOWN_FRESH_SECONDS stands; an older one
        is checked with ``probe`` (the check's own command to the `kubernetes` Service): silent renews it, anything
        else drops it (the caller then runs its full bound)."""
        at, said = self.proxy_down[pod.node]
        age = clock() - at
        if age <= PROXY_DOWN_FRESH_SECONDS:
            return True, f"Service proxying on {pod.node} was shown down {age:.0f} s ago: {said}"
        fresh = probe()
        if fresh is not None and fresh.silent:
            self.proxy_down[pod.node] = (clock(), f"{what} from {pod.name} got no answer, and {fresh.says(pod.name)}")
            return (
                True,
                f"Service proxying on {pod.node} was shown down {age:.0f} s ago, and now {fresh.says(pod.name)}",
            )
        self.proxy_down.pop(pod.node, None)
        return False, fresh.says(pod.name) if fresh else "the `kubernetes` Service could not be read"

    def is_service_ip(self, target: str) -> bool:
        """``target`` is the cluster IP of a Service of this namespace, or of default/kubernetes (read from the
        API: the namespace's Services are listed again when the target is not among those last listed). False
        for a name, and where the API cannot tell."""
        address = normal_ip(target)
        if address is None:
            return False
        kubernetes = self.kubernetes_vip()
        if kubernetes is not None and address in kubernetes[0]:
            return True
        namespace = str(getattr(self.kube, "namespace", ""))
        known = self.service_ips.get(namespace)
        if known is None or address not in known:
            try:
                listed = call(self.kube.core.list_namespaced_service, namespace).items or []
            except Exception:  # noqa: BLE001 - the API cannot tell (a fake, an error): not known as a Service VIP
                return False
            known = {ip for svc in listed for ip in cluster_ips(svc.spec)}
            self.service_ips[namespace] = known
        return address in known

    def kubernetes_vip(self) -> tuple[tuple[str, ...], int] | None:
        """default/kubernetes's cluster IPs and TCP port, read from the API once per worker; None if unreadable."""
        cached = self.kubernetes_address.get("kubernetes")
        if cached is not None:
            return cached
        try:
            spec = kubernetes_service(self.kube.core).raw.spec
            ips = cluster_ips(spec)
            port = next(int(p.port) for p in spec.ports or [] if (p.protocol or "TCP") == "TCP")
        except Exception:  # noqa: BLE001 - no Service to read (a fake, RBAC, an API error): nothing to ask
            return None
        if not ips:
            return None
        self.kubernetes_address["kubernetes"] = (ips, port)
        return ips, port

    def kubernetes_target(self, target: str) -> str | None:
        """host:port of the `kubernetes` Service in ``target``'s IP family, None where it has none."""
        address, kubernetes = normal_ip(target), self.kubernetes_vip()
        if address is None or kubernetes is None:
            return None
        version = ipaddress.ip_address(address).version
        ip = next((i for i in kubernetes[0] if ipaddress.ip_address(i).version == version), None)
        return conn.host_port(ip, kubernetes[1]) if ip else None

    def dial_probe(self, client_pod: PodRef, target: str) -> ProxyProbe | None:
        """The check's own dial (the client's netexec /dial over TCP, curl.exe/curl) of the `kubernetes` Service
        in ``target``'s IP family, once; None where there is no `kubernetes` Service to ask."""
        address = self.kubernetes_target(target)
        if address is None:
            return None
        host, _, port = address.rpartition(":")
        command = conn.dial_command(client_pod.os, client_pod.ip, host.strip("[]"), int(port), "http")
        self.gate(command, where=self.where(client_pod))
        try:
            result = self.exec(client_pod, command)
        except InfrastructureError as exc:
            return ProxyProbe(None, address, f"exec failed: {exc}")
        text = (result.stdout or result.stderr).strip()
        if not result.ok:  # curl reached no answer from the client's own netexec: nothing about the Service
            return ProxyProbe(None, address, f"exit {result.exit_code}: {text}")
        try:
            answer = conn.parse_dial(result.stdout)
        except UnreadableOutput:
            return ProxyProbe(None, address, text)
        return ProxyProbe(not answer.responses, address, text)

    def curl_probe(self, pod: PodRef, command: list[str], container: str | None) -> ProxyProbe | None:
        """``command`` (a curl of a Service VIP's URL) once more with the `kubernetes` Service's address in its URL
        (the scheme kept, path /): silent when curl got no answer (CURL_NO_ANSWER), an answer when it got an HTTP
        status (CURL_HTTP_ANSWER); None where there is no `kubernetes` Service to ask."""
        found, target = curl_url(command), url_address(command)
        address = self.kubernetes_target(target) if target else None
        if found is None or address is None:
            return None
        index, parts = found
        probe = [*command[:index], f"{parts.scheme}://{address}/", *command[index + 1 :]]
        self.gate(probe, where=self.where(pod))
        try:
            result = self.exec(pod, probe, container)
        except InfrastructureError as exc:
            return ProxyProbe(None, address, f"exec failed: {exc}")
        silent = True if result.exit_code in CURL_NO_ANSWER else False if result.exit_code in CURL_HTTP_ANSWER else None
        text = f"{' '.join(probe[:1])} exit {result.exit_code}: {(result.stderr + result.stdout).strip()}"
        return ProxyProbe(silent, address, text)

    def until(
        self,
        pod: PodRef,
        command: list[str],
        ok: Callable[[ExecResult], bool],
        tries: int = 5,
        container: str | None = None,
        resolver: str | None = None,
    ) -> tuple[bool, ExecResult]:
        """Gate, then run ``command`` until ``ok(result)`` or ``tries`` runs: (succeeded, last result).

        A command that resolves a name (``resolver``: the tool, nslookup, resolve-dnsname, getaddrinfo,
        agnhost-connect; a curl of a URL by name without it) stops at its first try that fails to resolve while
        a look-up in this worker found no DNS server and none answered since (silent_resolver)."""
        self.gate(command, where=self.where(pod))
        last: list[ExecResult] = []
        tool = resolver or ("curl" if url_name(command) else None)
        silent = tool is not None and self.resolver_key(pod) in self.silent_resolver
        # A curl of a Service VIP from a node whose Service proxying was shown down (proxy_down) stops at its first
        # try that gets no answer (still_down: an old record is checked with the same curl of the `kubernetes`
        # Service first).
        vip = url_address(command)
        short = vip is not None and pod.node in self.proxy_down and self.is_service_ip(vip)
        stopped: list[tuple[bool, str]] = []

        def once() -> bool:
            result = self.exec(pod, command, container)
            last[:] = [result]
            if ok(result):
                return True
            if short and not stopped and no_answer(result) and pod.node in self.proxy_down:
                stopped.append(self.still_down(pod, lambda: self.curl_probe(pod, command, container), str(vip)))
                if stopped[0][0]:
                    return True
            return tool is not None and silent and resolver_failed(tool, result)

        # A target that never answers fails within 60 s (no try starts after DIAL_SILENT_SECONDS; none lasts
        # beyond curl's --max-time), not after tries x (timeout + delay).
        conn.attempts(once, tries, seconds=conn.DIAL_SILENT_SECONDS)
        succeeded, result = ok(last[0]), last[0]
        if tool is not None:
            self.saw_resolver(pod, tool, result)
        if succeeded and short:
            self.proxy_down.pop(pod.node, None)
        if not succeeded and stopped and stopped[0][0]:
            # curl's own output as it printed it, then the suite's note, marked as such
            note = f"[wincon: stopped at its first silent try: {stopped[0][1]}]"
            result = ExecResult(result.exit_code, result.stdout, f"{result.stderr.rstrip()}\n{note}".lstrip())
        return succeeded, result

    def until_shown(
        self,
        pod: PodRef,
        command: list[str],
        ok: Callable[[ExecResult], bool],
        shown: Callable[[], str | None],
        tries: int = 5,
        container: str | None = None,
    ) -> tuple[bool, ExecResult, str]:
        """``until`` (with its bounds: a silent target fails fast), then, where it did not succeed, the same rule as a
        Service dial's (conn.collect_dial): ``shown()`` says whether the target is complete from ``pod``'s side (None,
        e.g. backend_shown) or why not; shown, the command gets conn.judged_tries(1) more tries, since those before
        did not count. (succeeded, the last result, what was shown: '' where it succeeded at once)."""
        succeeded, result = self.until(pod, command, ok, tries, container=container)
        if succeeded:
            return True, result, ""
        why = shown()
        if why is not None:
            return False, result, f"not judged further: {why}"
        succeeded, result = self.until(pod, command, ok, conn.judged_tries(1), container=container)
        return succeeded, result, f"the target was shown complete from {pod.name}'s side after {tries} tries"

    def backend_shown(
        self, pod: PodRef, service: str, backend: PodRef, port: int = conn.NETSERVER_HTTP_PORT
    ) -> str | None:
        """None where Service ``service``'s EndpointSlices list ``backend`` ready and ``backend`` answers a GET of
        its own /hostname at its pod IP from ``pod`` (curl.exe/curl, once); else why not, naming whose fault."""
        namespace = str(getattr(self.kube, "namespace", ""))
        try:
            slices = call(slices_lister(self.kube.discovery, service), namespace).items or []
        except Exception as exc:  # noqa: BLE001 - the API cannot tell: said as such
            return f"the EndpointSlices of Service {service} could not be read ({exc})"
        if backend.ip not in {normal_ip(a) or a for s in slices for a in endpoint_slice_ips(s)}:
            return f"{backend.name} ({backend.ip}) is not listed ready in the EndpointSlices of Service {service}"
        url = f"http://{conn.host_port(backend.ip, port)}/hostname"
        command = conn.http_get_command(pod.os, url)
        self.gate(command, where=self.where(pod))
        try:
            result = self.exec(pod, command, pod.tool_container)
        except InfrastructureError as exc:
            return f"{url} from {pod.name}: exec failed: {exc}"
        if result.ok and result.stdout.strip().lower() == backend.name.lower():
            return None
        return (
            f"{backend.name}'s own pod IP did not answer {url} from {pod.name} ({conn.curl_failure(result.exit_code)}: "
            f"{(result.stderr or result.stdout).strip()[:200]}): the endpoint's fault"
        )

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

    def lookup(
        self, pod: PodRef, name: str, tries: int = 3, tool: str | None = None, every: Iterable[str] | None = None
    ) -> conn.Lookup:
        """Resolve ``name`` in ``pod`` (default: the OS's recommended resolver); the last answer. After a look-up
        in this worker found no server, it stops at a try that again finds none (silent_resolver).

        With ``every`` (the addresses a headless Service's name must resolve to, all in one answer): an answer with
        another set is judged only once the Service is shown complete (wait_listed_ready: its EndpointSlices list
        every one of them ready), then the look-up runs again up to conn.judged_tries(len(every)) times until it
        answers exactly those; the last answer."""
        tool = tool or pod.dns_tool
        command = conn.dns_lookup_command(pod.os, name, tool)
        _, result = self.until(
            pod,
            command,
            lambda r: conn.parse_lookup(tool, r.stdout, r.exit_code, r.stderr).ok,
            tries,
            container=pod.tool_container,
            resolver=tool,
        )
        first = conn.parse_lookup(tool, result.stdout, result.exit_code, result.stderr)
        wanted = {normal_ip(a) or a for a in every or ()}
        if not wanted or not first.ok or set(first.addresses) == wanted or not self.wait_listed_ready(name, wanted):
            return first
        last = [first]

        def once() -> bool:
            again = self.exec(pod, command, pod.tool_container)
            last[0] = conn.parse_lookup(tool, again.stdout, again.exit_code, again.stderr)
            return last[0].ok and set(last[0].addresses) == wanted

        conn.attempts(once, conn.judged_tries(len(wanted)))
        return last[0]

    def wait_listed_ready(self, name: str, addresses: set[str]) -> bool:
        """Wait (at most DIAL_SILENT_TRIES reads, DIAL_RETRY_DELAY_SECONDS apart) until the EndpointSlices of the
        Service ``name`` is the name of (``svc.<namespace>...``, this namespace) list every one of ``addresses``
        ready: True once they do, or where the API cannot tell (no such Service name, slices unreadable: judged at
        once); False where they never did."""
        labels = name.rstrip(".").split(".")
        namespace = str(getattr(self.kube, "namespace", ""))
        if len(labels) < 2 or labels[1] != namespace:
            return True
        lister = slices_lister(self.kube.discovery, labels[0]) if hasattr(self.kube, "discovery") else None
        if lister is None:
            return True
        unreadable: list[bool] = []

        def listed() -> bool:
            try:
                slices = call(lister, namespace).items or []
            except Exception:  # noqa: BLE001 - the API cannot tell (RBAC, an error): judged at once
                unreadable.append(True)
                return True
            ready = {normal_ip(a) or a for s in slices for a in endpoint_slice_ips(s)}
            return addresses <= ready

        shown, _ = conn.attempts(listed, conn.DIAL_SILENT_TRIES)
        return shown or bool(unreadable)

    def resolver_key(self, pod: PodRef) -> str:
        """The resolver ``pod`` looks names up through, from its spec (read once): "cluster-dns" for dnsPolicy
        ClusterFirst (off the host network) and ClusterFirstWithHostNet, "node:<node>" for Default (and
        ClusterFirst on the host network), "nameservers:<a,b>" for None; "pod:<ns>/<name>" when unreadable."""
        namespace = str(getattr(self.kube, "namespace", ""))
        cached = self.resolver_keys.get((namespace, pod.name))
        if cached is not None:
            return cached
        try:
            spec = self.kube.core.read_namespaced_pod(pod.name, namespace).spec
            policy, host = spec.dns_policy or "ClusterFirst", bool(spec.host_network)
        except Exception:  # noqa: BLE001 - no spec to read (a fake, an API error): this pod's own entry
            return f"pod:{namespace}/{pod.name}"
        if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host):
            key = "cluster-dns"
        elif policy == "None":
            key = "nameservers:" + ",".join((spec.dns_config.nameservers or []) if spec.dns_config else [])
        else:
            key = f"node:{pod.node}"
        self.resolver_keys[(namespace, pod.name)] = key
        return key

    def saw_resolver(self, pod: PodRef, tool: str, result: ExecResult, key: str | None = None) -> None:
        """Record what a look-up by ``tool`` in ``pod`` showed of its resolver (or of ``key``'s): no server at all,
        or a server's answer."""
        key = key or self.resolver_key(pod)
        if resolver_silent(tool, result):
            self.silent_resolver[key] = f"{result.stdout}\n{result.stderr}".strip()[:300]
        elif resolver_answered(tool, result):
            self.silent_resolver.pop(key, None)

    def resolver_still_silent(self, pod: PodRef, name: str, cluster_dns: str | None = None) -> ExecResult | None:
        """After a look-up through ``pod``'s resolver in this worker found no DNS server: one nslookup of ``name``
        in ``pod`` (the same command on both OSes), its result when it again found no server (the caller's check
        fails with it), else None (the resolver answers: the caller runs its check in full). None at once while
        no silence was seen. With ``cluster_dns`` (its address), the question goes to the cluster DNS itself,
        after silence was seen from it (for a pod whose dnsConfig names it among other servers)."""
        key = "cluster-dns" if cluster_dns else self.resolver_key(pod)
        if key not in self.silent_resolver:
            return None
        command = conn.nslookup_command(name, cluster_dns) if cluster_dns else conn.dns_lookup_command(pod.os, name)
        self.gate(command, where=self.where(pod))
        result = self.exec(pod, command, pod.tool_container)
        self.saw_resolver(pod, "nslookup", result, key)
        return result if resolver_silent("nslookup", result) else None

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
