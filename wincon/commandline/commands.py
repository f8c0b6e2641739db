"""Core commands: profile, limitations, lint, cleanup, prepull, plan."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from wincon.cli import add_cluster_options
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import ExitCode, InfrastructureError, KubeconfigError, UsageError, WinconError
from wincon.commandline.optionnames import add_option
from wincon.documents import limitations as limitations_mod
from wincon.windows import forms

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"


def register(sub: Any) -> None:
    p = sub.add_parser("profile", help="show the cluster profile (versions, Windows builds, CNI, data plane)")
    add_cluster_options(p)
    p.add_argument("--cni", help="override pod network detection")
    p.add_argument("--network-policy", help="override detection of the Windows nodes' NetworkPolicy engine")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("limitations", help="list the documented limitations and which apply to this cluster")
    add_cluster_options(p)
    add_option(p, "--limitations", deprecated=["--file"], help="limitations file (default: limitations.yaml)")
    p.add_argument("--cni", help="override CNI detection")
    p.add_argument("--profile-file", help="judge against this profile JSON instead of a live cluster")
    p.add_argument("--offline", action="store_true", help="list only; do not ask a cluster which apply")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_limitations)

    p = sub.add_parser("lint", help="check test ids, markers and limitations.yaml against the suites")
    p.add_argument("paths", nargs="*", default=[str(SUITES)], help="suite paths (default: suites/)")
    add_option(p, "--limitations", deprecated=["--file"], help="limitations file (default: limitations.yaml)")
    p.add_argument("--fix", action="store_true", help="add a new test_id to every test function that has none")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser(
        "coverage",
        help="docs/coverage.md's documented sections -> tests (the documents markers) and upstream tables per version",
    )
    p.add_argument("paths", nargs="*", default=[str(SUITES)], help="suite paths (default: suites/)")
    p.add_argument("--write", action="store_true", help="update docs/coverage.md")
    p.add_argument("--check", action="store_true", help="exit 4 if docs/coverage.md is not in step")
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser("cleanup", help="delete namespaces left behind by dead wincon runs")
    add_cluster_options(p)
    add_option(
        p,
        "--namespace-ttl",
        deprecated=["--ttl"],
        type=int,
        default=3600,
        help="reap namespaces older than this many seconds whose run holds no Lease (default 3600); a run's Lease "
        "decides for its own namespaces: reaped once it expired, never while it is renewed",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="delete every wincon namespace not owned by a live run of this host, live Leases of other hosts' runs "
        "or not",
    )
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("prepull", help="pull the catalog's Windows images on every Windows node")
    add_cluster_options(p)
    p.add_argument("--image-repo-list", help="registry override file (KUBE_TEST_REPO_LIST format)")
    p.add_argument(
        "--image-pull-secret",
        metavar="[NAMESPACE/]NAME",
        help="pull with this kubernetes.io/dockerconfigjson secret (namespace default unless named; copied into "
        "the prepull namespace); the images are verified with it too",
    )
    add_option(
        p,
        "--pod-start-timeout",
        deprecated=["--timeout"],
        type=float,
        default=1800.0,
        help="seconds the pre-pull pods may take to become Ready, every image pulled (default 1800)",
    )
    p.set_defaults(func=cmd_prepull)

    p = sub.add_parser("plan", help="show what each test will do on this cluster: run, skip or expected failure")
    add_cluster_options(p)
    p.add_argument("--cni", help="override pod network detection")
    p.add_argument("--network-policy", help="override detection of the Windows nodes' NetworkPolicy engine")
    p.add_argument("--windows-build", type=int, help="restrict to Windows nodes of this build")
    p.add_argument("--profile-file", help="plan against this profile JSON instead of a live cluster")
    p.add_argument(
        "--image-repo-list",
        help="registry override file (KUBE_TEST_REPO_LIST format), as `wincon run -- --image-repo-list` takes it: the "
        "plan reads the registries it names",
    )
    p.add_argument(
        "--allow-disruptive",
        action="store_true",
        help="plan the disruptive checks as run (as `wincon run --allow-disruptive` runs them); without it the plan "
        "says they are skipped",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then pytest selection (paths, -m, -k)")
    p.set_defaults(func=cmd_plan)


def _profile(args: argparse.Namespace) -> tuple[Any, ClusterProfile]:
    from wincon.cluster.client import connect
    from wincon.clusterinfo.profile import discover

    api_client = connect(args.kubeconfig, args.context)
    return api_client, discover(api_client, getattr(args, "cni", None), getattr(args, "network_policy", None))


def cmd_profile(args: argparse.Namespace) -> int:
    _, profile = _profile(args)
    if args.json:
        print(json.dumps(profile.to_dict(), indent=2))
    else:
        print("\n".join(profile.summary_lines()))
    return ExitCode.OK


def cmd_limitations(args: argparse.Namespace) -> int:
    entries = limitations_mod.load(args.limitations)
    profile = None
    unknown = "--offline: no cluster asked" if args.offline else ""
    if args.profile_file:
        from wincon.clusterinfo.profile import load_profile_file

        profile = load_profile_file(args.profile_file)
    elif not args.offline:
        try:
            _, profile = _profile(args)
        except (KubeconfigError, InfrastructureError) as exc:
            # The catalog is data: list it all the same, with applicability unknown.
            unknown = f"no cluster ({exc.message})"
            print(
                exc.render().replace("error:", "warning:", 1) + "\n  listing with applicability unknown",
                file=sys.stderr,
            )
    rows = []
    for lim in entries.values():
        match = limitations_mod.match(lim, profile) if profile else None
        rows.append(
            {
                "id": lim.id,
                "area": lim.area,
                "title": lim.title,
                "mode": lim.mode,
                "sources": lim.source_text,
                "applies": match.applies if match else None,
                "why": match.explain() if match else f"applicability unknown: {unknown}",
                "unknown": list(match.unknown) if match else ["cluster"],
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return ExitCode.OK
    for row in rows:
        flag = {True: "APPLIES", False: "-", None: "?"}[row["applies"]]  # type: ignore[index]
        print(f"{flag:8} {row['id']:44} {row['area']:11} {row['title']}")
        if row["why"]:
            print(f"{'':8} {'':44} {row['why']}")
    if profile:
        print(f"\n{sum(1 for r in rows if r['applies'])} of {len(rows)} limitations apply to this cluster")
    return ExitCode.OK


def collect(paths: list[str], extra: list[str], out_option: str) -> tuple[dict[str, Any], str]:
    """Collect suite tests through the plugin; returns its dump and pytest's output.

    A run the plugin stopped with one of wincon's own exit codes (kubeconfig, cluster, limitations)
    re-raises that error with its code.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "collect.json"
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths, *extra]
        cmd += [out_option, str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0 or not out.exists():
            if proc.returncode in (ExitCode.INFRASTRUCTURE, ExitCode.KUBECONFIG, ExitCode.LIMITATIONS):
                message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
                text = "\n".join(line for line in message if line.strip()).replace("Exit: wincon: error: ", "")
                raise WinconError(text.removeprefix("wincon: error: "), exit_code=ExitCode(proc.returncode))
            return {}, proc.stdout + proc.stderr
        return json.loads(out.read_text()), proc.stdout + proc.stderr


def lint_problems(
    tests: list[dict[str, Any]], entries: dict[str, Any], sources: dict[str, Any] | None = None
) -> list[str]:
    """Every problem `wincon lint` reports, as one line each. ``sources`` (default: docs/sources.md) are the
    ids a ``documents`` marker may cite; rows without a ``documents`` key (older plan files) skip that check."""
    from wincon.documents import sources as sources_mod

    known_sources = sources if sources is not None else sources_mod.load()
    problems = []
    ids_by_function: dict[str, set[str]] = defaultdict(set)
    functions_by_id: dict[str, set[str]] = defaultdict(set)
    referenced: set[str] = set()
    for test in tests:
        if not test["test_ids"]:
            problems.append(f"{test['nodeid']}: no test_id marker (add @pytest.mark.test_id('<uuid4>'))")
        for tid in test["test_ids"]:
            try:
                uuid.UUID(tid)
            except ValueError:
                problems.append(f"{test['nodeid']}: test_id {tid!r} is not a UUID")
            ids_by_function[test["function"]].add(tid)
            functions_by_id[tid].add(test["function"])
        if len(test["test_ids"]) > 1:
            problems.append(f"{test['nodeid']}: more than one test_id")
        documents = test.get("documents")
        if documents is not None and not documents:
            problems.append(
                f"{test['nodeid']}: no documents marker (add @pytest.mark.documents('<source id of "
                "docs/sources.md>', '<section>'))"
            )
        for source, section in documents or []:
            if source not in known_sources:
                problems.append(f"{test['nodeid']}: documents source {source!r} is not in docs/sources.md")
            if not section.strip():
                problems.append(f"{test['nodeid']}: documents({source!r}) names no section")
        if test.get("no_pod_problem"):
            problems.append(f"{test['nodeid']}: {test['no_pod_problem']}")
        for lim in test["referenced_limitations"]:
            referenced.add(lim)
            if lim not in entries:
                problems.append(f"{test['nodeid']}: limitation {lim!r} is not in limitations.yaml")
    for tid, functions in sorted(functions_by_id.items()):
        if len(functions) > 1:
            problems.append(f"test_id {tid} is used by {len(functions)} tests: {', '.join(sorted(functions))}")
    problems.extend(forms.lint_problems(tests))
    for lim in entries.values():
        if not lim.untestable and lim.id not in referenced:
            problems.append(
                f"limitation {lim.id!r} is referenced by no test (add a test marked limitation('{lim.id}'), "
                "or mark the entry untestable with the reason)"
            )
    return problems


def cmd_lint(args: argparse.Namespace) -> int:
    entries = limitations_mod.load(args.limitations)  # raises LimitationsError (exit 7) when invalid
    dump, output = collect(args.paths, [], "--wincon-lint-out")
    if not dump:
        unknown = "not found in `markers` configuration option" in output
        print(output.strip()[-3000:], file=sys.stderr)
        raise UsageError(
            "the suites could not be collected" + (": a test uses an unknown marker" if unknown else ""),
            "register the marker in wincon/session/options.py MARKERS, or fix the collection error shown above",
        )
    tests = dump["tests"]
    if not tests:
        raise UsageError(f"no suite tests were collected from {' '.join(args.paths)}", "point lint at suites/")
    if getattr(args, "fix", False):
        from wincon.documents.testids import add_missing_test_ids

        fixed = add_missing_test_ids(tests)
        for function in fixed:
            print(f"lint: added a test_id to {function}")
        if fixed:
            dump, _ = collect(args.paths, [], "--wincon-lint-out")
            tests = dump["tests"] if dump else tests
    problems = lint_problems(tests, entries)
    for line in problems:
        print(f"lint: {line}")
    functions = {t["function"] for t in tests}
    print(
        f"lint: {len(tests)} tests ({len(functions)} functions), {len(entries)} limitations: {len(problems)} problems"
    )
    return ExitCode.USAGE if problems else ExitCode.OK


def cmd_coverage(args: argparse.Namespace) -> int:
    from wincon.documents import coverage, sources, upstream

    dump, output = collect(args.paths, [], "--wincon-lint-out")
    if not dump:
        print(output.strip()[-3000:], file=sys.stderr)
        raise UsageError("the suites could not be collected", "fix the collection error shown above")
    part = coverage.render(dump["tests"], sources.load())
    print(forms.share_line(dump["tests"]), file=sys.stderr)
    current = coverage.COVERAGE_MD.read_text() if coverage.COVERAGE_MD.exists() else "# Coverage\n"
    wanted = coverage.update(current, part)
    try:
        tables, problems = upstream.tables(upstream.load_data(), upstream.known_tests(dump["tests"]))
    except upstream.ModuleUnavailable as error:
        raise UsageError(str(error), "the upstream tables are read from each version's module tree") from error
    if problems:
        print("docs/upstream-parity.yaml is out of step with upstream or the suites:", *problems, sep="\n  ")
        return ExitCode.USAGE
    wanted = upstream.update(wanted, tables)
    if args.check:
        if wanted != current:
            print(
                "docs/coverage.md is not in step with the documents markers or the upstream tables: "
                "run `wincon coverage --write`"
            )
            return ExitCode.USAGE
        return ExitCode.OK
    if args.write:
        coverage.COVERAGE_MD.write_text(wanted)
        print(f"wrote {coverage.COVERAGE_MD}")
        return ExitCode.OK
    print(part)
    return ExitCode.OK


def cmd_cleanup(args: argparse.Namespace) -> int:
    import time

    from wincon.cluster.client import connect
    from wincon.cluster.leases import delete_expired, read_runs
    from wincon.cluster.namespaces import reap, reap_cluster_objects

    api_client = connect(args.kubeconfig, args.context)
    runs = read_runs(api_client)  # a run whose Lease is live keeps its namespaces, whatever their age
    names = reap(api_client, ttl_seconds=args.namespace_ttl, runs=runs, force=args.all)
    for name in names:
        print(f"deleted namespace {name}")
    objects = reap_cluster_objects(api_client, ttl_seconds=args.namespace_ttl, runs=runs, force=args.all)
    for name in objects:
        print(f"deleted {name}")
    leases = delete_expired(api_client, runs, time.time())
    for name in leases:
        print(f"deleted expired Lease {name}")
    live = sum(1 for run in runs.values() if not run.expired(time.time()) and not run.holder_dead_here())
    print(
        f"cleanup: {len(names)} namespaces and {len(objects)} cluster-scoped objects deleted; "
        f"{live} live runs (their Leases renewed) left alone"
    )
    return ExitCode.OK


def cmd_prepull(args: argparse.Namespace) -> int:
    import secrets
    import time

    from wincon.workloads.catalog import Catalog
    from wincon.workloads.prepull import prepull

    api_client, profile = _profile(args)
    if not profile.windows_nodes:
        raise InfrastructureError("the cluster has no Windows nodes", "add a Windows node pool")
    catalog = Catalog.load(repo_list=args.image_repo_list)
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    if not profile.data_plane:
        print("prepull: the Windows nodes are simulated: nothing is really pulled, the DaemonSet is still deployed")
    else:  # each image's manifest list must have an entry each real Windows node runs, before any pod is created
        from wincon.workloads.imageverify import credentials_for, require_runnable, verify

        credentials = credentials_for(api_client, args.image_pull_secret, None)
        require_runnable(verify(catalog, profile, credentials=credentials))
    secret = args.image_pull_secret
    prepull(api_client, profile, catalog, run_id, timeout=args.pod_start_timeout, pull_secret=secret)
    return ExitCode.OK


def cmd_plan(args: argparse.Namespace) -> int:
    extra = [a for a in args.pytest_args if a != "--"]
    has_path = any(not a.startswith("-") and (a.split("::")[0].endswith(".py") or Path(a).is_dir()) for a in extra)
    paths = [] if has_path else [str(SUITES)]
    options = [*extra, "--wincon"] + (["--allow-disruptive"] if args.allow_disruptive else [])
    # The collection runs in the checkout (collect): a file named relative to the user's directory is made absolute.
    for flag, value in (
        ("--kubeconfig", str(Path(args.kubeconfig).expanduser().resolve()) if args.kubeconfig else None),
        ("--context", args.context),
        ("--cni", args.cni),
        ("--network-policy", args.network_policy),
        ("--windows-build", args.windows_build),
        ("--profile-file", str(Path(args.profile_file).expanduser().resolve()) if args.profile_file else None),
        ("--image-repo-list", str(Path(args.image_repo_list).expanduser().resolve()) if args.image_repo_list else None),
    ):
        if value:
            options += [flag, str(value)]
    dump, output = collect(paths, options, "--wincon-plan-out")
    if not dump:
        print(output.strip()[-3000:], file=sys.stderr)
        raise UsageError("the plan could not be made: collection failed", "see the error above")
    tests = dump["tests"]
    if args.json:
        print(json.dumps(tests, indent=1))
    else:
        for t in tests:
            print(f"{t['outcome']:5}  {t['nodeid']}")
            if t["reason"]:
                print(f"       {t['reason']}")
        counts: defaultdict[str, int] = defaultdict(int)
        for t in tests:
            counts[t["outcome"]] += 1
        if dump.get("images"):
            print(f"\n{dump['images']}")
        print(f"\nplan: {len(tests)} tests: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if not tests:
        return ExitCode.NO_TESTS
    return ExitCode.OK
