"""The dashboard's data: grid codes, hover notes, pass rates per area, the per-limitation view."""

from __future__ import annotations

import json

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts
from wincon.results.dashboard import build_data, load_runs
from wincon.results.model import Verdict

PING = "suites/networking/test_icmp.py::test_ping_external"
DIAL = "suites/networking/test_dial.py::test_pod_to_pod"
MOUNT = "suites/storage/test_mounts.py::test_subpath"


def write(root, name, start, cluster, verdicts):
    cases = []
    for test, verdict in verdicts.items():
        area = test.split("/")[1]
        limitation = "icmp-egress" if test == PING and verdict in (Verdict.XFAILED, Verdict.XPASSED) else None
        cases.append(synthetic.case(test, verdict, area=area, limitation=limitation, limitation_title="ICMP"))
    return artifacts.write_run(
        root / name, cases, start=start, result="FAILURE", profile=synthetic.profile(*cluster), build_id=str(start)
    )


def history(tmp_path):
    root = tmp_path / "results"
    overlay = ("v1.33.5", 17763, "flannel", "vxlan")
    calico = ("v1.35.0", 26100, "calico", "vxlan")
    azure = ("v1.34.4", 20348, "azure-cni", None)
    write(root, "old", 100, overlay, {PING: Verdict.XFAILED, DIAL: Verdict.PASSED, MOUNT: Verdict.PASSED})
    write(root, "mid", 200, calico, {PING: Verdict.PASSED, DIAL: Verdict.FAILED, MOUNT: Verdict.SKIPPED})
    write(root, "new", 300, azure, {PING: Verdict.XPASSED, DIAL: Verdict.PASSED})
    return root


def test_grid_rows_are_tests_and_columns_runs_newest_first(tmp_path):
    data = build_data(load_runs([history(tmp_path)]).runs)
    assert [r["build"] for r in data["runs"]] == ["300", "200", "100"]
    rows = {t["name"]: data["grid"][i] for i, t in enumerate(data["tests"])}
    assert rows == {PING: "LPX", DIAL: "PFP", MOUNT: ".SP"}
    ping = next(i for i, t in enumerate(data["tests"]) if t["name"] == PING)
    assert data["notes"][f"{ping}:2"].startswith("expected failure: limitation icmp-egress")
    assert data["notes"][f"{ping}:0"] == "limitation icmp-egress appears lifted on this cluster"


def test_pass_rate_per_area_counts_expected_failures_as_documented_and_leaves_skips_out(tmp_path):
    data = build_data(load_runs([history(tmp_path)]).runs)
    areas = {a["area"]: a for a in data["areas"]}
    networking = areas["networking"]
    # runs newest first: [L,P] -> 1/2; [P,F] -> 1/2; [X,P] -> 2/2
    assert [r["rate"] for r in networking["runs"]] == [0.5, 0.5, 1.0]
    assert networking["rate"] == round(4 / 6, 4)
    assert areas["storage"]["runs"][0]["rate"] is None  # not run in the newest
    assert areas["storage"]["total"]["skipped"] == 1


def test_limitation_view_separates_clusters_where_it_shows_is_lifted_or_does_not_apply(tmp_path):
    data = build_data(load_runs([history(tmp_path)]).runs)
    [lim] = data["limitations"]
    assert lim["id"] == "icmp-egress" and lim["title"] == "ICMP"
    statuses = {(c["cni"], c["windows_build"], c["k8s"]): c["status"] for c in lim["clusters"]}
    assert statuses == {
        ("flannel (vxlan)", "10.0.17763", "v1.33.5"): "still shows",
        ("calico (vxlan)", "10.0.26100", "v1.35.0"): "does not apply",
        ("azure-cni", "10.0.20348", "v1.34.4"): "appears lifted",
    }


def test_markers_include_areas_for_the_filter(tmp_path):
    data = build_data(load_runs([history(tmp_path)]).runs)
    assert {"networking", "storage"} <= set(data["markers"])
    assert all(t["area"] in t["markers"] for t in data["tests"])


