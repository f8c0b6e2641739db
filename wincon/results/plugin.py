"""pytest plugin ``wincon_results``: write each suite run's results directory, and label it for Allure.

Inert unless the run is a suite run (``wincon.session.context.is_suite_run``, or a test carrying a ``test_id``)
or ``--results-dir`` is given. Under xdist only the controller writes: every worker's reports reach
it through ``pytest_runtest_logreport``, so the JUnit file is merged by construction.

Writing order, each file atomically (temporary name, then rename):

1. ``started.json`` and ``build-log.txt`` as soon as the run is known to be a suite run;
2. ``artifacts/junit_*.xml`` rewritten as tests finish (before each test starts, at most once a second
   in between) and at the end, so a killed run still leaves the results it had;
3. ``artifacts/profile.json`` then ``finished.json`` last, when pytest unconfigures (after its summary),
   with ``result`` SUCCESS, FAILURE, or ABORTED for an interrupted run (Ctrl-C, SIGTERM, pytest.exit).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

import pytest

from wincon import __version__
from wincon.results import artifacts, execution, junit
from wincon.results.model import CaseResult, classify, control_counts, count, swap_os, without_os
from wincon.session.verdicts import (
    AREA,
    CONTROL,
    CONTROL_OUTCOME,
    DOC,
    LIFTED,
    LIFTED_PHRASE,
    LIMITATION,
    TARGET_OS,
    TEST_ID,
    lifted_message,
)

RECORDER_KEY = pytest.StashKey["RunRecorder"]()
JUNIT_FLUSH_SECONDS = 1.0
# pytest exit statuses that mean the run did not get to its end.
ABORTED_STATUSES = {int(pytest.ExitCode.INTERRUPTED), int(pytest.ExitCode.INTERNAL_ERROR)}
# Markers that are pytest's or wincon's machinery, not a way to select tests.
_MACHINERY_MARKERS = frozenset(
    {
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "skip",
        "skipif",
        "xfail",
        "test_id",
        "limitation",
        "timeout",
        "flow",
    }
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wincon-results", "wincon run results (TestGrid layout, Allure labels)")
    group.addoption(
        "--results-dir",
        dest="wincon_results_dir",
        metavar="DIR",
        default=None,
        help="write this run's results (started.json, finished.json, artifacts/junit_*.xml, build-log.txt) "
        "to DIR; default for suite runs: results/<run-id>. Giving it records any run.",
    )
    group.addoption(
        "--results-context",
        dest="wincon_results_context",
        metavar="NAME",
        default="wincon",
        help="the <context> part of artifacts/junit_<context>_<YYYYMMDD-HHMM>_01.xml (default: wincon)",
    )
    group.addoption(
        "--doc-url-pattern",
        dest="wincon_doc_url_pattern",
        metavar="PATTERN",
        default=None,
        help="URL of a seed document for Allure links, '{}' standing for its file name "
        "(default: a file: URL to the seed in docs/seeds/, seeds/ or ../shared/seeds/ where it exists)",
    )


# ----------------------------------------------------------------------------- every process


def _records(config: pytest.Config, item: pytest.Item | None = None) -> bool:
    """Whether this process takes part in recording: a suite run, a suite test, or --results-dir.

    Never for --collect-only: nothing runs, so there is no result to record.
    """
    if config.getoption("collectonly", False):
        return False
    if config.getoption("wincon_results_dir", None):
        return True
    if item is not None and item.get_closest_marker("test_id") is not None:
        return True
    try:
        from wincon.session.context import is_suite_run
    except ImportError:  # the core plugin is not installed: only --results-dir turns recording on
        return False
    return bool(is_suite_run(config))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Record each test's selection markers (networking, hybrid, slow...) so the dashboard can filter by them."""
    for item in items:
        if not _records(config, item):
            continue
        names = sorted(
            {
                m.name
                for m in item.iter_markers()
                if m.name not in _MACHINERY_MARKERS and not m.name.startswith("allure")
            }
        )
        item.user_properties.append(("markers", ",".join(names)))


