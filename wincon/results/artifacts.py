"""The results directory of one run, in the layout TestGrid reads (logs/<job>/<build-id>/...).

```
<results-dir>/started.json            {"timestamp", "node", "metadata": {"build-id", "run-id", ...}}
<results-dir>/finished.json           {"timestamp", "passed", "result", "metadata": {...}}
<results-dir>/build-log.txt           the console output of the run
<results-dir>/artifacts/junit_wincon_<YYYYMMDD-HHMM>_01.xml   one file, merged across xdist workers
<results-dir>/artifacts/profile.json  the cluster profile (no secrets)
<results-dir>/allure-results/         allure-pytest's results, when the run had --alluredir
```

Every JSON and XML file is written to a temporary name and renamed into place, so a reader (and
TestGrid) sees either the previous complete file or the new complete file, never half of one. The
parent directory plays ``logs/<job>``: it holds ``latest-build.txt``, from which build ids are
allocated under a lock so they only ever increase.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from wincon.commandline.errors import ResultsError
from wincon.results import junit
from wincon.results.model import CaseResult

RESULTS = ("SUCCESS", "FAILURE", "ABORTED")
LATEST_BUILD = "latest-build.txt"
_SECRET_KEY = re.compile(
    r"(^|[_-])(token|password|passwd|secret|credentials?|certificate|cert|private[_-]?key|client[_-]?key|"
    r"key[_-]?data|authorization|auth)($|[_-])",
    re.IGNORECASE,
)

STARTED_SCHEMA = {
    "type": "object",
    "required": ["timestamp"],
    "properties": {
        "timestamp": {"type": "integer", "minimum": 0},
        "node": {"type": "string"},
        "metadata": {"type": "object"},
    },
}
FINISHED_SCHEMA = {
    "type": "object",
    "required": ["timestamp", "passed", "result"],
    "properties": {
        "timestamp": {"type": "integer", "minimum": 0},
        "passed": {"type": "boolean"},
        "result": {"enum": list(RESULTS)},
        # TestGrid: metadata values are strings or maps (of strings); they can become column headers.
        "metadata": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": {"type": "string"}}]
            },
        },
    },
}


# ----------------------------------------------------------------------------- atomic files


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it over ``path``.

    The file gets the usual mode (0644 under umask 022), not mkstemp's 0600: results are read by
    others, served and published.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, document: Any) -> None:
    atomic_write_bytes(path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode())


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_latest_build(job_dir: Path) -> int:
    try:
        text = (job_dir / LATEST_BUILD).read_text().strip()
    except FileNotFoundError:
        return 0
    return int(text) if text.isdigit() else 0


def allocate_build_id(job_dir: Path, now: float | None = None) -> str:
    """The next build id for runs kept under ``job_dir``: the start epoch, or one more than the last id.

    TestGrid orders builds by id, so ids must only ever increase, even for two runs started in the
    same second or on a machine whose clock went back. ``latest-build.txt`` (as Prow writes it)
    remembers the last one, under an exclusive lock.
    """
    with _locked(job_dir / ".build-id.lock"):
        build_id = max(int(now if now is not None else time.time()), read_latest_build(job_dir) + 1)
        atomic_write_bytes(job_dir / LATEST_BUILD, f"{build_id}\n".encode())
    return str(build_id)


def scrub(value: Any) -> Any:
    """A copy of ``value`` without keys that name secrets (tokens, passwords, keys, certificates)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def profile_metadata(profile: dict[str, Any] | None) -> dict[str, str]:
    """The profile as finished.json metadata: flat string values, usable as TestGrid column headers."""
    if not profile:
        return {}

    def text(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)

    nodes = profile.get("nodes") or []
    windows = [n for n in nodes if isinstance(n, dict) and n.get("os") == "windows"]
    fields = {
        "kubernetes-version": profile.get("server_version"),
        "windows-builds": profile.get("windows_builds"),
        "windows-os-versions": profile.get("windows_os_versions"),
        "cni": profile.get("cni"),
        "cni-backend": profile.get("cni_backend"),
        "container-runtime": profile.get("runtime"),
        "container-runtime-version": profile.get("runtime_version"),
        "kube-proxy-mode": profile.get("kube_proxy_mode"),
        "cloud": profile.get("cloud"),
        "data-plane": profile.get("data_plane"),
        "windows-nodes": str(len(windows)) if nodes else None,
        "nodes": str(len(nodes)) if nodes else None,
    }
    return {k: text(v) for k, v in fields.items() if v is not None and text(v) != ""}


# ----------------------------------------------------------------------------- reading a run


@lru_cache(maxsize=2)
def _validator(which: str) -> Draft202012Validator:
    return Draft202012Validator(STARTED_SCHEMA if which == "started" else FINISHED_SCHEMA)


