"""Flake benchmark (issue 34, item 1): the suite's own false failures on a clean cluster; prints figures, asserts
nothing.

The checks chosen (default: the Linux controls of every suite, ``-m control``; ``--marker ""`` adds the Windows
checks, which on the local cluster run as far as its simulated Windows nodes let them: every Windows data-plane item
skips at the gate) run ``--runs`` times, one pytest run after another, against one clean cluster, while a second
pytest run of the same checks runs beside them as load (started again each time it ends, in its own results
directory and namespaces; its verdicts are not counted, only how many load runs there were and how they ended),
the two CPU-limit checks left out of it (``CPU_LIMIT_CHECKS``).

On a clean cluster a failure or an error of a check is the suite's own: printed per check are its runs (executions
that did not skip), its failures (failed or error) and each failure's first message line; checks that never failed
are counted, and listed only with ``--all``. For the whole: false failures per run and per thousand check
executions, and the checks that failed in every run apart (a failure in every run is no flake: the cluster's gap or
a real finding, to read).

    python bench/bench_flakes.py [--cluster-name bench-flakes | --kubeconfig PATH] [--runs 2] [--suites suites]
        [--marker control] [--no-load] [--all] [--timeout 3600] [--workers 0]

Without --kubeconfig the local cluster ``--cluster-name`` is started (default topology: two real Linux workers) and brought
down at the end (also after a failure or an interrupt). Each pytest run is bounded by ``--timeout`` seconds (killed
after it: its checks count as not run, and the script says so). Exits 0 whatever the figures (the reader judges), 10
when the cluster cannot start.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_controls import is_control, outcome  # noqa: E402 - the same JUnit reading as the controls' benchmark

from wincon.commandline.optionnames import add_option  # noqa: E402

MESSAGE_CHARS = 300  # a failure's message, first line, at most this long
MESSAGES_PER_CHECK = 5  # at most this many distinct messages printed per check


@dataclass
class Run:
    """One pytest run: its wall time, exit code, and each check's verdict and failure message (JUnit)."""

    wall: float
    exit_code: int
    verdicts: dict[str, str] = field(default_factory=dict)  # nodeid -> passed/failed/error/skipped
    messages: dict[str, str] = field(default_factory=dict)  # nodeid -> first line of its failure
    controls: set[str] = field(default_factory=set)
    timed_out: bool = False

    def describe(self) -> str:
        counts = Counter(self.verdicts.values())
        text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no report"
        late = "; killed at its timeout" if self.timed_out else ""
        return f"{self.wall:7.1f} s  [{text}; exit {self.exit_code}{late}]"


def nodeid(case: ET.Element) -> str:
    return f"{case.get('classname', '')}::{case.get('name', '')}"


def first_line(case: ET.Element) -> str:
    for tag in ("failure", "error"):
        found = case.find(tag)
        if found is not None:
            text = (found.get("message") or found.text or "").strip()
            return (text.splitlines() or [""])[0][:MESSAGE_CHARS]
    return ""


RUNNING: dict[str, subprocess.Popen[str]] = {}  # tag -> the pytest process under way (killed on an interrupt)


