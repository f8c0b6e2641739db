"""Linux controls: every data-plane check with a Linux meaning also runs between Linux pods on Linux workers.

A check declares a Linux meaning by taking the fixture ``target_os``; the plugin then parametrizes it
(module scope) with ``linux`` first (the control, marker ``control``, id ``[linux]``, a test id derived from
its twin's) and ``windows`` (the check itself, id ``[windows]``). Its fixtures choose pods, nodes and command
lines by ``target_os``, so the control executes the very code the Windows check runs. A data-plane check
without a Linux meaning carries ``@pytest.mark.windows_only("why")`` instead, and the plan says so.

Module scope keeps each OS's pods shared by the module's checks and orders the module's controls before their
Windows twins; under xdist the plugin distributes by module (``--dist loadscope``), so a control and its twin
run on the same worker, in that order, and the twin's verdict can read the control's outcome:

- the Windows check fails and its control passed: failed (a Windows deviation);
- it fails and its control failed the same step: error, "cluster-wide: Linux pods fail the same check" (exit 3);
- a limitation's expected failure is observed and the control passed: xfailed, "confirmed: Linux control passed";
- it is observed and the control failed the same step: error, the limitation cannot be judged here;
- the control failed another step, or in setup (a fixture, an image pull, a pod that never ran): it says nothing
  about the step the twin failed; the Windows verdict stands alone and the report says what the control hit;
- no control ran (no Linux worker with a data plane, the control errored or skipped, or none exists): the
  Windows verdict stands alone and says "no control".

A *step* is where a phase failed (``failed_step``): for the test body, the chain of source locations from the test
function down to the statement that raised (for an assertion inside ``expect_deviation``, that assertion's own
line), helpers included, the context-manager plumbing left out; a failure outside the test body (a fixture, even
one whose assertion the verdict counts as the check's failure) is a setup step, which never speaks for a twin.
The control and its twin run the very same code, so the same failed assertion gives the same step. Each failed
phase records its step as the ``step`` property.
"""

from __future__ import annotations

import contextlib
import traceback
import uuid
from pathlib import Path
from typing import Any

import pytest

from wincon.clusterinfo.nodes import LINUX, OS_FIXTURE, WINDOWS, data_plane_for, is_control, target_os
from wincon.clusterinfo.profile import ClusterProfile
from wincon.session.verdicts import (
    CLUSTER_WIDE_ERROR,
    CONTROL,
    CONTROL_HIT,
    CONTROL_OUTCOME,
    INFRASTRUCTURE_PREFIX,
    STEP,
    TARGET_OS,
    TEST_ID,
    is_lifted,
)

NO_LINUX_REASON = "no Ready Linux worker with a data plane: the Linux control cannot run here"
CLUSTER_WIDE = "cluster-wide: Linux pods fail the same check (its Linux control failed in this run)"
CONFIRMED = "confirmed: Linux control passed"
UNJUDGEABLE = (
    "the limitation cannot be judged here: the Linux control fails the same check, so the flow works for no pod "
    "(for example an external target that answers nobody)"
)
ELSEWHERE = "its Linux control failed elsewhere, so it says nothing about this step"
_OUTCOMES = pytest.StashKey[dict]()  # config: twin key -> the control's outcome in this process
_STEPS = pytest.StashKey[dict]()  # config: twin key -> (the step its control failed, what it hit)
_NAMESPACE = uuid.UUID("6a0f3f1e-52a4-4d6e-9a55-7f0c6f2f51c9")


def parametrize(metafunc: pytest.Metafunc) -> None:
    """``target_os``: the control (linux) first, then the check (windows); module scope (see above)."""
    if OS_FIXTURE not in metafunc.fixturenames:
        return
    metafunc.parametrize(
        OS_FIXTURE,
        [pytest.param(LINUX, id=LINUX, marks=pytest.mark.control), pytest.param(WINDOWS, id=WINDOWS)],
        scope="module",
    )


def has_control(item: pytest.Item) -> bool:
    """A Windows check that has a Linux twin."""
    return OS_FIXTURE in getattr(item, "fixturenames", ()) and not is_control(item)


