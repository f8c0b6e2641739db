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
- it fails and its control failed too: error, "cluster-wide: Linux pods fail the same check" (exit 3);
- a limitation's expected failure is observed and the control passed: xfailed, "confirmed: Linux control passed";
- it is observed and the control failed too: error, the limitation cannot be judged here;
- no control ran (no Linux worker with a data plane, the control errored or skipped, or none exists): the
  Windows verdict stands alone and says "no control".
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from wincon.nodes import LINUX, OS_FIXTURE, WINDOWS, data_plane_for, is_control, target_os
from wincon.profile import ClusterProfile
from wincon.verdicts import CONTROL, CONTROL_OUTCOME, INFRASTRUCTURE_PREFIX, TARGET_OS, TEST_ID, is_lifted

NO_LINUX_REASON = "no Ready Linux worker with a data plane: the Linux control cannot run here"
CLUSTER_WIDE = "cluster-wide: Linux pods fail the same check (its Linux control failed in this run)"
CONFIRMED = "confirmed: Linux control passed"
UNJUDGEABLE = (
    "the limitation cannot be judged here: the Linux control fails the same check, so the flow works for no pod "
    "(for example an external target that answers nobody)"
)
_OUTCOMES = pytest.StashKey[dict]()  # config: twin key -> the control's outcome in this process
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


def record(item: pytest.Item, report: pytest.TestReport) -> None:
    """Remember a control's outcome (after its phase reports were rewritten into verdicts)."""
    outcomes = _outcomes(item.config)
    key = twin_key(item)
    if report.when == "setup" and (report.failed or report.skipped):
        outcomes[key] = "error" if report.failed else "skipped"
    elif report.when == "call":
        outcomes[key] = report.outcome
    elif report.when == "teardown" and report.failed and outcomes.get(key) == "passed":
        outcomes[key] = "error"


def judge(item: pytest.Item, report: pytest.TestReport) -> None:
    """Combine a Windows check's call report with its control's outcome (the rules in the module docstring)."""
    if report.when != "call" or not has_control(item):
        return
    control = _outcomes(item.config).get(twin_key(item))
    item.user_properties.append((CONTROL_OUTCOME, control or "none"))
    text = str(report.longrepr or "")
    xfailed = report.skipped and hasattr(report, "wasxfail")
    if report.failed and not is_lifted(text) and not text.startswith(INFRASTRUCTURE_PREFIX):
        if control == "failed":
            report.when = "setup"  # an error: pytest's word for what is not the check's own failure
            report.longrepr = f"{INFRASTRUCTURE_PREFIX}: {CLUSTER_WIDE}\n{text}"
        elif control == "passed":
            report.longrepr = f"a Windows deviation (its Linux control passed in this run):\n{text}"
    elif xfailed:
        if control == "passed":
            report.wasxfail = f"{report.wasxfail} ({CONFIRMED})"
        elif control == "failed":
            report.outcome, report.when = "failed", "setup"
            report.longrepr = f"{INFRASTRUCTURE_PREFIX}: {UNJUDGEABLE}; expected failure: {report.wasxfail}"
            del report.wasxfail
        else:
            report.wasxfail = f"{report.wasxfail} (no control)"


def configure_distribution(config: pytest.Config) -> None:
    """Under xdist, distribute by module so that a control runs before its twin on the same worker."""
    if getattr(config.option, "dist", "no") == "load" and getattr(config.option, "numprocesses", None):
        config.option.dist = "loadscope"
