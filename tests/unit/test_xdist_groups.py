"""tests/support/xdist_groups.py: under ``-n 2 --dist loadgroup`` the tests of one xdist_group run on one worker
(the fault modules share one cluster and must run one at a time); without the plugin, pytest 9.2 with xdist 3.8
spreads them over both workers, which the counter-case below shows wherever that is still so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import xdist_groups

REPO = Path(__file__).resolve().parents[2]

MODULE = """
import pytest


@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    pass


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


def _workers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *plugin: str) -> dict[str, set[str]]:
    """Which workers ran each of the module's two tests, under ``-n 2 --dist loadgroup``; under ``"ids"``, the node
    ids the run reported for the ungrouped test."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the subprocess imports tests.support from the project
    pytester.makepyfile(test_groups=MODULE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", *plugin, "-n", "2", "--dist", "loadgroup", "-v")
    result.assert_outcomes(passed=16)
    found: dict[str, set[str]] = {}
    for line in result.outlines:
        m = re.match(r"\[(gw\d)\] .*PASSED test_groups\.py::(test_\w+)\[", line)
        if m:
            found.setdefault(m.group(2), set()).add(m.group(1))
        ids = re.match(r"\[gw\d\] .*PASSED (test_groups\.py::test_free\S*)", line)
        if ids:
            found.setdefault("ids", set()).add(ids.group(1))
    return found


def test_the_tests_of_a_group_run_on_one_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _workers(pytester, monkeypatch, "-p", "tests.support.xdist_groups")
    assert len(found["test_grouped"]) == 1, found
    # The ungrouped tests stay scopes of their own (not renamed into the group), free to go to either worker; which
    # worker takes them is the scheduler's choice at the moment (under load one worker may take all eight).
    assert len(found["ids"]) == 8 and not any("@" in i for i in found["ids"]), found


def test_without_the_plugin_the_group_may_be_split(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The counter-case: the same module without the plugin. Where xdist's own renaming works (pytest before 9.2)
    the group stays whole there too; where it does not, the group is split, which is what the plugin prevents."""
    found = _workers(pytester, monkeypatch)
    if xdist_groups.renaming_works():
        assert len(found["test_grouped"]) == 1, found
    else:
        assert len(found["test_grouped"]) == 2, found
