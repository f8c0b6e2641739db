"""Commands over run results: run, report, publish, dashboard, gate."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from wincon.commandline.errors import ExitCode, UsageError
from wincon.documents import releases


def register(subparsers: Any) -> None:
    from wincon.cli import add_cluster_options
    from wincon.commandline.optionnames import add_option

    run = subparsers.add_parser(
        "run",
        help="run the suites (parallel, with results, Allure and a dashboard)",
        description="Run the conformance suites: pytest suites/ -n 2 without the serial and disruptive "
        "tests, then those one at a time in a phase of their own, into one results directory with Allure "
        "results; then build the dashboard and the Allure report of the run and print where they are. "
        "Arguments after -- go to pytest (a -m is combined with each phase's selection). Exits with the "
        "phases' combined exit code.",
    )
    run.add_argument(
        "--local", action="store_true", help="run against the local simulated cluster, starting it if needed"
    )
    run.add_argument("--cluster-name", help="name of the local cluster (default: wincon)")
    run.add_argument(
        "--kubernetes-version",
        metavar="MINOR",
        help="with --local: the Kubernetes release of the local cluster (`wincon cluster up --help` lists them)",
    )
    run.add_argument("--results-dir", type=Path, help="where this run's results go (default: results/<run-id>)")
    run.add_argument("-n", "--workers", type=int, default=2, help="parallel pytest workers (default 2; 0: none)")
    run.add_argument("--no-report", action="store_true", help="skip the dashboard and the Allure report")
    run.add_argument(
        "--allow-disruptive",
        action="store_true",
        help="also run the checks marked disruptive (they reboot, shut down, page or taint a Windows node); "
        "without it they are skipped with that reason. Only on a cluster you may disrupt",
    )
    run.add_argument(
        "--image-pull-secret",
        metavar="[NAMESPACE/]NAME",
        help="a kubernetes.io/dockerconfigjson secret (namespace default unless named): every pod of the run names "
        "it, each test namespace gets a copy, and the image preflight reads the registries with it",
    )
    add_cluster_options(run)
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then arguments for pytest")
    run.set_defaults(func=cmd_run)

    rep = subparsers.add_parser(
        "report",
        help="print a run's checks (Windows and Linux control side by side); generate its Allure report",
        description="Print one row per check of the run: its Windows verdict and its Linux control's verdict "
        "in the same run ('no control' where it has none), then a summary line with the controls' figure "
        "(controls: N passed / M run). Then generate RESULTS/allure-report/index.html from "
        "RESULTS/allure-results with the Allure CLI installed by `npm ci` (node_modules/.bin/allure; needs "
        "Java 17).",
    )
    rep.add_argument("results", type=Path, help="a run's results directory (or an allure-results directory)")
    rep.add_argument("-o", "--output", type=Path, help="report directory (default: RESULTS/allure-report)")
    rep.add_argument("--no-html", action="store_true", help="print the table only; no Allure report")
    rep.add_argument(
        "--json",
        action="store_true",
        help="print the checks as JSON instead of the table (the Allure report's path then goes to stderr)",
    )
    rep.set_defaults(func=cmd_report)

    pub = subparsers.add_parser(
        "publish",
        help="upload a run to a directory, gs://bucket/logs/<job>, or an allure-docker-service",
        description="Publish a finished run. DEST: a directory (run goes to DEST/<build-id>/), "
        "gs://BUCKET/logs/JOB (TestGrid layout; Google application default credentials), or the URL of an "
        "allure-docker-service (credentials from WINCON_ALLURE_USER / WINCON_ALLURE_PASSWORD). Re-running "
        "skips what is already there, so a failed publish is finished by running it again.",
    )
    pub.add_argument("results", type=Path, help="a run's results directory")
    pub.add_argument("--to", dest="dest", required=True, help="DIR, gs://BUCKET/logs/JOB or http(s)://HOST[:PORT]")
    pub.add_argument("--project", default="wincon", help="allure-docker-service project id (default: wincon)")
    pub.add_argument("--retries", type=int, default=5, help="attempts per file on transient errors (default 5)")
    pub.add_argument("--backoff", type=float, default=1.0, help="seconds before the first retry, doubling (default 1)")
    pub.set_defaults(func=cmd_publish)

    dash = subparsers.add_parser(
        "dashboard",
        help="build a static history page (grid, areas, limitations, profiles) from runs",
        description="Build a static site from any number of runs: a TestGrid-like grid, pass rates per area, "
        "where each limitation still shows or appears lifted, and each run's cluster profile. RESULTS are run "
        "directories or directories of runs. Unreadable runs are named and left out (exit 8); the rest are shown.",
    )
    dash.add_argument("results", type=Path, nargs="+", help="run directories, or directories holding runs")
    dash.add_argument("-o", "--output", type=Path, required=True, help="site directory (index.html goes there)")
    dash.set_defaults(func=cmd_dashboard)

    gate = subparsers.add_parser(
        "gate",
        help="release gate: did every required test of this Kubernetes minor pass?",
        description="Judge a run against gating/required.yaml. Exits 11 when a required test failed, errored, "
        "was skipped or is missing; lists unexpected passes as limitations to review. With --validate, check "
        "that every required id is a suite test.",
    )
    gate.add_argument("results", type=Path, nargs="?", help="a run's results directory")
    add_option(
        gate,
        "--kubernetes-version",
        deprecated=["--k8s-version"],
        metavar="X.Y",
        help="judge against this minor instead of the run's own version",
    )
    gate.add_argument("--required", type=Path, help="the required list (default: gating/required.yaml)")
    gate.add_argument("--validate", action="store_true", help="check the required ids against the collected suites")
    gate.add_argument("--json", action="store_true", help="print the verdict as JSON (the exit code is the same)")
    gate.set_defaults(func=cmd_gate)


def cmd_run(args: argparse.Namespace) -> int:
    from wincon.results.runner import run

    if args.kubernetes_version and not args.local:
        raise UsageError(
            "--kubernetes-version picks the local cluster's release and needs --local",
            "add --local, or leave --kubernetes-version out to run against the cluster your kubeconfig names",
        )
    pytest_args = list(args.pytest_args or [])
    if args.allow_disruptive:  # the plugin's own option, in both phases (only the serial one selects them)
        pytest_args.append("--allow-disruptive")
    if args.image_pull_secret:  # the plugin's own option, in both phases
        pytest_args += ["--image-pull-secret", args.image_pull_secret]
    if getattr(args, "quiet", False):  # pytest's quietest: no per-test lines, failures still shown
        pytest_args.append("-qq")
    elif getattr(args, "verbose", 0):  # pytest's own -v: one line per test with its outcome
        pytest_args.append("-" + "v" * args.verbose)
    return run(
        args.results_dir,
        pytest_args,
        local=args.local,
        cluster_name=args.cluster_name,
        # the one place `wincon run --local` reads $WINCON_KUBERNETES_VERSION; passed down to the cluster's start
        kubernetes_version=releases.requested(args.kubernetes_version, os.environ) if args.local else None,
        workers=args.workers,
        kubeconfig=args.kubeconfig,
        context=args.context,
        reports=not args.no_report,
    )


def cmd_report(args: argparse.Namespace) -> int:
    from wincon.results.artifacts import is_run_dir, load_run
    from wincon.results.report import generate, table

    if args.json:
        print(json.dumps(report_json(load_run(args.results).cases), indent=1))
    elif is_run_dir(args.results) or args.no_html:
        print(table(load_run(args.results).cases, width=0))
    if not args.no_html:
        print(f"allure report: {generate(args.results, args.output)}", file=sys.stderr if args.json else sys.stdout)
    return ExitCode.OK


def report_json(cases: list[Any]) -> dict[str, Any]:
    """`wincon report --json`: one entry per check (the table's rows, with the Windows case's message and test
    id), the controls' figures and the summary line."""
    from wincon.results.model import control_counts, pair
    from wincon.results.report import summary_line

    checks = []
    for check in pair(cases):
        windows, case = check.windows, check.windows or check.control
        checks.append(
            {
                "check": check.name,
                "test_id": windows.test_id if windows is not None else None,
                "area": case.area if case is not None else "",
                "windows": windows.verdict.value if windows is not None else None,
                "message": windows.message if windows is not None else "",
                "linux_control": check.control_verdict,
                "cluster_wide": check.cluster_wide,
            }
        )
    return {"checks": checks, "controls": control_counts(cases), "summary": summary_line(cases)}


