"""`wincon run`: the main job. Run the suites with the defaults a user wants, then show the results.

1. with ``--local``, start the local simulated cluster (or reuse it) and use its kubeconfig;
2. ``pytest suites/ -n 2 -m "not (serial or disruptive)" --results-dir results/<run-id> --alluredir
   results/<run-id>/allure-results`` plus whatever follows ``--`` (a ``-m`` of the user's is combined);
3. then the serial and disruptive tests in a phase of their own, one at a time (no xdist), into the same
   results: their JUnit file joins the first one (``..._02.xml``), their Allure results the same
   directory, and ``finished.json`` says how both phases ended;
4. build the history dashboard (every run next to this one) and this run's Allure report, inside the
   run's directory, and print where they are;
5. end with one summary line computed from the results: the Windows checks' verdicts and the Linux
   controls' figure (``controls: N passed / M run``);
6. exit with the phases' combined exit code (5, nothing collected in either phase, stays an error).

Ctrl-C and SIGTERM reach pytest once, as SIGINT, so it finishes in order: namespaces cleaned, the
results marked ABORTED. If pytest dies without finishing (SIGKILL, OOM killer), this process marks the
run ABORTED itself, so the directory is never left half-written.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from wincon.commandline.errors import ExitCode, WinconError
from wincon.results import artifacts, dashboard, execution, podwaits, report
from wincon.results.plugin import write_finished

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_WORKERS = 2
SERIAL = "serial or disruptive"  # tests that must not share the cluster with others: a phase of their own
# Exit codes after which the serial phase still runs: the first phase ran (or had nothing to run).
PHASE_CONTINUES = frozenset({ExitCode.OK, ExitCode.TESTS_FAILED, ExitCode.INFRASTRUCTURE, ExitCode.NO_TESTS})


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _gives_paths(pytest_args: list[str]) -> bool:
    """Whether the pass-through arguments name tests themselves (then suites/ is not added)."""
    for arg in pytest_args:
        if arg.startswith("-"):
            continue
        if "::" in arg or Path(arg.split("::", 1)[0]).exists():
            return True
    return False


def _has_option(pytest_args: list[str], *names: str) -> bool:
    return any(
        arg == name or arg.startswith(name + "=") or (name == "-n" and arg.startswith("-n") and arg[2:].isdigit())
        for arg in pytest_args
        for name in names
    )


def _split_marker(pytest_args: list[str]) -> tuple[str | None, list[str]]:
    """The user's ``-m`` expression (``-m X``, ``-m=X``, ``-mX``, ``--markexpr``) and the other arguments."""
    expr, rest, i = None, [], 0
    while i < len(pytest_args):
        arg = pytest_args[i]
        if arg in ("-m", "--markexpr") and i + 1 < len(pytest_args):
            expr, i = pytest_args[i + 1], i + 2
            continue
        if arg.startswith("--markexpr="):
            expr = arg.split("=", 1)[1]
        elif arg.startswith("-m") and len(arg) > 2 and arg != "-m":
            expr = arg[2:].removeprefix("=")
        else:
            rest.append(arg)
        i += 1
    return expr, rest


def phase_args(pytest_args: list[str], serial: bool) -> list[str]:
    """The pass-through arguments of one phase: the user's ``-m`` combined with the phase's selection;
    the serial phase also drops ``-n``/``--numprocesses`` (its tests run one at a time)."""
    expr, rest = _split_marker(pytest_args)
    phase = f"({SERIAL})" if serial else f"not ({SERIAL})"
    if serial:
        kept, skip = [], False
        for arg in rest:
            if skip:
                skip = False
                continue
            if arg in ("-n", "--numprocesses"):
                skip = True
                continue
            if arg.startswith("--numprocesses=") or (arg.startswith("-n") and arg[2:].isdigit()):
                continue
            kept.append(arg)
        rest = kept + ["-n", "0"]  # xdist stays loaded (the plugin implements its hooks), with no workers
    return rest + ["-m", f"({expr}) and {phase}" if expr else phase]


