"""The dashboard in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Needs `apt-get install chromium`; never `playwright install` (no browser download). Screenshots are
kept in build/e2e/ as test artifacts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import browser as chromium
from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts
from wincon.results.model import Verdict

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "e2e"

# The colour of each verdict, as a user sees it (computed style), independent of the stylesheet's names.
COLOURS = {
    "passed": "rgb(46, 125, 50)",
    "failed": "rgb(211, 47, 47)",
    "xfailed": "rgb(142, 36, 170)",
    "xpassed": "rgb(255, 143, 0)",
    "skipped": "rgb(207, 216, 220)",
    "error": "rgb(38, 50, 56)",
    "missing": "rgb(255, 255, 255)",
}
PING = "suites/networking/test_icmp.py::test_ping_external_gets_a_reply"
DIAL = "suites/networking/test_dial.py::test_pod_to_pod"
MOUNT = "suites/storage/test_mounts.py::test_subpath_contents"
API = "suites/api/test_fields.py::test_run_as_user_rejected"
# Known runs, oldest first: (name, cluster, {test: verdict}); the grid shows them newest first.
RUNS = [
    ("old", ("v1.33.5", 17763, "flannel", "vxlan"), {PING: "xfailed", DIAL: "passed", MOUNT: "passed", API: "error"}),
    ("mid", ("v1.35.0", 26100, "calico", "vxlan"), {PING: "passed", DIAL: "failed", MOUNT: "skipped", API: "passed"}),
    ("new", ("v1.34.4", 20348, "azure-cni", None), {PING: "xpassed", DIAL: "passed", API: "passed"}),
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not chromium.CHROMIUM.exists():
        pytest.fail(chromium.INSTALL_HINT)
    with sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        yield browser
        browser.close()


def write_history(root: Path) -> None:
    for index, (name, cluster, verdicts) in enumerate(RUNS):
        cases = []
        for test, verdict in verdicts.items():
            limitation = "icmp-egress-through-vfp" if test == PING and verdict in ("xfailed", "xpassed") else None
            area = test.split("/")[1]
            cases.append(
                synthetic.case(
                    test,
                    Verdict(verdict),
                    area=area,
                    limitation=limitation,
                    limitation_title="ICMP to outside the cluster gets no reply",
                    markers=("hybrid",) if test == DIAL else (),
                )
            )
        artifacts.write_run(
            root / name,
            cases,
            start=1_790_000_000 + index * 3600,
            result="FAILURE",
            profile=synthetic.profile(*cluster),
            run_id=f"run-{name}",
        )


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "results"
    write_history(root)
    out = tmp_path / "site"
    assert main(["dashboard", str(root), "-o", str(out)]) == ExitCode.OK
    return out


def open_page(browser, site: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on(
        "console", lambda msg: problems.append(f"{msg.type}: {msg.text}") if msg.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}"))
    page.goto((site / "index.html").as_uri())
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=15_000)
    return page, problems


def keep_screenshot(page, name: str, tmp_path: Path) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    shutil.copy(path, tmp_path / name)
    return path


def test_grid_shows_each_verdict_in_its_colour_with_no_console_errors(browser, site, tmp_path):
    page, problems = open_page(browser, site)
    names = page.eval_on_selector_all("#grid tbody th.test", "ths => ths.map(th => th.title.split('\\n')[0])")
    colours = page.eval_on_selector_all(
        "#grid tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td.c')].map(td => getComputedStyle(td).backgroundColor))",
    )
    grid = dict(zip(names, colours, strict=True))
    newest_first = list(reversed(RUNS))
    for test in (PING, DIAL, MOUNT, API):
        expected = [COLOURS[verdicts.get(test, "missing")] for _, _, verdicts in newest_first]
        assert grid[test] == expected, test
    assert COLOURS["xfailed"] != COLOURS["failed"]
    keep_screenshot(page, "dashboard-grid.png", tmp_path)
    assert problems == []
    page.close()


def test_hover_names_the_limitation(browser, site):
    page, problems = open_page(browser, site)
    row = page.locator("#grid tbody tr", has=page.locator(f"th[title^='{PING}']"))
    xfail_cell = row.locator("td.c").nth(2)  # the oldest run: the limitation showed
    xfail_cell.hover()
    title = xfail_cell.get_attribute("title")
    assert "expected failure (documented limitation)" in title
    assert "icmp-egress-through-vfp" in title
    lifted = row.locator("td.c").nth(0)
    lifted.hover()
    assert "limitation icmp-egress-through-vfp appears lifted on this cluster" in lifted.get_attribute("title")
    assert problems == []
    page.close()


def test_marker_filter_and_problem_filter(browser, site):
    page, problems = open_page(browser, site)
    page.select_option("#marker-filter", "hybrid")
    visible = page.eval_on_selector_all(
        "#grid tbody tr:not([hidden]) th.test", "ths => ths.map(th => th.title.split('\\n')[0])"
    )
    assert visible == [DIAL]
    page.select_option("#marker-filter", "")
    page.check("#problems-filter")
    visible = page.eval_on_selector_all(
        "#grid tbody tr:not([hidden]) th.test", "ths => ths.map(th => th.title.split('\\n')[0])"
    )
    assert sorted(visible) == sorted([PING, DIAL, API])  # lifted, failed, error; MOUNT only passed and skipped
    assert "3 of 4 tests, 3 runs" in page.inner_text("#shown-count")
    assert problems == []
    page.close()


def test_area_limitation_and_run_views(browser, site, tmp_path):
    page, problems = open_page(browser, site)
    page.click("#tabs button[data-view=areas]")
    networking = page.inner_text("#areas tr[data-area=networking]")
    assert "66.7%" in networking  # 4 of 6 behaved as documented over the three runs
    page.click("#tabs button[data-view=limitations]")
    statuses = page.eval_on_selector_all(
        ".lim[data-limitation=icmp-egress-through-vfp] tbody tr",
        "rows => rows.map(r => [...r.cells].slice(0, 4).map(c => c.textContent))",
    )
    assert sorted(statuses) == [
        ["azure-cni", "10.0.20348", "v1.34.4", "appears lifted"],
        ["calico (vxlan)", "10.0.26100", "v1.35.0", "does not apply"],
        ["flannel (vxlan)", "10.0.17763", "v1.33.5", "still shows"],
    ]
    keep_screenshot(page, "dashboard-limitations.png", tmp_path)
    page.click("#tabs button[data-view=runs]")
    page.click("#runs tr[data-run='2']")
    profile = page.inner_text("#profile")
    assert "run run-old" in profile and '"cni": "flannel"' in profile and '"server_version": "v1.33.5"' in profile
    assert problems == []
    page.close()


def test_a_half_written_run_is_named_on_the_page_and_the_others_still_show(browser, tmp_path, capsys):
    root = tmp_path / "results"
    write_history(root)
    (root / "mid" / "finished.json").unlink()
    out = tmp_path / "site"
    assert main(["dashboard", str(root), "-o", str(out)]) == ExitCode.RESULTS
    assert f"{root / 'mid' / 'finished.json'}: missing" in capsys.readouterr().err
    page, problems = open_page(browser, out)
    assert f"{root / 'mid' / 'finished.json'}: missing" in page.inner_text("#errors")
    assert page.locator("#grid thead th[data-run]").count() == 2
    keep_screenshot(page, "dashboard-with-error.png", tmp_path)
    assert problems == []
    page.close()


FLOW = "suites/networking/test_services.py::test_node_port"


def write_control_history(root: Path) -> None:
    """A check with a Linux control over three runs (both twins; the control alone; Windows alone) and a
    Windows-only check beside it."""
    runs = [
        ("old", synthetic.twins(FLOW, Verdict.FAILED, Verdict.PASSED)),
        ("mid", synthetic.twins(FLOW, None, Verdict.FAILED)),
        ("new", synthetic.twins(FLOW, Verdict.ERROR, Verdict.FAILED)),
    ]
    for index, (name, cases) in enumerate(runs):
        cases.append(synthetic.case(API, Verdict.PASSED, area="api", target_os="windows"))
        artifacts.write_run(
            root / name, cases, start=1_790_000_000 + index * 3600, result="FAILURE", profile=synthetic.profile()
        )


def test_each_check_is_one_row_with_a_windows_and_a_linux_control_column_per_run(browser, tmp_path):
    root = tmp_path / "results"
    write_control_history(root)
    site = tmp_path / "site"
    assert main(["dashboard", str(root), "-o", str(site)]) == ExitCode.OK
    page, problems = open_page(browser, site)
    names = page.eval_on_selector_all("#grid tbody th.test", "ths => ths.map(th => th.title.split('\\n')[0])")
    assert names == [API, f"{FLOW}[windows]"]  # one row per check: no [linux] row
    cells = page.eval_on_selector_all(
        "#grid tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => [td.className.split(' ')[0], "
        "getComputedStyle(td).backgroundColor]))",
    )
    flow = cells[1]
    # newest first, each run: the Windows cell, then its Linux control's.
    assert [kind for kind, _ in flow] == ["c", "l"] * 3
    assert [colour for _, colour in flow] == [
        COLOURS["error"], COLOURS["failed"],  # new: cluster-wide
        COLOURS["missing"], COLOURS["failed"],  # mid: only the control ran
        COLOURS["failed"], COLOURS["passed"],  # old: a Windows deviation
    ]  # fmt: skip
    api = cells[0]
    assert [kind for kind, _ in api] == ["c", "l"] * 3 and all(c == COLOURS["passed"] for _, c in api[::2])
    assert all(colour not in COLOURS.values() for _, colour in api[1::2])  # "no control": hatched, not a verdict
    row = page.locator("#grid tbody tr", has=page.locator(f"th[title^='{FLOW}']"))
    control = row.locator("td.l").nth(0)
    control.hover()
    assert f"{FLOW}[linux]" in control.get_attribute("title")
    assert "Linux control: failed" in control.get_attribute("title")
    assert "AssertionError: no reply" in control.get_attribute("title")
    windows = row.locator("td.c").nth(0)
    windows.hover()
    assert "Windows: infrastructure error" in windows.get_attribute("title")
    assert "cluster-wide" in windows.get_attribute("title")
    keep_screenshot(page, "dashboard-controls.png", tmp_path)
    page.uncheck("#controls-toggle")
    assert not row.locator("td.l").first.is_visible() and row.locator("td.c").first.is_visible()
    page.click("#tabs button[data-view=runs]")
    assert page.eval_on_selector_all("#runs td.controls", "tds => tds.map(td => td.textContent)") == [
        "0 / 1",
        "0 / 1",
        "1 / 1",
    ]
    assert problems == []
    page.close()


def test_a_link_to_a_twin_opens_the_grid_filtered_to_its_check(browser, tmp_path):
    root = tmp_path / "results"
    write_control_history(root)
    site = tmp_path / "site"
    assert main(["dashboard", str(root), "-o", str(site)]) == ExitCode.OK
    page = browser.new_page()
    page.goto((site / "index.html").as_uri() + "#q=test_node_port%5Blinux%5D")
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=15_000)
    visible = page.eval_on_selector_all(
        "#grid tbody tr:not([hidden]) th.test", "ths => ths.map(th => th.title.split('\\n')[0])"
    )
    assert visible == [f"{FLOW}[windows]"]
    page.close()
