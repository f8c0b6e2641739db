"""`wincon run --local` for real: start the local simulated cluster, run suites on it, show the results.

Skipped (with the fix) when the local cluster's binaries are not built (`wincon cluster build`).
The cluster gets a name of its own and is removed at the end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support import shared_use
from tests.support.clusters import fresh_name, removed_after
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results.artifacts import load_run
from wincon.results.model import Verdict
from wincon.results.runner import REPO

# The CPU-limit checks (their Linux controls keep a limited pod and its unlimited twin busy): pytest -k keywords.
CPU_LIMIT_CHECKS = "cpu_limit_caps_a_busy_container or cpu_limit_in_either_spelling_holds_a_busy_pod_under_it"
CPU_LIMIT_CONTROLS = {
    "test_cpu_limit_caps_a_busy_container[linux]",
    "test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it[linux]",
}


@pytest.fixture
def own_cluster(localcluster_binaries):
    """A cluster of this test's own: two tests of this module may run at once under xdist."""
    with removed_after(fresh_name("wincon-results")) as name:
        yield name


def test_local_run_of_the_api_suite(own_cluster, tmp_path, capsys):
    results = tmp_path / "results" / "local"
    code = main(
        [
            "run",
            "--local",
            "--cluster-name",
            own_cluster,
            "--results-dir",
            str(results),
            "--",
            str(REPO / "suites" / "api"),
        ]
    )
    out = capsys.readouterr().out
    assert code == ExitCode.OK, out[-3000:]
    run = load_run(results)
    assert run.result == "SUCCESS"
    meta = run.finished["metadata"]
    assert meta["cloud"] == "kwok" and meta["data-plane"] == "false"
    assert meta["windows-os-versions"]
    verdicts = {case.verdict for case in run.cases}
    assert Verdict.PASSED in verdicts  # the API server's validation runs for real on the local cluster
    assert not verdicts & {Verdict.FAILED, Verdict.ERROR, Verdict.XPASSED}
    simulated = [c for c in run.cases if c.prop("simulated_skip") == "true"]
    assert all(c.verdict is Verdict.SKIPPED and "simulated nodes have no data plane" in c.message for c in simulated)
    assert all(c.area == "api" and c.test_id != c.name for c in run.cases)
    assert f"dashboard (1 runs): {results / 'dashboard' / 'index.html'}" in out
    assert json.loads((results / "artifacts" / "profile.json").read_text())["simulated"] is True


def run_data_plane(cluster_name: str, results: Path, keyword: str, capsys) -> tuple[int, str, list]:
    """``wincon run --local -- -m dataplane -k keyword`` on the cluster: its exit code, output and cases."""
    code = main(
        [
            "run",
            "--local",
            "--cluster-name",
            cluster_name,
            "--results-dir",
            str(results),
            "--",
            "-m",
            "dataplane",
            "-k",
            keyword,
        ]
    )
    return code, capsys.readouterr().out, load_run(results).cases


def assert_as_planned(cluster_name: str, code: int, out: str, cases: list, capsys) -> None:
    """What every data-plane run must show: no Windows item passed on the simulated Windows nodes; nothing failed
    or erred; exit 0; the summary's control count is the run's; and every item ended as `wincon plan` says before
    the run (run -> passed, skip -> skipped, xfail -> xfailed)."""
    windows = [c for c in cases if c.prop("os") == "windows"]
    assert not [c.name for c in windows if c.verdict is Verdict.PASSED], "a Windows item passed on simulated nodes"
    bad = {c.name: c.verdict.value for c in cases if c.verdict in (Verdict.FAILED, Verdict.ERROR, Verdict.XPASSED)}
    assert not bad, f"failed or errored: {bad}\n{out[-3000:]}"
    assert code == ExitCode.OK, out[-3000:]
    summary = re.search(r"controls: (\d+) passed / (\d+) run", out)
    run_passed = [c for c in cases if c.prop("os") == "linux" and c.verdict is Verdict.PASSED]
    assert summary and int(summary.group(1)) == len(run_passed), out[-1000:]

    from wincon.localcluster.cluster import kubeconfig_path

    assert main(["plan", "--kubeconfig", str(kubeconfig_path(cluster_name)), "--json", "--", "-m", "dataplane"]) == 0
    rows = json.loads(capsys.readouterr().out)
    expected = {"run": Verdict.PASSED, "skip": Verdict.SKIPPED, "xfail": Verdict.XFAILED, "error": Verdict.ERROR}
    planned = {row["nodeid"]: expected[row["outcome"]] for row in rows}
    planned |= {row["nodeid"].split("::", 1)[1]: expected[row["outcome"]] for row in rows}  # JUnit's short name
    # A row the plan marks "decided at run time" (marker decided_at_run_time) keeps its outcome in the plan and says
    # the run may skip it: a skip there is as planned.
    decided = {row["nodeid"] for row in rows if "decided at run time" in (row.get("reason") or "")}
    decided |= {nodeid.split("::", 1)[1] for nodeid in decided}
    ended = {case.name: case.verdict for case in cases}
    differ = {
        name: (planned.get(name), verdict)
        for name, verdict in ended.items()
        if planned.get(name) is not verdict and not (name in decided and verdict is Verdict.SKIPPED)
    }
    assert not differ, f"the run did not end as planned (plan, run): {differ}"


@pytest.mark.weight(600)  # seconds in a make test at d83e1a7: the longest test starts first (tests/support/ordering.py)
def test_local_run_of_the_data_plane_checks_runs_their_linux_controls_for_real(own_cluster, tmp_path, capsys):
    """Every data-plane check but the CPU-limit checks (the next test's) on the local cluster: the Linux controls
    really run on the real Linux nodes and pass (at least 60 of them), and the run ends as planned
    (``assert_as_planned``)."""
    code, out, cases = run_data_plane(own_cluster, tmp_path / "results", f"not ({CPU_LIMIT_CHECKS})", capsys)
    controls = [c for c in cases if c.prop("os") == "linux"]
    passed = [c for c in controls if c.verdict is Verdict.PASSED]
    assert len(passed) >= 60, f"{len(passed)} Linux controls passed: {[c.name for c in controls if c not in passed]}"
    assert_as_planned(own_cluster, code, out, cases, capsys)


@pytest.mark.measures_cpu
def test_local_run_of_the_cpu_limit_checks_runs_their_linux_controls_for_real(own_cluster, tmp_path, capsys):
    """The two CPU-limit checks, the data-plane checks the test above leaves out: their Linux controls pass and the
    run ends as planned. ``make test`` runs this after every other test, alone on the machine (marker
    measures_cpu), and in the machine's one CPU-measuring slot: another run of them, or any other load, would
    starve their unlimited twins (tests/support/shared_use.py)."""
    with shared_use.measuring_cpu():
        code, out, cases = run_data_plane(own_cluster, tmp_path / "results", CPU_LIMIT_CHECKS, capsys)
    passed = {c.name.rsplit("::", 1)[1] for c in cases if c.prop("os") == "linux" and c.verdict is Verdict.PASSED}
    assert passed == CPU_LIMIT_CONTROLS, f"the CPU-limit controls that passed: {passed}\n{out[-3000:]}"
    assert_as_planned(own_cluster, code, out, cases, capsys)
