"""`wincon dashboard RESULTS... -o SITE`: a static history page over any number of runs.

The site is four files (index.html, app.js, style.css, data.js) that open from disk or any static
host, no server code and nothing fetched from the network. data.js holds one compact document:

* ``runs``: newest first, each with its result, metadata and cluster profile;
* ``tests``: one row per test id (the name of its latest run), with area, markers and seed documents;
* ``grid``: per test, one character per run: P passed, F failed, X xfailed, L xpassed (limitation
  appears lifted), S skipped, E error, ``.`` not in that run; ``notes`` hold the message of every
  cell that is not a pass, keyed ``"<test>:<run>"`` (the hover text, naming the limitation);
* ``controls``: beside each grid row, the Linux control of that check per run, in the same codes, plus
  ``-`` (the check has no control) and ``n`` (it has one, not in that run's results); ``control_notes``
  the control's message where it did not pass. A row is a check: its Windows case and its control
  (``[linux]``, marker ``control``) share it, never two unrelated rows. Counts and pass rates are the
  Windows checks'; each run also carries ``controls`` (total, run, passed, skipped);
* ``areas``: pass rates per area and run; ``limitations``: for each limitation, the clusters
  (CNI, Windows build, Kubernetes version) where it still shows, where it appears lifted, and where
  it does not apply;
* ``errors``: the results directories that could not be read, each naming its file.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from wincon import __version__
from wincon.commandline.errors import ResultsError
from wincon.results import execution
from wincon.results.artifacts import Run, atomic_write_bytes, find_run_dirs, load_run
from wincon.results.model import NO_CONTROL, Check, Verdict, control_counts, count, pair

CODES = {
    Verdict.PASSED: "P",
    Verdict.FAILED: "F",
    Verdict.XFAILED: "X",
    Verdict.XPASSED: "L",
    Verdict.SKIPPED: "S",
    Verdict.ERROR: "E",
}
MISSING = "."
NO_CONTROL_CODE = "-"  # the Linux-control cell of a check that has no control
CONTROL_NOT_RUN_CODE = "n"  # the check has a control, but it is not in this run's results
VERDICT_NAMES = frozenset(v.value for v in Verdict)
STATIC_FILES = ("index.html", "app.js", "style.css")


@dataclass
class LoadResult:
    runs: list[Run]
    errors: list[ResultsError]


def load_runs(paths: list[Path]) -> LoadResult:
    """Every readable run under ``paths``; each unreadable one becomes an error naming its file."""
    run_dirs, errors = find_run_dirs(paths)
    runs: list[Run] = []
    seen: set[Path] = set()
    for path in run_dirs:
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        try:
            runs.append(load_run(path))
        except ResultsError as exc:
            errors.append(exc)
    return LoadResult(runs, errors)


def _build_key(run: Run) -> tuple[int, int]:
    build = int(run.build_id) if run.build_id.isdigit() else 0
    return (build, int(run.started.get("timestamp", 0)))


def cluster_of(run: Run) -> dict[str, str]:
    """The facts a limitation depends on, from the run's metadata (falling back to its profile)."""
    meta = run.metadata
    profile = run.profile
    cni = str(meta.get("cni") or profile.get("cni") or "unknown")
    backend = str(meta.get("cni-backend") or profile.get("cni_backend") or "")
    builds = meta.get("windows-builds") or ",".join(profile.get("windows_builds") or []) or "unknown"
    return {
        "cni": f"{cni} ({backend})" if backend else cni,
        "windows_build": str(builds),
        "k8s": str(meta.get("kubernetes-version") or profile.get("server_version") or "unknown"),
    }


def run_timing(meta: dict[str, Any]) -> dict[str, float] | None:
    """A run's wall time and pod waits as ``wincon run`` recorded them in finished.json (wincon.results.podwaits):
    wall, pods, windows_pods, linux_pods, wait (s), share; None for a run that recorded none (older runs, or a
    plain pytest run)."""
    keys = {
        "wall": "wall-time-seconds",
        "pods": "pods-waited",
        "windows_pods": "windows-pods-waited",
        "linux_pods": "linux-pods-waited",
        "wait": "pod-wait-seconds",
        "critical_path": "pod-wait-critical-path-seconds",
        "share": "pod-wait-share",
    }
    timing: dict[str, float] = {}
    for name, key in keys.items():
        try:
            timing[name] = float(meta[key])
        except (KeyError, TypeError, ValueError):
            continue
    return timing if "wall" in timing else None


def _rate(counts: dict[str, int]) -> float | None:
    """Share of the tests that ran which behaved as documented: (passed + xfailed) / (all - skipped)."""
    ran = sum(counts.values()) - counts.get("skipped", 0)
    if ran <= 0:
        return None
    return round((counts.get("passed", 0) + counts.get("xfailed", 0)) / ran, 4)