def _read_json(path: Path, which: str) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read: {exc.strerror}", "check the path and permissions") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
            + (": the file is empty" if not text.strip() else ""),
            "the run was cut off while writing or the file was edited; re-run, or leave this run out",
        ) from exc
    errors = sorted(_validator(which).iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise ResultsError(
            f"{path}: not a TestGrid {which}.json: {where}: {errors[0].message}",
            f"{which}.json needs {', '.join(_validator(which).schema['required'])} (see docs/results.md)",
        )
    return document


@dataclass
class Run:
    """A finished run read back from its results directory."""

    path: Path
    build_id: str
    started: dict[str, Any]
    finished: dict[str, Any]
    cases: list[CaseResult]
    junit_files: list[Path]
    profile: dict[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> str:
        return str(self.finished.get("result", "FAILURE"))

    @property
    def metadata(self) -> dict[str, Any]:
        return {**self.started.get("metadata", {}), **self.finished.get("metadata", {})}

    @property
    def k8s_version(self) -> str:
        return str(self.metadata.get("kubernetes-version") or self.profile.get("server_version") or "")

    @property
    def label(self) -> str:
        return str(self.metadata.get("run-id") or self.path.name)


def is_run_dir(path: Path) -> bool:
    return (path / "started.json").is_file()


def load_run(path: Path) -> Run:
    """Read and check one results directory; ResultsError names the file and what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise ResultsError(f"{path}: no such results directory", "pass the directory a run wrote (--results-dir)")
    if not path.is_dir():
        raise ResultsError(f"{path}: not a directory", "pass the results directory of a run, not a file in it")
    started_path = path / "started.json"
    try:
        started = _read_json(started_path, "started")
    except FileNotFoundError:
        raise ResultsError(
            f"{started_path}: missing: {path} is not a run's results directory (from another tool, or empty)",
            "pass directories written by `wincon run` or pytest --results-dir",
        ) from None
    finished_path = path / "finished.json"
    try:
        finished = _read_json(finished_path, "finished")
    except FileNotFoundError:
        raise ResultsError(
            f"{finished_path}: missing: the run is still going, or was killed before it could finish",
            "wait for the run to end; a run killed with SIGKILL cannot write it: re-run the suite",
        ) from None
    artifacts = path / "artifacts"
    junit_files = sorted(artifacts.glob("junit*.xml"))
    if not junit_files:
        raise ResultsError(
            f"{artifacts}/junit_*.xml: missing: the run left no JUnit results",
            "re-run the suite; only directories with artifacts/junit_*.xml can be shown",
        )
    cases: list[CaseResult] = []
    for junit_path in junit_files:
        cases.extend(junit.parse(junit_path))
    profile: dict[str, Any] = {}
    profile_path = artifacts / "profile.json"
    if profile_path.is_file():
        try:
            loaded = json.loads(profile_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ResultsError(
                f"{profile_path}: not valid JSON ({exc})", "re-run, or delete the file to show the run without it"
            ) from exc
        profile = loaded if isinstance(loaded, dict) else {}
    metadata = {**started.get("metadata", {}), **finished.get("metadata", {})}
    build_id = str(metadata.get("build-id") or (path.name if path.name.isdigit() else started["timestamp"]))
    return Run(path, build_id, started, finished, cases, junit_files, profile)


def find_run_dirs(paths: list[Path]) -> tuple[list[Path], list[ResultsError]]:
    """Expand each argument: a run directory stays, a directory of runs (logs/<job>) becomes its runs.

    A path that is neither is reported (not silently dropped), so a typo cannot hide a run.
    """
    found: list[Path] = []
    problems: list[ResultsError] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir() or is_run_dir(path):
            found.append(path)  # load_run() says what is wrong with it
            continue
        children = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        runs = [p for p in children if is_run_dir(p)]
        if not runs:
            problems.append(
                ResultsError(
                    f"{path}: neither a run's results directory (no started.json) nor a directory of runs",
                    "pass results/<run-id> directories, or the results/ directory that holds them",
                )
            )
            continue
        found.extend(runs)
        # Subdirectories that look like half-made runs are reported; report/dashboard folders are not runs.
        for child in children:
            if child not in runs and (child / "finished.json").exists():
                found.append(child)
    return found, problems


def write_run(
    directory: Path,
    cases: list[CaseResult],
    *,
    start: float,
    result: str,
    profile: dict[str, Any] | None = None,
    run_id: str = "",
    build_id: str | None = None,
    log: str = "",
) -> Path:
    """Write a complete results directory from known cases (imports from other systems, fixtures, benchmarks).

    The same files, names and order as a live run: started.json, JUnit, profile.json, build-log.txt,
    finished.json last.
    """
    from wincon import __version__
    from wincon.results.model import count

    if result not in RESULTS:
        raise ValueError(f"result must be one of {RESULTS}, not {result!r}")
    directory = Path(directory)
    build_id = build_id or allocate_build_id(directory.parent, start)
    run_id = run_id or directory.name
    base = {"build-id": build_id, "run-id": run_id, "suite-version": __version__}
    atomic_write_json(directory / "started.json", {"timestamp": int(start), "metadata": base})
    atomic_write_bytes(
        directory / "artifacts" / junit.junit_filename(start),
        junit.to_xml(cases, timestamp=start, suite_properties=base),
    )
    if profile is not None:
        atomic_write_json(directory / "artifacts" / "profile.json", scrub(profile))
    atomic_write_bytes(directory / "build-log.txt", log.encode())
    counts = {k: str(v) for k, v in count(cases).items()}
    metadata = {**base, "verdicts": counts, **profile_metadata(profile)}
    atomic_write_json(
        directory / "finished.json",
        {"timestamp": int(start) + 60, "passed": result == "SUCCESS", "result": result, "metadata": metadata},
    )
    return directory
