"""Fakes and builders shared by the unit tests: one of each kind, so that test files do not keep near-copies.

Each fake has only what its users call: a call that none of them expects fails the test (an AttributeError or the
fake's own NotImplementedError), never passes silently."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from wincon.cluster.exec import ExecResult
from wincon.cluster.waits import WaitTimeout
from wincon.network import flows
from wincon.windows import connectivity

# --------------------------------------------------------------------------- FlowChecks' worker-wide records

# The records FlowChecks keeps for its worker (class attributes): each test starts with none.
FLOW_RECORDS: tuple[tuple[str, type], ...] = (
    ("silent_targets", set),
    ("silent_clients", set),
    ("silent_resolver", dict),
    ("resolver_keys", dict),
    ("proxy_down", dict),
    ("service_ips", dict),
    ("kubernetes_address", dict),
)


def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker with no FlowChecks record yet, whose retries (connectivity.attempts, collect_dial) never sleep."""
    for name, kind in FLOW_RECORDS:
        monkeypatch.setattr(flows.FlowChecks, name, kind())
    for name in ("attempts", "collect_dial"):
        monkeypatch.setattr(connectivity, name, sleepless(getattr(connectivity, name)))


def sleepless(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` called with a ``sleep`` that returns at once."""
    return lambda *a, **k: function(*a, sleep=lambda s: None, **k)


# --------------------------------------------------------------------------- a Kube whose pods run commands


class ExecKube:
    """wincon's Kube as the flow checks use it: ``gate`` lets every command through, ``exec`` records each command
    (``commands``) and returns ``respond(command)``, which each user defines."""

    namespace = "ns"

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def gate(self, command: object, where: str = "", pod_node: object = None) -> None:
        pass

    def exec(
        self, pod: object, command: list[str], container: object = None, where: object = None, timeout: float = 60.0
    ) -> ExecResult:
        self.commands.append(command)
        return self.respond(command)

    def respond(self, command: list[str]) -> ExecResult:
        raise NotImplementedError(f"{type(self).__name__} has no answer for {command}")


# --------------------------------------------------------------------------- Services


def service(
    *ips: str, ports: Sequence[tuple[int, str]] = ((80, "TCP"),), affinity_timeout: int | None = None
) -> SimpleNamespace:
    """A Service as the API returns it: cluster IPs ``ips`` (none: headless), ``ports`` (port, protocol), and with
    ``affinity_timeout`` sessionAffinity ClientIP's timeoutSeconds (without, the spec has no such field)."""
    spec = SimpleNamespace(
        cluster_ip=ips[0] if ips else None,
        cluster_ips=list(ips),
        type="ClusterIP",
        ports=[SimpleNamespace(port=port, protocol=protocol) for port, protocol in ports],
    )
    if affinity_timeout is not None:
        spec.session_affinity_config = SimpleNamespace(client_ip=SimpleNamespace(timeout_seconds=affinity_timeout))
    return SimpleNamespace(spec=spec)


def netexec_answer(*names: str) -> str:
    """What netexec's /dial prints for the backends that answered (netexec.go at v1.34.4: "responses")."""
    return json.dumps({"responses": list(names)})


class ServiceKube(ExecKube):
    """A namespace with Services at cluster IPs ``vips`` and default/kubernetes at ``kubernetes`` (port 443), as
    FlowChecks reads them (``lists``: how many times the namespace's Services were listed). Each exec of netexec's
    /dial answers ``dial(address dialled)``; any other (a curl) answers ``curl(its host)``."""

    def __init__(
        self,
        namespace: str,
        vips: Sequence[str],
        kubernetes: Sequence[str] = ("10.0.0.1",),
        affinity_timeout: int | None = None,
    ) -> None:
        super().__init__()
        self.namespace = namespace
        self.lists = 0
        kubernetes_svc = service(*kubernetes, ports=((443, "TCP"),), affinity_timeout=affinity_timeout)

        def list_namespaced_service(namespace: str) -> SimpleNamespace:
            self.lists += 1
            return SimpleNamespace(items=[service(ip, affinity_timeout=affinity_timeout) for ip in vips])

        def read_namespaced_service(name: str, namespace: str) -> SimpleNamespace:
            assert (name, namespace) == ("kubernetes", "default")
            return kubernetes_svc

        self.core = SimpleNamespace(
            list_namespaced_service=list_namespaced_service, read_namespaced_service=read_namespaced_service
        )

    def respond(self, command: list[str]) -> ExecResult:
        url = urlsplit(next(a for a in command if "://" in a))
        if url.path == "/dial":  # netexec's /dial: the address it is asked to dial
            return self.dial(parse_qs(url.query)["host"][0])
        return self.curl((url.hostname or "").strip("[]"))

    def dial(self, target: str) -> ExecResult:
        raise NotImplementedError(f"{type(self).__name__} answers no /dial")

    def curl(self, target: str) -> ExecResult:
        raise AssertionError(f"{type(self).__name__} expected only netexec /dial commands, got {self.commands[-1]}")


# --------------------------------------------------------------------------- pods' DNS settings


def pod_dns_api(policy: str, nameservers: Sequence[str] = ()) -> SimpleNamespace:
    """The API's pod read (``core.read_namespaced_pod``) for pods whose spec has dnsPolicy ``policy`` and, with
    ``nameservers``, a dnsConfig naming them (without, no dnsConfig), as FlowChecks.resolver_key reads it."""
    config = SimpleNamespace(nameservers=list(nameservers)) if nameservers else None
    spec = SimpleNamespace(dns_policy=policy, host_network=False, dns_config=config)
    return SimpleNamespace(read_namespaced_pod=lambda name, namespace: SimpleNamespace(spec=spec))


# --------------------------------------------------------------------------- a node's pods and what they request


def requesting_pod(
    name: str,
    resource: str,
    request: str | None,
    namespace: str = "ns",
    phase: str = "Running",
    deleting: bool = False,
    init: str | None = None,
    overhead: str | None = None,
) -> SimpleNamespace:
    """A pod as the API lists it, whose one container requests ``request`` of ``resource`` (None: no requests),
    with an init container requesting ``init`` where given, and Pod Overhead ``overhead`` of ``resource`` where
    given; ``deleting``: its deletion under way."""

    def container(amount: str | None) -> SimpleNamespace:
        return SimpleNamespace(resources=SimpleNamespace(requests={resource: amount} if amount else None))

    return SimpleNamespace(
        metadata=SimpleNamespace(
            namespace=namespace, name=name, deletion_timestamp="2026-11-24T14:00:00Z" if deleting else None
        ),
        status=SimpleNamespace(phase=phase),
        spec=SimpleNamespace(
            containers=[container(request)],
            init_containers=[container(init)] if init else None,
            overhead={resource: overhead} if overhead else None,
        ),
    )


class NodePodsApi:
    """The CoreV1Api every api_client gets, for node win-0: its pods answer after answer (the last one repeats;
    ``lists``: how many times they were listed) and its ``allocatable``. time.sleep and time.monotonic run on its
    own clock (``now``: the seconds slept), ``epoch`` + now. A DryRun pod create (the Pod Overhead probe) answers
    the pod with ``spec.overhead`` = ``overhead`` where given (``probes``: the bodies it was asked)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        *answers: list[Any],
        allocatable: dict[str, str],
        epoch: float = 1000.0,
        overhead: dict[str, str] | None = None,
    ) -> None:
        self.answers, self.allocatable, self.overhead = list(answers), allocatable, overhead
        self.lists = 0
        self.probes: list[dict[str, Any]] = []
        self.now = 0.0
        monkeypatch.setattr(time, "sleep", self.sleep)
        monkeypatch.setattr(time, "monotonic", lambda: epoch + self.now)
        monkeypatch.setattr(client, "CoreV1Api", lambda api_client: self)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def list_pod_for_all_namespaces(self, field_selector: str, **_: Any) -> SimpleNamespace:
        assert field_selector == "spec.nodeName=win-0"
        self.lists += 1
        return SimpleNamespace(items=self.answers[min(self.lists, len(self.answers)) - 1])

    def read_node(self, name: str, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(status=SimpleNamespace(allocatable=self.allocatable))

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any], **kwargs: Any) -> SimpleNamespace:
        assert kwargs.get("dry_run") == "All", f"only DryRun creates are expected here: {kwargs}"
        self.probes.append(body)
        spec = {**body["spec"], **({"overhead": self.overhead} if self.overhead else {})}
        return SimpleNamespace(data=json.dumps({**body, "spec": spec}))


# --------------------------------------------------------------------------- a Kube answering by command line


class CommandKube:
    """wincon's Kube for the checks that run a command in a pod and wait on pods: each exec is recorded (``ran``)
    and answered by its command line, words joined by spaces, from ``answers`` (an answer that is an exception is
    raised); each pod wait returns the pod given for it in ``pods``, or runs out as the real watch would
    (WaitTimeout) where ``done`` does not hold; gate and create do nothing."""

    namespace = "ns"

    def __init__(self, answers: dict[str, Any] | None = None, pods: dict[str, Any] | None = None) -> None:
        self.answers, self.pods = answers or {}, pods or {}
        self.ran: list[str] = []

    def gate(self, command: object, where: str = "", pod_node: object = None) -> None:
        pass

    def create(self, body: object) -> None:
        pass

    def exec(
        self, pod: object, command: list[str], container: object = None, where: object = None, timeout: float = 60.0
    ) -> ExecResult:
        key = " ".join(command)
        self.ran.append(key)
        answer = self.answers[key]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def wait_pod(
        self,
        name: str,
        done: Callable[[Any], bool] | None = None,
        failure: object = None,
        timeout: float | None = None,
        behaviour: bool = False,
        describe: str = "",
    ) -> Any:
        pod = self.pods[name]
        if done is not None and not done(pod):
            raise WaitTimeout(f"pod ns/{name}: {describe}: not observed")
        return pod


# --------------------------------------------------------------------------- nodes as a profile file holds them


def profile_windows_node(name: str, build: int, simulated: bool = False, **facts: Any) -> dict[str, Any]:
    """A Ready Windows node of ``build`` as a profile file holds it (ClusterProfile's JSON: containerd 1.7.20,
    kubelet v1.34.4); ``facts``: the node's other keys (os_version, cpu_capacity, kubelet_feature_gates ...)."""
    return {
        "name": name,
        "os": "windows",
        "arch": "amd64",
        "ready": True,
        "simulated": simulated,
        "windows_build": build,
        "runtime": "containerd",
        "runtime_version": "1.7.20",
        "kubelet_version": "v1.34.4",
        **facts,
    }


def profile_linux_node(name: str) -> dict[str, Any]:
    """A Ready real Linux node as a profile file holds it."""
    return {"name": name, "os": "linux", "arch": "amd64", "ready": True, "simulated": False}


class PodAnswerKube:
    """A Kube whose pod waits and reads all answer the one pod given; the data-plane gate records the node each
    pod was gated for (``gated``)."""

    def __init__(self, answer: Any) -> None:
        self.answer: Any = answer
        self.gated: list[Any] = []

    def wait_pod(self, name: str, **kwargs: Any) -> Any:
        return self.answer

    def gate(self, command: Any, where: str = "", pod_node: Any = None) -> None:
        self.gated.append(pod_node)

    def read_pod(self, name: str) -> Any:
        return self.answer
