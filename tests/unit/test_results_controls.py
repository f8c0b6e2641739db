"""Results show each check's Windows and Linux-control outcomes side by side: pairing, `wincon report`'s
table, the gate's classification of errors, `wincon run`'s summary line."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts, runner
from wincon.results.gate import judge, load_required
from wincon.results.model import NO_CONTROL, CaseResult, Verdict, control_counts, pair
from wincon.results.report import summary_line, table

P, F, E, S, X = Verdict.PASSED, Verdict.FAILED, Verdict.ERROR, Verdict.SKIPPED, Verdict.XFAILED
DIAL = "suites/networking/test_dial.py::test_pod_to_pod"
DNS = "suites/dns/test_names.py::test_fqdn"
PING = "suites/networking/test_icmp.py::test_ping_external"
RUN_AS = "suites/api/test_fields.py::test_run_as_user_name"


def run_cases() -> list[CaseResult]:
    return [
        *synthetic.twins(DIAL, F, P),  # a Windows deviation
        *synthetic.twins(DNS, E, F, area="dns"),  # cluster-wide
        *synthetic.twins(PING, X, P, limitation="icmp-egress"),  # confirmed expected failure
        synthetic.case(RUN_AS, P, area="api", target_os="windows"),  # no control
    ]


def test_pair_puts_each_control_beside_its_windows_twin_and_nothing_else():
    checks = {c.name: c for c in pair(run_cases())}
    assert sorted(checks) == sorted([f"{DIAL}[windows]", f"{DNS}[windows]", f"{PING}[windows]", RUN_AS])
    assert checks[f"{DIAL}[windows]"].control.name == f"{DIAL}[linux]"
    assert checks[f"{DIAL}[windows]"].control_verdict == "passed"
    assert checks[f"{DNS}[windows]"].cluster_wide and not checks[f"{DIAL}[windows]"].cluster_wide
    assert checks[RUN_AS].control is None and checks[RUN_AS].control_verdict == NO_CONTROL


def test_pairing_by_name_where_the_results_carry_no_control_property():
    """JUnit from before the properties existed: ``x[linux]`` with marker control pairs with ``x[windows]``."""
    marker = [("markers", "control,networking")]
    control = CaseResult(name="t.py::test_a[http-linux]", verdict=P, properties=marker)
    windows = CaseResult(name="t.py::test_a[http-windows]", verdict=F)
    first = CaseResult(name="t.py::test_c[linux-forward-slash]", verdict=P, properties=marker)  # module scope
    first_windows = CaseResult(name="t.py::test_c[windows-forward-slash]", verdict=S)
    not_a_control = CaseResult(name="t.py::test_b[linux]", verdict=P)  # no marker control: a check of its own
    checks = pair([control, windows, first, first_windows, not_a_control])
    assert [(c.windows.name if c.windows else None, c.control.name if c.control else None) for c in checks] == [
        ("t.py::test_a[http-windows]", "t.py::test_a[http-linux]"),
        ("t.py::test_c[windows-forward-slash]", "t.py::test_c[linux-forward-slash]"),
        ("t.py::test_b[linux]", None),
    ]
    rows = [line.split()[:3] for line in table([control, windows, first, first_windows]).splitlines()[2:4]]
    assert rows == [["t.py::test_a[http]", "failed", "passed"], ["t.py::test_c[forward-slash]", "skipped", "passed"]]


def test_a_windows_error_is_cluster_wide_only_where_its_control_failed_the_same_step():
    [windows] = synthetic.twins(DNS, E, None, area="dns")
    assert not pair([windows])[0].cluster_wide  # its control did not run: the error stands alone
    failed = synthetic.case(f"{DNS}[windows]", E, target_os="windows", control="k", control_outcome="failed")
    # Its control failed, but elsewhere (the plugin did not call it cluster-wide): the error stands alone.
    assert not pair([failed])[0].cluster_wide and pair([failed])[0].control_verdict == "failed"
    same = synthetic.case(f"{DNS}[windows]", E, target_os="windows", control="k", control_outcome="failed")
    same.properties.append(("cluster_wide", "true"))
    assert pair([same])[0].cluster_wide


def test_a_control_whose_twin_did_not_run_is_a_check_of_its_own_and_a_twin_without_its_control_says_not_run():
    checks = pair([*synthetic.twins(DIAL, None, P), *synthetic.twins(DNS, S, None, area="dns")])
    only_control, only_windows = checks[1], checks[0]
    assert only_control.windows is None and only_control.name == f"{DIAL}[windows]"
    assert only_windows.control is None and only_windows.control_verdict == "not run"


def test_report_table_has_a_column_per_os_and_the_controls_figure(tmp_path, capsys):
    path = artifacts.write_run(tmp_path / "r", run_cases(), start=1_000, result="FAILURE", profile=synthetic.profile())
    assert main(["report", str(path), "--no-html"]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["check", "windows", "linux", "control", "note"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[2:-1]}
    assert rows == {
        "networking/test_dial.py::test_pod_to_pod": ["failed", "passed"],
        "dns/test_names.py::test_fqdn": ["error", "failed"],
        "networking/test_icmp.py::test_ping_external": ["xfailed", "passed"],
        "api/test_fields.py::test_run_as_user_name": ["passed", "no"],  # "no control"
    }
    assert "Windows deviation: its Linux control passed" in next(x for x in lines if "test_dial" in x)
    assert "cluster-wide: its Linux control failed too" in next(x for x in lines if "test_fqdn" in x)
    assert lines[-1] == (
        "windows: 4 checks (1 passed, 1 failed, 1 xfailed, 1 error); controls: 2 passed / 3 run; "
        "1 cluster-wide errors (the Linux control failed too)"
    )


def test_the_controls_figure_counts_what_ran_and_is_computed_from_the_results():
    cases = [*synthetic.twins(DIAL, S, P), *synthetic.twins(DNS, S, S, area="dns"), *synthetic.twins(PING, S, F)]
    assert control_counts(cases) == {"total": 3, "run": 2, "passed": 1, "skipped": 1}
    assert "controls: 1 passed / 2 run (1 skipped)" in summary_line(cases)
    assert "controls: 0 passed / 0 run" in summary_line([synthetic.case(RUN_AS, P)])
    assert table([]).splitlines()[-1] == "windows: 0 checks (none); controls: 0 passed / 0 run"


REQUIRED = textwrap.dedent(
    """\
    version: 1
    kubernetes:
      "1.34":
        tests:
          - {{id: {dial}, name: pod to pod}}
          - {{id: {dns}, name: fqdn}}
    """
)


def gate_run(tmp_path, cases):
    path = artifacts.write_run(tmp_path / "r", cases, start=1_000, result="FAILURE", profile=synthetic.profile())
    ids = {c.name.split("[")[0]: c.test_id for c in cases if not c.is_control}
    required = tmp_path / "required.yaml"
    required.write_text(REQUIRED.format(dial=ids[DIAL], dns=ids[DNS]))
    return artifacts.load_run(path), load_required(required)


def test_gate_ignores_controls_even_failed_ones(tmp_path):
    run, required = gate_run(tmp_path, [*synthetic.twins(DIAL, P, F), *synthetic.twins(DNS, P, E, area="dns")])
    result = judge(run, required)
    assert result.ok and len(result.passed) == 2 and result.blocking == []
    assert "Linux controls ignored by the gate (never required, never blocking): 0 passed / 2 run" in result.render()


def test_gate_says_which_blocking_errors_are_cluster_wide(tmp_path):
    run, required = gate_run(tmp_path, [*synthetic.twins(DIAL, E, P), *synthetic.twins(DNS, E, F, area="dns")])
    result = judge(run, required)
    assert not result.ok and result.cluster_wide == 1
    why = {name: text for _, name, text in result.blocking}
    assert why[f"{DNS}[windows]"].startswith("cluster-wide (its Linux control failed too): error: ")
    assert not why[f"{DIAL}[windows]"].startswith("cluster-wide")
    rendered = result.render()
    # No Windows check executed on a real Windows node (both errored): that blocks too (no green on a lie).
    assert "3 blocking, 1 of them cluster-wide" in rendered
    assert "BLOCKING - Windows checks on real Windows nodes: none executed" in rendered
    assert "1 blocking error(s) are cluster-wide: their Linux controls failed the same check" in rendered


def test_gate_never_requires_a_control(tmp_path):
    cases = [*synthetic.twins(DIAL, None, P), *synthetic.twins(DNS, P, P, area="dns")]
    path = artifacts.write_run(tmp_path / "r", cases, start=1_000, result="SUCCESS", profile=synthetic.profile())
    control_id = cases[0].test_id
    required = tmp_path / "required.yaml"
    required.write_text(REQUIRED.format(dial=control_id, dns=cases[2].test_id))
    result = judge(artifacts.load_run(path), load_required(required))
    assert [why for *_, why in result.blocking] == [
        "missing: not in this run (only a Linux control carries this id, and controls are never required: "
        "list its Windows twin)"
    ]


def test_wincon_run_ends_with_the_summary_line_over_both_phases(tmp_path, monkeypatch, capsys):
    def fake_pytest(command):
        serial = "not" not in command[-1]
        directory = Path(command[command.index("--results-dir") + 1])
        cases = synthetic.twins(DNS if serial else DIAL, P, P if serial else F, area="dns" if serial else "networking")
        artifacts.write_run(directory, cases, start=1_000, result="SUCCESS", profile=synthetic.profile())
        return 0

    monkeypatch.setattr(runner, "_run_pytest", fake_pytest)
    assert runner.run(tmp_path / "results" / "r1", ["--", "suites"], reports=False) == ExitCode.OK
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (
        "wincon run: windows: 2 checks (2 passed); controls: 1 passed / 2 run; "
        "Windows checks executed on real Windows nodes: win-0 2 (not observed 2); win-1 0; exit 0"
    )


def test_finished_json_carries_the_controls_figure_of_both_phases(tmp_path):
    import json

    def phase(path, controls):
        (path / "artifacts").mkdir(parents=True)
        (path / "started.json").write_text(json.dumps({"timestamp": 1, "metadata": {}}))
        metadata = {"verdicts": {"passed": "1"}, "controls": controls}
        finished = {"timestamp": 2, "passed": True, "result": "SUCCESS", "metadata": metadata}
        (path / "finished.json").write_text(json.dumps(finished))
        return path

    main_dir = phase(tmp_path / "r1", {"total": "3", "run": "2", "passed": "2", "skipped": "1"})
    scratch = phase(tmp_path / ".r1-serial", {"total": "1", "run": "1", "passed": "0", "skipped": "0"})
    runner.merge_phase(main_dir, scratch, ExitCode.OK, ExitCode.OK)
    finished = json.loads((main_dir / "finished.json").read_text())
    assert finished["metadata"]["controls"] == {"total": "4", "run": "3", "passed": "2", "skipped": "1"}


# ----------------------------------------------------------------------------- a real run (pytester)

SUITE = """
import pytest

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0202")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress")
def test_flow(target_os, data_plane):
    data_plane("dial")
    assert {"windows": False, "linux": True}[target_os], "no reply"

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0204")
@pytest.mark.dataplane
@pytest.mark.parametrize("path", ["back-slash"])
def test_param(target_os, path, data_plane):
    data_plane("mount")
    assert True

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0203")
def test_api_only():
    assert True