def _doc_url(config: pytest.Config, doc: str) -> str:
    pattern = config.getoption("wincon_doc_url_pattern", None)
    if pattern:
        return pattern.replace("{}", doc)
    root = Path(str(config.rootpath))
    for seeds in (root / "docs" / "seeds", root / "seeds", root.parent / "shared" / "seeds"):
        if (seeds / doc).is_file():
            return (seeds / doc).as_uri()
    return doc


def _flow(item: pytest.Item) -> str:
    """The network flow or behaviour a test belongs to: its ``flow`` marker, else its module's name."""
    marker = item.get_closest_marker("flow")
    if marker is not None and marker.args:
        return str(marker.args[0])
    props = dict(item.user_properties)
    if props.get("flow"):
        return str(props["flow"])
    return Path(str(item.path)).stem.removeprefix("test_").replace("_", " ")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Allure labels, read by allure-pytest when teardown ends: epic per area, feature per flow, tag per
    limitation, id per test id, a link per seed document. Runs inside allure-pytest's teardown wrapper."""
    if not item.config.getoption("allure_report_dir", None) or not _records(item.config, item):
        return
    if getattr(item, "_wincon_allure_labelled", False):
        return
    item._wincon_allure_labelled = True  # type: ignore[attr-defined]
    label, link = pytest.mark.allure_label, pytest.mark.allure_link
    properties = list(item.user_properties)
    props = dict(properties)
    if props.get(AREA):
        item.add_marker(label(str(props[AREA]), label_type="epic"))
    item.add_marker(label(_flow(item), label_type="feature"))
    if props.get(TEST_ID):
        item.add_marker(label(str(props[TEST_ID]), label_type="as_id"))
    limitation_ids = [str(v) for k, v in properties if k == LIMITATION]
    referenced = [str(m.args[0]) for m in item.iter_markers("limitation") if m.args]
    if props.get(TARGET_OS) == "linux":
        referenced = []  # limitations never apply to a Linux control: no tag says they might
    for limitation in dict.fromkeys(limitation_ids + referenced):
        item.add_marker(label(f"limitation:{limitation}", label_type="tag"))
    for doc in dict.fromkeys(str(v) for k, v in properties if k == DOC):
        item.add_marker(link(_doc_url(item.config, doc), link_type="link", name=doc))
    if props.get(LIFTED):
        _allure_status_message(item, lifted_message(str(props[LIFTED])))
    _allure_twins(item, props)


# Where the run's dashboard is, seen from its Allure report (both inside the run's directory, `wincon run`).
DASHBOARD_FROM_ALLURE = "../dashboard/index.html"


def _allure_twins(item: pytest.Item, props: dict[str, Any]) -> None:
    """A check and its Linux control in Allure: an ``os`` label and tag on every item; on twins the same
    story (side by side under Behaviors), a link to the other twin's row of the run's dashboard, and on
    the Windows check a parameter with its control's outcome in this run."""
    from urllib.parse import quote

    target_os = str(props.get(TARGET_OS) or "windows")
    label, link = pytest.mark.allure_label, pytest.mark.allure_link
    item.add_marker(label(target_os, label_type="os"))
    item.add_marker(label(f"os:{target_os}", label_type="tag"))
    if not props.get(CONTROL):
        return
    check, twin = without_os(item.nodeid), swap_os(item.nodeid)
    item.add_marker(label(check.rsplit("::", 1)[-1], label_type="story"))
    if twin:
        role = "Windows check" if target_os == "linux" else "Linux control"
        url = f"{DASHBOARD_FROM_ALLURE}#q={quote(twin.rsplit('::', 1)[-1])}"
        item.add_marker(link(url, link_type="link", name=f"{role}: {twin}"))
    if target_os != "linux":
        _allure_parameter(item, "Linux control", str(props.get(CONTROL_OUTCOME) or "none"))


def _allure_parameter(item: pytest.Item, name: str, value: str) -> None:
    """A parameter shown on the test's page, excluded from its history id (a pass and a failure of the
    control must not split the check's history)."""
    from allure_commons.model2 import Parameter

    listener = item.config.pluginmanager.get_plugin("allure_listener")
    try:
        result = listener.allure_logger.get_test(listener._cache.get(item.nodeid))  # type: ignore[union-attr]
    except AttributeError:  # another allure-pytest layout: the labels and links still say it
        return
    if result is not None and all(p.name != name for p in result.parameters):
        result.parameters.append(Parameter(name=name, value=value, excluded=True))


