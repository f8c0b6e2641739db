"""The results plugin in real pytest runs, with the core plugin (profile from a file, no cluster needed)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import synthetic
from wincon.results.artifacts import load_run
from wincon.results.model import Verdict

pytest_plugins = ["pytester"]

SUITE = '''
import os, signal, time
import pytest
from wincon.commandline.errors import InfrastructureError

pytestmark = pytest.mark.networking


@pytest.mark.test_id("00000000-0000-4000-8000-000000000001")
def test_pod_to_pod():
    """Pod to pod works. 002_8a7e76f95009f44f.txt"""


@pytest.mark.test_id("00000000-0000-4000-8000-000000000002")
@pytest.mark.limitation("icmp-egress-through-vfp")
@pytest.mark.documents("k8s-windows-intro", "Networking")
def test_icmp_egress_gets_a_reply():
    """ICMP egress. 000_4130a90def37a825.txt"""
    from wincon.commandline.errors import DeviationObserved

    raise DeviationObserved("no ICMP reply from 192.0.2.1")


@pytest.mark.test_id("00000000-0000-4000-8000-000000000003")
@pytest.mark.limitation("icmp-egress-through-vfp")
@pytest.mark.documents("k8s-windows-intro", "Networking")
def test_icmp_lifted():
    """ICMP egress where it works after all. 000_4130a90def37a825.txt"""


@pytest.mark.test_id("00000000-0000-4000-8000-000000000004")
@pytest.mark.limitation("calico-only")
def test_limitation_that_does_not_apply_here():
    pass


@pytest.mark.test_id("00000000-0000-4000-8000-000000000005")
def test_dns_single_label():
    assert "kubernetes" == "nxdomain", "nslookup kubernetes failed"


@pytest.mark.test_id("00000000-0000-4000-8000-000000000006")
def test_cluster_trouble():
    raise InfrastructureError("pod never scheduled", "check the Windows taints")


@pytest.mark.test_id("00000000-0000-4000-8000-000000000007")
@pytest.mark.hybrid
def test_needs_linux():
    pytest.skip("needs a Ready Linux worker node")
'''

EXPECTED = {
    "test_pod_to_pod": Verdict.PASSED,
    "test_icmp_egress_gets_a_reply": Verdict.XFAILED,
    "test_icmp_lifted": Verdict.XPASSED,
    "test_limitation_that_does_not_apply_here": Verdict.PASSED,
    "test_dns_single_label": Verdict.FAILED,
    "test_cluster_trouble": Verdict.ERROR,
    "test_needs_linux": Verdict.SKIPPED,
}


@pytest.fixture
def suite(pytester):
    synthetic.workspace(pytester.path, SUITE)
    return pytester


def suite_args(results, *extra):
    return [*synthetic.WORKSPACE_ARGS, "--results-dir", str(results), *extra]


def verdicts(run):
    return {case.name.rsplit("::", 1)[1]: case.verdict for case in run.cases}


def test_xdist_run_writes_one_merged_testgrid_result(suite):
    results = suite.path / "results" / "r1"
    outcome = suite.runpytest_subprocess("suites", "-n", "2", *suite_args(results))
    assert outcome.ret == 1
    run = load_run(results)
    assert verdicts(run) == EXPECTED
    junit_files = list((results / "artifacts").glob("junit_wincon_*_01.xml"))
    assert len(junit_files) == 1
    started = json.loads((results / "started.json").read_text())
    finished = json.loads((results / "finished.json").read_text())
    assert finished["result"] == "FAILURE" and finished["passed"] is False
    assert started["timestamp"] <= finished["timestamp"]
    meta = finished["metadata"]
    assert meta["kubernetes-version"] == "v1.34.4" and meta["windows-builds"] == "10.0.20348"
    assert meta["cni"] == "flannel" and meta["container-runtime"] == "containerd"
    assert meta["run-id"] and meta["suite-version"] and meta["build-id"] == started["metadata"]["build-id"]
    assert meta["verdicts"] == {
        "passed": "2",
        "failed": "1",
        "xfailed": "1",
        "xpassed": "1",
        "skipped": "1",
        "error": "1",
    }
    assert json.loads((results / "artifacts" / "profile.json").read_text())["cni"] == "flannel"
    xfail = next(c for c in run.cases if c.name.endswith("test_icmp_egress_gets_a_reply"))
    assert xfail.message.startswith("expected failure: limitation icmp-egress-through-vfp")
    assert xfail.props("doc") == ["000_4130a90def37a825.txt"]
    assert xfail.test_id == "00000000-0000-4000-8000-000000000002" and xfail.area == "networking"
    lifted = next(c for c in run.cases if c.name.endswith("test_icmp_lifted"))
    assert "limitation icmp-egress-through-vfp appears lifted on this cluster" in lifted.message
    # TestGrid reads <failure> for the lifted limitation and <skipped message> for the expected failure.
    root = ET.parse(junit_files[0]).getroot()
    elements = {
        c.get("name").rsplit("::", 1)[1]: [e.tag for e in c if e.tag != "properties"] for c in root.iter("testcase")
    }
    assert elements["test_icmp_lifted"] == ["failure"] and elements["test_icmp_egress_gets_a_reply"] == ["skipped"]
    assert elements["test_cluster_trouble"] == ["error"]
    log = (results / "build-log.txt").read_text()
    assert "2 failed, 2 passed, 1 skipped, 1 xfailed, 1 error" in log and "wincon results:" in log


def test_allure_results_carry_wincon_labels_links_and_the_profile(suite):
    results = suite.path / "results" / "r1"
    allure_dir = results / "allure-results"
    suite.runpytest_subprocess("suites", *suite_args(results, "--alluredir", str(allure_dir),
                                                     "--doc-url-pattern", "https://docs.example/seeds/{}"))  # fmt: skip
    by_name = {}
    for path in allure_dir.glob("*-result.json"):
        data = json.loads(path.read_text())
        by_name[data["name"]] = data
    xfail = by_name["test_icmp_egress_gets_a_reply"]
    labels = {(label["name"], label["value"]) for label in xfail["labels"]}
    assert ("epic", "networking") in labels
    assert ("feature", "flows") in labels
    assert ("tag", "limitation:icmp-egress-through-vfp") in labels
    assert ("as_id", "00000000-0000-4000-8000-000000000002") in labels
    assert xfail["links"] == [
        {
            "type": "link",
            "url": "https://docs.example/seeds/000_4130a90def37a825.txt",
            "name": "000_4130a90def37a825.txt",
        }
    ]
    lifted = by_name["test_icmp_lifted"]
    assert lifted["status"] == "failed"
    assert lifted["statusDetails"]["message"] == "limitation icmp-egress-through-vfp appears lifted on this cluster"
    env = (allure_dir / "environment.properties").read_text()
    assert "cni=flannel" in env and "kubernetes-version=v1.34.4" in env
    categories = json.loads((allure_dir / "categories.json").read_text())
    assert categories[0]["name"] == "Limitations that appear lifted"


def test_allure_steps_for_deploy_wait_and_check_reach_the_report(pytester):
    pytester.makepyfile(
        """
        from wincon.results import steps

        def test_flow():
            with steps.deploy("netexec pod"):
                pass
            with steps.wait("pod Ready"):
                pass
            with steps.check("curl.exe http://10.0.0.1:9080"):
                steps.attach_text("events", "Scheduled")
        """
    )
    allure_dir = pytester.path / "allure"
    pytester.runpytest_subprocess("--alluredir", str(allure_dir), "-p", "no:cacheprovider")
    [result] = [json.loads(p.read_text()) for p in allure_dir.glob("*-result.json")]
    assert [s["name"] for s in result["steps"]] == [
        "deploy: netexec pod",
        "wait: pod Ready",
        "check: curl.exe http://10.0.0.1:9080",
    ]
    assert result["steps"][2]["attachments"][0]["name"] == "events"


def test_sigint_in_the_middle_leaves_a_valid_aborted_result(suite):
    (suite.path / "suites" / "networking" / "test_flows.py").write_text(
        SUITE + '\n\n@pytest.mark.test_id("00000000-0000-4000-8000-000000000008")\n'
        "def test_zz_interrupt():\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(5)\n"
        '\n\n@pytest.mark.test_id("00000000-0000-4000-8000-000000000009")\ndef test_zzz_never_runs():\n    pass\n'
    )
    results = suite.path / "results" / "r1"
    outcome = suite.runpytest_subprocess("suites", *suite_args(results))
    assert outcome.ret == 2
    run = load_run(results)  # parses: every file is complete
    assert run.result == "ABORTED" and run.finished["passed"] is False
    names = set(verdicts(run))
    assert "test_pod_to_pod" in names and "test_zzz_never_runs" not in names


def junit_case_count(results: Path) -> int:
    files = list((results / "artifacts").glob("junit*.xml")) if (results / "artifacts").is_dir() else []
    return len(ET.parse(files[0]).getroot().findall(".//testcase")) if files else 0


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def test_sigterm_to_an_xdist_run_leaves_a_valid_aborted_result(suite):
    (suite.path / "suites" / "networking" / "test_slow.py").write_text(
        "import time, pytest\n"
        + "".join(
            f'@pytest.mark.test_id("00000000-0000-4000-8000-0000000001{i:02d}")\n'
            f"def test_slow_{i}():\n    time.sleep(0.5)\n\n"
            for i in range(40)
        )
    )
    results = suite.path / "results" / "r1"
    command = [sys.executable, "-m", "pytest", "suites", "-n", "2", *suite_args(results)]
    proc = subprocess.Popen(command, cwd=suite.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: junit_case_count(results) >= 3, "three finished tests in the JUnit file")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
    run = load_run(results)
    assert run.result == "ABORTED"
    assert 3 <= len(run.cases) < 47


def test_plain_runs_are_left_alone(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    outcome = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert outcome.ret == 0
    assert not (pytester.path / "results").exists()
    assert "wincon results" not in outcome.stdout.str()


def test_collect_only_suite_runs_record_nothing(suite):
    outcome = suite.runpytest_subprocess("suites", "--collect-only", "-q", *synthetic.WORKSPACE_ARGS)
    assert outcome.ret == 0
    assert "7 tests collected" in outcome.stdout.str()
    assert not (suite.path / "results").exists()


def test_a_results_dir_that_already_holds_a_run_is_refused(suite):
    results = suite.path / "results" / "r1"
    suite.runpytest_subprocess("suites", *suite_args(results))
    before = (results / "finished.json").read_text()
    outcome = suite.runpytest_subprocess("suites", *suite_args(results))
    assert outcome.ret == 4
    assert "already holds a run" in outcome.stderr.str() + outcome.stdout.str()
    assert (results / "finished.json").read_text() == before


def test_build_ids_increase_from_run_to_run(suite):
    ids = []
    for name in ("a", "b", "c"):
        suite.runpytest_subprocess("suites", *suite_args(suite.path / "results" / name, "-k", "pod_to_pod"))
        ids.append(int(load_run(suite.path / "results" / name).build_id))
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert (suite.path / "results" / "latest-build.txt").read_text().strip() == str(ids[-1])


def test_junit_is_valid_while_the_run_is_still_going(suite):
    release = suite.path / "release"
    (suite.path / "suites" / "networking" / "test_flows.py").write_text(
        SUITE + '\n\n@pytest.mark.test_id("00000000-0000-4000-8000-000000000010")\n'
        "def test_zz_slow():\n"
        f"    deadline = time.monotonic() + 60\n"
        f"    while not os.path.exists({str(release)!r}) and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
    )
    results = suite.path / "results" / "r1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "suites", *suite_args(results)],
        cwd=suite.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The seven quick tests are in the file before the slow one starts; the run is not over.
        wait_for(lambda: junit_case_count(results) >= 7, "the seven finished tests in the JUnit file")
        assert not (results / "finished.json").exists()  # still running: TestGrid shows it as running
    finally:
        release.touch()
        proc.wait(timeout=60)
    assert load_run(results).result == "FAILURE"
