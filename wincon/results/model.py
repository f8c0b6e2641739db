"""Verdicts and test-case results: how pytest's phase reports become one verdict per test.

The verdicts are the suite's (see DESIGN.md): passed, failed, xfailed (a documented limitation applies
and the behaviour deviates as documented), xpassed (strict: a limitation was expected but the
behaviour holds, so the limitation may be lifted; reported as a failure), skipped (always with a
reason) and error (the cluster or the suite could not run the check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wincon.commandline.errors import SUITE_ERROR_PREFIX
from wincon.session.controls import CLUSTER_WIDE
from wincon.session.verdicts import (
    AREA,
    CLUSTER_WIDE_ERROR,
    CONTROL,
    CONTROL_OUTCOME,
    INFRASTRUCTURE_ERROR,
    KNOWN_PROPERTIES,
    LIFTED,
    LIMITATION,
    LIMITATION_TITLE,
    MULTI_PROPERTIES,
    TARGET_OS,
    TEST_ID,
    Verdict,
    is_lifted,
    lifted_message,
)

LINUX, WINDOWS = "linux", "windows"
# The OS in a node id's parameters: ``[linux]``, ``[linux-http]`` (module-scoped target_os comes first),
# ``[http-linux]``; the first such token of the last bracket.
_OS_TOKEN = re.compile(r"(?<=[\[-])(linux|windows)(?=[-\]])")


def _os_match(name: str) -> re.Match[str] | None:
    if not name.endswith("]") or "[" not in name:
        return None
    start = name.rindex("[")
    return _OS_TOKEN.search(name, start)


def os_in_name(name: str) -> str:
    """The OS a node id names in its parameters (linux or windows), "" where it names none."""
    match = _os_match(name)
    return match.group(1) if match else ""


def swap_os(name: str) -> str:
    """The node id of the other OS's twin: ``x[linux-http]`` <-> ``x[windows-http]`` ("" without an OS)."""
    match = _os_match(name)
    if match is None:
        return ""
    other = WINDOWS if match.group(1) == LINUX else LINUX
    return name[: match.start()] + other + name[match.end() :]


def without_os(name: str) -> str:
    """The check's name without its OS: ``x[linux]`` -> ``x``, ``x[linux-http]``/``x[http-linux]`` -> ``x[http]``."""
    match = _os_match(name)
    if match is None:
        return name
    start, end = match.start(), match.end()
    if name[end] == "-":
        end += 1
    elif name[start - 1] == "-":
        start -= 1
    elif name[start - 1] == "[" and name[end] == "]":
        start, end = start - 1, end + 1
    return name[:start] + name[end:]


# The verdict names and property keys live in wincon.session.verdicts (the core plugin writes them); re-exported here.
__all__ = ["KNOWN_PROPERTIES", "MULTI_PROPERTIES", "Verdict", "CaseResult", "Check", "classify", "pair"]


@dataclass
class CaseResult:
    """One test's outcome in one run, as the JUnit file and the dashboard show it."""

    name: str  # the pytest node id, stable across runs
    verdict: Verdict
    message: str = ""  # one line: why it failed, was skipped or is expected to fail
    details: str = ""  # the traceback or longer text
    duration: float = 0.0
    classname: str = ""
    properties: list[tuple[str, str]] = field(default_factory=list)

    def prop(self, key: str, default: str = "") -> str:
        for name, value in self.properties:
            if name == key:
                return value
        return default

    def props(self, key: str) -> list[str]:
        return [value for name, value in self.properties if name == key]

    @property
    def test_id(self) -> str:
        """The stable id: the test_id property, else the name (JUnit from other tools has no ids)."""
        return self.prop(TEST_ID) or self.name

    @property
    def key(self) -> str:
        """The row of this case across runs: its test id, plus the parameters of a parametrized test."""
        test_id = self.prop(TEST_ID)
        if not test_id:
            return self.name
        if self.name.endswith("]") and "[" in self.name:
            return test_id + self.name[self.name.index("[") :]
        return test_id

    @property
    def area(self) -> str:
        return self.prop(AREA) or self.classname or "other"

    @property
    def limitations(self) -> list[str]:
        ids = self.props(LIMITATION)
        lifted = self.prop(LIFTED)
        if lifted:
            ids += [i.strip() for i in lifted.split(",") if i.strip() and i.strip() != "?"]
        return list(dict.fromkeys(ids))

    @property
    def markers(self) -> list[str]:
        return [m for m in self.prop("markers").split(",") if m]

    @property
    def is_control(self) -> bool:
        """A Linux control: its ``os`` property says linux, or (results without it) its parameters name
        linux (``[linux]``, ``[http-linux]``, ``[linux-http]``) and it carries the marker ``control``."""
        target = self.prop(TARGET_OS)
        if target:
            return target == LINUX
        return os_in_name(self.name) == LINUX and "control" in self.markers

    @property
    def os(self) -> str:
        return LINUX if self.is_control else WINDOWS

    @property
    def control(self) -> str:
        """The key shared by a Windows check and its Linux control ("" when the check has none)."""
        return self.prop(CONTROL)

    @property
    def control_outcome(self) -> str:
        """On a Windows check: its control's outcome as the plugin saw it in this run ("none", or "")."""
        return self.prop(CONTROL_OUTCOME)

    @property
    def twin_name(self) -> str:
        """The node id of the other OS's twin by name: ``x[linux]`` <-> ``x[windows]``, ``x[a-linux]`` <->
        ``x[a-windows]``, ``x[linux-a]`` <-> ``x[windows-a]`` ("" for a check whose name has no OS)."""
        return swap_os(self.name)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _skip_reason(longrepr: Any) -> str:
    """pytest's skip longrepr is (path, line, 'Skipped: reason'); xdist may turn the tuple into a list."""
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = _text(longrepr)
    return reason.removeprefix("Skipped: ").strip()


