"""A module's pod wave: the pods its checks will need, created together when the module starts (issue 44, item 2).

Under the Windows pod-latency model (and on real Windows nodes) a pod takes tens of seconds to start; a module whose
checks each create their own pod when they run pays one start per check, one after another on its worker. A wave
creates every pod the module's checks declared at once, when the module starts (its Linux controls run while the
Windows pods start), and each check then takes its own pods when it runs: it waits only for what is still starting.

Isolation is kept: a declared pod is one check's alone (``Wave.take`` refuses a second taker), nothing is shared,
and a check that changes its pod changes only its own. What a check observes is unchanged: its pod has the same
manifest (the declaration's spec must equal the one the check asks for, or the suite errs), it is awaited and
placement-checked when the check takes it, and an error creating or starting it is that check's error, not the
module's. A pod declared for a check that does not then take it (skipped before, or run on another worker after a
steal) is created for nothing and deleted with the module's namespace.

How a module uses it:

* each check declares its pods on its function: ``@waves.pod("client", "dns-default", dnsPolicy="Default")``
  (a kind the module's wave knows how to build, the pod's name without the control's prefix, its spec);
* the suite's module-scoped fixture builds a ``Wave`` from ``declared(items)`` over ``module_items(request)``
  (the module's checks collected to run from the asking one on), adds each pod's manifest, and ``start``s it;
* the factory a check calls (``make_client(name, **spec)``) asks ``wave.holds(name, spec)`` and ``take``s it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from wincon.clusterinfo.nodes import LINUX, target_os
from wincon.commandline.errors import SuiteError

WAVE_ATTR = "wincon_wave_pods"  # on a test function: the PodDecl it declared
F = TypeVar("F", bound=Callable[..., Any])
# What creating a pod may raise that is the outcome of the check that takes it (an error, a skip: a HostProcess pod
# the cluster's policy refuses), never an interrupt.
OUTCOMES: tuple[type[BaseException], ...] = (Exception, pytest.skip.Exception, pytest.fail.Exception)


@dataclass(frozen=True)
class PodDecl:
    """A pod a check declares: the kind of pod (the module's wave builds it), its name (without the control's
    prefix), and the spec it is created with."""

    kind: str
    name: str
    spec: tuple[tuple[str, Any], ...] = ()

    @property
    def spec_dict(self) -> dict[str, Any]:
        return dict(self.spec)


def pod(kind: str, name: str, **spec: Any) -> Callable[[F], F]:
    """Declare on a test function a pod of its own that its module's wave starts: ``@pod("client", "x", k=v)``."""

    def mark(function: F) -> F:
        setattr(function, WAVE_ATTR, (*getattr(function, WAVE_ATTR, ()), PodDecl(kind, name, tuple(spec.items()))))
        return function

    return mark


def declared(item: pytest.Item) -> tuple[PodDecl, ...]:
    """The pods ``item``'s test function declared (none for an item that is not a function)."""
    return tuple(getattr(getattr(item, "function", None), WAVE_ATTR, ()))


def items_from(item: pytest.Item) -> list[pytest.Item]:
    """The items of ``item``'s module that this process collected to run, from ``item`` on (those before it have
    run), without those marked to skip (they would take no pod)."""
    module = getattr(item, "module", None)
    items = [i for i in item.session.items if getattr(i, "module", None) is module]
    if item in items:
        items = items[items.index(item) :]
    return [i for i in items if i.get_closest_marker("skip") is None]