def twin_key(item: pytest.Item) -> str:
    """The same for a control and its Windows twin: the function and its other parameters."""
    callspec = getattr(item, "callspec", None)
    params = {k: v for k, v in (callspec.params.items() if callspec else []) if k != OS_FIXTURE}
    return f"{item.path}::{getattr(item, 'originalname', item.name)}{sorted((k, repr(v)) for k, v in params.items())}"


def control_test_id(test_id: str) -> str:
    """The control's own stable test id, derived from its twin's (the same on every run and machine)."""
    return str(uuid.uuid5(_NAMESPACE, f"{test_id}:linux-control"))


def mark(item: pytest.Item, profile: ClusterProfile | None) -> None:
    """At collection: a control gets its own test id and OS property, and skips where no Linux node can run it."""
    os_name = target_os(item)
    item.user_properties.append((TARGET_OS, os_name))
    if not is_control(item):
        if has_control(item):
            item.user_properties.append((CONTROL, twin_key(item)))
        return
    item.user_properties[:] = [
        (TEST_ID, control_test_id(str(v))) if k == TEST_ID else (k, v) for k, v in item.user_properties
    ]
    item.user_properties.append((CONTROL, twin_key(item)))
    if profile is not None and not data_plane_for(item, profile):
        item.add_marker(pytest.mark.skip(reason=NO_LINUX_REASON))


