"""JUnit XML as TestGrid reads it: write one merged file per run, and read ours or any other tool's.

TestGrid's reading: ``<failure>``/``<error>`` fail the cell, ``<skipped message=...>`` is a pass with
skips (an empty message drops the test), properties on a test case drive annotations. So:

* passed   -> no child element
* failed   -> ``<failure>``
* xpassed  -> ``<failure message="limitation <id> appears lifted on this cluster">``
* error    -> ``<error>`` (infrastructure: the check could not run)
* xfailed  -> ``<skipped message="expected failure: limitation <id>: ...">``
* skipped  -> ``<skipped message="skipped: <reason>">``

Every case carries ``<property>`` elements for its test id, area, limitation(s), seed documents and
its wincon verdict, so readers never have to guess xfailed from skipped.
"""

from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

from wincon.commandline.errors import ResultsError
from wincon.results.model import CaseResult, Verdict, count
from wincon.session.verdicts import LIFTED_PHRASE

# Characters XML 1.0 cannot hold at all (ANSI escapes from a terminal, NULs from a pod log).
_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MAX_DETAILS = 64_000


def clean(text: str, limit: int | None = None) -> str:
    text = _INVALID_XML.sub("", text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"\n... [{len(text) - limit} characters cut]"
    return text


def junit_filename(start: float, context: str = "wincon", thread: int = 1) -> str:
    """``junit_<context>_<YYYYMMDD-HHMM>_<thread>.xml``, the name TestGrid's updater looks for."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(start))
    safe = re.sub(r"[^A-Za-z0-9-]", "-", context) or "wincon"
    return f"junit_{safe}_{stamp}_{thread:02d}.xml"


def to_xml(
    cases: Iterable[CaseResult],
    suite_name: str = "wincon",
    timestamp: float | None = None,
    suite_properties: Mapping[str, str] | None = None,
) -> bytes:
    cases = list(cases)
    counts = count(cases)
    failures = counts["failed"] + counts["xpassed"]
    skipped = counts["skipped"] + counts["xfailed"]
    total_time = sum(c.duration for c in cases)
    attrs = {
        "name": suite_name,
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(counts["error"]),
        "skipped": str(skipped),
        "time": f"{total_time:.3f}",
    }
    root = ET.Element("testsuites", attrs)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            **attrs,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(timestamp or time.time())),
            "hostname": socket.gethostname(),
        },
    )
    if suite_properties:
        props = ET.SubElement(suite, "properties")
        for key, value in suite_properties.items():
            ET.SubElement(props, "property", {"name": clean(key), "value": clean(str(value))})
    for case in cases:
        element = ET.SubElement(
            suite,
            "testcase",
            {"name": clean(case.name), "classname": clean(case.classname), "time": f"{case.duration:.3f}"},
        )
        props = ET.SubElement(element, "properties")
        for key, value in [*case.properties, ("verdict", case.verdict.value)]:
            ET.SubElement(props, "property", {"name": clean(key), "value": clean(value, 2000)})
        message = clean(case.message.splitlines()[0] if case.message else "", 1000)
        details = clean(case.details, _MAX_DETAILS)
        if case.verdict in (Verdict.FAILED, Verdict.XPASSED):
            kind = "LimitationLifted" if case.verdict is Verdict.XPASSED else "AssertionError"
            child = ET.SubElement(element, "failure", {"message": message or "failed", "type": kind})
            child.text = details or message
        elif case.verdict is Verdict.ERROR:
            child = ET.SubElement(element, "error", {"message": message or "error", "type": "InfrastructureError"})
            child.text = details or message
        elif case.verdict in (Verdict.XFAILED, Verdict.SKIPPED):
            # TestGrid drops a skip with an empty message: never leave it empty.
            ET.SubElement(element, "skipped", {"message": message or case.verdict.value})
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _verdict_of(element: ET.Element, props: dict[str, str]) -> tuple[Verdict, str, str]:
    declared = props.get("verdict")
    for tag, default in (("failure", Verdict.FAILED), ("error", Verdict.ERROR), ("skipped", Verdict.SKIPPED)):
        child = element.find(tag)
        if child is None:
            continue
        message = child.get("message") or (child.text or "").strip().split("\n", 1)[0]
        verdict = default
        if declared in {v.value for v in Verdict}:
            verdict = Verdict(declared)
        elif tag == "failure" and LIFTED_PHRASE in message:
            verdict = Verdict.XPASSED
        elif tag == "skipped" and message.startswith("expected failure"):
            verdict = Verdict.XFAILED
        return verdict, message, (child.text or "")
    if declared in {v.value for v in Verdict}:
        return Verdict(declared), "", ""
    return Verdict.PASSED, "", ""


def parse(path: Path) -> list[CaseResult]:
    """Every test case of a JUnit file (ours, pytest's or another tool's). ResultsError names the file."""
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        line, column = exc.position
        raise ResultsError(
            f"{path}: not well-formed XML (line {line}, column {column}): the file is truncated or corrupt",
            "re-run the tests, or remove this run's directory from the dashboard's inputs",
        ) from exc
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read: {exc.strerror}", "check the path and permissions") from exc
    root = tree.getroot()
    if root.tag not in ("testsuites", "testsuite"):
        raise ResultsError(
            f"{path}: not a JUnit file (root element <{root.tag}>, expected <testsuites> or <testsuite>)",
            "only JUnit XML belongs in artifacts/junit_*.xml",
        )
    cases = []
    for element in root.iter("testcase"):
        properties = [
            (p.get("name", ""), p.get("value", "")) for p in element.findall("properties/property") if p.get("name")
        ]
        props = dict(properties)
        verdict, message, details = _verdict_of(element, props)
        name = element.get("name", "")
        classname = element.get("classname", "")
        if not props.get("test_id") and classname and "::" not in name:
            name = f"{classname}::{name}"  # other tools' JUnit: the class makes the name unique
        try:
            duration = float(element.get("time") or 0)
        except ValueError:
            duration = 0.0
        cases.append(
            CaseResult(
                name=name,
                verdict=verdict,
                message=message,
                details=details,
                duration=duration,
                classname=classname,
                properties=[(k, v) for k, v in properties if k != "verdict"],
            )
        )
    return cases