def _allure_status_message(item: pytest.Item, message: str) -> None:
    """Give a strict xpass its message in Allure (allure-pytest only records messages of exceptions),
    so the report's "Limitations that appear lifted" category finds it."""
    from allure_commons.model2 import StatusDetails

    listener = item.config.pluginmanager.get_plugin("allure_listener")
    try:
        result = listener.allure_logger.get_test(listener._cache.get(item.nodeid))  # type: ignore[union-attr]
    except AttributeError:  # another allure-pytest layout: the report keeps its default message
        return
    if result is not None and result.statusDetails is None:
        result.statusDetails = StatusDetails(message=message)


# ----------------------------------------------------------------------------- the controller


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # xdist workers: the controller writes the results
    recorder = RunRecorder(config)
    config.stash[RECORDER_KEY] = recorder
    config.pluginmanager.register(recorder, "wincon-results-recorder")


class RunRecorder:
    """Collects the run's reports on the controller and writes its results directory."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.time()
        self.active = False
        self.directory: Path | None = None
        self.build_id = ""
        self.junit_path: Path | None = None
        self.reports: dict[str, list[Any]] = {}
        self.session: pytest.Session | None = None
        self._log: IO[str] | None = None
        self._log_buffer: list[str] = []
        self._last_flush = 0.0
        self._dirty = False
        self._finished = False

    # -- deciding and starting

    def _run_id(self) -> str:
        try:
            from wincon.session.context import get_run_id

            run_id = get_run_id(self.config)
        except ImportError:
            run_id = ""
        return run_id or time.strftime("%Y%m%d-%H%M%S", time.localtime(self.start)) + f"-{os.getpid()}"

    def _results_dir(self) -> Path:
        given = self.config.getoption("wincon_results_dir", None)
        if given:
            return Path(given)
        return Path(str(self.config.rootpath)) / "results" / self._run_id()

    def activate(self) -> None:
        if self.active or self._finished or self.config.getoption("collectonly", False):
            return
        directory = self._results_dir().resolve()
        if (directory / "started.json").exists():
            raise pytest.UsageError(
                f"wincon: error: {directory} already holds a run (started.json exists)\n"
                "  fix: pass a new --results-dir (each run gets its own directory), or remove the old one"
            )
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.active = True
        self.build_id = artifacts.allocate_build_id(directory.parent, self.start)
        context = self.config.getoption("wincon_results_context", "wincon")
        self.junit_path = directory / "artifacts" / junit.junit_filename(self.start, context)
        artifacts.atomic_write_json(
            directory / "started.json",
            {
                "timestamp": int(self.start),
                "node": socket.gethostname(),
                "metadata": {"build-id": self.build_id, "run-id": self._run_id(), "suite-version": __version__},
            },
        )
        self._log = open(directory / "build-log.txt", "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._log.write("".join(self._log_buffer))
        self._log_buffer.clear()
        self._log.flush()
        self.write_junit()

    def _tee(self, text: str) -> None:
        if self._log is not None:
            self._log.write(text)
            if "\n" in text:
                self._log.flush()
        elif not self._finished and len(self._log_buffer) < 10_000:
            self._log_buffer.append(text)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        if writer is not None:  # the same tee pytest's own --pastebin=all uses
            original = writer.write

            def tee_write(text: str, **markup: bool) -> None:
                original(text, **markup)
                self._tee(text)

            writer.write = tee_write
        if _records(self.config):
            self.activate()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if _records(self.config) or any(i.get_closest_marker("test_id") for i in session.items):
            self.activate()

    # -- collecting

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)
        self._dirty = True
        if not self.active and any(k == "test_id" for k, _ in (report.user_properties or [])):
            self.activate()
        if self.active and report.when == "teardown" and time.monotonic() - self._last_flush > JUNIT_FLUSH_SECONDS:
            self.write_junit()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        """Before a test starts (it may take minutes), the JUnit file holds every test finished so far."""
        if self.active and self._dirty:
            self.write_junit()

    def cases(self) -> list[CaseResult]:
        return [classify(reports) for reports in self.reports.values() if reports]

    def write_junit(self) -> None:
        if not self.active or self.junit_path is None:
            return
        self._last_flush = time.monotonic()
        self._dirty = False
        data = junit.to_xml(
            self.cases(),
            timestamp=self.start,
            suite_properties={"run-id": self._run_id(), "build-id": self.build_id, "suite-version": __version__},
        )
        artifacts.atomic_write_bytes(self.junit_path, data)

    # -- finishing

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.session = session
        if not self.active and _records(self.config):
            self.activate()
        self.write_junit()

    def _profile(self) -> dict[str, Any] | None:
        try:
            from wincon.session.context import get_profile

            profile = get_profile(self.config)
        except ImportError:
            return None
        if profile is None:
            return None
        return artifacts.scrub(profile.to_dict())

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.active and self.directory is not None:
            terminalreporter.write_sep("-", f"wincon results: {self.directory}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """After pytest's summary: the final JUnit, profile.json, then finished.json last."""
        if not self.active or self.directory is None or self._finished:
            return
        self._finished = True
        status = int(self.session.exitstatus) if self.session is not None else int(pytest.ExitCode.INTERRUPTED)
        self.write_junit()
        profile = self._profile()
        if profile is not None:
            artifacts.atomic_write_json(self.directory / "artifacts" / "profile.json", profile)
            allure_dir = config.getoption("allure_report_dir", None)
            if allure_dir:
                write_allure_environment(Path(allure_dir), profile, self._run_id())
        self.finish(status, profile)
        if self._log is not None:
            self._log.close()
            self._log = None

    def finish(self, status: int, profile: dict[str, Any] | None) -> None:
        assert self.directory is not None
        cases = self.cases()
        counts = count(cases)
        if status in ABORTED_STATUSES:
            result = "ABORTED"
        else:
            result = "SUCCESS" if status == 0 else "FAILURE"
        metadata: dict[str, Any] = {
            "build-id": self.build_id,
            "run-id": self._run_id(),
            "suite-version": __version__,
            "pytest-exit-code": str(status),
            "verdicts": {k: str(v) for k, v in counts.items()},
            "controls": {k: str(v) for k, v in control_counts(cases).items()},
            execution.METADATA_KEY: execution.record(cases, profile).to_metadata(),
            **artifacts.profile_metadata(profile),
        }
        write_finished(self.directory, passed=result == "SUCCESS", result=result, metadata=metadata)


