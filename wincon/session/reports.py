"""Reports into verdicts: infrastructure errors, data-plane passes on simulated nodes, lifted limitations,
failure diagnostics, the lifted-limitation summary and the run's exit status."""

from __future__ import annotations

from typing import Any

import pytest

from wincon.clusterinfo import nodes
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import SUITE_ERROR_PREFIX, ExitCode, FrameworkFailure, InfrastructureError, SuiteError
from wincon.session import controls
from wincon.session.collection import APPLIED_KEY
from wincon.session.context import NAMESPACES_KEY, get_context
from wincon.session.verdicts import (
    INFRASTRUCTURE_ERROR,
    INFRASTRUCTURE_PREFIX,
    LIFTED,
    SIMULATED_REASON,
    SIMULATED_SKIP,
    STEP,
    STRICT_XPASS,
    SUITE_ERROR,
    TARGET_OS,
    is_lifted,
    lifted_message,
)
from wincon.windows import forms


def rewrite(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, profile: ClusterProfile) -> None:
    """Turn one phase report into the suite's verdict (DESIGN.md): see the branches below."""
    cause = infrastructure_cause(call.excinfo) if call.excinfo is not None else None
    if call.excinfo is not None and (report.failed or hasattr(report, "wasxfail")):
        # Where it failed, before anything below moves the phase: a control speaks for its twin on that step only.
        step = (STEP, controls.failed_step(item, call))
        report.user_properties.append(step)
        item.user_properties.append(step)  # JUnit writes the item's properties
    if no_data_plane_verdict(item, call, report, profile):
        return
    if call.excinfo is not None and isinstance(call.excinfo.value, SuiteError) and report.failed:
        # The suite's own gap (a tool missing from its image, its script, its parser): an error that is neither
        # the node's nor the cluster's; it gives exit 1 (exit_status), never 3.
        report.when = "teardown" if report.when == "teardown" else "setup"
        report.longrepr = f"{SUITE_ERROR_PREFIX}: {call.excinfo.value.render()}"
        item.user_properties.append((SUITE_ERROR, "true"))
        report.user_properties.append((SUITE_ERROR, "true"))
        return
    if cause is not None:
        # The cluster could not run the check (or clean up after it): an error (pytest's word for failures
        # outside the test body), with the cluster's own reason.
        report.outcome = "failed"
        report.when = "teardown" if report.when == "teardown" else "setup"
        report.longrepr = f"{INFRASTRUCTURE_PREFIX}: {cause}"
        item.user_properties.append((INFRASTRUCTURE_ERROR, "true"))
        report.user_properties.append((INFRASTRUCTURE_ERROR, "true"))
        return
    if report.when == "setup" and report.failed and call.excinfo is not None and observed_not_to_hold(call.excinfo):
        # A fixture saw behaviour not hold (an assert, a behaviour wait, a crashed pod): that is the check's
        # failure, not the cluster failing to run it. The test body does not run; the verdict is failed.
        report.when = "call"
    if report.when != "call":
        return
    if report.failed and STRICT_XPASS in str(report.longrepr):
        applied = item.stash.get(APPLIED_KEY, [])
        ids = ", ".join(lim.id for lim, _ in applied) or "?"
        report.longrepr = (
            f"{lifted_message(ids)}: the documented deviation did not occur "
            f"[{'; '.join(m.explain() for _, m in applied)}]"
        )
        item.user_properties.append((LIFTED, ids))
        return
    if report.failed:
        attach_diagnostics(item, report)
    if report.failed or hasattr(report, "wasxfail"):
        say_unrecorded(item, report)


def say_unrecorded(item: pytest.Item, report: pytest.TestReport) -> None:
    """A failure or an expected failure whose verdict read a Windows output form with no public recording says
    so in its reason, as the plan does (wincon.windows.output_forms)."""
    note = forms.unrecorded_note(item)
    if not note:
        return
    if hasattr(report, "wasxfail"):
        report.wasxfail = f"{report.wasxfail}; {note}" if report.wasxfail else note
    elif isinstance(report.longrepr, str):
        report.longrepr = f"{report.longrepr}\n{note}"
    else:
        add = getattr(report.longrepr, "addsection", None)  # pytest's ExceptionChainRepr: printed with the failure
        if callable(add):
            add("wincon: unrecorded Windows output form", note)