def _rows(runs: list[Run]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[int, Check]]]:
    """One row per check (its Windows case's key), each run's Windows case and Linux control in it.

    A control sits in its Windows twin's row: the twin of the same run (``pair``), else the row of a
    Windows case with the same control key or the twin's name in any run; a control whose twin never ran
    gets a row of its own, named after the twin, with no Windows cells.
    """
    tests: dict[str, dict[str, Any]] = {}
    cells: dict[str, dict[int, Check]] = {}
    by_control: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for run in runs:
        for windows in run.cases:
            if not windows.is_control:
                by_name.setdefault(windows.name, windows.key)
                if windows.control:
                    by_control.setdefault(windows.control, windows.key)
    for index, run in enumerate(runs):
        for check in pair(run.cases):
            case = check.windows
            if case is not None:
                key = case.key
            else:
                assert check.control is not None
                control = check.control
                key = by_control.get(control.control) or by_name.get(check.name) or "linux-only:" + control.key
            entry = tests.get(key)
            if entry is None:
                entry = tests[key] = {
                    "id": key,
                    "name": check.name,
                    "area": (case or check.control).area,  # type: ignore[union-attr]
                    "markers": set(),
                    "docs": set(),
                    "limitations": set(),
                    "control": "",
                }
            if case is not None:
                entry["markers"].update(case.markers)
                entry["docs"].update(case.props("doc"))
                entry["limitations"].update(case.limitations)
            if check.control is not None:
                entry["control"] = entry["control"] or check.control.name
            cells.setdefault(key, {})[index] = check
    return tests, cells


def _control_code(check: Check | None) -> str:
    """The Linux-control cell: its verdict's code, NO_CONTROL, CONTROL_NOT_RUN, or MISSING (no such check)."""
    if check is None:
        return MISSING
    if check.control is not None:
        return CODES[check.control.verdict]
    verdict = check.control_verdict
    if verdict in VERDICT_NAMES:
        return CODES[Verdict(verdict)]
    return NO_CONTROL_CODE if verdict == NO_CONTROL else CONTROL_NOT_RUN_CODE


def build_data(runs: list[Run], errors: list[ResultsError] | None = None) -> dict[str, Any]:
    runs = sorted(runs, key=_build_key, reverse=True)
    tests, cells = _rows(runs)
    ordered = sorted(tests.values(), key=lambda t: (t["area"], t["name"]))
    grid: list[str] = []
    control_grid: list[str] = []
    notes: dict[str, str] = {}
    control_notes: dict[str, str] = {}
    titles: dict[str, str] = {}
    for t_index, test in enumerate(ordered):
        row, control_row = [], []
        for r_index in range(len(runs)):
            check = cells[test["id"]].get(r_index)
            control_row.append(_control_code(check))
            if check is not None and check.control is not None and check.control.verdict is not Verdict.PASSED:
                if check.control.message:
                    control_notes[f"{t_index}:{r_index}"] = check.control.message[:500]
            case = check.windows if check is not None else None
            if case is None:
                row.append(MISSING)
                continue
            row.append(CODES[case.verdict])
            if case.verdict is not Verdict.PASSED and case.message:
                notes[f"{t_index}:{r_index}"] = case.message[:500]
            for lim_id, title in zip(case.props("limitation"), case.props("limitation_title"), strict=False):
                titles.setdefault(lim_id, title)
        grid.append("".join(row))
        control_grid.append("".join(control_row))

    area_rows = _areas(ordered, grid, len(runs))
    windows_cells = {
        key: {r: check.windows for r, check in by_run.items() if check.windows is not None}
        for key, by_run in cells.items()
    }
    limitations = _limitations(ordered, windows_cells, runs, titles)
    run_docs = []
    for run in runs:
        counts = count(c for c in run.cases if not c.is_control)
        run_docs.append(
            {
                "build": run.build_id,
                "label": run.label,
                "path": str(run.path),
                "started": int(run.started.get("timestamp", 0)),
                "finished": int(run.finished.get("timestamp", 0)),
                "result": run.result,
                "metadata": run.metadata,
                "profile": run.profile,
                "cluster": cluster_of(run),
                "counts": counts,
                "controls": control_counts(run.cases),
                "rate": _rate(counts),
                "timing": run_timing(run.metadata),
                "execution": execution.record(run.cases, run.profile or None).to_dict(),
            }
        )
    markers = sorted({m for t in ordered for m in t["markers"]} | {t["area"] for t in ordered})
    return {
        "generated": int(time.time()),
        "suite_version": __version__,
        "runs": run_docs,
        "tests": [
            {
                "id": t["id"],
                "name": t["name"],
                "area": t["area"],
                "markers": sorted(t["markers"] | {t["area"]}),
                "docs": sorted(t["docs"]),
                "limitations": sorted(t["limitations"]),
                "control": t["control"],
            }
            for t in ordered
        ],
        "markers": markers,
        "grid": grid,
        "controls": control_grid,
        "notes": notes,
        "control_notes": control_notes,
        "areas": area_rows,
        "limitations": limitations,
        "errors": [{"message": e.message, "fix": e.fix} for e in (errors or [])],
    }


