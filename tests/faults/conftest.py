"""Fault-injection tests share the integration tests' fixtures (binaries present, cluster names) and a local
cluster of the default topology per xdist worker (``fault_cluster``, session-scoped). The fault tests fall in two
xdist groups, each on one worker, one fault at a time: ``DATA_PATH`` (what the checks' traffic and pods go through:
the cluster DNS, the pod network, the external host, probe targets, the volume provisioner, the LoadBalancer
address's controller) and ``COMPONENTS`` (a control-plane or add-on component stopped: kube-controller-manager's
controllers, metrics-server, the policy engine). MetalLB's controller is a component too; it sits in DATA_PATH to
even the two groups' times. Each fault restores what it broke, so one cluster could serve both; two groups let
them run at once on two workers (about 800 s each in a make test at d83e1a7, where the one group took 1,900 s
alone) for the price of a second cluster's start (about 20 s). The two modules with a cluster of their own
(test_faults.py, test_fault_ipv6.py) are groups of their own. The CPU-limit fault tests (test_fault_cpu.py) are in
no group: they are marked ``measures_cpu`` and ``make test`` runs them after every other test, alone
(tests/support/ordering.py).

The shape every fault test shares lives here: run the affected Linux controls (``run_checks``), clean and then
under the fault (``stopped`` for a process killed as a crash is), and ``assert_broken``, which first prints
the same report for every fault (``report``): each affected check's verdict and time clean and with the fault
against the 60 s of issue 22, and both runs' wall time with their ratio (the target for the networking faults
is at most 2x). The times are printed, never asserted."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from tests.integration.conftest import localcluster_binaries  # noqa: F401
from tests.support import clusters
from wincon.localcluster import cluster, dataplane, netns
from wincon.localcluster.topology import Topology
from wincon.results.junit import parse

REPO = Path(__file__).resolve().parents[2]
F = TypeVar("F", bound=Callable[..., object])
DATA_PATH = "faults"  # the xdist group of the faults in what the checks' traffic and pods go through
COMPONENTS = "faults-components"  # the xdist group of the faults that stop a cluster component
# Each group's seconds in a make test at d83e1a7 (its tests' --durations summed): every test of the group carries
# it as its weight, so the group starts among the first and its tests keep their order (tests/support/ordering.py).
GROUP_SECONDS = {DATA_PATH: 800, COMPONENTS: 770}
FAIL_WITHIN = 60.0  # issue 22, item 5: an affected check fails within this long of its fault
RATIO_TARGET = 2.0  # ... and the affected controls as a whole take at most twice their clean time


def in_group(name: str) -> list[pytest.MarkDecorator]:
    """A fault module's ``pytestmark``: its xdist group and the group's weight."""
    return [pytest.mark.xdist_group(name), pytest.mark.weight(GROUP_SECONDS[name])]


def grouped(name: str) -> Callable[[F], F]:
    """One fault test's group and the group's weight, where its module's tests fall in more than one group (a
    module-wide group would join with a test's own into a third one)."""

    def mark(test: F) -> F:
        for marker in in_group(name):
            test = marker(test)
        return test

    return mark


def own_cluster(prefix: str, topology: Topology | None = None) -> AbstractContextManager[tuple[str, Path]]:
    """A local cluster for fault injection (``WINCON_FAULT_CLUSTER`` names one to start or reuse), brought down
    at the end with its lock: (name, kubeconfig); tests/support/clusters.py, as for the integration tests."""
    return clusters.own_cluster(prefix, topology, env="WINCON_FAULT_CLUSTER")


@pytest.fixture(scope="session")
def fault_cluster(localcluster_binaries: Path) -> Iterator[tuple[str, Path]]:  # noqa: F811
    """The default-topology cluster every fault module shares: (name, kubeconfig)."""
    with own_cluster("faults") as found:
        yield found


@dataclass
class Run:
    """One pytest run of Linux controls, read back from its JUnit: per nodeid its verdict (passed, failed,
    error...), message and time (setup, call and teardown), the run's wall time and when it ended."""

    verdicts: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    ended: float = 0.0


