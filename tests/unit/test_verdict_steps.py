"""A control speaks for its twin only on the same step (issue 18, item 4).

Pytester suites against a profile with a real Windows and a real Linux node: the twin's failure is cluster-wide
(exit 3) only where its Linux control failed the same assertion; a control that failed in a fixture (an image
pull, a WorkloadFailed) or at another assertion leaves the twin's verdict alone, and the report says what the
control hit. Then the results side: the table and the gate call an error cluster-wide only where the plugin did.
"""

from __future__ import annotations

from tests.support import synthetic
from tests.unit.test_controls import check, suite  # noqa: F401  (the pytester fixture)
from wincon.results.model import Verdict, pair
from wincon.results.report import table

HEAD = """
import pytest
from wincon.cluster.waits import WorkloadFailed
from wincon.commandline.errors import expect_deviation

def helper(ok):
    assert ok, "no reply"
"""

FIXTURE_FAILS_FOR_LINUX = (
    HEAD
    + """
@pytest.fixture(scope="module")
def server(target_os):
    if target_os == "linux":
        raise WorkloadFailed("pod server: ErrImagePull: the Linux image could not be pulled")
    return "srv"

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0301")
@pytest.mark.dataplane
def test_one(target_os, data_plane, server):
    data_plane("ping 1.2.3.4")
    assert False, "no reply"

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0302")
@pytest.mark.dataplane
def test_two(target_os, data_plane, server):
    data_plane("ping 1.2.3.4")
    assert False, "no reply"
"""
)


def test_a_control_that_failed_in_a_module_fixture_masks_no_twin(suite):  # noqa: F811
    """Before: every twin of the module became 'cluster-wide' (exit 3) behind the control's image pull."""
    result = suite(FIXTURE_FAILS_FOR_LINUX)
    result.assert_outcomes(failed=4)  # the two controls (their fixture saw the pod fail) and the two twins
    result.stdout.no_fnmatch_line("*cluster-wide*")
    result.stdout.fnmatch_lines(["*its Linux control failed elsewhere*in setup*ErrImagePull*"])
    assert result.ret == 1


DIFFERENT_ASSERTIONS = (
    HEAD
    + """
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0303")
@pytest.mark.dataplane
def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    assert target_os != "linux", "the Linux pod has no route"
    assert target_os != "windows", "the Windows pod got no reply"
"""
)


def test_a_control_that_failed_another_assertion_leaves_the_twins_failure_a_failure(suite):  # noqa: F811
    result = suite(DIFFERENT_ASSERTIONS)
    result.assert_outcomes(failed=2)
    result.stdout.no_fnmatch_line("*cluster-wide*")
    result.stdout.fnmatch_lines(["*its Linux control failed elsewhere*at call: suites/test_s.py:13*no route*"])
    assert result.ret == 1


SAME_HELPER_ASSERTION = (
    HEAD
    + """
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0304")
@pytest.mark.dataplane
def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    helper(False)
"""
)


def test_the_same_failed_assertion_in_a_shared_helper_is_cluster_wide(suite, pytester):  # noqa: F811
    result = suite(SAME_HELPER_ASSERTION, "--junitxml=out.xml")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*cluster-wide: Linux pods fail the same check*the same step: call: suites/test_s.py*"]
    )
    assert result.ret == 3
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="cluster_wide" value="true"' in xml and 'name="step" value="call: suites/test_s.py:' in xml


TWO_DEVIATION_ASSERTIONS = (
    HEAD
    + """
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0305")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress")
def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    with expect_deviation("icmp-egress"):
        assert target_os != "linux", "the Linux pod got no reply either"
        assert target_os != "windows", "the Windows pod got no reply"
"""
)


def test_two_assertions_in_one_deviation_block_are_two_steps(suite):  # noqa: F811
    """The step of an assertion inside expect_deviation is its own line, not the `with` line both share."""
    result = suite(TWO_DEVIATION_ASSERTIONS)
    result.assert_outcomes(failed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*no control: its Linux control failed elsewhere*"])
    result.stdout.no_fnmatch_line("*cannot be judged here*")


SAME_DEVIATION_ASSERTION = TWO_DEVIATION_ASSERTIONS.replace(
    'assert target_os != "linux", "the Linux pod got no reply either"\n', ""
).replace('target_os != "windows"', "False")


def test_the_same_deviation_assertion_failing_for_the_control_makes_the_limitation_unjudgeable(suite):  # noqa: F811
    result = suite(SAME_DEVIATION_ASSERTION)
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*the limitation cannot be judged here*"])
    assert result.ret == 3


def test_the_table_names_what_a_control_that_failed_elsewhere_hit_and_does_not_call_it_cluster_wide():
    control, windows = synthetic.twins("suites/networking/test_x.py::test_y", Verdict.FAILED, Verdict.FAILED)
    windows.properties.append(("control_hit", "in setup (a fixture, an image, a pod that never ran): ErrImagePull"))
    [check] = pair([control, windows])
    assert not check.cluster_wide
    text = table([control, windows])
    assert "its Linux control failed elsewhere: in setup (a fixture, an image, a pod that never ran): ErrImag" in text
    assert "cluster-wide" not in text


def test_a_linux_control_failing_inside_a_deviation_block_fails_as_itself(suite):  # noqa: F811
    """Seen under a fault: the Linux control of a Service check failed as 'DeviationObserved: overlay-kube-proxy-
    alpha, ...', a Windows limitation named for a Linux pod. Now its assertion fails as itself; the twin still
    sees the same step (the limitation cannot be judged here)."""
    result = suite(check(False, False, limitation=True), "-m", "control")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: no reply*"])
    result.stdout.no_fnmatch_line("*DeviationObserved: icmp-egress*")
    result.stdout.no_fnmatch_line("*icmp-egress: no reply*")


IN_A_HELPER = """
import pytest
from wincon.commandline.errors import expect_deviation

def observe(ok):
    with expect_deviation("icmp-egress"):
        assert ok, "no reply"

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0309")
@pytest.mark.dataplane
@pytest.mark.limitation("icmp-egress")
def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    observe(False)
"""


def test_a_deviation_block_in_a_helper_is_the_same_step_for_the_twin_and_its_control(suite):  # noqa: F811
    """The control's assertion fails as itself (test > helper's assert), the twin's as the deviation whose cause
    has that chain: the same step, so the limitation cannot be judged here."""
    result = suite(IN_A_HELPER)
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*the limitation cannot be judged here*"])
