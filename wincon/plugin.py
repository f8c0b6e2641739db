"""The wincon pytest plugin: options, markers, the cluster profile, limitations, isolation, verdicts.

Hooks are small and named after the decision they make. The plugin is active for suite runs only
(paths under ``suites/``, or ``--wincon``), so the project's own tests run without a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from wincon import limitations as limitations_mod
from wincon.errors import ExitCode, InfrastructureError, WinconError
from wincon.profile import ClusterProfile

AREAS = ("networking", "dns", "storage", "probes", "lifecycle", "controllers", "scheduling", "api")
MARKERS = {
    "networking": "network flows between pods, Services, nodes and the outside",
    "dns": "name resolution from Windows pods",
    "storage": "volume types and mounts",
    "probes": "liveness, readiness and startup probes",
    "lifecycle": "lifecycle hooks, termination and grace periods",
    "controllers": "Deployments, StatefulSets, DaemonSets, Jobs and other controllers",
    "scheduling": "node selection, taints, RuntimeClass and resources",
    "api": "API validation and admission rules for Windows pods",
    "hybrid": "needs Linux and Windows worker nodes",
    "serial": "must not run in parallel with other tests",
    "slow": "takes minutes",
    "disruptive": "changes node or cluster state",
    "dataplane": "needs nodes that really run containers; skipped on simulated nodes",
    "limitation(id)": "a documented Windows limitation (limitations.yaml) this behaviour may deviate by",
    "test_id(uuid)": "the stable id of the test",
}

PROFILE_KEY = pytest.StashKey[ClusterProfile]()
RUN_ID_KEY = pytest.StashKey[str]()
CONTEXT_KEY = pytest.StashKey["WinconContext"]()
APPLIED_KEY = pytest.StashKey[list]()  # per item: [(Limitation, Match)] that apply
CANDIDATES_KEY = pytest.StashKey[list]()  # per item: [(Limitation, Match)] referenced, applying or not
NAMESPACES_KEY = pytest.StashKey[list]()  # per item: namespaces its fixtures created

SIMULATED_REASON = "simulated nodes have no data plane (kwok): the check needs containers that really run"


# ----------------------------------------------------------------------------- public accessors


def get_profile(config: pytest.Config) -> ClusterProfile | None:
    return config.stash.get(PROFILE_KEY, None)


def get_run_id(config: pytest.Config) -> str:
    return config.stash.get(RUN_ID_KEY, "")


def is_suite_run(config: pytest.Config) -> bool:
    """True when this run checks a cluster (paths under suites/, or --wincon), not the project's own tests."""
    if config.getoption("wincon_force", False):
        return True
    if config.getoption("wincon_lint_out", None):
        return False
    for arg in config.args:
        path = Path(arg.split("::", 1)[0]).resolve()
        if "suites" in path.parts:
            return True
    return False


# ----------------------------------------------------------------------------- options and markers


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wincon", "wincon: Windows node conformance")
    group.addoption(
        "--kubeconfig",
        dest="wincon_kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, then in-cluster)",
    )
    group.addoption("--context", dest="wincon_context", help="kubeconfig context (default: current)")
    group.addoption(
        "--image-repo-list",
        dest="wincon_repo_list",
        default=os.environ.get("KUBE_TEST_REPO_LIST"),
        help="registry override file in the upstream KUBE_TEST_REPO_LIST format",
    )
    group.addoption(
        "--cni",
        dest="wincon_cni",
        help="override CNI detection: flannel-vxlan, flannel-host-gw, win-overlay, win-bridge, azure-cni, calico, ...",
    )
    group.addoption(
        "--windows-build",
        dest="wincon_windows_build",
        type=int,
        help="restrict to Windows nodes of this build (e.g. 20348)",
    )
    group.addoption("--run-id", dest="wincon_run_id", help="id of this run (default: time and random suffix)")
    group.addoption(
        "--keep-namespaces",
        dest="wincon_keep",
        action="store_true",
        help="keep test namespaces for debugging",
    )
    group.addoption(
        "--pod-start-timeout",
        dest="wincon_pod_timeout",
        type=float,
        default=300.0,
        help="seconds a pod may take to become Ready (default 300)",
    )
    group.addoption(
        "--namespace-ttl",
        dest="wincon_ns_ttl",
        type=int,
        default=3600,
        help="age in seconds after which another run's namespaces are reaped (default 3600)",
    )
    group.addoption(
        "--limitations",
        dest="wincon_limitations",
        help="limitations file (default: limitations.yaml of the suite)",
    )
    group.addoption(
        "--external-ip",
        dest="wincon_external_ip",
        default="8.8.8.8",
        help="an IP outside the cluster for egress checks (default 8.8.8.8)",
    )
    group.addoption(
        "--external-host",
        dest="wincon_external_host",
        default="kubernetes.io",
        help="a DNS name outside the cluster for egress checks (default kubernetes.io)",
    )
    group.addoption(
        "--prepull",
        dest="wincon_prepull",
        action="store_true",
        help="pre-pull the catalog images on the Windows nodes before testing",
    )
    group.addoption(
        "--wincon",
        dest="wincon_force",
        action="store_true",
        help="treat this run as a suite run whatever its paths",
    )
    group.addoption(
        "--wincon-profile",
        dest="wincon_profile_file",
        help="read the cluster profile from this JSON file instead of the cluster",
    )
    group.addoption("--wincon-plan-out", dest="wincon_plan_out", help=argparse.SUPPRESS)
    group.addoption("--wincon-lint-out", dest="wincon_lint_out", help=argparse.SUPPRESS)


