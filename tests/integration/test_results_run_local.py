"""`wincon run --local` for real: start the local simulated cluster, run suites on it, show the results.

Skipped (with the fix) when the local cluster's binaries are not built (`wincon cluster build`).
Both tests run on one cluster of this module's own (one xdist group), removed at the end.

Every data-plane check runs for real in the main job (`make main`: `wincon run --local --allow-disruptive`, which
exits non-zero unless each item ends as `wincon plan` says), and its Linux controls' machinery again in the fault
tests' clean runs. Here, the project's own test of the local run's data-plane path takes one check of each
data-plane module (``sample``): the whole set again took 582 s + 158 s of a make test that has 20 minutes (issue 41).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.clusters import own_cluster as own_local_cluster
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results.artifacts import load_run
from wincon.results.model import Verdict
from wincon.results.runner import REPO

# Left out of the sample (each module's first Linux control that runs): the CPU-limit checks, which measure CPU and
# must run alone (tests/faults/test_fault_cpu.py's clean runs are their controls in make test), and checks marked
# slow (the HPA scaling and the ten-pod density checks: the COMPONENTS fault group's clean HPA run is the former's).
CPU_LIMIT_CHECKS = (
    "test_cpu_limit_caps_a_busy_container",
    "test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it",
)
LEFT_OUT_MARKERS = {"slow"}
MIN_MODULES = 20  # data-plane modules with a Linux control that runs on the default cluster: 29 at e1e22d2

pytestmark = [pytest.mark.xdist_group("results-run-local"), pytest.mark.weight(400)]


@pytest.fixture(scope="module")
def own_cluster(localcluster_binaries):
    """A running cluster of this module's own (its two tests share it, one after the other on one worker)."""
    with own_local_cluster("wincon-results") as (name, _):
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


def plan_rows(cluster_name: str, capsys, *selection: str) -> list[dict]:
    """``wincon plan --json -- -m dataplane [selection]`` against the cluster: its rows."""
    from wincon.localcluster.cluster import kubeconfig_path

    args = ["plan", "--kubeconfig", str(kubeconfig_path(cluster_name)), "--json", "--", "-m", "dataplane", *selection]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def sample(rows: list[dict]) -> list[str]:
    """One check of each data-plane module: the function (both its Windows item and its Linux control) of the
    module's first Linux control the plan runs, the CPU-limit checks and those marked slow left out."""
    chosen: dict[str, str] = {}
    for row in rows:
        nodeid = row["nodeid"]
        module, _, name = nodeid.partition("::")
        if (
            module in chosen
            or not nodeid.endswith("[linux]")
            or row["outcome"] != "run"
            or name.split("[")[0] in CPU_LIMIT_CHECKS
            or LEFT_OUT_MARKERS & set(row["markers"])
        ):
            continue
        chosen[module] = nodeid.rsplit("[", 1)[0]
    return list(chosen.values())


def run_data_plane(cluster_name: str, results: Path, selection: list[str], capsys) -> tuple[int, str, list]:
    """``wincon run --local -- -m dataplane selection`` on the cluster: its exit code, output and cases."""
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
            *selection,
        ]
    )
    return code, capsys.readouterr().out, load_run(results).cases


def assert_as_planned(cluster_name: str, selection: list[str], code: int, out: str, cases: list, capsys) -> None:
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

    rows = plan_rows(cluster_name, capsys, *selection)
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


def test_local_run_of_one_data_plane_check_per_module_runs_its_linux_control_for_real(own_cluster, tmp_path, capsys):
    """One data-plane check of each data-plane module (``sample``) on the local cluster: each one's Linux control
    really runs on the real Linux nodes and passes, and the run ends as planned (``assert_as_planned``)."""
    selection = sample(plan_rows(own_cluster, capsys))
    modules = {nodeid.split("::")[0] for nodeid in selection}
    assert len(modules) >= MIN_MODULES, f"the sample took {len(modules)} data-plane modules: {sorted(modules)}"
    code, out, cases = run_data_plane(own_cluster, tmp_path / "results", selection, capsys)
    passed = {
        c.name.rsplit("::", 1)[-1].split("[")[0]
        for c in cases
        if c.prop("os") == "linux" and c.verdict is Verdict.PASSED
    }
    wanted = {nodeid.split("::")[1] for nodeid in selection}
    assert passed == wanted, f"sampled controls that did not pass: {sorted(wanted - passed)}\n{out[-3000:]}"
    assert_as_planned(own_cluster, selection, code, out, cases, capsys)