def kill(proc: subprocess.Popen[str]) -> None:
    """End a pytest run this script started: its own session (pytest and what it started), nothing else."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)


# The CPU-limit checks keep a limited pod and its unlimited twin busy and judge the limit only once the twin got
# 0.75 core. Here every node shares this machine's two cores: a load run's copy of them beside the measured run's
# starves both twins, and the measured check errs "the node could not show the limit matters" (run 1 at 86ee81d),
# an honest verdict for such a node that says nothing of the suite. On a real cluster the second run's pods go to
# another node (least_requested). The load run leaves them out; the measured runs keep them.
CPU_LIMIT_CHECKS = "cpu_limit_caps_a_busy_container or cpu_limit_in_either_spelling_holds_a_busy_pod_under_it"


def load_deselection(tag: str) -> list[str]:
    """The arguments that keep the load run off the CPU-limit checks; none for a measured run."""
    return ["-k", f"not ({CPU_LIMIT_CHECKS})"] if tag == "load" else []


def run_pytest(kubeconfig: str, args: argparse.Namespace, tag: str) -> Run:
    """One bounded pytest run of the chosen checks against the cluster, read back from its JUnit."""
    with tempfile.TemporaryDirectory(prefix=f"bench-flakes-{tag}-") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable, "-m", "pytest", *args.suites, "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "--kubeconfig", kubeconfig, "--results-dir", str(Path(tmp) / "results"), "--junitxml", str(junit),
        ]  # fmt: skip
        if args.marker:
            cmd += ["-m", args.marker]
        if args.workers:
            cmd += ["-n", str(args.workers)]  # as `wincon run` does (its default: 2)
        cmd += load_deselection(tag)
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)  # fmt: skip
        RUNNING[tag] = proc
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill(proc)
            out, _ = proc.communicate()
        finally:
            RUNNING.pop(tag, None)
        run = Run(time.monotonic() - start, proc.returncode, timed_out=timed_out)
        if not junit.exists():
            print(f"  [{tag}] pytest wrote no report (exit {proc.returncode}):\n{(out or '')[-1500:]}", flush=True)
            return run
        for case in ET.parse(junit).getroot().iter("testcase"):
            key = nodeid(case)
            run.verdicts[key] = outcome(case)
            if is_control(case):
                run.controls.add(key)
            if run.verdicts[key] in ("failed", "error"):
                run.messages[key] = first_line(case)
    return run


class Load:
    """The second run of the suite beside the measured ones: started again each time it ends, until stopped."""

    def __init__(self, kubeconfig: str, args: argparse.Namespace) -> None:
        self.kubeconfig, self.args = kubeconfig, args
        self.runs: list[Run] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="bench-flakes-load", daemon=True)

    def loop(self) -> None:
        while not self.stopping.is_set():
            self.runs.append(run_pytest(self.kubeconfig, self.args, "load"))
            print(f"  load run {len(self.runs)} {self.runs[-1].describe()}", flush=True)
            for key, message in sorted(self.runs[-1].messages.items()):  # not counted, but shown: what erred
                print(f"    {key}: {message}", flush=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, now: bool = False) -> None:
        """Let the load run under way finish (bounded by --timeout), so that it removes its own namespaces; with
        ``now`` (an interrupt, a failure), end it at once."""
        self.stopping.set()
        if now and "load" in RUNNING:
            kill(RUNNING["load"])
        self.thread.join(timeout=self.args.timeout + 60)


def report(runs: list[Run], load: Load | None, show_all: bool) -> None:
    executions: Counter[str] = Counter()
    failures: dict[str, list[str]] = {}
    controls: set[str] = set()
    for run in runs:
        controls |= run.controls
        for key, verdict in run.verdicts.items():
            if verdict == "skipped":
                continue
            executions[key] += 1
            if verdict in ("failed", "error"):
                failures.setdefault(key, []).append(f"{verdict}: {run.messages.get(key, '')}")
    print(f"\nper check (runs = executions that did not skip; {len(runs)} measured runs):", flush=True)
    for key in sorted(executions, key=lambda k: (-len(failures.get(k, [])), k)):
        failed = failures.get(key, [])
        if not failed and not show_all:
            continue
        kind = "control" if key in controls else "windows"
        print(f"  {executions[key]:3d} runs  {len(failed):3d} failures  [{kind}] {key}", flush=True)
        for message in list(dict.fromkeys(failed))[:MESSAGES_PER_CHECK]:
            print(f"        {message}", flush=True)
    clean = sum(1 for k in executions if k not in failures)
    print(f"  ... {clean} checks never failed" + ("" if show_all else " (--all lists them)"), flush=True)
    for kind, keys in (("controls", controls), ("Windows checks", set(executions) - controls)):
        ran = sum(executions[k] for k in keys)
        failed = sum(len(failures.get(k, [])) for k in keys)
        always = sorted(k for k in keys if len(failures.get(k, [])) == executions[k] == len(runs))
        flaky = sum(len(failures.get(k, [])) for k in keys if k not in always)
        per_run = failed / len(runs) if runs else 0.0
        per_thousand = 1000 * failed / ran if ran else 0.0
        print(
            f"{kind}: {ran} executions of {len(keys)} checks; {failed} failures = {per_run:.2f} per run, "
            f"{per_thousand:.1f} per 1000 executions; of them {flaky} in checks that also passed (flakes) and "
            f"{failed - flaky} in {len(always)} checks that failed in every run",
            flush=True,
        )
        for key in always:
            print(f"  failed in every run: {key}", flush=True)
    timed_out = sum(1 for r in runs if r.timed_out)
    if timed_out:
        print(f"{timed_out} measured run(s) killed at --timeout: their unreported checks are not counted", flush=True)
    if load is not None:
        ends = Counter("timed out" if r.timed_out else f"exit {r.exit_code}" for r in load.runs)
        print(
            f"load: {len(load.runs)} run(s) of the same checks beside them ({', '.join(f'{n} {k}' for k, n in ends.items())})",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(
        parser,
        "--cluster-name",
        deprecated=("--name",),
        dest="name",
        default="bench-flakes",
        help="local cluster to start (without --kubeconfig)",
    )
    parser.add_argument("--kubeconfig", help="an existing cluster's kubeconfig (nothing is started or stopped)")
    parser.add_argument("--runs", type=int, default=2, help="measured runs of the checks, one after another")
    parser.add_argument("--suites", nargs="+", default=["suites"])
    parser.add_argument("--marker", default="control", help='pytest -m expression ("": every check)')
    parser.add_argument("--no-load", action="store_true", help="no second run beside the measured ones")
    parser.add_argument("--all", action="store_true", help="list the checks that never failed too")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one pytest run may take")
    parser.add_argument(
        "--workers", type=int, default=0, help="pytest-xdist workers of each run, measured and load (0: one process)"
    )
    args = parser.parse_args(argv)
    from wincon.commandline.errors import WinconError
    from wincon.localcluster import cluster

    kubeconfig = args.kubeconfig
    load: Load | None = None
    runs: list[Run] = []
    try:
        if not kubeconfig:
            cluster.down(args.name)
            start = time.monotonic()
            kubeconfig = str(cluster.up(args.name))
            print(f"cluster {args.name} up in {time.monotonic() - start:.1f} s", flush=True)
        print(
            f"{args.runs} run(s) of {' '.join(args.suites)} -m {args.marker!r}"
            + (f" with {args.workers} xdist workers" if args.workers else "")
            + ("" if args.no_load else ", a second run of the same beside them as load"),
            flush=True,
        )
        if not args.no_load:
            load = Load(kubeconfig, args)
            load.start()
        for i in range(1, args.runs + 1):
            runs.append(run_pytest(kubeconfig, args, f"run{i}"))
            print(f"  run {i} {runs[-1].describe()}", flush=True)
        if load is not None:  # on our own cluster, brought down next, the load run under way is ended at once
            load.stop(now=not args.kubeconfig)
        report(runs, load, args.all)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    finally:
        for proc in list(RUNNING.values()):  # an interrupt or a failure: nothing of ours left running
            kill(proc)
        if load is not None:
            load.stop(now=True)
        if not args.kubeconfig:  # ours (also after a failed up: no orphans)
            cluster.down(args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
