"""`wincon report`: the Allure HTML report of a run, generated offline.

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

from wincon.errors import ResultsError

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