def write_finished(directory: Path, passed: bool, result: str, metadata: dict[str, Any]) -> None:
    """finished.json, atomically. Also used by `wincon run` to close a run whose pytest was killed."""
    artifacts.atomic_write_json(
        directory / "finished.json",
        {"timestamp": int(time.time()), "passed": passed, "result": result, "metadata": metadata},
    )


ALLURE_CATEGORIES = [
    {"name": "Limitations that appear lifted", "messageRegex": f".*{LIFTED_PHRASE}.*", "matchedStatuses": ["failed"]},
    {"name": "Infrastructure errors (not node failures)", "matchedStatuses": ["broken"]},
    {"name": "Documented limitations (expected failures)", "messageRegex": "XFAIL.*", "matchedStatuses": ["skipped"]},
    {"name": "Behaviour that does not hold", "matchedStatuses": ["failed"]},
]


def write_allure_environment(allure_dir: Path, profile: dict[str, Any], run_id: str) -> None:
    """The cluster profile on the report's front page (environment.properties) and wincon's categories."""
    allure_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"run-id={run_id}", f"suite-version={__version__}"]
    lines += [f"{key}={value}" for key, value in artifacts.profile_metadata(profile).items()]
    artifacts.atomic_write_bytes(allure_dir / "environment.properties", ("\n".join(lines) + "\n").encode())
    artifacts.atomic_write_bytes(allure_dir / "categories.json", json.dumps(ALLURE_CATEGORIES, indent=2).encode())