def pytest_command(
    results_dir: Path,
    run_id: str,
    pytest_args: list[str],
    workers: int = DEFAULT_WORKERS,
    kubeconfig: str | None = None,
    context: str | None = None,
    alluredir: Path | None = None,
) -> list[str]:
    command = [sys.executable, "-m", "pytest"]
    if not _gives_paths(pytest_args):
        command.append(str(REPO / "suites"))
    if workers > 0 and not _has_option(pytest_args, "-n", "--numprocesses"):
        command += ["-n", str(workers)]
        if not _has_option(pytest_args, "--dist"):
            # An idle worker takes tests queued on a busy one: with pods that take tens of seconds to start
            # (Windows nodes), xdist's default `load` left one worker a chain of them while others idled (issue 22).
            command += ["--dist", "worksteal"]
    command += ["--results-dir", str(results_dir), "--run-id", run_id]
    if not _has_option(pytest_args, "--alluredir"):
        command += ["--alluredir", str(alluredir or results_dir / "allure-results")]
    if kubeconfig:
        command += ["--kubeconfig", kubeconfig]
    if context:
        command += ["--context", context]
    return command + pytest_args


def _run_pytest(command: list[str]) -> int:
    """Run pytest in its own session; our SIGINT/SIGTERM reach it exactly once, as SIGINT. Our death (SIGKILL) ends
    it and its workers (wincon.session.context.die_with_parent: it learns our pid from WINCON_PARENT_PID)."""
    env = {**os.environ, "WINCON_PARENT_PID": str(os.getpid())}
    proc = subprocess.Popen(command, start_new_session=True, env=env)
    forwarded = {"count": 0}

    def forward(signum: int, frame: Any) -> None:
        forwarded["count"] += 1
        # Once: an orderly stop. Again: pytest's own second-interrupt handling stops it harder.
        proc.send_signal(signal.SIGINT)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # pragma: no cover - the handler above replaces the default
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def close_aborted(results_dir: Path, returncode: int) -> bool:
    """Mark a run that pytest could not finish (killed) as ABORTED; True when this was needed."""
    started = results_dir / "started.json"
    if not started.is_file() or (results_dir / "finished.json").exists():
        return False
    try:
        metadata = json.loads(started.read_text()).get("metadata", {})
    except (OSError, ValueError):
        metadata = {}
    cause = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit {returncode}"
    write_finished(
        results_dir,
        passed=False,
        result="ABORTED",
        metadata={**{k: str(v) for k, v in metadata.items()}, "pytest-exit-code": cause},
    )
    return True


def run(
    results_dir: Path | None,
    pytest_args: list[str],
    local: bool = False,
    cluster_name: str | None = None,
    kubernetes_version: str | None = None,
    workers: int = DEFAULT_WORKERS,
    kubeconfig: str | None = None,
    context: str | None = None,
    reports: bool = True,
) -> int:
    if pytest_args and pytest_args[0] == "--":
        pytest_args = pytest_args[1:]
    run_id = new_run_id()
    results_dir = (Path(results_dir) if results_dir else Path.cwd() / "results" / run_id).resolve()
    if (results_dir / "started.json").exists():
        raise WinconError(
            f"{results_dir} already holds a run (started.json exists)",
            "pass a new --results-dir, or leave it out to get results/<run-id>",
        )
    if local:
        from wincon.localcluster.cluster import up

        print(f"wincon: starting (or reusing) the local cluster {cluster_name or 'wincon'}...", file=sys.stderr)
        kubeconfig = str(up(name=cluster_name or "wincon", kubernetes_version=kubernetes_version))
    command = pytest_command(results_dir, run_id, phase_args(pytest_args, serial=False), workers, kubeconfig, context)
    ledger = results_dir / "artifacts" / podwaits.LEDGER_NAME
    previous_ledger = os.environ.get(podwaits.LEDGER_ENV)
    os.environ[podwaits.LEDGER_ENV] = str(ledger)  # both phases' pytest (and its workers) record their pod waits
    start = time.monotonic()
    try:
        print("wincon: parallel phase: " + " ".join(command), file=sys.stderr)
        returncode = _run_pytest(command)
        if close_aborted(results_dir, returncode):
            print(f"wincon: pytest did not finish ({returncode}); {results_dir} marked ABORTED", file=sys.stderr)
        if returncode in PHASE_CONTINUES:
            returncode = run_serial_phase(results_dir, run_id, pytest_args, returncode, kubeconfig, context)
    finally:
        if previous_ledger is None:
            os.environ.pop(podwaits.LEDGER_ENV, None)
        else:
            os.environ[podwaits.LEDGER_ENV] = previous_ledger
    record_figures(results_dir, time.monotonic() - start)
    exit_code = int(ExitCode.INTERRUPTED) if returncode < 0 else returncode
    exit_code = judge_execution(results_dir, exit_code)
    if returncode == ExitCode.NO_TESTS:
        print("wincon: error: pytest collected no tests: a selection that matches nothing is an error", file=sys.stderr)
    if reports and (results_dir / "finished.json").exists():
        show_results(results_dir)
    elif not (results_dir / "started.json").exists():
        print(f"wincon: pytest wrote no results to {results_dir} (exit {returncode})", file=sys.stderr)
    if (results_dir / "finished.json").exists():
        print_summary(results_dir, exit_code)
    if local:
        print(left_running(cluster_name or "wincon"), file=sys.stderr)
    return exit_code