def _crash_message(report: Any) -> str:
    """The one-line reason of a failed phase: the exception line, else the first line of the text."""
    longrepr = getattr(report, "longrepr", None)
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return str(crash.message).strip()
    text = _text(longrepr).strip()
    return text.splitlines()[0] if text else ""


def _details(report: Any) -> str:
    text = getattr(report, "longreprtext", None)
    return text if text is not None else _text(getattr(report, "longrepr", ""))


def _merge_properties(reports: Sequence[Any]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    singles: dict[str, int] = {}
    for report in reports:
        for entry in getattr(report, "user_properties", None) or []:
            try:
                key, value = entry
            except (TypeError, ValueError):
                continue
            pair = (str(key), _text(value))
            if pair in seen:
                continue
            if pair[0] not in MULTI_PROPERTIES and pair[0] in singles:
                merged[singles[pair[0]]] = pair  # the latest phase wins for single-valued properties
                continue
            seen.add(pair)
            singles.setdefault(pair[0], len(merged))
            merged.append(pair)
    return merged


def classify(reports: Sequence[Any]) -> CaseResult:
    """One verdict from a test's phase reports (setup, call, teardown), in the order pytest made them.

    Works on pytest TestReports and on their xdist copies. Rules, first match wins:
    a failed setup is an error (infrastructure, fixture), an ``[XPASS(strict)]`` or "appears lifted"
    failure is xpassed, a call failure caused by the cluster is an error, an xfail is xfailed with the
    limitation in the message, a failed teardown after an otherwise fine test is an error.
    """
    if not reports:
        raise ValueError("classify() needs at least one report")
    first = reports[0]
    properties = _merge_properties(reports)
    props = dict(properties)
    limitation_ids = [v for k, v in properties if k == LIMITATION]
    titles = [v for k, v in properties if k == LIMITATION_TITLE]
    verdict: Verdict | None = None
    message = details = ""
    duration = sum(float(getattr(r, "duration", 0.0) or 0.0) for r in reports)

    for report in reports:
        when = getattr(report, "when", "call")
        outcome = getattr(report, "outcome", "passed")
        if when == "teardown":
            continue
        if outcome == "failed":
            text = _details(report)
            if is_lifted(text):
                verdict = Verdict.XPASSED
                ids = ", ".join(limitation_ids) or props.get(LIFTED, "")
                message = lifted_message(ids) if ids else _crash_message(report) or "unexpected pass (strict xfail)"
            elif when == "setup" or props.get(INFRASTRUCTURE_ERROR) == "true":
                verdict = Verdict.ERROR
                message = _crash_message(report) or f"{when} failed"
                if when == "setup" and not message.startswith(("infrastructure error", SUITE_ERROR_PREFIX)):
                    message = f"could not set up the check: {message}"
            else:
                verdict = Verdict.FAILED
                message = _crash_message(report) or "failed"
            details = text
            break
        if outcome == "skipped":
            wasxfail = getattr(report, "wasxfail", None)
            if wasxfail is not None:
                verdict = Verdict.XFAILED
                reason = str(wasxfail).removeprefix("reason: ").strip()
                if limitation_ids and not reason.startswith("limitation"):
                    label = "; ".join(
                        f"limitation {i}" + (f": {t}" if t else "")
                        for i, t in zip(limitation_ids, titles + [""] * len(limitation_ids), strict=False)
                    )
                    reason = f"{label} ({reason})" if reason else label
                message = "expected failure: " + (reason or "xfail")
                details = _details(report)
            else:
                verdict = Verdict.SKIPPED
                message = "skipped: " + (_skip_reason(report.longrepr) or "no reason given")
            break
        if when == "call" and outcome == "passed":
            if getattr(report, "wasxfail", None) is not None:  # non-strict xpass
                verdict = Verdict.XPASSED
                ids = ", ".join(limitation_ids)
                message = lifted_message(ids) if ids else "unexpected pass"
            else:
                verdict = Verdict.PASSED
    if verdict is None:  # no call report: interrupted between phases
        verdict = Verdict.ERROR
        message = "the test did not run to the end (interrupted)"

    for report in reports:
        if getattr(report, "when", "") == "teardown" and getattr(report, "outcome", "") == "failed":
            note = _crash_message(report) or "teardown failed"
            if verdict in (Verdict.PASSED, Verdict.XFAILED, Verdict.SKIPPED):
                verdict = Verdict.ERROR
                message = f"cleanup failed: {note}"
                details = _details(report)
            else:
                details += f"\n\n[teardown also failed] {note}"

    location = getattr(first, "location", None)
    classname = props.get(AREA) or (str(location[0]) if location else "")
    return CaseResult(
        name=str(first.nodeid),
        verdict=verdict,
        message=message,
        details=details,
        duration=duration,
        classname=classname,
        properties=properties,
    )


@dataclass
class Check:
    """One check of a run, both OSes side by side: the Windows case and its Linux control's case.

    ``windows`` is None where only the control ran in this run (``-m control``); ``control`` is None
    where the check has no control or its control is not in the results.
    """

    windows: CaseResult | None
    control: CaseResult | None = None

    @property
    def name(self) -> str:
        if self.windows is not None:
            return self.windows.name
        assert self.control is not None
        return self.control.twin_name or self.control.name

    @property
    def control_verdict(self) -> str:
        """The control's verdict in this run: its own case's, else the outcome the Windows case recorded;
        "no control" for a check without one, "not run" when the check has one that did not run here."""
        if self.control is not None:
            return self.control.verdict.value
        if self.windows is None or not self.windows.control:
            return NO_CONTROL
        outcome = self.windows.control_outcome
        return outcome if outcome and outcome != "none" else CONTROL_NOT_RUN

    @property
    def cluster_wide(self) -> bool:
        """A Windows error that its control's failure of the same step explains: Linux pods fail it too."""
        if self.windows is None or self.windows.verdict is not Verdict.ERROR:
            return False
        # The plugin decided it (its control failed the same step); a control that failed elsewhere does not.
        return self.windows.prop(CLUSTER_WIDE_ERROR) == "true" or CLUSTER_WIDE in self.windows.message


NO_CONTROL = "no control"
CONTROL_NOT_RUN = "not run"


def pair(cases: Iterable[CaseResult]) -> list[Check]:
    """The checks of one run, each Windows case with its Linux control, in the order of the cases.

    Twins are matched by their shared ``control`` property, else (results without it) by name. A
    control whose twin is not in the run becomes a check of its own, without a Windows case.
    """
    cases = list(cases)
    controls = [c for c in cases if c.is_control]
    by_key = {c.control: c for c in controls if c.control}
    by_name = {c.name: c for c in controls}
    used: set[int] = set()
    checks: list[Check] = []
    for case in cases:
        if case.is_control:
            continue
        control = by_key.get(case.control) if case.control else None
        if control is None and case.twin_name:
            control = by_name.get(case.twin_name)
        if control is not None and id(control) in used:
            control = None
        if control is not None:
            used.add(id(control))
        checks.append(Check(case, control))
    checks += [Check(None, c) for c in controls if id(c) not in used]
    return checks


def control_counts(cases: Iterable[CaseResult]) -> dict[str, int]:
    """The Linux controls of a run: how many there are, ran (not skipped), passed."""
    controls = [c for c in cases if c.is_control]
    ran = [c for c in controls if c.verdict is not Verdict.SKIPPED]
    return {
        "total": len(controls),
        "run": len(ran),
        "passed": sum(c.verdict is Verdict.PASSED for c in ran),
        "skipped": len(controls) - len(ran),
    }


def count(cases: Iterable[CaseResult]) -> dict[str, int]:
    """How many cases of each verdict, every verdict present (zero where none)."""
    counts = {v.value: 0 for v in Verdict}
    for case in cases:
        counts[case.verdict.value] += 1
    return counts