def _areas(tests: list[dict[str, Any]], grid: list[str], n_runs: int) -> list[dict[str, Any]]:
    by_code = {code: verdict.value for verdict, code in CODES.items()}
    areas: dict[str, list[int]] = {}
    for index, test in enumerate(tests):
        areas.setdefault(test["area"], []).append(index)
    rows = []
    for area, indexes in sorted(areas.items()):
        per_run = []
        total = {v.value: 0 for v in Verdict}
        for r in range(n_runs):
            counts = {v.value: 0 for v in Verdict}
            for i in indexes:
                code = grid[i][r]
                if code != MISSING:
                    counts[by_code[code]] += 1
            for k, v in counts.items():
                total[k] += v
            per_run.append({"counts": counts, "rate": _rate(counts)})
        rows.append({"area": area, "tests": len(indexes), "runs": per_run, "total": total, "rate": _rate(total)})
    return rows


def _limitations(
    tests: list[dict[str, Any]], cells: dict[str, dict[int, Any]], runs: list[Run], titles: dict[str, str]
) -> list[dict[str, Any]]:
    """Per limitation and cluster: where it still shows, appears lifted, or does not apply."""
    out = []
    for lim_id in sorted({lim for t in tests for lim in t["limitations"]}):
        clusters: dict[tuple[str, str, str], dict[str, Any]] = {}
        for test in tests:
            if lim_id not in test["limitations"]:
                continue
            for r_index, case in cells[test["id"]].items():
                cluster = cluster_of(runs[r_index])
                key = (cluster["cni"], cluster["windows_build"], cluster["k8s"])
                entry = clusters.setdefault(
                    key,
                    {
                        **cluster,
                        "shows": 0,
                        "lifted": 0,
                        "not_applied": 0,
                        "other": 0,
                        "runs": [],
                        "latest": r_index,
                    },
                )
                entry["latest"] = min(entry["latest"], r_index)
                if r_index not in entry["runs"]:
                    entry["runs"].append(r_index)
                applied = lim_id in case.limitations
                if case.verdict is Verdict.XFAILED and applied:
                    entry["shows"] += 1
                elif case.verdict is Verdict.XPASSED and applied:
                    entry["lifted"] += 1
                elif not applied and case.verdict is Verdict.PASSED:
                    entry["not_applied"] += 1
                else:
                    entry["other"] += 1
        rows = []
        for entry in clusters.values():
            if entry["shows"] and entry["lifted"]:
                status = "mixed"
            elif entry["lifted"]:
                status = "appears lifted"
            elif entry["shows"]:
                status = "still shows"
            elif entry["not_applied"]:
                status = "does not apply"
            else:
                status = "not checked"
            rows.append({**entry, "status": status, "runs": sorted(entry["runs"])})
        rows.sort(key=lambda e: (e["cni"], e["windows_build"], e["k8s"]))
        out.append({"id": lim_id, "title": titles.get(lim_id, ""), "clusters": rows})
    return out


def write_site(data: dict[str, Any], out: Path) -> Path:
    """Write the static site; the data file last and atomically, so a reader never sees half of it."""
    out.mkdir(parents=True, exist_ok=True)
    static = resources.files("wincon.results").joinpath("static")
    for name in STATIC_FILES:
        atomic_write_bytes(out / name, static.joinpath(name).read_bytes())
    payload = json.dumps(data, separators=(",", ":"), sort_keys=True).replace("</", "<\\/")
    atomic_write_bytes(out / "data.js", f"window.WINCON_DASHBOARD = {payload};\n".encode())
    return out / "index.html"


def build(paths: list[Path], out: Path, stream: Any = None) -> tuple[Path, list[ResultsError], int]:
    """Load the runs, write the site, report unreadable runs. Returns (index.html, errors, runs shown)."""
    stream = stream or sys.stderr
    loaded = load_runs(paths)
    index = write_site(build_data(loaded.runs, loaded.errors), out)
    for error in loaded.errors:
        print(error.render(), file=stream)
    return index, loaded.errors, len(loaded.runs)
