"""Benchmark: the networking controls as a whole, clean and with one kind of traffic silenced (issue 22, item 5).

On a running local cluster (``--cluster-name``, started with ``wincon cluster up``), runs ``pytest <selection> -m
control`` (one process, as tests/faults runs its checks) first as the cluster is, then with a fault: by default
pod-to-pod TCP silenced, an iptables DROP of 10.244.0.0/16 -> 10.244.0.0/16 TCP first in the FORWARD chain of
every real node's namespace (the "one kind of traffic silenced" of the issue); ``reject`` refuses it instead
(tcp-reset); ``service-rules`` stops every real node's kube-proxy and flushes its KUBE-SERVICES chain (the
tests/faults fault "Service rules removed"); ``external-down`` takes the external host's link down (the
tests/faults fault "external host down"). Each is removed afterwards, whatever happens. Printed: each run's wall time and outcome counts, the ratio fault/clean (target at most 2x), every
check that failed with the fault and the time it took (target: within 60 s each; all of them, slowest first), and the
machine's load average beside each run. Asserts nothing: exits 0 whatever the figures, 10 when the cluster is
not up.

    python bench/bench_faults.py --cluster-name wincon-h6 [--fault drop|reject|service-rules|external-down]
        [--only clean|fault] [-- SELECTION...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.localcluster import cluster, dataplane, netns  # noqa: E402
from wincon.results.junit import CaseResult, parse  # noqa: E402

DEFAULT_SELECTION = ["suites/networking"]
PODS = ["-s", "10.244.0.0/16", "-d", "10.244.0.0/16", "-p", "tcp"]
FAULTS = {"drop": ["-j", "DROP"], "reject": ["-j", "REJECT", "--reject-with", "tcp-reset"]}
OTHER_FAULTS = ("service-rules", "external-down")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def real_nodes(name: str) -> list[str]:
    record = cluster._read_record(name) or {}
    return [n.name for n in dataplane.Plan.from_dict(record["dataplane"]).nodes]


@contextmanager
def service_rules_removed(name: str) -> Iterator[None]:
    """Every real node's kube-proxy killed and its KUBE-SERVICES chain flushed; the proxies started again after
    (they write their rules back)."""
    stopped: list[str] = []
    try:
        for node in real_nodes(name):
            dataplane.stop_process(name, f"{node}-kube-proxy")
            stopped.append(f"{node}-kube-proxy")
            netns.run(["iptables", "-w", "-t", "nat", "-F", "KUBE-SERVICES"], netns=netns.netns_name(name, node))
        yield
    finally:
        for proc in stopped:
            dataplane.restart_process(name, proc)


@contextmanager
def external_host_down(name: str) -> Iterator[None]:
    ext = netns.netns_name(name, "ext")
    netns.run(["ip", "link", "set", "eth0", "down"], netns=ext)
    try:
        yield
    finally:
        netns.run(["ip", "link", "set", "eth0", "up"], netns=ext)


def fault(name: str, kind: str) -> AbstractContextManager[None]:
    if kind == "service-rules":
        return service_rules_removed(name)
    if kind == "external-down":
        return external_host_down(name)
    return pod_tcp_fault(name, FAULTS[kind])


@contextmanager
def pod_tcp_fault(name: str, target: list[str]) -> Iterator[None]:
    nodes = real_nodes(name)
    rule = [*PODS, "-m", "comment", "--comment", "wincon-bench-fault", *target]
    inserted: list[str] = []
    try:
        for node in nodes:
            ns = netns.netns_name(name, node)
            netns.run(["iptables", "-w", "-t", "filter", "-I", "FORWARD", "1", *rule], netns=ns)
            inserted.append(ns)
        yield
    finally:
        for ns in inserted:
            netns.run(["iptables", "-w", "-t", "filter", "-D", "FORWARD", *rule], netns=ns)


def run(kubeconfig: Path, selection: list[str], tmp: Path) -> tuple[float, list[CaseResult], str]:
    junit = tmp / f"junit-{uuid.uuid4().hex[:6]}.xml"
    args = [sys.executable, "-m", "pytest", *selection, "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
    args += ["--kubeconfig", str(kubeconfig), "-m", "control", f"--junitxml={junit}"]
    args += ["--results-dir", str(tmp / f"results-{junit.stem}"), "--pod-start-timeout", "45"]
    before = load()
    start = time.monotonic()
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - start
    if not junit.is_file():
        print(f"  the run wrote no JUnit (exit {proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-1500:]}")
        return wall, [], f"{before} -> {load()}"
    return wall, parse(junit), f"{before} -> {load()}"


def show(label: str, wall: float, cases: list[CaseResult], loads: str) -> None:
    counts = Counter(c.verdict.value for c in cases)
    print(f"\n== {label}: {wall:.1f} s, {len(cases)} checks {dict(sorted(counts.items()))} (load {loads})")
    for case in sorted(cases, key=lambda c: -c.duration)[:8]:
        print(f"  {case.duration:6.1f} s  {case.verdict.value:<7} {case.classname}::{case.name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(
        parser,
        "--cluster-name",
        deprecated=("--name",),
        dest="name",
        default=os.environ.get("WINCON_CLUSTER_NAME", "wincon"),
    )
    parser.add_argument("--fault", choices=(*FAULTS, *OTHER_FAULTS), default="drop")
    parser.add_argument("--only", choices=("clean", "fault"))
    parser.add_argument("selection", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    selection = [a for a in args.selection if a != "--"] or DEFAULT_SELECTION
    if cluster.status(args.name).get("state") != "running":
        print(f"cluster {args.name} is not running: wincon cluster up --cluster-name {args.name}", file=sys.stderr)
        return 10
    kubeconfig = cluster.kubeconfig_path(args.name)
    tmp = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    label = f"pod-to-pod TCP {args.fault}" if args.fault in FAULTS else args.fault
    print(f"selection: {' '.join(selection)} -m control; fault: {label}; cluster {args.name}")
    clean: tuple[float, list[CaseResult], str] | None = None
    if args.only != "fault":
        clean = run(kubeconfig, selection, tmp)
        show("clean", *clean)
    if args.only == "clean":
        return 0
    with fault(args.name, args.fault):
        faulty = run(kubeconfig, selection, tmp)
    show(label, *faulty)
    failed = [c for c in faulty[1] if c.verdict.value in ("failed", "error")]
    over = [c for c in failed if c.duration > 60]
    if failed:
        slowest = sorted(failed, key=lambda c: -c.duration)
        print(
            f"  {len(failed)} failed or errored; {len(failed) - len(over)} within 60 s, {len(over)} over "
            f"(slowest {', '.join(f'{c.duration:.1f}' for c in slowest[:3])} s); "
            f"their sum {sum(c.duration for c in failed):.1f} s"
        )
        for case in slowest:  # each affected check's time to fail, slowest first
            print(f"    {case.duration:6.1f} s  {case.verdict.value:<7} {case.classname}::{case.name}")
    if clean:
        print(f"\n== ratio fault / clean: {faulty[0]:.1f} / {clean[0]:.1f} s = {faulty[0] / clean[0]:.2f}x (target 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
