"""`wincon run --local` for real: start the local simulated cluster, run suites on it, show the results.

Skipped (with the fix) when the local cluster's binaries are not built (`wincon cluster build`).
The cluster gets a name of its own and is removed at the end.
"""

from __future__ import annotations

import json

import pytest

from wincon.cli import main
from wincon.errors import ExitCode
from wincon.results.artifacts import load_run
from wincon.results.model import Verdict
from wincon.results.runner import REPO

CLUSTER = "wincon-results-test"


@pytest.fixture
def own_cluster(localcluster_binaries):
    from wincon.localcluster.cluster import down

    down(CLUSTER)
    try:
        yield CLUSTER
    finally:
        down(CLUSTER)


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