def pytest_configure(config: pytest.Config) -> None:
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    if not is_suite_run(config):
        return
    try:
        _configure_suite_run(config)
    except WinconError as exc:
        pytest.exit(exc.render(), returncode=int(exc.exit_code))


def _configure_suite_run(config: pytest.Config) -> None:
    limitations = limitations_mod.load(config.getoption("wincon_limitations"))
    config.stash[LIMITATIONS_KEY] = limitations
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.stash[RUN_ID_KEY] = workerinput["wincon_run_id"]
        config.stash[PROFILE_KEY] = ClusterProfile.from_dict(json.loads(workerinput["wincon_profile"]))
    else:
        config.stash[RUN_ID_KEY] = config.getoption("wincon_run_id") or (
            time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        )
        config.stash[PROFILE_KEY] = _load_profile(config)
    context = WinconContext(config)
    config.stash[CONTEXT_KEY] = context
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    if workerinput is None and not _collect_only(config):
        reaped = context.reap()
        if reaped:
            config._wincon_reaped = reaped  # type: ignore[attr-defined]
        if config.getoption("wincon_prepull"):
            from wincon.prepull import prepull

            prepull(context.api_client, context.profile, context.catalog, context.run_id, echo=_echo(config))


def _echo(config: pytest.Config) -> Any:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return reporter.write_line if reporter else print


def _collect_only(config: pytest.Config) -> bool:
    return bool(config.getoption("collectonly") or config.getoption("wincon_plan_out"))


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


LIMITATIONS_KEY = pytest.StashKey[dict]()


def _load_profile(config: pytest.Config) -> ClusterProfile:
    from wincon.cluster.client import connect
    from wincon.profile import apply_cni_override, discover, load_profile_file

    path = config.getoption("wincon_profile_file")
    cni = config.getoption("wincon_cni")
    if path:
        profile = load_profile_file(path)
        if cni:
            apply_cni_override(profile, cni)
    else:
        profile = discover(connect(config.getoption("wincon_kubeconfig"), config.getoption("wincon_context")), cni)
    build = config.getoption("wincon_windows_build")
    if build:
        profile = profile.restrict_to_build(build)
    if not profile.windows_nodes:
        raise InfrastructureError(
            "the cluster has no Windows nodes" + (f" of build {build}" if build else ""),
            "add a Windows node pool (or drop --windows-build); wincon checks Windows nodes only",
        )
    return profile


def pytest_configure_node(node: Any) -> None:
    """xdist: hand the controller's profile and run id to each worker, so discovery happens once."""
    config = node.config
    if CONTEXT_KEY in config.stash:
        node.workerinput["wincon_run_id"] = get_run_id(config)
        node.workerinput["wincon_profile"] = json.dumps(get_profile(config).to_dict())


def pytest_report_header(config: pytest.Config) -> list[str]:
    profile = get_profile(config)
    if profile is None:
        return []
    lines = [f"wincon run {get_run_id(config)}"] + [f"  {line}" for line in profile.summary_lines()]
    reaped = getattr(config, "_wincon_reaped", None)
    if reaped:
        lines.append(f"  reaped {len(reaped)} namespaces left by dead runs: {', '.join(reaped)}")
    return lines


# ----------------------------------------------------------------------------- the context fixtures use