def no_data_plane_verdict(
    item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, profile: ClusterProfile
) -> bool:
    """A data-plane item whose pods sit on nodes without a data plane gets no verdict but skipped, whatever it
    raised or however it ended before reaching the gate: what it saw there is a simulator's, not a node's.
    The nodes are those its pods ran on where known (``nodes.data_plane_for``). Returns whether the report
    was turned into that skip (the plan says skip, or "depends on the node", for the same items)."""
    if report.when not in ("setup", "call") or not item.get_closest_marker("dataplane"):
        return False
    if nodes.data_plane_for(item, profile) or (report.skipped and not hasattr(report, "wasxfail")):
        return False
    if report.passed and report.when == "setup":
        return False  # the check has not run yet
    raised = call.excinfo.exconly().splitlines()[0][:200] if call.excinfo is not None else str(report.longrepr)
    on = nodes.without_data_plane(item, profile)  # the nodes its pods ran on that have none (mixed clusters)
    if on:
        ended = f"ran its pods on {', '.join(on)} (no data plane) and " + (
            "passed" if report.passed else "xfailed" if hasattr(report, "wasxfail") else f"raised: {raised}"
        )
    elif report.passed:
        ended = "passed without reaching the data-plane gate (a test bug: it must call data_plane(...) first)"
    elif hasattr(report, "wasxfail"):
        ended = "xfailed before reaching the data-plane gate"
    else:
        ended = f"ended before reaching the data-plane gate ({report.when}): {raised}"
    if hasattr(report, "wasxfail"):
        del report.wasxfail
    for name in nodes.fixture_pod_nodes(item):  # recorded as the gate records them
        nodes.record_node(item, name)
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {SIMULATED_REASON}; the check {ended}")
    item.user_properties.append((SIMULATED_SKIP, "true"))
    return True


def observed_not_to_hold(excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """Whether an exception says behaviour was seen not to hold: a failed assert (``BehaviourNotObserved``
    included), ``pytest.fail``, or a framework failure around the check (a crashed container, a wrong node,
    a refusal). Anything else raised outside the test body is a crash of the suite itself."""
    exc = excinfo.value
    return isinstance(exc, (AssertionError, FrameworkFailure, pytest.fail.Exception))


def infrastructure_cause(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The rendered cause when an exception means the cluster could not run the check, else None.

    An InfrastructureError says so itself. An API error that escaped the retry policy (the API server
    refused or failed a call the check needed, or could not be reached) is not the node failing either.
    """
    import urllib3
    from kubernetes.client.exceptions import ApiException

    exc = excinfo.value
    if isinstance(exc, InfrastructureError):
        return exc.render()
    if isinstance(exc, ApiException):
        body = (exc.body or "")[:300] if isinstance(exc.body, str) else ""
        return f"wincon: error: the API server answered {exc.status} {exc.reason} to a call the check needed: {body}"
    if isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError)):
        return f"wincon: error: the API server could not be reached: {exc}"
    return None


def attach_diagnostics(item: pytest.Item, report: pytest.TestReport) -> None:
    """The pods, events and logs of the test's namespaces, as a report section and Allure attachments."""
    context = get_context(item.config)
    own: list[str] = item.stash.get(NAMESPACES_KEY, [])
    namespaces = list(own)
    module = item.getparent(pytest.Module)
    if module is not None:
        shared: list[str] = module.stash.get(NAMESPACES_KEY, [])
        namespaces += shared
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


def lifted_summary(terminalreporter: Any) -> None:
    """A section naming each test whose limitation appears lifted."""
    lifted = [r for r in terminalreporter.stats.get("failed", []) if is_lifted(str(r.longrepr))]
    if lifted:
        terminalreporter.write_sep("-", "limitations that appear lifted on this cluster")
        for rep in lifted:
            terminalreporter.write_line(f"{rep.nodeid}: {str(rep.longrepr).split(':', 1)[0]}")


def exit_status(session: pytest.Session, exitstatus: int) -> int:
    """Infrastructure errors alone give 3, not 1: the cluster could not run the checks."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != ExitCode.TESTS_FAILED:
        return exitstatus
    # A failed Linux control says the cluster breaks the check for every pod: infrastructure, not Windows.
    failed = [r for r in reporter.stats.get("failed", []) if (TARGET_OS, controls.LINUX) not in r.user_properties]
    errors = reporter.stats.get("error", [])
    controls_failed = len(reporter.stats.get("failed", [])) - len(failed)
    # Only the cluster's own reasons make an error an infrastructure error; anything else raised outside a
    # test body (a crash of the suite itself: a TypeError in a fixture, a failed teardown) and the suite's own
    # gaps (SuiteError: a tool missing from its image, an unreadable output) are not dismissed as the cluster's.
    crashes = [r for r in errors if not str(r.longrepr).startswith(INFRASTRUCTURE_PREFIX)]
    if not failed and not crashes and (errors or controls_failed):
        return int(ExitCode.INFRASTRUCTURE)
    return exitstatus
