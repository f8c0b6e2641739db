"""`wincon report`: a run's checks as a table (a column per OS), and its Allure HTML report, generated offline.

The table has one row per check: its Windows verdict beside its Linux control's verdict in the same run
("no control" where the check has none), then the summary line with the controls' figure.

The Allure CLI comes from the npm package ``allure-commandline``, pinned in the repository's
package.json / package-lock.json and installed with ``npm ci`` (it runs on the machine's Java 17).
Nothing is downloaded at report time. The report is a single self-contained index.html
(``--single-file``), so it opens straight from disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from wincon.commandline.errors import ResultsError
from wincon.results.model import CaseResult, Check, Verdict, control_counts, count, pair, without_os
from wincon.session.verdicts import CONTROL_HIT

REPO = Path(__file__).resolve().parent.parent.parent
ALLURE_FIX = (
    "run `npm ci` in the repository (it installs allure-commandline from package-lock.json); Java 17 must be on PATH"
)


def find_allure() -> Path:
    """The Allure CLI: $WINCON_ALLURE, else node_modules/.bin/allure of the repository or the working directory."""
    override = os.environ.get("WINCON_ALLURE")
    candidates = [Path(override)] if override else []
    candidates += [REPO / "node_modules" / ".bin" / "allure", Path.cwd() / "node_modules" / ".bin" / "allure"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ResultsError(
        "the Allure command line is not installed (looked for node_modules/.bin/allure in "
        + ", ".join(str(c.parent.parent.parent) for c in candidates[-2:])
        + ")",
        ALLURE_FIX,
    )


def generate(results_dir: Path, out: Path | None = None, timeout: float = 600.0) -> Path:
    """Generate ``<run>/allure-report/index.html`` from ``<run>/allure-results``; returns index.html."""
    results_dir = Path(results_dir)
    allure_results = results_dir / "allure-results" if (results_dir / "allure-results").is_dir() else results_dir
    if not allure_results.is_dir() or not any(allure_results.glob("*-result.json")):
        raise ResultsError(
            f"{allure_results}: no Allure results (*-result.json) in it",
            "pass a run directory made by `wincon run` (or pytest --alluredir DIR/allure-results)",
        )
    out = Path(out) if out else (results_dir if allure_results != results_dir else results_dir.parent) / "allure-report"
    allure = find_allure()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ResultsError("Java is not on PATH and JAVA_HOME is not set: the Allure CLI needs it", ALLURE_FIX)
    command = [str(allure), "generate", str(allure_results), "-o", str(out), "--clean", "--single-file"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ResultsError(f"allure generate took more than {timeout:.0f}s", "retry; check the machine's load") from exc
    index = out / "index.html"
    if proc.returncode != 0 or not index.is_file():
        raise ResultsError(
            f"allure generate failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-600:]}",
            ALLURE_FIX,
        )
    return index


# ----------------------------------------------------------------------------- the table


def _short(name: str) -> str:
    """``suites/networking/test_x.py::test_y[windows-http]`` -> ``networking/test_x.py::test_y[http]``."""
    return without_os(name.removeprefix("suites/"))


def _area(check: Check) -> str:
    case = check.windows or check.control
    return case.area if case is not None else ""


def _note(check: Check) -> str:
    """Why the Windows verdict is what it is, in a few words, where it is not a plain pass."""
    case = check.windows
    if case is None:
        return "only the Linux control ran"
    if check.cluster_wide:
        return "cluster-wide: its Linux control failed too"
    if case.verdict is Verdict.FAILED and check.control_verdict == Verdict.PASSED.value:
        return "Windows deviation: its Linux control passed"
    hit = control_hit(check)
    if hit:
        text = f"its Linux control failed elsewhere: {hit}"
        return text if len(text) <= NOTE_WIDTH else text[: NOTE_WIDTH - 3] + "..."
    if case.verdict is Verdict.PASSED or not case.message:
        return ""
    line = case.message.splitlines()[0]
    return line if len(line) <= NOTE_WIDTH else line[: NOTE_WIDTH - 3] + "..."


NOTE_WIDTH = 100


def control_hit(check: Check) -> str:
    """What a control that failed on another step than its twin's hit ("" where it did not): the plugin's
    ``control_hit`` property on the Windows case, else, for a twin that did not fail, the control's message."""
    case = check.windows
    if case is None or check.cluster_wide or check.control_verdict not in (Verdict.FAILED.value, "error"):
        return ""
    hit = case.prop(CONTROL_HIT)
    if not hit and check.control is not None and case.verdict is not Verdict.FAILED:
        hit = check.control.message
    return hit


def table(cases: list[CaseResult], width: int = 160) -> str:
    """One row per check: the Windows verdict and the Linux control verdict side by side, then a summary."""
    checks = sorted(pair(cases), key=lambda c: (_area(c), c.name))
    rows = [("check", "windows", "linux control", "note")]
    for check in checks:
        rows.append(
            (
                _short(check.name),
                check.windows.verdict.value if check.windows is not None else CONTROL_ABSENT,
                check.control_verdict,
                _note(check),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for row in rows:
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
        lines.append(line.rstrip()[:width] if width else line.rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ----")
    lines.append(summary_line(cases))
    return "\n".join(lines)


CONTROL_ABSENT = "not run"


def summary_line(cases: list[CaseResult]) -> str:
    """``windows: N checks (3 passed, ...); controls: N passed / M run (K skipped)``, from the results."""
    windows = [c for c in cases if not c.is_control]
    counts = count(windows)
    shown = ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    controls = control_counts(cases)
    text = f"windows: {len(windows)} checks ({shown or 'none'}); controls: {controls['passed']} passed / {controls['run']} run"
    if controls["skipped"]:
        text += f" ({controls['skipped']} skipped)"
    cluster_wide = sum(check.cluster_wide for check in pair(cases))
    if cluster_wide:
        text += f"; {cluster_wide} cluster-wide errors (the Linux control failed too)"
    return text