@dataclass
class WinconContext:
    """Everything a suite test needs about the cluster, created once per process."""

    config: pytest.Config
    _api_client: Any = None
    _catalog: Any = None
    _registry: Any = None
    worker: str = field(default="")

    def __post_init__(self) -> None:
        workerinput = getattr(self.config, "workerinput", None)
        self.worker = workerinput["workerid"].replace("gw", "w") if workerinput else "w0"

    @property
    def profile(self) -> ClusterProfile:
        return get_profile(self.config)

    @property
    def run_id(self) -> str:
        return get_run_id(self.config)

    @property
    def pod_start_timeout(self) -> float:
        return float(self.config.getoption("wincon_pod_timeout"))

    @property
    def api_client(self) -> Any:
        if self._api_client is None:
            from wincon.cluster.client import load_api_client

            self._api_client = load_api_client(
                self.config.getoption("wincon_kubeconfig"), self.config.getoption("wincon_context")
            )
        return self._api_client

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            from wincon.workloads.catalog import Catalog

            self._catalog = Catalog.load(repo_list=self.config.getoption("wincon_repo_list"))
        return self._catalog

    @property
    def namespaces(self) -> Any:
        if self._registry is None:
            from wincon.cluster.namespaces import NamespaceRegistry

            self._registry = NamespaceRegistry(
                self.api_client, self.run_id, self.worker, keep=bool(self.config.getoption("wincon_keep"))
            )
        return self._registry

    def reap(self) -> list[str]:
        from wincon.cluster.namespaces import reap

        if self.config.getoption("wincon_profile_file"):
            return []
        return reap(self.api_client, int(self.config.getoption("wincon_ns_ttl")), self.run_id)

    def sweep_run(self) -> None:
        """Delete every namespace of this run, whichever worker made it (workers may die on interrupt)."""
        if self.config.getoption("wincon_keep") or self.config.getoption("wincon_profile_file"):
            return
        from kubernetes import client

        from wincon.cluster.namespaces import RUN_ID, SELECTOR, delete_namespace

        core = client.CoreV1Api(self.api_client)
        try:
            items = core.list_namespace(label_selector=f"{SELECTOR},{RUN_ID}={self.run_id}", _request_timeout=15).items
        except Exception:
            return  # the next run's reaper finds them
        for ns in items:
            try:
                delete_namespace(core, ns.metadata.name)
            except Exception:
                continue


def _context(request: pytest.FixtureRequest) -> WinconContext:
    context = request.config.stash.get(CONTEXT_KEY, None)
    if context is None:
        pytest.skip("not a wincon suite run: run the suites (pytest suites/ or `wincon run`) to check a cluster")
    return context


@pytest.fixture(scope="session")
def wincon(request: pytest.FixtureRequest) -> WinconContext:
    """The run's context: profile, API client, image catalog, namespaces, timeouts."""
    return _context(request)


@pytest.fixture(scope="session")
def profile(wincon: WinconContext) -> ClusterProfile:
    return wincon.profile


@pytest.fixture(scope="session")
def api_client(wincon: WinconContext) -> Any:
    return wincon.api_client


def _make_namespace(request: pytest.FixtureRequest, wincon: WinconContext, prefix: str) -> Iterator[str]:
    name = wincon.namespaces.create(prefix)
    request.node.stash.setdefault(NAMESPACES_KEY, []).append(name)
    try:
        yield name
    finally:
        wincon.namespaces.delete(name)


