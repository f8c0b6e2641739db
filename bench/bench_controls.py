"""Benchmark of the Linux controls (issue 11, "Speed"); prints figures, asserts nothing.

(a) Cost of the controls: a suite with its Linux controls (``-m networking``) against the Windows-only run
    (``-m "networking and not control"``): wall time of each and the ratio (target: at most 1.5x).
    On the local cluster the Windows nodes are simulated: every Windows data-plane item skips at the gate, so
    the Windows-only run is only the checks that need no data plane, and the ratio measures the whole cost of
    the controls (their pods, servers and dials) against that. The script says so, and adds what the ratio
    would at most be where the Windows nodes have a data plane, if each Windows item costs at least what its
    control costs (it does: the same body, Windows pods start slower).
(b) Parallel controls: ``-m control`` with ``-n 4`` against ``-n 1`` (target: at least 2.5x). xdist
    distributes by module (a control and its twin stay together), so the speed-up is bounded by the number of
    modules that have controls and by the machine's cores; both are printed.

Every run is a real pytest run of the suites against the cluster; the outcome counts are printed beside each
wall time (a ratio of runs whose controls skipped would mean nothing).

    python bench/bench_controls.py [--cluster-name bench-ctl | --kubeconfig PATH] [--runs 1] [--only a|b]
        [--suites suites/networking] [--marker networking] [--control-suites suites/networking]

Without --kubeconfig the local cluster ``--cluster-name`` is started (default topology: two real Linux workers) and
brought down at the end. Exits 0 whatever the figures (the reader judges), 10 when the cluster cannot start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.session.verdicts import TARGET_OS  # the user property naming the OS an item checks

REPO = Path(__file__).resolve().parents[1]
RATIO_TARGET, SPEEDUP_TARGET = 1.5, 2.5


@dataclass
class Run:
    """One pytest run: wall time, outcome counts (all items, and the controls among them), exit code."""

    wall: float
    exit_code: int
    outcomes: Counter = field(default_factory=Counter)
    controls: Counter = field(default_factory=Counter)
    modules: set[str] = field(default_factory=set)
    skipped_controls: list[str] = field(default_factory=list)

    def describe(self) -> str:
        def fmt(c: Counter) -> str:
            return ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "nothing"

        text = f"{self.wall:6.1f} s  [{sum(self.outcomes.values())} items: {fmt(self.outcomes)}"
        if self.controls:
            text += f"; controls: {fmt(self.controls)}"
        return text + f"; exit {self.exit_code}]"


def outcome(case: ET.Element) -> str:
    for child, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        if case.find(child) is not None:
            return name
    return "passed"


def is_control(case: ET.Element) -> bool:
    """A control: the item's ``os`` property is ``linux`` (the plugin records it); without properties, its id
    has ``linux`` among its parameters (``test_x[linux]``, ``test_x[linux-http]``)."""
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    if TARGET_OS in props:
        return props[TARGET_OS] == "linux"
    name = case.get("name", "")
    return "[" in name and "linux" in name[name.index("[") + 1 : -1].split("-")


def run_pytest(kubeconfig: str, paths: list[str], marker: str, *extra: str) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-controls-") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable, "-m", "pytest", *paths, "-m", marker, "-q", "-p", "no:randomly",
            "-p", "no:cacheprovider", "--kubeconfig", kubeconfig, "--results-dir", str(Path(tmp) / "results"),
            "--junitxml", str(junit), *extra,
        ]  # fmt: skip
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - start
        run = Run(wall, proc.returncode)
        if not junit.exists():
            print(f"  pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            return run
        for case in ET.parse(junit).getroot().iter("testcase"):
            what = outcome(case)
            run.outcomes[what] += 1
            if is_control(case):
                run.controls[what] += 1
                run.modules.add(case.get("classname", ""))  # the module (suite tests are functions)
                if what == "skipped":
                    skip = case.find("skipped")
                    reason = ((skip.get("message") if skip is not None else None) or "").split("\n")[0][:160]
                    run.skipped_controls.append(f"{case.get('name')}: {reason}")
        if run.outcomes.get("failed") or run.outcomes.get("error"):
            tail = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
            print("  " + "\n  ".join(tail[:10]), flush=True)
    for line in run.skipped_controls:
        print(f"  control skipped: {line}", flush=True)
    return run


def median_run(runs: list[Run]) -> float:
    return statistics.median(r.wall for r in runs)


def cost_of_controls(kubeconfig: str, args: argparse.Namespace) -> None:
    with_controls = f"{args.marker}"
    windows_only = f"{args.marker} and not control"
    both: list[Run] = []
    alone: list[Run] = []
    print(f"(a) {' '.join(args.suites)}: -m {with_controls!r} against -m {windows_only!r}", flush=True)
    for i in range(1, args.runs + 1):
        alone.append(run_pytest(kubeconfig, args.suites, windows_only))
        print(f"  run {i} Windows-only        {alone[-1].describe()}", flush=True)
        both.append(run_pytest(kubeconfig, args.suites, with_controls))
        print(f"  run {i} with Linux controls {both[-1].describe()}", flush=True)
    t_alone, t_both = median_run(alone), median_run(both)
    ratio = t_both / t_alone
    verdict = "within" if ratio <= RATIO_TARGET else "OVER"
    controls = sum(both[-1].controls.values())
    print(
        f"  with controls / Windows-only: {t_both:.1f} s / {t_alone:.1f} s = {ratio:.2f}x "
        f"(target at most {RATIO_TARGET}x: {verdict}); {controls} controls cost {t_both - t_alone:.1f} s",
        flush=True,
    )
    skipped_windows = alone[-1].outcomes.get("skipped", 0)
    print(
        f"  what this ratio measures here: {skipped_windows} of {sum(alone[-1].outcomes.values())} Windows items "
        "skipped (on the local cluster, at the data-plane gate: the Windows nodes are simulated), so the "
        "Windows-only run is the checks that need no data plane, and the ratio is the full cost of the "
        "controls against those.",
        flush=True,
    )
    # Where the Windows nodes have a data plane each Windows twin does at least its control's work:
    # windows-only >= t_alone + c and with-controls = windows-only + c, so the ratio is at most this.
    c = t_both - t_alone
    projected = (t_alone + 2 * c) / (t_alone + c) if t_alone + c > 0 else float("nan")
    print(
        f"  on a cluster whose Windows nodes have a data plane (each Windows item at least as costly as its "
        f"control): at most {projected:.2f}x",
        flush=True,
    )


def parallel_controls(kubeconfig: str, args: argparse.Namespace) -> None:
    print(f"(b) {' '.join(args.control_suites)}: -m control with -n 4 against -n 1", flush=True)
    ones: list[Run] = []
    fours: list[Run] = []
    for i in range(1, args.runs + 1):
        ones.append(run_pytest(kubeconfig, args.control_suites, "control", "-n", "1"))
        print(f"  run {i} -n 1 {ones[-1].describe()}", flush=True)
        fours.append(run_pytest(kubeconfig, args.control_suites, "control", "-n", "4"))
        print(f"  run {i} -n 4 {fours[-1].describe()}", flush=True)
    t1, t4 = median_run(ones), median_run(fours)
    speedup = t1 / t4
    verdict = "within" if speedup >= SPEEDUP_TARGET else "UNDER"
    modules = len(ones[-1].modules)
    print(
        f"  -n 1 / -n 4: {t1:.1f} s / {t4:.1f} s = {speedup:.2f}x (target at least {SPEEDUP_TARGET}x: {verdict}); "
        f"the controls are in {modules} module(s), distributed by module; this machine has {os.cpu_count()} "
        "cores, shared with the cluster it tests",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(
        parser,
        "--cluster-name",
        deprecated=("--name",),
        dest="name",
        default="bench-ctl",
        help="local cluster to start (without --kubeconfig)",
    )
    parser.add_argument("--kubeconfig", help="an existing cluster's kubeconfig (nothing is started or stopped)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each configuration (the median is used)")
    parser.add_argument("--only", choices=("a", "b"), help="run only part (a) or (b)")
    parser.add_argument("--suites", nargs="+", default=["suites/networking"])
    parser.add_argument("--marker", default="networking")
    parser.add_argument("--control-suites", nargs="+", default=["suites/networking"])
    args = parser.parse_args(argv)
    from wincon.commandline.errors import WinconError
    from wincon.localcluster import cluster

    kubeconfig = args.kubeconfig
    try:
        if not kubeconfig:
            cluster.down(args.name)
            start = time.monotonic()
            kubeconfig = str(cluster.up(args.name))
            print(f"cluster {args.name} up in {time.monotonic() - start:.1f} s", flush=True)
        if args.only in (None, "a"):
            cost_of_controls(kubeconfig, args)
        if args.only in (None, "b"):
            parallel_controls(kubeconfig, args)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    finally:
        if not args.kubeconfig:  # ours (also after a failed up: no orphans)
            cluster.down(args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
