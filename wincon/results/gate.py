"""The release gate: judge one run against the required test ids of its Kubernetes minor version.

The model is RefStack's: a versioned list of required test ids (gating/required.yaml), and a run's
results keyed by those ids. A required test must have run and behaved as documented:

* passed: required and holds;
* xfailed: accepted only where the file says ``accept_expected_failures: true`` (a documented
  limitation that applies to this cluster is a known deviation, not a regression);
* failed, error, skipped, or absent from the run: the gate says no (exit 11); a disruptive check skipped because
  the run did not opt in (``--allow-disruptive``, wincon.session.options.DISRUPTIVE_SKIP_REASON) was not run, and its
  blocking line says so and names the option;
* xpassed (a limitation appears lifted): the behaviour holds, so it does not block, but it is listed
  as a limitation to review, for every test of the run, required or not.
* and, whatever the required list says, a run in which no Windows check executed on a real Windows node
  (wincon.results.execution: a simulated cluster, or every check skipped or errored before reaching a node)
  says no, as does a check that asked for Hyper-V isolation and observed process isolation.

Linux controls (``[linux]`` items) are never required and never block: the gate looks at them only to
classify a required Windows check's error. Where its control failed the same step in the same run (the
plugin's ``cluster_wide`` property), the error is cluster-wide (Linux pods fail the same check): it still
blocks (the check did not hold on this cluster), and the gate says so, so nobody blames the Windows node for
it. A control that failed elsewhere (in a fixture, on an image, at another assertion) explains nothing: the
blocking line says what it hit, and the Windows verdict stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from wincon.commandline.errors import UsageError
from wincon.documents import releases
from wincon.results import execution
from wincon.results.artifacts import Run
from wincon.results.model import CaseResult, Verdict, control_counts, pair
from wincon.session.options import ALLOW_DISRUPTIVE, DISRUPTIVE_SKIP_REASON
from wincon.session.verdicts import CONTROL_HIT

DEFAULT_REQUIRED = Path(__file__).resolve().parent.parent.parent / "gating" / "required.yaml"
_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version", "kubernetes"],
    "properties": {
        "version": {"const": 1},
        "accept_expected_failures": {"type": "boolean"},
        "kubernetes": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": r"^\d+\.\d+$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "include": {"type": "array", "items": {"type": "string", "pattern": r"^\d+\.\d+$"}},
                    "tests": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["id", "name"],
                            "properties": {
                                "id": {"type": "string", "pattern": _UUID},
                                "name": {"type": "string", "minLength": 1},
                            },
                        },
                    },
                    "remove": {"type": "array", "items": {"type": "string", "pattern": _UUID}},
                },
            },
        },
    },
}


@dataclass
class Required:
    path: Path
    versions: dict[str, dict[str, str]]  # minor -> {test id: name}
    accept_expected_failures: bool = True


def load_required(path: Path | None = None) -> Required:
    """Read and check the required list; includes resolved. UsageError names the file and the entry."""
    path = Path(path) if path else DEFAULT_REQUIRED
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: file not found", "pass --required PATH or restore gating/required.yaml") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}", "fix the YAML syntax at the line shown") from exc
    errors = sorted(Draft202012Validator(SCHEMA).iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise UsageError(f"{path}: {where}: {errors[0].message}", "see the comment at the top of gating/required.yaml")
    raw = document["kubernetes"]
    for minor, entry in raw.items():
        ids = [t["id"] for t in entry.get("tests", [])]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise UsageError(f"{path}: kubernetes/{minor}: test id {duplicates[0]} listed twice", "list it once")
        for other in entry.get("include", []):
            if other not in raw:
                raise UsageError(
                    f"{path}: kubernetes/{minor}: includes {other}, which the file does not define",
                    f"add a kubernetes/{other} entry or drop it from include",
                )

    resolved: dict[str, dict[str, str]] = {}

    def resolve(minor: str, stack: tuple[str, ...]) -> dict[str, str]:
        if minor in stack:
            raise UsageError(
                f"{path}: kubernetes/{minor}: include cycle {' -> '.join((*stack, minor))}", "break the cycle"
            )
        if minor in resolved:
            return resolved[minor]
        entry = raw[minor]
        tests: dict[str, str] = {}
        for other in entry.get("include", []):
            tests.update(resolve(other, (*stack, minor)))
        tests.update({t["id"]: t["name"] for t in entry.get("tests", [])})
        for removed in entry.get("remove", []):
            tests.pop(removed, None)
        resolved[minor] = tests
        return tests

    for minor in raw:
        if not resolve(minor, ()):
            raise UsageError(
                f"{path}: kubernetes/{minor}: no required tests (after include and remove)",
                "list the test ids a release of this minor must pass, or remove the entry",
            )
    return Required(path, resolved, bool(document.get("accept_expected_failures", True)))


def minor_of(version: str) -> str:
    """'1.34' from a version or a minor; '' where unparseable (:func:`wincon.documents.releases.minor_name`)."""
    return releases.minor_name(version)


@dataclass
class GateResult:
    minor: str
    ok: bool
    passed: list[tuple[str, str, CaseResult]] = field(default_factory=list)
    accepted: list[tuple[str, str, CaseResult]] = field(default_factory=list)
    blocking: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, why)
    review: list[tuple[str, str]] = field(default_factory=list)  # (limitation ids, test)
    cluster_wide: int = 0  # blocking errors whose Linux control failed too
    controls: dict[str, int] = field(default_factory=dict)  # control_counts() of the run
    execution: str = ""  # where the Windows checks executed (wincon.results.execution)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as `wincon gate --json` prints it: the same facts as :meth:`render`, one key each."""

        def rows(entries: list[tuple[str, str, CaseResult]]) -> list[dict[str, str]]:
            return [
                {"id": i, "name": n, "test": c.name, "verdict": c.verdict.value, "message": c.message}
                for i, n, c in entries
            ]

        return {
            "kubernetes": self.minor,
            "ok": self.ok,
            "passed": rows(self.passed),
            "accepted": rows(self.accepted),
            "blocking": [{"id": i, "name": n, "why": why} for i, n, why in self.blocking],
            "review": [{"limitations": ids, "test": name} for ids, name in self.review],
            "cluster_wide": self.cluster_wide,
            "controls": dict(self.controls),
            "execution": self.execution,
        }

    def render(self) -> str:
        lines = [
            f"release gate for Kubernetes {self.minor}: {'PASS' if self.ok else 'FAIL'} "
            f"({len(self.passed)} required passed, {len(self.accepted)} accepted expected failures, "
            f"{len(self.blocking)} blocking"
            + (f", {self.cluster_wide} of them cluster-wide" if self.cluster_wide else "")
            + ")"
        ]
        for test_id, name, why in self.blocking:
            lines.append(f"  BLOCKING {test_id} {name}: {why}")
        if self.cluster_wide:
            lines.append(
                f"  {self.cluster_wide} blocking error(s) are cluster-wide: their Linux controls failed the same check "
                "in this run, so the cluster (network, DNS, external target) fails it for every pod, not the Windows "
                "node"
            )
        for test_id, name, case in self.accepted:
            lines.append(f"  accepted {test_id} {name}: {case.message}")
        if self.review:
            lines.append("limitations to review (the behaviour held although the limitation applied):")
            for ids, name in self.review:
                lines.append(f"  REVIEW {ids}: {name}")
        if self.execution:
            lines.append(self.execution)
        if self.controls.get("total"):
            lines.append(
                f"Linux controls ignored by the gate (never required, never blocking): {self.controls['passed']} "
                f"passed / {self.controls['run']} run"
            )
        return "\n".join(lines)


