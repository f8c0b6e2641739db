"""The results directory: atomic files, monotonic build ids, and clear errors for bad directories."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.support import synthetic
from wincon.commandline.errors import ExitCode, ResultsError
from wincon.results import artifacts
from wincon.results.model import Verdict


def make_run(root, name="run", result="FAILURE", start=1_790_000_000):
    cases = [
        synthetic.case("suites/networking/test_a.py::test_ok", Verdict.PASSED),
        synthetic.case("suites/networking/test_a.py::test_bad", Verdict.FAILED),
    ]
    return artifacts.write_run(root / name, cases, start=start, result=result, profile=synthetic.profile())


def test_atomic_write_replaces_whole_files_and_leaves_no_temporaries(tmp_path):
    target = tmp_path / "finished.json"
    artifacts.atomic_write_json(target, {"a": 1})
    artifacts.atomic_write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["finished.json"]
    assert stat.S_IMODE(target.stat().st_mode) & 0o044 == 0o044  # readable by others, unlike mkstemp's 0600


def test_atomic_write_interrupted_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "finished.json"
    artifacts.atomic_write_json(target, {"result": "SUCCESS"})

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        artifacts.atomic_write_json(target, {"result": "ABORTED"})
    assert json.loads(target.read_text()) == {"result": "SUCCESS"}
    assert [p.name for p in tmp_path.iterdir()] == ["finished.json"]


def test_build_ids_increase_in_the_same_second_and_when_the_clock_goes_back(tmp_path):
    first = artifacts.allocate_build_id(tmp_path, now=1_000)
    same_second = artifacts.allocate_build_id(tmp_path, now=1_000)
    clock_back = artifacts.allocate_build_id(tmp_path, now=500)
    later = artifacts.allocate_build_id(tmp_path, now=5_000)
    assert [int(x) for x in (first, same_second, clock_back, later)] == [1_000, 1_001, 1_002, 5_000]
    assert (tmp_path / "latest-build.txt").read_text().strip() == "5000"


def test_scrub_drops_secrets_at_any_depth_and_keeps_the_rest():
    profile = {
        "cni": "flannel",
        "kube_proxy_mode": "kernelspace",
        "token": "abc",
        "nodes": [{"name": "w", "client_key": "k", "bootstrap-token": "t", "ready": True}],
        "auth": {"password": "p"},
    }
    assert artifacts.scrub(profile) == {
        "cni": "flannel",
        "kube_proxy_mode": "kernelspace",
        "nodes": [{"name": "w", "ready": True}],
    }


def test_profile_metadata_is_flat_strings_for_testgrid_columns():
    meta = artifacts.profile_metadata(synthetic.profile("v1.34.4", 20348, "flannel", "vxlan"))
    assert meta["kubernetes-version"] == "v1.34.4"
    assert meta["windows-builds"] == "10.0.20348"
    assert meta["cni"] == "flannel" and meta["cni-backend"] == "vxlan"
    assert meta["container-runtime"] == "containerd" and meta["data-plane"] == "true"
    assert all(isinstance(v, str) for v in meta.values())


def test_load_run_reads_a_written_run(tmp_path):
    run = artifacts.load_run(make_run(tmp_path))
    assert run.result == "FAILURE"
    assert run.build_id == "1790000000"
    assert [c.verdict for c in run.cases] == [Verdict.PASSED, Verdict.FAILED]
    assert run.k8s_version == "v1.34.4"
    assert run.profile["cni"] == "flannel"


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda d: (d / "finished.json").unlink(), "finished.json: missing: the run is still going"),
        (lambda d: (d / "finished.json").write_text('{"timestamp": 1, "pass'), "finished.json: not valid JSON"),
        (lambda d: (d / "finished.json").write_text(""), "the file is empty"),
        (lambda d: (d / "finished.json").write_text('{"timestamp": 1, "passed": true}'), "'result' is a required"),
        (
            lambda d: (d / "finished.json").write_text('{"timestamp": 1, "passed": true, "result": "GREEN"}'),
            "result: 'GREEN' is not one of",
        ),
        (lambda d: (d / "started.json").unlink(), "started.json: missing"),
        (lambda d: [p.unlink() for p in (d / "artifacts").glob("junit*.xml")], "junit_*.xml: missing"),
        (
            lambda d: next((d / "artifacts").glob("junit*.xml")).write_text("<testsuites><testcase"),
            "not well-formed XML (line 1",
        ),
        (lambda d: next((d / "artifacts").glob("junit*.xml")).write_text("<html/>"), "not a JUnit file"),
    ],
)
def test_bad_run_directories_name_the_file_and_the_problem(tmp_path, damage, expected):
    run_dir = make_run(tmp_path)
    damage(run_dir)
    with pytest.raises(ResultsError) as info:
        artifacts.load_run(run_dir)
    assert expected in info.value.message
    assert str(run_dir) in info.value.message
    assert info.value.exit_code == ExitCode.RESULTS
    assert info.value.fix


def test_missing_directory_is_named(tmp_path):
    with pytest.raises(ResultsError, match="no such results directory"):
        artifacts.load_run(tmp_path / "nope")


def test_find_run_dirs_expands_a_job_directory_and_reports_foreign_ones(tmp_path):
    jobs = tmp_path / "results"
    make_run(jobs, "a", start=1_000)
    make_run(jobs, "b", start=2_000)
    (jobs / "b" / "dashboard").mkdir()  # a site inside a run is not a run
    half = jobs / "c"
    half.mkdir()
    (half / "started.json").write_text('{"timestamp": 3}')
    foreign = tmp_path / "foreign"
    (foreign / "x").mkdir(parents=True)
    found, problems = artifacts.find_run_dirs([jobs, foreign])
    assert [p.name for p in found] == ["a", "b", "c"]
    assert len(problems) == 1 and str(foreign) in problems[0].message