def cmd_publish(args: argparse.Namespace) -> int:
    from wincon.results.publish import RetryPolicy, publish

    if args.retries < 1 or args.backoff < 0:
        raise UsageError("--retries must be at least 1 and --backoff not negative", "e.g. --retries 5 --backoff 1")
    summary = publish(args.results, args.dest, RetryPolicy(attempts=args.retries, backoff=args.backoff), args.project)
    print(summary.render())
    return ExitCode.OK


def cmd_dashboard(args: argparse.Namespace) -> int:
    from wincon.results.dashboard import build

    index, errors, shown = build(args.results, args.output, stream=sys.stderr)
    print(f"dashboard: {index} ({shown} runs" + (f", {len(errors)} left out" if errors else "") + ")")
    if errors:
        return ExitCode.RESULTS
    if shown == 0:
        print("wincon: error: no runs to show", file=sys.stderr)
        return ExitCode.RESULTS
    return ExitCode.OK


def cmd_gate(args: argparse.Namespace) -> int:
    from wincon.results.artifacts import load_run
    from wincon.results.gate import collect_suite_ids, judge, load_required, minor_of, validate_against_suite

    required = load_required(args.required)
    if args.validate:
        suite_ids = collect_suite_ids()
        if not suite_ids:
            raise UsageError("no suite test carries a test_id: nothing to validate against", "write the suites first")
        problems = validate_against_suite(required, suite_ids)
        for line in problems:
            print(f"gate: {line}")
        distinct = {test_id for tests in required.versions.values() for test_id in tests}
        print(
            f"gate: {len(distinct)} required tests over {len(required.versions)} Kubernetes minors, "
            f"{len(suite_ids)} suite tests collected: {len(problems)} problems"
        )
        return ExitCode.USAGE if problems else ExitCode.OK
    if args.results is None:
        raise UsageError("wincon gate needs a results directory (or --validate)", "wincon gate results/<run-id>")
    minor = None
    if args.kubernetes_version:
        minor = minor_of(args.kubernetes_version)
        if not minor:
            raise UsageError(
                f"--kubernetes-version {args.kubernetes_version!r} is not X.Y", "e.g. --kubernetes-version 1.34"
            )
    result = judge(load_run(args.results), required, minor)
    print(json.dumps(result.to_dict(), indent=1) if args.json else result.render())
    return ExitCode.OK if result.ok else ExitCode.GATE