def judge(run: Run, required: Required, minor: str | None = None) -> GateResult:
    minor = minor or minor_of(run.k8s_version)
    if not minor:
        raise UsageError(
            f"{run.path}: the run does not record its Kubernetes version (finished.json metadata)",
            "pass --kubernetes-version X.Y",
        )
    if minor not in required.versions:
        known = ", ".join(sorted(required.versions, key=lambda v: releases.minor_of(v) or (0, 0)))
        raise UsageError(
            f"{required.path}: no required tests for Kubernetes {minor} (the file lists {known})",
            f'add a kubernetes/"{minor}" entry (include the previous minor), or pass --kubernetes-version',
        )
    by_id: dict[str, list[CaseResult]] = {}
    control_ids: set[str] = set()
    for case in run.cases:
        if case.is_control:  # never required, never blocking
            control_ids.add(case.test_id)
            continue
        by_id.setdefault(case.test_id, []).append(case)
    cluster_wide = {id(check.windows) for check in pair(run.cases) if check.cluster_wide}
    result = GateResult(minor=minor, ok=True, controls=control_counts(run.cases))
    for test_id, name in required.versions[minor].items():
        cases = by_id.get(test_id)
        if not cases:
            why = "missing: not in this run"
            if test_id in control_ids:
                why += " (only a Linux control carries this id, and controls are never required: list its Windows twin)"
            result.blocking.append((test_id, name, why))
            continue
        for case in cases:
            verdict = case.verdict
            if verdict is Verdict.PASSED:
                result.passed.append((test_id, name, case))
            elif verdict is Verdict.XFAILED and required.accept_expected_failures:
                result.accepted.append((test_id, name, case))
            elif verdict is Verdict.XPASSED:
                result.passed.append((test_id, name, case))
            elif verdict is Verdict.SKIPPED and DISRUPTIVE_SKIP_REASON in (case.message or ""):
                why = (
                    f"not run: a disruptive check, skipped because the run did not pass {ALLOW_DISRUPTIVE}; "
                    f"run it again with `wincon run {ALLOW_DISRUPTIVE}` on a cluster you may disrupt"
                )
                result.blocking.append((test_id, case.name, why))
            else:
                why = f"{verdict.value}: {case.message or 'no message'}"
                if id(case) in cluster_wide:
                    result.cluster_wide += 1
                    why = f"cluster-wide (its Linux control failed too): {why}"
                elif case.prop(CONTROL_HIT):
                    why += (
                        f" (its Linux control failed elsewhere, which explains nothing here: {case.prop(CONTROL_HIT)})"
                    )
                result.blocking.append((test_id, case.name, why))
    for case in run.cases:
        if case.verdict is Verdict.XPASSED:
            result.review.append((", ".join(case.limitations) or "(limitation not named)", case.name))
    found = execution.record(run.cases, run.profile or None)
    result.execution = found.summary()
    if not found.executed_on_real:  # no green on a lie: a pass must have run somewhere real
        why = (
            "the run records no cluster profile, so where its checks ran is unknown"
            if not found.known
            else found.summary()
        )
        result.blocking.append(("-", "Windows checks on real Windows nodes", f"none executed: {why}"))
    for where in found.hyperv_in_process:
        result.blocking.append(("-", where, "asked for Hyper-V isolation but observed process isolation"))
    result.ok = not result.blocking
    return result


# ----------------------------------------------------------------------------- checking the file against the suite


def collect_suite_ids(paths: list[str] | None = None) -> dict[str, str]:
    """{test id: node id} of the suite tests, from the core plugin's collect-only dump (no cluster needed)."""
    from wincon.commandline.commands import collect

    dump, output = collect(paths or ["suites"], [], "--wincon-lint-out")
    if not dump:
        raise UsageError(
            "the suites could not be collected: " + output.strip()[-800:],
            "fix the collection error first (`wincon lint` shows it)",
        )
    return {test_id: test["nodeid"] for test in dump.get("tests", []) for test_id in test.get("test_ids", [])}


def validate_against_suite(required: Required, suite_ids: dict[str, str]) -> list[str]:
    """Every required id must name a collected suite test; returns the problems (empty when fine)."""
    problems = []
    for minor, tests in sorted(required.versions.items()):
        for test_id, name in tests.items():
            if test_id not in suite_ids:
                problems.append(f"kubernetes/{minor}: {test_id} ({name}) is not the test_id of any suite test")
    return problems