def test_cli_builds_the_site_and_shows_good_runs_when_one_is_half_written(tmp_path, capsys):
    root = history(tmp_path)
    (root / "mid" / "finished.json").write_text('{"timestamp": 2, "passed": fal')
    site = tmp_path / "site"
    code = main(["dashboard", str(root), "-o", str(site)])
    err = capsys.readouterr().err
    assert code == ExitCode.RESULTS
    assert f"{root / 'mid' / 'finished.json'}: not valid JSON" in err
    data = json.loads((site / "data.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    assert [r["build"] for r in data["runs"]] == ["300", "100"]
    assert "finished.json: not valid JSON" in data["errors"][0]["message"]
    assert {p.name for p in site.iterdir()} == {"index.html", "app.js", "style.css", "data.js"}


def test_cli_with_only_good_runs_exits_zero_and_with_nothing_to_show_exits_8(tmp_path, capsys):
    root = history(tmp_path)
    assert main(["dashboard", str(root / "old"), str(root / "new"), "-o", str(tmp_path / "s1")]) == ExitCode.OK
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["dashboard", str(empty), "-o", str(tmp_path / "s2")]) == ExitCode.RESULTS
    assert "neither a run's results directory" in capsys.readouterr().err


def test_test_names_and_messages_cannot_inject_markup_into_data_js(tmp_path):
    root = tmp_path / "results"
    case = synthetic.case("suites/api/test_x.py::test_</script><img src=x onerror=alert(1)>", Verdict.FAILED)
    artifacts.write_run(root / "r", [case], start=1, result="FAILURE")
    site = tmp_path / "site"
    assert main(["dashboard", str(root), "-o", str(site)]) == ExitCode.OK
    assert "</script>" not in (site / "data.js").read_text()


FLOW = "suites/networking/test_flow.py::test_node_port"
NAME_ONLY = "suites/api/test_fields.py::test_run_as_user_name"


def control_history(tmp_path):
    """Three runs of a check with a Linux control: both twins; only the control (-m control); only the
    Windows check (-m "not control"). And a Windows-only check beside it."""
    root = tmp_path / "results"
    runs = [
        ("old", 100, synthetic.twins(FLOW, Verdict.FAILED, Verdict.PASSED)),
        ("mid", 200, synthetic.twins(FLOW, None, Verdict.FAILED)),
        ("new", 300, synthetic.twins(FLOW, Verdict.ERROR, None)),
    ]
    for name, start, cases in runs:
        cases.append(synthetic.case(NAME_ONLY, Verdict.PASSED, area="api", target_os="windows"))
        artifacts.write_run(root / name, cases, start=start, result="FAILURE", build_id=str(start))
    return root


def test_a_check_and_its_linux_control_share_one_row_with_a_column_each(tmp_path):
    data = build_data(load_runs([control_history(tmp_path)]).runs)
    rows = {t["name"]: (data["grid"][i], data["controls"][i]) for i, t in enumerate(data["tests"])}
    # newest first: new (Windows only, its control not run), mid (the control alone), old (both).
    assert rows == {f"{FLOW}[windows]": ("E.F", "nFP"), NAME_ONLY: ("PPP", "---")}
    flow = next(i for i, t in enumerate(data["tests"]) if t["name"] == f"{FLOW}[windows]")
    assert data["tests"][flow]["control"] == f"{FLOW}[linux]"
    assert data["control_notes"][f"{flow}:1"] == "AssertionError: no reply"
    assert not any(t["name"].endswith("[linux]") for t in data["tests"])  # never a row of its own


def test_counts_and_pass_rates_are_the_windows_checks_and_the_controls_are_counted_apart(tmp_path):
    data = build_data(load_runs([control_history(tmp_path)]).runs)
    old = data["runs"][2]
    assert old["counts"]["failed"] == 1 and old["counts"]["passed"] == 1 and sum(old["counts"].values()) == 2
    assert old["controls"] == {"total": 1, "run": 1, "passed": 1, "skipped": 0}
    assert data["runs"][0]["controls"]["total"] == 0


def test_a_control_whose_twin_never_ran_gets_a_row_named_after_the_twin(tmp_path):
    root = tmp_path / "results"
    artifacts.write_run(root / "r", synthetic.twins(FLOW, None, Verdict.PASSED), start=1, result="SUCCESS")
    data = build_data(load_runs([root]).runs)
    assert [(t["name"], g, c) for t, g, c in zip(data["tests"], data["grid"], data["controls"], strict=True)] == [
        (f"{FLOW}[windows]", ".", "P")
    ]