@pytest.fixture(scope="module")
def namespace(request: pytest.FixtureRequest, wincon: WinconContext) -> Iterator[str]:
    """A namespace for this test module, unique across workers, deleted at teardown."""
    yield from _make_namespace(request, wincon, request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_"))


@pytest.fixture
def fresh_namespace(request: pytest.FixtureRequest, wincon: WinconContext) -> Iterator[str]:
    """A namespace for this test alone, for checks that must not share state."""
    yield from _make_namespace(request, wincon, request.node.name)


@pytest.fixture
def data_plane(request: pytest.FixtureRequest, wincon: WinconContext) -> Any:
    """``data_plane(command)`` records the exact check command, and skips where nodes are simulated.

    Call it after the objects are created and scheduled for real, right before the check itself.
    """

    def gate(command: str | list[str], where: str = "") -> None:
        text = command if isinstance(command, str) else " ".join(command)
        text = f"{where}: {text}" if where else text
        request.node.user_properties.append(("command", text))
        if not wincon.profile.data_plane:
            request.node.user_properties.append(("simulated_skip", "true"))
            would = [lim.id for lim, _ in request.node.stash.get(APPLIED_KEY, [])]
            suffix = f"; on a real cluster with this profile: expected to fail ({', '.join(would)})" if would else ""
            pytest.skip(f"{SIMULATED_REASON}; would run: {text}{suffix}")

    return gate


# ----------------------------------------------------------------------------- collection: limitations to verdicts


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    limitations = config.stash.get(LIMITATIONS_KEY, None)
    profile = get_profile(config)
    if limitations is not None or config.getoption("wincon_lint_out"):
        _reject_unknown_markers(items, config)
    for item in items:
        _record_identity(item)
        if limitations is None:
            continue
        _check_limitation_ids(item, limitations, config)
        if profile is not None:
            _apply_limitations(item, limitations, profile)
            _skip_hybrid_without_linux(item, profile)


def _reject_unknown_markers(items: list[pytest.Item], config: pytest.Config) -> None:
    """A misspelt marker silently drops a test from `-m` selections: stop the run instead."""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for item in items:
        for marker in item.iter_markers():
            if marker.name not in known:
                raise pytest.UsageError(
                    f"wincon: error: {item.nodeid} uses unknown marker {marker.name!r}\n"
                    f"  fix: use one of: {', '.join(sorted(k for k in known if k in MARKERS or k in AREAS))}"
                    " (see `pytest --markers`)"
                )


def _record_identity(item: pytest.Item) -> None:
    marker = item.get_closest_marker("test_id")
    if marker and marker.args:
        item.user_properties.append(("test_id", str(marker.args[0])))
    area = next((m.name for m in item.iter_markers() if m.name in AREAS), None)
    if area is None:
        parts = Path(str(item.path)).parts[:-1]
        area = parts[parts.index("suites") + 1] if "suites" in parts[:-1] else "other"
    item.user_properties.append(("area", area))
    doc = (getattr(item, "function", None) and item.function.__doc__) or ""
    for seed in sorted({w.strip("().,;:") for w in doc.split() if w.strip("().,;:").endswith(".txt")}):
        item.user_properties.append(("doc", seed))


def _check_limitation_ids(item: pytest.Item, limitations: dict[str, Any], config: pytest.Config) -> None:
    for marker in item.iter_markers("limitation"):
        if not marker.args or marker.args[0] not in limitations:
            path = config.getoption("wincon_limitations") or limitations_mod.DEFAULT_PATH
            raise pytest.UsageError(
                f"wincon: error: {item.nodeid} references limitation {marker.args[0] if marker.args else '(none)'!r}, "
                f"which {path} does not define\n  fix: use an id from `wincon limitations`, or add the entry"
            )


def _apply_limitations(item: pytest.Item, limitations: dict[str, Any], profile: ClusterProfile) -> None:
    candidates, applied = [], []
    for marker in item.iter_markers("limitation"):
        lim = limitations[marker.args[0]]
        result = limitations_mod.match(lim, profile)
        candidates.append((lim, result))
        if result.applies:
            applied.append((lim, result))
    item.stash[CANDIDATES_KEY] = candidates
    item.stash[APPLIED_KEY] = applied
    for lim, result in applied:
        item.user_properties.append(("limitation", lim.id))
        item.user_properties.append(("limitation_title", lim.title))
        if lim.mode == "skip":
            item.add_marker(pytest.mark.skip(reason=f"limitation {lim.id}: {lim.skip_reason} [{result.explain()}]"))
        else:
            item.add_marker(
                pytest.mark.xfail(
                    reason=f"limitation {lim.id}: {lim.title} [{result.explain()}]",
                    strict=True,
                    raises=AssertionError,
                )
            )


def _skip_hybrid_without_linux(item: pytest.Item, profile: ClusterProfile) -> None:
    if item.get_closest_marker("hybrid") and not any(n.ready for n in profile.linux_nodes):
        item.add_marker(pytest.mark.skip(reason="hybrid check needs a Ready Linux worker node; the cluster has none"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """For `wincon plan` and `wincon lint`: write what each collected test will do, and why."""
    config = session.config
    out = config.getoption("wincon_plan_out") or config.getoption("wincon_lint_out")
    if not out:
        return
    rows = [plan_row(item, get_profile(config)) for item in session.items]
    Path(out).write_text(json.dumps({"profile": _profile_dict(config), "tests": rows}, indent=1))


def _profile_dict(config: pytest.Config) -> dict[str, Any] | None:
    profile = get_profile(config)
    return profile.to_dict() if profile else None


def plan_row(item: pytest.Item, profile: ClusterProfile | None) -> dict[str, Any]:
    """run / skip / xfail for one collected test on this profile, with the reason and limitations."""
    marker_names = sorted({m.name for m in item.iter_markers()})
    test_ids = [str(m.args[0]) for m in item.iter_markers("test_id") if m.args]
    referenced = [str(m.args[0]) for m in item.iter_markers("limitation") if m.args]
    applied = item.stash.get(APPLIED_KEY, [])
    limitations = [{"id": lim.id, "title": lim.title, "mode": lim.mode, "facts": list(m.facts)} for lim, m in applied]
    skip = next((m for m in item.iter_markers("skip")), None)
    xfail = next((m for m in item.iter_markers("xfail")), None)
    if skip is not None:
        outcome, reason = "skip", skip.kwargs.get("reason", skip.args[0] if skip.args else "")
    elif profile is not None and item.get_closest_marker("dataplane") and not profile.data_plane:
        outcome, reason = "skip", SIMULATED_REASON
        if limitations:
            reason += "; on a real cluster with this profile: expected failure " + ", ".join(
                f"{lim['id']} ({', '.join(lim['facts'])})" for lim in limitations
            )
    elif xfail is not None:
        outcome, reason = "xfail", xfail.kwargs.get("reason", "")
    else:
        outcome, reason = "run", ""
    function = getattr(item, "function", None)
    return {
        "test_id": test_ids[0] if test_ids else None,
        "test_ids": test_ids,
        "nodeid": item.nodeid,
        "function": f"{item.path}::{getattr(item, 'originalname', item.name)}",
        "doc": (function.__doc__ or "").strip() if function else "",
        "markers": marker_names,
        "referenced_limitations": referenced,
        "outcome": outcome,
        "reason": reason,
        "limitations": limitations,
    }


# ----------------------------------------------------------------------------- verdicts


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    profile = get_profile(item.config)
    if profile is None:
        return
    if call.excinfo is not None and call.excinfo.errisinstance(InfrastructureError) and report.when == "call":
        # The cluster could not run the check: an error (pytest's word for failures outside the test body).
        report.outcome = "failed"
        report.when = "setup"
        report.longrepr = f"infrastructure error (not a node failure): {call.excinfo.value.render()}"
        item.user_properties.append(("infrastructure_error", "true"))
        return
    if report.when != "call":
        return
    if report.passed and item.get_closest_marker("dataplane") and not profile.data_plane:
        report.outcome = "failed"
        report.longrepr = (
            "a data-plane check passed on simulated nodes, where nothing really ran: the verdict would lie. "
            "The test must call the data_plane(...) gate before its check."
        )
        return
    if report.failed and "[XPASS(strict)]" in str(report.longrepr):
        applied = item.stash.get(APPLIED_KEY, [])
        ids = ", ".join(lim.id for lim, _ in applied) or "?"
        report.longrepr = (
            f"limitation {ids} appears lifted on this cluster: the documented deviation did not occur "
            f"[{'; '.join(m.explain() for _, m in applied)}]"
        )
        item.user_properties.append(("lifted", ids))
        return
    if report.failed:
        _attach_diagnostics(item, report)


def _attach_diagnostics(item: pytest.Item, report: pytest.TestReport) -> None:
    context = item.config.stash.get(CONTEXT_KEY, None)
    namespaces = list(item.stash.get(NAMESPACES_KEY, []))
    module = item.getparent(pytest.Module)
    if module is not None:
        namespaces += module.stash.get(NAMESPACES_KEY, [])
    if context is None or not namespaces:
        return
    from wincon.cluster.diagnostics import collect

    texts: dict[str, str] = {}
    for ns in dict.fromkeys(namespaces):
        texts.update(collect(context.api_client, ns))
    body = "\n\n".join(f"--- {name}\n{text}" for name, text in texts.items())
    report.sections.append(("wincon diagnostics", body))
    try:
        import allure

        for name, text in texts.items():
            allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)
    except Exception:
        pass


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if get_profile(config) is None:
        return
    lifted = [r for r in terminalreporter.stats.get("failed", []) if "appears lifted" in str(r.longrepr)]
    if lifted:
        terminalreporter.write_sep("-", "limitations that appear lifted on this cluster")
        for rep in lifted:
            terminalreporter.write_line(f"{rep.nodeid}: {str(rep.longrepr).split(':', 1)[0]}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    context = config.stash.get(CONTEXT_KEY, None)
    if context is None:
        return
    if context._registry is not None:
        context._registry.delete_all()
    if not hasattr(config, "workerinput") and not _collect_only(config):
        context.sweep_run()
    session.exitstatus = _exit_status(session, int(exitstatus))


def _exit_status(session: pytest.Session, exitstatus: int) -> int:
    """Infrastructure errors alone give 3, not 1: the cluster could not run the checks."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != ExitCode.TESTS_FAILED:
        return exitstatus
    failed = reporter.stats.get("failed", [])
    errors = reporter.stats.get("error", [])
    # Errors are failures outside a test body: fixtures that could not deploy, infrastructure errors.
    if not failed and errors:
        return int(ExitCode.INFRASTRUCTURE)
    return exitstatus