def windows_only_reason(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("windows_only")
    return str(marker.args[0]) if marker and marker.args else None


def plan_fields(item: pytest.Item) -> dict[str, Any]:
    """What the plan says about an item's control."""
    if is_control(item):
        return {"os": LINUX, "control": "is the Linux control of " + twin_key(item)}
    if has_control(item):
        return {"os": WINDOWS, "control": "Linux control runs first: " + twin_key(item)}
    if item.get_closest_marker("dataplane"):
        reason = windows_only_reason(item) or "no Linux control written yet"
        return {"os": WINDOWS, "control": f"none: {reason}"}
    return {"os": WINDOWS, "control": "none: not a data-plane check"}


def _outcomes(config: pytest.Config) -> dict[str, str]:
    if _OUTCOMES not in config.stash:
        config.stash[_OUTCOMES] = {}
    return config.stash[_OUTCOMES]


def _steps(config: pytest.Config) -> dict[str, tuple[str, str]]:
    if _STEPS not in config.stash:
        config.stash[_STEPS] = {}
    return config.stash[_STEPS]


# expect_deviation's frames
_PLUMBING = (Path(contextlib.__file__), Path(__file__).parents[1] / "commandline" / "errors.py")


def _locations(frames: list[tuple[str, int]], root: Path) -> list[str]:
    shown = []
    for filename, lineno in frames:
        path = Path(filename)
        if path in _PLUMBING:
            continue
        try:
            name = str(path.relative_to(root))
        except ValueError:
            name = str(path)
        shown.append(f"{name}:{lineno}")
    return shown


def failed_step(item: pytest.Item, call: pytest.CallInfo[Any]) -> str:
    """Where a phase failed: ``setup: <exception>`` (or teardown) outside the test body, else ``call: <chain>``,
    the source locations from the test function to the statement that raised (see the module docstring)."""
    excinfo = call.excinfo
    if excinfo is None:
        return ""
    if call.when != "call":
        return f"{call.when}: {excinfo.typename}"
    root = Path(str(item.config.rootpath))
    entries = excinfo.traceback.cut(path=item.path)
    frames = [(str(entry.path), entry.lineno + 1) for entry in entries]
    exc = excinfo.value
    cause = exc.__cause__
    from wincon.commandline.errors import DeviationObserved, NotTheDeviation

    if isinstance(exc, (DeviationObserved, NotTheDeviation)) and isinstance(cause, AssertionError):
        # expect_deviation re-raised it: the step is the assertion inside the block (its own chain from the test
        # body), not the `with` line; a Linux control's same assertion fails as itself there (errors.linux_control)
        # with exactly that chain, so the two steps compare equal.
        outer = [frame for frame in frames if Path(frame[0]) not in _PLUMBING][:-1]  # up to the `with` line's frame
        frames = outer + [(f.filename, f.lineno or 0) for f in traceback.extract_tb(cause.__traceback__)]
    return "call: " + " > ".join(_locations(frames, root))


def _step_of(report: pytest.TestReport) -> str:
    return next((str(v) for k, v in report.user_properties if k == STEP), "")


def _hit(report: pytest.TestReport, step: str) -> str:
    """What a failed control hit, in one line: its step and its message."""
    text = str(report.longrepr or "").strip()
    crash = getattr(report.longrepr, "reprcrash", None)
    line = str(crash.message) if crash is not None else (text.splitlines()[0] if text else report.outcome)
    where = "in setup (a fixture, an image, a pod that never ran)" if not step.startswith("call") else f"at {step}"
    return f"{where}: {line.splitlines()[0][:300] if line else report.outcome}"


def record(item: pytest.Item, report: pytest.TestReport) -> None:
    """Remember a control's outcome and, where it failed, its step (after its phase reports were rewritten)."""
    outcomes = _outcomes(item.config)
    key = twin_key(item)
    if report.when == "setup" and (report.failed or report.skipped):
        outcomes[key] = "error" if report.failed else "skipped"
    elif report.when == "call":
        outcomes[key] = report.outcome
    elif report.when == "teardown" and report.failed and outcomes.get(key) == "passed":
        outcomes[key] = "error"
    if report.failed and report.when != "teardown":
        step = _step_of(report)
        _steps(item.config)[key] = (step, _hit(report, step))


def judge(item: pytest.Item, report: pytest.TestReport) -> None:
    """Combine a Windows check's call report with its control's outcome (the rules in the module docstring)."""
    if report.when != "call" or not has_control(item):
        return
    key = twin_key(item)
    control = _outcomes(item.config).get(key)
    item.user_properties.append((CONTROL_OUTCOME, control or "none"))
    control_step, hit = _steps(item.config).get(key, ("", ""))
    own_step = _step_of(report)
    same_step = control == "failed" and control_step.startswith("call") and control_step == own_step
    elsewhere = control == "failed" and not same_step
    if elsewhere:
        item.user_properties.append((CONTROL_HIT, hit))
        report.user_properties.append((CONTROL_HIT, hit))
    text = str(report.longrepr or "")
    xfailed = report.skipped and hasattr(report, "wasxfail")
    if report.failed and not is_lifted(text) and not text.startswith(INFRASTRUCTURE_PREFIX):
        if same_step:
            report.when = "setup"  # an error: pytest's word for what is not the check's own failure
            report.longrepr = f"{INFRASTRUCTURE_PREFIX}: {CLUSTER_WIDE} (the same step: {own_step})\n{text}"
            report.user_properties.append((CLUSTER_WIDE_ERROR, "true"))
            item.user_properties.append((CLUSTER_WIDE_ERROR, "true"))
        elif elsewhere:
            report.longrepr = f"{text}\n({ELSEWHERE}: it failed {hit})"
        elif control == "passed":
            report.longrepr = f"a Windows deviation (its Linux control passed in this run):\n{text}"
    elif xfailed:
        if control == "passed":
            report.wasxfail = f"{report.wasxfail} ({CONFIRMED})"
        elif same_step:
            report.outcome, report.when = "failed", "setup"
            report.longrepr = f"{INFRASTRUCTURE_PREFIX}: {UNJUDGEABLE}; expected failure: {report.wasxfail}"
            report.user_properties.append((CLUSTER_WIDE_ERROR, "true"))
            item.user_properties.append((CLUSTER_WIDE_ERROR, "true"))
            del report.wasxfail
        elif elsewhere:
            report.wasxfail = f"{report.wasxfail} (no control: {ELSEWHERE}: it failed {hit})"
        else:
            report.wasxfail = f"{report.wasxfail} (no control)"


def configure_distribution(config: pytest.Config) -> None:
    """Under xdist, distribute by module so that a control runs before its twin on the same worker."""
    if getattr(config.option, "dist", "no") == "load" and getattr(config.option, "numprocesses", None):
        config.option.dist = "loadscope"