"""


def test_a_real_run_writes_both_outcomes_into_junit_and_allure(pytester, capsys):
    import json

    from tests.unit.test_controls import profile
    from tests.unit.test_plugin import LIMITS
    from wincon.results import junit
    from wincon.session.verdicts import CONTROL, CONTROL_OUTCOME, TARGET_OS

    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(SUITE)
    (pytester.path / "profile.json").write_text(profile())
    result = pytester.runpytest_subprocess(
        "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml",
        "--results-dir", "out", "--alluredir", "allure", "-p", "no:randomly",
    )  # fmt: skip
    result.assert_outcomes(passed=4, failed=1)
    [xml] = (pytester.path / "out" / "artifacts").glob("junit*.xml")
    cases = {c.name: c for c in junit.parse(xml)}
    control, windows = cases["suites/test_s.py::test_flow[linux]"], cases["suites/test_s.py::test_flow[windows]"]
    assert control.prop(TARGET_OS) == "linux" and windows.prop(TARGET_OS) == "windows"
    assert control.prop(CONTROL) == windows.prop(CONTROL) != ""
    assert windows.prop(CONTROL_OUTCOME) == "passed" and control.prop(CONTROL_OUTCOME) == ""
    assert cases["suites/test_s.py::test_api_only"].prop(TARGET_OS) == "windows"
    assert not cases["suites/test_s.py::test_api_only"].prop(CONTROL)

    allure = {}
    for path in (pytester.path / "allure").glob("*-result.json"):
        doc = json.loads(path.read_text())
        allure[doc["name"]] = doc
    linux, win = allure["test_flow[linux]"], allure["test_flow[windows]"]
    labels = {name: [(x["name"], x["value"]) for x in doc["labels"]] for name, doc in allure.items()}
    assert ("os", "linux") in labels["test_flow[linux]"] and ("os", "windows") in labels["test_flow[windows]"]
    assert ("tag", "os:linux") in labels["test_flow[linux]"]
    assert ("story", "test_flow") in labels["test_flow[linux]"] and ("story", "test_flow") in labels[
        "test_flow[windows]"
    ]
    assert [link["name"] for link in win["links"] if "dashboard" in link["url"]] == [
        "Linux control: suites/test_s.py::test_flow[linux]"
    ]
    assert [link["url"] for link in linux["links"] if "dashboard" in link["url"]] == [
        "../dashboard/index.html#q=test_flow%5Bwindows%5D"
    ]
    params = {p["name"]: p for p in win["parameters"]}
    assert params["Linux control"]["value"] == "passed" and params["Linux control"].get("excluded") is True
    assert "Linux control" not in {p["name"] for p in linux["parameters"]}
    assert ("tag", "limitation:icmp-egress") in labels["test_flow[windows]"]
    assert ("tag", "limitation:icmp-egress") not in labels["test_flow[linux]"]
    assert ("os", "windows") in labels["test_api_only"] and not [x for x in labels["test_api_only"] if x[0] == "story"]

    finished = json.loads((pytester.path / "out" / "finished.json").read_text())
    assert finished["metadata"]["controls"] == {"total": "2", "run": "2", "passed": "2", "skipped": "0"}
    capsys.readouterr()
    assert ("story", "test_param[back-slash]") in labels["test_param[linux-back-slash]"]
    assert ("story", "test_param[back-slash]") in labels["test_param[windows-back-slash]"]
    assert [
        link["name"] for link in allure["test_param[windows-back-slash]"]["links"] if "dashboard" in link["url"]
    ] == ["Linux control: suites/test_s.py::test_param[linux-back-slash]"]
    assert main(["report", str(pytester.path / "out"), "--no-html"]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert next(x for x in out if "test_flow" in x).split()[:3] == ["test_s.py::test_flow", "failed", "passed"]
    assert next(x for x in out if "test_param" in x).split()[:3] == [
        "test_s.py::test_param[back-slash]",
        "passed",
        "passed",
    ]
    assert out[-1] == "windows: 3 checks (2 passed, 1 failed); controls: 2 passed / 2 run"
