"""Verdicts from pytest phase reports, and the JUnit that TestGrid reads."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from wincon.results import junit
from wincon.results.model import CaseResult, Verdict, classify, count

NODE = "suites/networking/test_flows.py::test_icmp_egress"
BASE_PROPS = [("test_id", "00000000-0000-4000-8000-000000000002"), ("area", "networking")]


def report(when, outcome, longrepr=None, props=(), **extra):
    return SimpleNamespace(
        nodeid=NODE,
        location=("suites/networking/test_flows.py", 3, "test_icmp_egress"),
        when=when,
        outcome=outcome,
        longrepr=longrepr,
        duration=0.5,
        user_properties=list(BASE_PROPS) + list(props),
        **extra,
    )


def passing_setup_teardown(call):
    return [report("setup", "passed"), call, report("teardown", "passed")]


def test_passed():
    case = classify(passing_setup_teardown(report("call", "passed")))
    assert case.verdict is Verdict.PASSED
    assert case.test_id == "00000000-0000-4000-8000-000000000002"
    assert case.area == "networking"
    assert case.duration == pytest.approx(1.5)


def test_failed_keeps_the_assertion_line():
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="AssertionError: no reply"))
    case = classify(passing_setup_teardown(report("call", "failed", longrepr=crash)))
    assert case.verdict is Verdict.FAILED
    assert case.message == "AssertionError: no reply"


def test_xfail_names_the_limitation_in_the_message():
    props = [("limitation", "icmp-egress-through-vfp"), ("limitation_title", "ICMP gets no reply")]
    call = report("call", "skipped", props=props, wasxfail="limitation icmp-egress-through-vfp: ICMP gets no reply")
    case = classify(passing_setup_teardown(call))
    assert case.verdict is Verdict.XFAILED
    assert case.message.startswith("expected failure: limitation icmp-egress-through-vfp")
    assert case.limitations == ["icmp-egress-through-vfp"]


def test_xfail_reason_without_the_id_gets_it_from_the_properties():
    props = [("limitation", "pqdn"), ("limitation_title", "dotted names do not resolve")]
    case = classify(passing_setup_teardown(report("call", "skipped", props=props, wasxfail="reason: known")))
    assert case.message == "expected failure: limitation pqdn: dotted names do not resolve (known)"


def test_strict_xpass_is_an_unexpected_pass_naming_the_limitation():
    props = [("limitation", "icmp-egress-through-vfp")]
    call = report("call", "failed", longrepr="[XPASS(strict)] limitation icmp-egress-through-vfp: ICMP", props=props)
    case = classify(passing_setup_teardown(call))
    assert case.verdict is Verdict.XPASSED
    assert case.message == "limitation icmp-egress-through-vfp appears lifted on this cluster"


def test_core_plugin_rewritten_lifted_message_is_xpassed():
    # wincon.plugin rewrites the [XPASS(strict)] text and adds a 'lifted' property on later phases.
    call = report("call", "failed", longrepr="limitation pqdn appears lifted on this cluster: the deviation...")
    teardown = report("teardown", "passed", props=[("lifted", "pqdn")])
    case = classify([report("setup", "passed"), call, teardown])
    assert case.verdict is Verdict.XPASSED
    assert case.limitations == ["pqdn"]


def test_infrastructure_error_relabelled_as_setup_is_an_error():
    # The core plugin turns an InfrastructureError in the test body into a failed "setup" report.
    relabelled = report("setup", "failed", longrepr="infrastructure error (not a node failure): pod never scheduled")
    case = classify([report("setup", "passed"), relabelled, report("teardown", "passed")])
    assert case.verdict is Verdict.ERROR
    assert case.message == "infrastructure error (not a node failure): pod never scheduled"


def test_fixture_failure_is_an_error_not_a_failure():
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="ApiException: (503)"))
    case = classify([report("setup", "failed", longrepr=crash), report("teardown", "passed")])
    assert case.verdict is Verdict.ERROR
    assert case.message == "could not set up the check: ApiException: (503)"


def test_skip_reason_from_a_tuple_or_an_xdist_list():
    for longrepr in (("f.py", 3, "Skipped: no Linux node"), ["f.py", 3, "Skipped: no Linux node"]):
        case = classify([report("setup", "skipped", longrepr=longrepr), report("teardown", "passed")])
        assert case.verdict is Verdict.SKIPPED
        assert case.message == "skipped: no Linux node"


def test_cleanup_failure_after_a_pass_is_an_error():
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="namespace stuck Terminating"))
    case = classify([report("setup", "passed"), report("call", "passed"), report("teardown", "failed", longrepr=crash)])
    assert case.verdict is Verdict.ERROR
    assert case.message == "cleanup failed: namespace stuck Terminating"


def test_single_valued_properties_take_the_latest_and_multi_valued_keep_all():
    setup = report("setup", "passed", props=[("doc", "a.txt"), ("command", "curl a")])
    call = report("call", "passed", props=[("doc", "b.txt"), ("area", "dns")])
    case = classify([setup, call])
    assert case.props("doc") == ["a.txt", "b.txt"]
    assert case.area == "dns"


def test_parametrized_cases_of_one_test_id_have_distinct_keys():
    a = CaseResult(name="s.py::test_x[ltsc2019]", verdict=Verdict.PASSED, properties=[("test_id", "id-1")])
    b = CaseResult(name="s.py::test_x[ltsc2022]", verdict=Verdict.PASSED, properties=[("test_id", "id-1")])
    assert a.key != b.key
    assert a.test_id == b.test_id == "id-1"


def sample_cases():
    props = list(BASE_PROPS)
    return [
        CaseResult("t::passed", Verdict.PASSED, properties=props + [("doc", "000_4130a90def37a825.txt")]),
        CaseResult("t::failed", Verdict.FAILED, "AssertionError: x", "trace\x1b[31m red\x00", properties=props),
        CaseResult("t::xfailed", Verdict.XFAILED, "expected failure: limitation icmp", properties=props),
        CaseResult("t::xpassed", Verdict.XPASSED, "limitation icmp appears lifted on this cluster", properties=props),
        CaseResult("t::skipped", Verdict.SKIPPED, "", properties=props),
        CaseResult("t::error", Verdict.ERROR, "infrastructure error: api unreachable", properties=props),
    ]


def test_junit_maps_verdicts_to_the_elements_testgrid_reads(tmp_path):
    data = junit.to_xml(sample_cases(), suite_properties={"run-id": "r1"})
    root = ET.fromstring(data)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["t::passed"].find("failure") is None and cases["t::passed"].find("skipped") is None
    assert cases["t::failed"].find("failure") is not None
    assert cases["t::xpassed"].find("failure").get("message") == "limitation icmp appears lifted on this cluster"
    assert cases["t::error"].find("error") is not None
    assert cases["t::xfailed"].find("skipped").get("message") == "expected failure: limitation icmp"
    # TestGrid drops a skip with an empty message: never write one.
    assert cases["t::skipped"].find("skipped").get("message") == "skipped"
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "6",
        "2",
        "1",
        "2",
    )
    props = {p.get("name"): p.get("value") for p in cases["t::passed"].iter("property")}
    assert props["test_id"] == BASE_PROPS[0][1] and props["verdict"] == "passed"


def test_junit_round_trip_keeps_verdicts_and_drops_characters_xml_cannot_hold(tmp_path):
    path = tmp_path / "junit_wincon_20250101-0000_01.xml"
    path.write_bytes(junit.to_xml(sample_cases()))
    parsed = junit.parse(path)
    assert [c.verdict for c in parsed] == [c.verdict for c in sample_cases()]
    failed = next(c for c in parsed if c.name == "t::failed")
    assert "\x1b" not in failed.details and "\x00" not in failed.details and "red" in failed.details
    assert count(parsed) == count(sample_cases())


def test_foreign_junit_without_properties_is_read_by_its_elements(tmp_path):
    path = tmp_path / "junit_other.xml"
    path.write_text(
        '<testsuite name="ginkgo"><testcase name="[sig-windows] works" classname="Kubernetes e2e suite"/>'
        '<testcase name="ping" classname="net"><skipped message="expected failure: icmp"/></testcase>'
        '<testcase name="dial" classname="net"><failure message="boom"/></testcase></testsuite>'
    )
    parsed = junit.parse(path)
    assert [(c.name, c.verdict) for c in parsed] == [
        ("Kubernetes e2e suite::[sig-windows] works", Verdict.PASSED),
        ("net::ping", Verdict.XFAILED),
        ("net::dial", Verdict.FAILED),
    ]


def test_filename_has_the_testgrid_shape():
    assert junit.junit_filename(0) == "junit_wincon_19700101-0000_01.xml"
    assert junit.junit_filename(0, "win ltsc/2022") == "junit_win-ltsc-2022_19700101-0000_01.xml"