def left_running(name: str) -> str:
    """The last word of a ``--local`` run: the cluster stays up for the next run, and how to stop it."""
    return (
        f"wincon: the local cluster {name} is left running for the next run (it reuses it); "
        f"stop it with: {sys.executable} -m wincon cluster down --cluster-name {name}"  # the interpreter that runs wincon
    )


def record_figures(results_dir: Path, wall_seconds: float) -> dict[str, Any] | None:
    """Add the run's wall time (both phases) and its pod waits (``podwaits``) to finished.json's metadata,
    and print them; None (nothing written) when the run has no finished.json."""
    finished_path = results_dir / "finished.json"
    if not finished_path.is_file():
        return None
    finished = _read_finished(results_dir)
    figures = podwaits.summary(podwaits.load(results_dir / "artifacts" / podwaits.LEDGER_NAME), wall_seconds)
    metadata = {**finished.get("metadata", {}), **podwaits.metadata(figures)}
    write_finished(
        results_dir,
        passed=bool(finished.get("passed")),
        result=str(finished.get("result", "ABORTED")),
        metadata=metadata,
    )
    print(
        f"wincon: wall time {wall_seconds:.0f} s; pods waited for: {figures['pods']} "
        f"({figures['windows_pods']} Windows, {figures['linux_pods']} Linux); some pod awaited during "
        f"{figures['wait_seconds']:.0f} s ({figures['share']:.0%}); longest chain of waits {figures['critical_path_seconds']:.0f} s",
        file=sys.stderr,
    )
    return figures


# The exit codes a lie could hide behind: green (0), and infrastructure (3) where the run blames the cluster.
LIE_HIDES_IN = (ExitCode.OK, ExitCode.INFRASTRUCTURE)


def judge_execution(results_dir: Path, exit_code: int) -> int:
    """Where the run's Windows checks executed (wincon.results.execution), over both phases: recorded in
    finished.json (``windows-execution``) and printed. A cluster with real Windows nodes on which none of the
    Windows checks executed, or a check that asked for Hyper-V and observed process isolation, makes an
    otherwise green (or infrastructure-only) run exit 1, and finished.json says FAILURE. A cluster whose Windows
    nodes are all simulated keeps its exit code; the line printed says that no Windows node was real."""
    if not (results_dir / "finished.json").is_file():
        return exit_code
    try:
        run = artifacts.load_run(results_dir)
    except WinconError as exc:
        print(exc.render().replace("error:", "warning: execution record:", 1), file=sys.stderr)
        return exit_code
    found = execution.record(run.cases, run.profile or None)
    problems = found.problems()
    finished = _read_finished(results_dir)
    metadata = {**finished.get("metadata", {}), execution.METADATA_KEY: found.to_metadata()}
    passed, result = bool(finished.get("passed")), str(finished.get("result", "ABORTED"))
    if problems and exit_code in LIE_HIDES_IN:
        for problem in problems:
            print(f"wincon run: error: {problem}", file=sys.stderr)
        exit_code, passed, result = int(ExitCode.TESTS_FAILED), False, "FAILURE"
        metadata["wincon-exit-code"] = f"{exit_code}: " + "; ".join(problems)
    write_finished(results_dir, passed=passed, result=result, metadata=metadata)
    return exit_code


def print_summary(results_dir: Path, exit_code: int) -> None:
    """The run's last line, from its results (both phases): the Windows verdicts and the controls' figure."""
    try:
        cases = artifacts.load_run(results_dir).cases
    except WinconError as exc:
        print(exc.render().replace("error:", "warning: summary:", 1), file=sys.stderr)
        return
    recorded = _read_finished(results_dir).get("metadata", {}).get(execution.METADATA_KEY) or {}
    where = f"; {recorded['summary']}" if isinstance(recorded, dict) and recorded.get("summary") else ""
    print(f"wincon run: {report.summary_line(cases)}{where}; exit {exit_code}", flush=True)