def upcoming(item: pytest.Item) -> list[pytest.Item]:
    """The items this process will run from ``item`` on, in order, without those marked to skip: under xdist the
    worker's own queue (what its scheduler sent it and no other worker has stolen; any module), else the session's
    items from ``item`` on. Where the worker's queue cannot be read (another xdist), ``items_from`` (its module).
    Cut before the first serial or disruptive check (``item`` included): nothing is made ahead while one runs, nor
    beside one, since such a check must have the cluster to itself (`wincon run` gives them a phase of their own)."""
    items = item.session.items
    worker = next((p for p in item.config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)
    if worker is not None and hasattr(worker, "torun") and hasattr(worker, "nextitem_index"):
        with worker.torun.lock() as queue:
            queued = [i for i in queue if isinstance(i, int)]
        nxt = worker.nextitem_index
        order = [item, *(items[i] for i in ([nxt] if isinstance(nxt, int) else []) + queued)]
    elif worker is not None:
        order = items_from(item)
    else:
        order = items[items.index(item) :] if item in items else [item]
    coming: list[pytest.Item] = []
    for i in order:
        if i.get_closest_marker("serial") is not None or i.get_closest_marker("disruptive") is not None:
            break
        if i.get_closest_marker("skip") is None:
            coming.append(i)
    return coming


def module_items(request: pytest.FixtureRequest) -> list[pytest.Item]:
    """``items_from`` the item whose setup asks (a module-scoped fixture's request knows it); without one, every
    item of the requesting module."""
    asking = getattr(request, "_pyfuncitem", None)
    if asking is not None:
        return items_from(asking)
    return [i for i in request.session.items if getattr(i, "module", None) is request.module]


@dataclass
class _Entry:
    decl: PodDecl
    manifest: dict[str, Any]
    finish: Callable[[Any], Any]  # the started pod -> what the check is handed (a PodRef)
    create: Callable[[dict[str, Any]], Any] | None = None  # this pod's own create, else the wave's
    created: bool = False
    error: BaseException | None = None
    taken_by: str = ""


@dataclass
class Wave:
    """Declared pods by name: ``add`` them, ``start`` creates every one not yet created (none waited for), ``take``
    waits for one and hands it to one check."""

    create: Callable[[dict[str, Any]], Any]  # creates a pod, returns at once
    wait: Callable[[dict[str, Any]], Any]  # waits for a created pod and checks where it ran; raises its error
    entries: dict[str, _Entry] = field(default_factory=dict)

    def add(
        self,
        name: str,
        decl: PodDecl,
        manifest: dict[str, Any],
        finish: Callable[[Any], Any],
        create: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        """Add pod ``name`` (``manifest``); ``finish`` turns the started pod into what its check gets; ``create``
        replaces the wave's own create for this pod (a HostProcess pod's, which skips where policy refuses it)."""
        if name in self.entries:
            raise SuiteError(f"pod {name} is declared twice in one module's wave", "give each check's pod its own name")
        self.entries[name] = _Entry(decl, manifest, finish, create)

    def start(self) -> int:
        """Create every pod added and not yet created, all before any is waited for; a creation's error is kept for
        the check that takes the pod. Returns the number created (or refused)."""
        started = 0
        for entry in self.entries.values():
            if entry.created:
                continue
            entry.created = True
            started += 1
            try:
                (entry.create or self.create)(entry.manifest)
            except OUTCOMES as exc:  # the check that takes this pod raises it, no other
                entry.error = exc
        return started

    def holds(self, name: str, spec: Mapping[str, Any]) -> bool:
        """Whether the wave has pod ``name``; asked with another spec than declared, the suite errs."""
        entry = self.entries.get(name)
        if entry is None:
            return False
        if dict(spec) != entry.decl.spec_dict:
            raise SuiteError(
                f"pod {name} is asked for with {dict(spec)} but declared with {entry.decl.spec_dict}",
                "make the check's waves.pod declaration match what it asks for",
            )
        return True

    def take(self, name: str, taker: str) -> Any:
        """Pod ``name`` for the check ``taker`` alone: created if it was not yet, waited for, placement-checked."""
        entry = self.entries[name]
        if entry.taken_by:
            raise SuiteError(f"pod {name} is {entry.taken_by}'s: a declared pod is one check's alone", "")
        entry.taken_by = taker
        if not entry.created:
            self.start()
        if entry.error is not None:
            raise entry.error
        return entry.finish(self.wait(entry.manifest))

    def names(self) -> list[str]:
        return list(self.entries)


def one_at_a_time(await_each: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> Callable[[dict[str, Any]], Any]:
    """A ``Wave.wait`` from an ``await_each(manifests) -> name -> pod or exception`` (NetworkObjects.await_each):
    the one pod, or its exception raised."""

    def wait(manifest: dict[str, Any]) -> Any:
        result = await_each([manifest])[manifest["metadata"]["name"]]
        if isinstance(result, BaseException):
            raise result
        return result

    return wait


def decls_by_item(items: Iterable[pytest.Item]) -> list[tuple[pytest.Item, PodDecl]]:
    """Every (item, declared pod) of ``items``, in their order."""
    return [(item, decl) for item in items for decl in declared(item)]


# ------------------------------------------------------------------------- ahead: a check's objects made before it runs

AHEAD_ATTR = "wincon_ahead_builders"  # on a test function: the builders of what it creates before it first waits
# How many pods made ahead and not yet handed to their check one worker keeps at most: each worker's next checks
# start while it runs the current one, and a run of four workers leaves most of two Windows nodes' 30 pods each free.
AHEAD_PODS = 8
# The room each Windows node keeps, beyond what is made ahead, for what the running checks create themselves: four
# workers' own pods and their networking modules' shared ones (a client, a netserver and a host pod on the first
# Windows node each). A pod made ahead holds its place while it waits, on nodes of 30 pods (AKS's and the local
# cluster's). The bench at 60cde5c saw a module's netserver on the first Windows node wait 138 s, where the latency
# model's start takes at most 60 s.
NODE_MARGIN = 10


def ahead(*builders: Callable[..., Any]) -> Callable[[F], F]:
    """Declare on a test function what it creates before it first waits, so that it is made ahead, while the checks
    before it run: ``@waves.ahead(reader_pod)``. Each builder takes parameters by name (``wincon``, ``target_os``,
    ``build``, ``namespace``: the check's own, and the check's own parameters) and returns one manifest or a list of
    them, in the order the check creates them; the check builds them with the same builders and creates them as
    before (``run_os_pod``, ``kube.create``), which then adopt the object made ahead where its manifest is the one
    the check asks for."""

    def mark(function: F) -> F:
        setattr(function, AHEAD_ATTR, (*getattr(function, AHEAD_ATTR, ()), *builders))
        return function

    return mark


def ahead_builders(item: pytest.Item) -> tuple[Callable[..., Any], ...]:
    return tuple(getattr(getattr(item, "function", None), AHEAD_ATTR, ()))


@dataclass
class Made:
    """One object made ahead: its manifest, what creating it returned, or what creating it raised."""

    manifest: dict[str, Any]
    result: Any = None
    error: BaseException | None = None


# (namespace, kind, name) -> the object made ahead, until its check creates it: one registry per worker process.
_MADE: dict[tuple[str, str, str], Made] = {}


def kind_of(manifest: Mapping[str, Any]) -> str:
    """A manifest's kind; a pod's manifests from ``os_pod`` may leave it out."""
    return str(manifest.get("kind", "Pod"))


def pods_of(manifest: Mapping[str, Any]) -> int:
    """The pods an object made ahead starts: a pod one, a Deployment, ReplicaSet, ReplicationController or
    StatefulSet its replicas (1 where unset, as the API server defaults it); anything else none (a Job or a
    DaemonSet is not made ahead: see docs/local-cluster.md)."""
    kind = kind_of(manifest)
    if kind == "Pod":
        return 1
    if kind in REPLICATED_KINDS:
        replicas = (manifest.get("spec") or {}).get("replicas")
        return 1 if replicas is None else int(replicas)
    return 0


REPLICATED_KINDS = frozenset({"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"})


def _key(namespace: str, manifest: Mapping[str, Any]) -> tuple[str, str, str]:
    return namespace, kind_of(manifest), str(manifest["metadata"]["name"])


def adopt(namespace: str, manifest: Mapping[str, Any], how: str) -> Made | None:
    """The object made ahead for ``manifest`` in ``namespace`` (what its creation returned; its error is raised), or
    None where nothing was. Made ahead with another manifest than the one the check creates, or by another way
    than ``how``, the suite errs: what the check observes must be what it asked for."""
    made = _MADE.pop(_key(namespace, manifest), None)
    if made is None:
        return None
    if made.manifest != dict(manifest):
        raise SuiteError(
            f"{kind_of(manifest)} {manifest['metadata']['name']} was made ahead from another manifest than "
            "the check creates",
            "make the check build what it creates with the builders it declares in waves.ahead",
        )
    if how != _how(made.manifest):
        raise SuiteError(
            f"{kind_of(manifest)} {manifest['metadata']['name']} was made ahead as {_how(made.manifest)} "
            f"but the check creates it with {how}",
            f"create a pod made ahead with {POD_CREATE}, any other object with {OBJECT_CREATE}",
        )
    if made.error is not None:
        raise made.error
    return made


POD_CREATE = "submit_pod (run_os_pod, create_or_reject)"
OBJECT_CREATE = "kube.create (deploy.apply)"


def _how(manifest: Mapping[str, Any]) -> str:
    """How an object made ahead is created, and so how its check must create it: a pod as ``run_os_pod`` does."""
    return POD_CREATE if kind_of(manifest) == "Pod" else OBJECT_CREATE


def slow_first(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """``items`` with those whose pods start slowly first (a Windows check's: tens of seconds on a real Windows
    node, and under the local cluster's latency model), each group in its order, so that the limit of pods made ahead
    goes to the pods whose start is worth hiding. A Linux control's pod starts in about a second: made ahead only
    where the limit leaves room. Under pytest's ordering a module's Linux controls run before their Windows twins,
    which are then made while the controls run, not after them."""
    listed = list(items)
    return [i for i in listed if target_os(i) != LINUX] + [i for i in listed if target_os(i) == LINUX]


class NotYet(Exception):
    """Raised by a supplier (``Ahead.provide``): what a builder takes is not there yet (a module's recorder pod still
    starting); the check's objects are made at a later top-up, or by the check itself."""


class Ahead:
    """One module's checks on one worker whose objects are made ahead: ``top_up(items)`` reserves the namespace of
    each next check that declared builders and makes its objects there, the Windows checks' first (``slow_first``),
    until ``AHEAD_PODS`` pods wait for their checks; ``namespace_for(item)`` hands a check its reserved namespace
    (its objects then count as its own);
    ``close()`` deletes the namespaces reserved for checks that did not run here (skipped, or stolen by another
    worker) with what was made in them.

    One Ahead serves a worker's whole run (``made_ahead`` is session-scoped): ``top_up`` is given the checks this
    worker will run next, whatever their module (``upcoming``), so a module's first checks are made while the module
    before it runs; ``drop_passed`` forgets the checks no longer coming (run, skipped, or stolen by another worker),
    deleting the namespaces of those that did not take theirs.

    A builder may also take one of the check's own fixtures that its module supplies, once it is there without
    waiting: ``provide(name, supplier, module)``, ``supplier(item)`` giving the value the check's fixture will give,
    or raising ``NotYet``; for that module's checks only, until ``withdraw(name)``. Until a supplier gives it
    (before the module's fixture registered one, or while it raises ``NotYet``) that check is passed over and tried
    again at the next top-up."""

    def __init__(
        self,
        reserve: Callable[[pytest.Item], str],
        make: Callable[[str, dict[str, Any]], Any],
        arguments: Callable[[pytest.Item], dict[str, Any]],
        release: Callable[[str], None],
        pods: int = AHEAD_PODS,
        room: Callable[[], int | None] | None = None,
    ) -> None:
        self.reserve, self.make, self.arguments, self.release, self.pods = reserve, make, arguments, release, pods
        self.room = room  # the pods the fullest Windows node still takes, None where unknown
        self.reserved: dict[str, tuple[str, int]] = {}  # nodeid -> (namespace, pods made there)
        self.handed: set[str] = set()
        self.suppliers: dict[str, tuple[Any, Callable[[pytest.Item], Any]]] = {}

    def provide(self, name: str, supplier: Callable[[pytest.Item], Any], module: Any = None) -> None:
        """Builders taking ``name`` (a fixture of their check) get ``supplier(item)``, for the checks of ``module``
        (any check where None) (see the class)."""
        self.suppliers[name] = (module, supplier)

    def withdraw(self, name: str) -> None:
        self.suppliers.pop(name, None)

    def supplied(self, item: pytest.Item) -> dict[str, Any] | None:
        """The values of the check's own fixtures its builders take, from their suppliers; None where one is not
        there yet. A name that is neither a fixture of the check nor anything the suite gives is left to
        ``manifests``, which says so."""
        names = {n for builder in ahead_builders(item) for n in inspect.signature(builder).parameters}
        given = self.arguments(item)
        values: dict[str, Any] = {}
        for name in sorted(names & set(getattr(item, "fixturenames", ()))):
            if name in self.suppliers:
                module, supplier = self.suppliers[name]
                if module is not None and getattr(item, "module", None) is not module:
                    return None  # another module's fixture of the same name: its own module has not supplied it
                try:
                    values[name] = supplier(item)
                except NotYet:
                    return None
            elif name not in {"wincon", "target_os", "build", "namespace"} and name not in given:
                return None  # its module has not supplied it (yet)
        return values

    def waiting(self) -> int:
        return sum(pods for nodeid, (_, pods) in self.reserved.items() if nodeid not in self.handed)

    def manifests(
        self, item: pytest.Item, namespace: str, supplied: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """What ``item``'s builders return for its parameters, its (reserved) ``namespace`` and what was
        ``supplied`` for it, in order."""
        given = {**self.arguments(item), **(supplied or {}), "namespace": namespace}
        out: list[dict[str, Any]] = []
        for builder in ahead_builders(item):
            names = list(inspect.signature(builder).parameters)
            missing = [n for n in names if n not in given]
            if missing:
                raise SuiteError(
                    f"{builder.__name__} (declared in waves.ahead by {item.nodeid}) takes {', '.join(missing)}",
                    "a builder takes only wincon, target_os, build, namespace, the check's own parameters and "
                    "fixtures of the check its module supplies (Ahead.provide)",
                )
            built = builder(**{n: given[n] for n in names})
            out.extend(built if isinstance(built, list) else [built])
        return out

    def top_up(self, items: Iterable[pytest.Item]) -> None:
        """Make ahead the objects of the next ``items`` that declared builders while fewer than ``pods`` pods made
        ahead wait for their checks: the Windows checks' first, in order, then the Linux controls', in order
        (``slow_first``). A check whose builders take a fixture its module has not supplied yet (``NotYet``) keeps
        the room of one pod: the checks after it do not take the room it will need once supplied (lifecycle's
        Windows recorder checks, passed over while their recorder started, found the limit taken by the next
        module's checks and made their pods only as they ran). A Windows check's objects are made only while the
        fullest Windows node keeps room for ``NODE_MARGIN`` pods besides (``room``, read once per top-up where a
        Windows check is next): what the running checks create themselves must still find a place there."""
        kept = 0  # pods' room kept for the checks passed over in this top-up
        free: int | None = None  # the fullest Windows node's room, read when first needed
        for item in slow_first(items):
            if self.waiting() + kept >= self.pods:
                return
            if item.nodeid in self.reserved or item.nodeid in self.handed or not ahead_builders(item):
                continue
            slow = target_os(item) != LINUX
            if slow and self.room is not None:
                free = self.room() if free is None else free
                if free is not None and free - 1 < NODE_MARGIN:
                    continue  # no Windows check's now; a Linux control's may still be made
            supplied = self.supplied(item)
            if supplied is None:
                kept += 1
                continue  # tried again at the next top-up
            try:
                namespace = self.reserve(item)
            except OUTCOMES:  # the check creates its namespace itself when it runs, and meets this error as its own
                return
            pods = 0
            self.reserved[item.nodeid] = (namespace, 0)  # released by close() should its builders raise
            manifests = self.manifests(item, namespace, supplied)
            for manifest in manifests:
                made = Made(manifest)
                pods += pods_of(manifest)
                try:
                    made.result = self.make(namespace, manifest)
                except OUTCOMES as exc:  # the check that creates it raises it; what it would create next is not made
                    made.error = exc
                finally:  # registered once made: the create that made it does not adopt it
                    _MADE[_key(namespace, manifest)] = made
                if made.error is not None:
                    break
            self.reserved[item.nodeid] = (namespace, pods)
            if slow and free is not None:
                free -= pods

    def drop_passed(self, items: Iterable[pytest.Item]) -> None:
        """Forget the checks made ahead that are no longer among ``items`` (this worker's upcoming ones): they ran,
        were skipped, or another worker stole them. The namespace of one that did not take it is deleted, with what
        was made there, and no longer counts against the limit."""
        coming = {item.nodeid for item in items}
        for nodeid in [n for n in self.reserved if n not in coming]:
            self._forget(nodeid)

    def _forget(self, nodeid: str) -> None:
        """Forget one check made ahead: its namespace deleted where it did not take it, and whatever made there
        none adopted."""
        namespace, _ = self.reserved.pop(nodeid)
        if nodeid not in self.handed:
            self.release(namespace)
        self.handed.discard(nodeid)
        for key in [k for k in _MADE if k[0] == namespace]:
            del _MADE[key]

    def namespace_for(self, item: pytest.Item) -> str | None:
        """The namespace reserved for ``item`` (its objects made there), now its own; None where none was."""
        reserved = self.reserved.get(item.nodeid)
        if reserved is None:
            return None
        self.handed.add(item.nodeid)
        return reserved[0]

    def close(self) -> None:
        """Delete what was made for checks that did not take it, and forget what none adopted."""
        for nodeid in list(self.reserved):
            self._forget(nodeid)
