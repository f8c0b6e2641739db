"""expect_deviation accepts only the deviation it names (issue 18, item 3): a plain assertion that fails in its
block because the tool failed otherwise is an ordinary failure, never the documented deviation.

The unit tests call the context manager; the pytester suites run a limitation check through the plugin against
a profile where the limitation applies and read the verdict: xfailed only where the deviation was observed.
"""

from __future__ import annotations

import pytest

from tests.unit.test_controls import suite  # noqa: F401  (the pytester fixture)
from wincon.cluster.waits import BehaviourNotObserved
from wincon.commandline.errors import (
    DeviationObserved,
    InfrastructureError,
    NotTheDeviation,
    SuiteError,
    expect_deviation,
)


def test_a_failed_assertion_the_predicate_accepts_is_the_deviation():
    stderr = "** server can't find kubernetes.default: NXDOMAIN"
    with pytest.raises(DeviationObserved, match="dns-dotted: kubernetes.default did not resolve"):
        with expect_deviation("dns-dotted", accepts=lambda: "NXDOMAIN" in stderr, deviation="NXDOMAIN"):
            raise AssertionError("kubernetes.default did not resolve")


def test_a_failed_assertion_the_predicate_refuses_is_an_ordinary_failure():
    """A timeout is not NXDOMAIN: before, every failed assert in the block became the deviation."""
    stderr = ";; connection timed out; no servers could be reached"
    with pytest.raises(NotTheDeviation) as raised:
        with expect_deviation("dns-dotted", accepts=lambda: "NXDOMAIN" in stderr, deviation="NXDOMAIN"):
            raise AssertionError("kubernetes.default did not resolve")
    assert not isinstance(raised.value, DeviationObserved)
    assert isinstance(raised.value, AssertionError)  # a failure, not an error
    assert "not with the documented deviation (NXDOMAIN)" in str(raised.value)
    assert "kubernetes.default did not resolve" in str(raised.value)


def test_an_exception_type_accepts_only_assertions_of_that_type():
    with pytest.raises(DeviationObserved):
        with expect_deviation("memory-pressure", accepts=BehaviourNotObserved):
            raise BehaviourNotObserved("MemoryPressure never became True within 300s")
    with pytest.raises(NotTheDeviation):
        with expect_deviation("memory-pressure", accepts=BehaviourNotObserved):
            raise AssertionError("the pressure script printed an error")


def test_the_predicate_is_asked_only_when_the_assertion_failed():
    asked = []
    with expect_deviation("x", accepts=lambda: asked.append(1) or True):
        assert True
    assert asked == []


def test_errors_that_are_not_assertions_pass_through_unchanged():
    for exc in (
        SuiteError("exec did not run: the binary is missing", image="agnhost", tool="diskpart"),
        InfrastructureError("exec ended without an exit status"),
    ):
        with pytest.raises(type(exc)):
            with expect_deviation("block-device-mapping"):
                raise exc


def test_without_accepts_the_block_keeps_its_old_meaning():
    with pytest.raises(DeviationObserved):
        with expect_deviation("x"):
            raise AssertionError("seen")


TOOL_CHECK = """
import pytest
from wincon.commandline.errors import expect_deviation

class Result:
    def __init__(self, ok, stdout, stderr):
        self.ok, self.stdout, self.stderr = ok, stdout, stderr

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0201")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress")
@pytest.mark.windows_only("a unit suite")
def test_flow(data_plane):
    data_plane("ping 1.2.3.4")
    result = Result({ok}, {stdout!r}, {stderr!r})
    with expect_deviation(
        "icmp-egress", accepts=lambda: result.ok and "Request timed out" in result.stdout, deviation="no echo reply"
    ):
        assert result.ok and "Reply from" in result.stdout, f"{{result.stdout}} {{result.stderr}}"
"""


def test_a_tool_that_failed_inside_the_block_fails_the_check_instead_of_xfailing(suite):  # noqa: F811
    body = TOOL_CHECK.format(ok=False, stdout="", stderr="'ping' is not recognized as an internal or external command")
    result = suite(body)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*not with the documented deviation (no echo reply)*"])
    assert result.ret == 1


def test_the_observed_deviation_inside_the_block_is_still_an_expected_failure(suite):  # noqa: F811
    result = suite(TOOL_CHECK.format(ok=True, stdout="Request timed out.\r\nRequest timed out.", stderr=""))
    result.assert_outcomes(xfailed=1)
    assert result.ret == 0