def run_serial_phase(
    results_dir: Path,
    run_id: str,
    pytest_args: list[str],
    first: int,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> int:
    """Run the serial and disruptive tests one at a time, into a scratch directory merged into the run's."""
    scratch = results_dir.parent / f".{results_dir.name}-serial"
    shutil.rmtree(scratch, ignore_errors=True)
    command = pytest_command(
        scratch,
        run_id,
        phase_args(pytest_args, serial=True),
        0,
        kubeconfig,
        context,
        alluredir=results_dir / "allure-results",
    )
    print("wincon: serial phase: " + " ".join(command), file=sys.stderr)
    second = _run_pytest(command)
    close_aborted(scratch, second)
    try:
        merge_phase(results_dir, scratch, first, second)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return combine_exit_codes(first, second)


def combine_exit_codes(first: int, second: int) -> int:
    """One exit code for two phases: an interruption first, then failures, infrastructure errors, the
    other errors; 5 (nothing collected) only when neither phase collected anything."""
    codes = [first, second]
    if any(c < 0 for c in codes):
        return min(codes)
    for wanted in (ExitCode.INTERRUPTED, ExitCode.TESTS_FAILED, ExitCode.INFRASTRUCTURE):
        if wanted in codes:
            return int(wanted)
    others = [c for c in codes if c not in (ExitCode.OK, ExitCode.NO_TESTS)]
    if others:
        return max(others)
    return int(ExitCode.NO_TESTS) if all(c == ExitCode.NO_TESTS for c in codes) else int(ExitCode.OK)


def merge_phase(results_dir: Path, scratch: Path, first: int, second: int) -> None:
    """Fold the serial phase's results directory into the run's: JUnit as ``..._02.xml``, the build log
    appended, ``finished.json`` for both phases. A phase that wrote nothing leaves the other as it is."""
    if second == ExitCode.NO_TESTS or not (scratch / "started.json").is_file():
        return  # no serial or disruptive test selected: the first phase's results stand as they are
    if not (results_dir / "started.json").is_file():
        shutil.copytree(scratch, results_dir, dirs_exist_ok=True)
        return
    artifacts_dir = results_dir / "artifacts"
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    for index, junit_file in enumerate(sorted((scratch / "artifacts").glob("junit*.xml")), start=2):
        stem = junit_file.name.rsplit("_", 1)[0]
        shutil.copyfile(junit_file, artifacts_dir / f"{stem}_{index:02d}.xml")
    log = scratch / "build-log.txt"
    if log.is_file():
        with (results_dir / "build-log.txt").open("a") as out:
            out.write("\n--- serial phase (serial and disruptive tests, one at a time) ---\n" + log.read_text())
    finished = [_read_finished(results_dir), _read_finished(scratch)]
    results = [f.get("result", "ABORTED") for f in finished]
    result = next((r for r in ("ABORTED", "FAILURE") if r in results), "SUCCESS")
    if first == ExitCode.NO_TESTS:
        result = results[1]
    metadata = {**finished[0].get("metadata", {})}
    verdicts: dict[str, int] = {}
    for f in finished:
        for verdict, number in (f.get("metadata", {}).get("verdicts") or {}).items():
            verdicts[verdict] = verdicts.get(verdict, 0) + int(number)
    metadata["verdicts"] = {k: str(v) for k, v in verdicts.items()}
    controls: dict[str, int] = {}
    for f in finished:
        for key, number in (f.get("metadata", {}).get("controls") or {}).items():
            controls[key] = controls.get(key, 0) + int(number)
    if controls:
        metadata["controls"] = {k: str(v) for k, v in controls.items()}
    metadata["pytest-exit-code"] = f"parallel phase {first}, serial phase {second}"
    write_finished(results_dir, passed=result == "SUCCESS", result=result, metadata=metadata)


def _read_finished(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / "finished.json").read_text())
    except (OSError, ValueError):
        return {"result": "ABORTED"}
    return data if isinstance(data, dict) else {"result": "ABORTED"}


def show_results(results_dir: Path) -> None:
    """The dashboard of every run beside this one, and this run's Allure report; problems are warnings."""
    try:
        index, errors, shown = dashboard.build([results_dir.parent], results_dir / "dashboard", stream=sys.stderr)
        note = f" ({len(errors)} unreadable runs left out, see above)" if errors else ""
        print(f"dashboard ({shown} runs{note}): {index}")
    except WinconError as exc:
        print(exc.render().replace("error:", "warning: dashboard:", 1), file=sys.stderr)
    if any((results_dir / "allure-results").glob("*-result.json")):
        try:
            print(f"allure report: {report.generate(results_dir)}")
        except WinconError as exc:
            print(exc.render().replace("error:", "warning: allure report:", 1), file=sys.stderr)
    print(f"results: {results_dir}")