def run_checks(kubeconfig: Path, checks: tuple[str, str], tmp: Path, *extra: str) -> Run:
    """Run the Linux controls ``checks`` (suite files, keyword) as a user would (``pytest ... -m control -k``)."""
    files, selection = checks
    junit = tmp / f"junit-{uuid.uuid4().hex[:6]}.xml"
    args = [sys.executable, "-m", "pytest", *files.split(), "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
    args += ["--kubeconfig", str(kubeconfig), "-m", "control", "-k", selection, f"--junitxml={junit}"]
    args += ["--results-dir", str(tmp / f"results-{junit.stem}"), "--pod-start-timeout", "45", *extra]
    start = time.monotonic()
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900)
    ended = time.monotonic()
    if not junit.is_file():
        pytest.fail(
            f"the suite run wrote no JUnit (exit {result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
        )
    cases = parse(junit)
    run = Run(
        verdicts={f"{c.classname}::{c.name}": c.verdict.value for c in cases},
        messages={f"{c.classname}::{c.name}": c.message for c in cases},
        durations={f"{c.classname}::{c.name}": c.duration for c in cases},
        wall=ended - start,
        ended=ended,
    )
    assert run.verdicts, f"`-m control -k {selection!r}` selected nothing:\n{result.stdout[-2000:]}"
    return run


def report(fault: str, before: Run, after: Run, injected_at: float | None = None) -> None:
    """Print, the same way for every fault, each affected check's verdict and time clean and with the fault
    (against ``FAIL_WITHIN``), the slowest to fail, and both runs' wall time with their ratio; where the fault
    was injected before the run (a process killed), also the time from the fault to the run's end."""
    print(f"\n[{fault}] {len(after.verdicts)} affected checks (time: setup, call and teardown, from the JUnit)")
    for nodeid in sorted(set(before.verdicts) | set(after.verdicts)):
        clean = f"{before.verdicts.get(nodeid, 'absent')} in {before.durations.get(nodeid, 0.0):.1f} s"
        verdict, took = after.verdicts.get(nodeid, "absent"), after.durations.get(nodeid, 0.0)
        mark = "" if verdict == "passed" else ("  within 60 s" if took <= FAIL_WITHIN else "  OVER 60 s")
        print(f"[{fault}]   {nodeid}: clean {clean}; with the fault {verdict} in {took:.1f} s{mark}")
    broken = {k: after.durations[k] for k, v in after.verdicts.items() if v in ("failed", "error")}
    if broken:
        slowest = max(broken.values())
        over = sum(t > FAIL_WITHIN for t in broken.values())
        print(
            f"[{fault}] {len(broken)} failed or errored, slowest {slowest:.1f} s, "
            f"{len(broken) - over} within {FAIL_WITHIN:.0f} s, {over} over"
        )
    ratio = after.wall / before.wall if before.wall else float("nan")
    since = f"; {after.ended - injected_at:.1f} s from the fault to its end" if injected_at is not None else ""
    print(
        f"[{fault}] the run: clean {before.wall:.1f} s, with the fault {after.wall:.1f} s{since}; "
        f"ratio {ratio:.2f}x (target at most {RATIO_TARGET:.0f}x)"
    )


def assert_broken(
    fault: str,
    before: Run,
    after: Run,
    allowed: tuple[str, ...] = ("failed",),
    injected_at: float | None = None,
) -> None:
    """Report the fault's figures, then: every check passed before the fault and ends in ``allowed`` with it;
    none passes, xfails or skips."""
    report(fault, before, after, injected_at)
    assert set(before.verdicts.values()) == {"passed"}, f"the checks must pass without the fault first: {before}"
    assert set(after.verdicts) == set(before.verdicts), (
        f"not the same checks ran: {sorted(set(before.verdicts) ^ set(after.verdicts))}"
    )
    wrong = {k: v for k, v in after.verdicts.items() if v not in allowed}
    said = "".join(f"\n  {k}: {after.messages[k][:600]}" for k in wrong if after.messages.get(k))
    assert not wrong, f"with the fault these checks did not end in {allowed}: {wrong}{said}"


def real_nodes(name: str) -> list[str]:
    record = cluster._read_record(name) or {}
    return [n.name for n in dataplane.Plan.from_dict(record["dataplane"]).nodes]


def node_namespaces(name: str) -> list[str]:
    return [netns.netns_name(name, node) for node in real_nodes(name)]


def node_processes(name: str, component: str) -> list[str]:
    """The data-plane process names of ``component`` (kubelet, kube-proxy) on every real node."""
    return [f"{node}-{component}" for node in real_nodes(name)]


@contextmanager
def stopped(name: str, *processes: str) -> Iterator[float]:
    """SIGKILL the data-plane ``processes`` (an add-on's name, or ``node_processes``), as a crash is; yield the
    moment of the stop (``time.monotonic``, for ``report``'s time from the fault); start each one that was
    stopped again afterwards, whatever happens."""
    killed: list[str] = []
    try:
        for proc in processes:
            dataplane.stop_process(name, proc)
            killed.append(proc)
        yield time.monotonic()
    finally:
        for proc in killed:
            dataplane.restart_process(name, proc)
