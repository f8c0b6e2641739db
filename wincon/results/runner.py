"""`wincon run`: the main job. Run the suites with the defaults a user wants, then show the results.

1. with ``--local``, start the local simulated cluster (or reuse it) and use its kubeconfig;
2. ``pytest suites/ -n 2 --results-dir results/<run-id> --alluredir results/<run-id>/allure-results``
   plus whatever follows ``--``;
3. build the history dashboard (every run next to this one) and this run's Allure report, inside the
   run's directory, and print where they are;
4. exit with pytest's exit code (5, nothing collected, stays an error).

Ctrl-C and SIGTERM reach pytest once, as SIGINT, so it finishes in order: namespaces cleaned, the
results marked ABORTED. If pytest dies without finishing (SIGKILL, OOM killer), this process marks the
run ABORTED itself, so the directory is never left half-written.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from wincon.errors import ExitCode, WinconError
from wincon.results import dashboard, report
from wincon.results.plugin import write_finished

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_WORKERS = 2


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


def pytest_command(
    results_dir: Path,
    run_id: str,
    pytest_args: list[str],
    workers: int = DEFAULT_WORKERS,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> list[str]:
    command = [sys.executable, "-m", "pytest"]
    if not _gives_paths(pytest_args):
        command.append(str(REPO / "suites"))
    if workers > 0 and not _has_option(pytest_args, "-n", "--numprocesses"):
        command += ["-n", str(workers)]
    command += ["--results-dir", str(results_dir), "--run-id", run_id]
    if not _has_option(pytest_args, "--alluredir"):
        command += ["--alluredir", str(results_dir / "allure-results")]
    if kubeconfig:
        command += ["--kubeconfig", kubeconfig]
    if context:
        command += ["--context", context]
    return command + pytest_args


def _run_pytest(command: list[str]) -> int:
    """Run pytest in its own session; our SIGINT/SIGTERM reach it exactly once, as SIGINT."""
    proc = subprocess.Popen(command, start_new_session=True)
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
        kubeconfig = str(up(name=cluster_name or "wincon"))
    command = pytest_command(results_dir, run_id, pytest_args, workers, kubeconfig, context)
    print("wincon: " + " ".join(command), file=sys.stderr)
    returncode = _run_pytest(command)
    if close_aborted(results_dir, returncode):
        print(f"wincon: pytest did not finish ({returncode}); {results_dir} marked ABORTED", file=sys.stderr)
    exit_code = int(ExitCode.INTERRUPTED) if returncode < 0 else returncode
    if returncode == ExitCode.NO_TESTS:
        print("wincon: error: pytest collected no tests: a selection that matches nothing is an error", file=sys.stderr)
    if reports and (results_dir / "finished.json").exists():
        show_results(results_dir)
    elif not (results_dir / "started.json").exists():
        print(f"wincon: pytest wrote no results to {results_dir} (exit {returncode})", file=sys.stderr)
    return exit_code


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
