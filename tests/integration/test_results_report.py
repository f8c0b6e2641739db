"""`wincon report`: Allure's HTML report, generated offline by the npm allure-commandline (Java 17)."""

from __future__ import annotations

import base64
import json
import re

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results.report import REPO

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(
    not (REPO / "node_modules" / ".bin" / "allure").exists(), reason="allure-commandline not installed: run `npm ci`"
)

SUITE = """
import pytest

@pytest.mark.networking
@pytest.mark.test_id("00000000-0000-4000-8000-000000000001")
def test_pod_to_pod():
    pass

@pytest.mark.networking
@pytest.mark.test_id("00000000-0000-4000-8000-000000000003")
@pytest.mark.limitation("icmp-egress-through-vfp")
def test_icmp_lifted():
    pass
"""


def embedded(index_html: str, name: str):
    """A data file of a --single-file report (base64 JSON inside index.html)."""
    match = re.search(r"d\('data/" + re.escape(name) + r"','([^']*)'\)", index_html)
    assert match, f"{name} not in the report"
    return json.loads(base64.b64decode(match.group(1)))


def test_report_is_generated_offline_with_wincon_labels_and_categories(pytester, capsys):
    synthetic.workspace(pytester.path, SUITE)
    results = pytester.path / "results" / "r1"
    pytester.runpytest_subprocess(
        "suites",
        *synthetic.WORKSPACE_ARGS,
        "--results-dir",
        str(results),
        "--alluredir",
        str(results / "allure-results"),
    )
    assert main(["report", str(results)]) == ExitCode.OK
    index = results / "allure-report" / "index.html"
    assert f"allure report: {index}" in capsys.readouterr().out
    html = index.read_text()
    behaviors = embedded(html, "behaviors.json")
    assert [epic["name"] for epic in behaviors["children"]] == ["networking"]
    assert [feature["name"] for feature in behaviors["children"][0]["children"]] == ["flows"]
    categories = {c["name"]: c for c in embedded(html, "categories.json")["children"]}
    lifted = categories["Limitations that appear lifted"]
    assert [t["name"] for t in lifted["children"][0]["children"]] == ["test_icmp_lifted"]


def test_report_without_allure_results_names_the_directory(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == ExitCode.RESULTS
    assert f"{tmp_path}: no Allure results (*-result.json) in it" in capsys.readouterr().err


def test_missing_allure_cli_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    allure = tmp_path / "allure-results"
    allure.mkdir()
    (allure / "x-result.json").write_text("{}")
    monkeypatch.setattr("wincon.results.report.REPO", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WINCON_ALLURE", raising=False)
    assert main(["report", str(tmp_path)]) == ExitCode.RESULTS
    err = capsys.readouterr().err
    assert "the Allure command line is not installed" in err and "npm ci" in err
