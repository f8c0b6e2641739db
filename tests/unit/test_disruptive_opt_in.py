"""Disruptive checks are opt-in (issue 42): without ``--allow-disruptive`` every test marked ``disruptive`` is skipped
with wincon.session.options.DISRUPTIVE_SKIP_REASON, `wincon plan` says the same item by item, and the release gate treats
a required disruptive check skipped that way as not run, naming the option.

The plan is `wincon plan`'s own collection of the real suite files on a profile file; the run's skip is pytest's
own evaluation of the same skip marks (pytest's skipping plugin takes the first skip mark, as the plan does); the
gate reads a run written the way the results plugin writes a skip ("skipped: <reason>"). Before this change the plan
said "run" for every disruptive check and `wincon run`/`wincon plan` did not know the option (exit 2, argparse)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from tests.support import synthetic
from tests.unit import fakes
from wincon.cli import main
from wincon.commandline.commands import collect
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts
from wincon.results.gate import judge, load_required
from wincon.results.model import Verdict
from wincon.session.options import DISRUPTIVE_SKIP_REASON

DISRUPTIVE_FILES = ("suites/node/test_disruptive.py", "suites/scheduling/test_taints_and_runtimeclass.py")


def profile_file(tmp_path) -> str:
    data = {
        "server_version": "v1.34.4",
        "cni": "flannel",
        "cloud": "azure",
        "nodes": [fakes.profile_windows_node("win-0", 20348), fakes.profile_linux_node("l1")],
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def plan_rows(tmp_path, *extra: str) -> list[dict[str, Any]]:
    dump, output = collect(
        list(DISRUPTIVE_FILES), ["--wincon", "--profile-file", profile_file(tmp_path), *extra], "--wincon-plan-out"
    )
    assert dump, output
    return dump["tests"]


def test_the_plan_skips_every_disruptive_check_without_the_option_and_only_those(tmp_path):
    rows = plan_rows(tmp_path)
    disruptive = [r for r in rows if "disruptive" in r["markers"]]
    others = [r for r in rows if "disruptive" not in r["markers"]]
    assert disruptive and others, [r["nodeid"] for r in rows]
    for row in disruptive:
        assert (row["outcome"], row["reason"]) == ("skip", DISRUPTIVE_SKIP_REASON), row["nodeid"]
    for row in others:
        assert DISRUPTIVE_SKIP_REASON not in row["reason"], row["nodeid"]


def test_with_the_option_the_plan_gives_the_disruptive_checks_their_own_outcome(tmp_path):
    without = {r["nodeid"]: r for r in plan_rows(tmp_path)}
    with_option = {r["nodeid"]: r for r in plan_rows(tmp_path, "--allow-disruptive")}
    assert without.keys() == with_option.keys()
    disruptive = [n for n, r in with_option.items() if "disruptive" in r["markers"]]
    assert disruptive
    for nodeid in disruptive:
        assert DISRUPTIVE_SKIP_REASON not in with_option[nodeid]["reason"], nodeid
    # The non-disruptive checks are planned alike either way.
    for nodeid, row in without.items():
        if nodeid not in disruptive:
            assert (row["outcome"], row["reason"]) == (with_option[nodeid]["outcome"], with_option[nodeid]["reason"])


RUN_FILE = """
import pytest

@pytest.mark.disruptive
@pytest.mark.skip(reason="a skip of the check's own")
def test_disruptive_with_its_own_skip():
    pass

@pytest.mark.disruptive
def test_disruptive():
    pass

def test_plain():
    pass
"""

CONFTEST = """
from wincon.session import options

def pytest_collection_modifyitems(config, items):
    options.skip_disruptive(config, items)
"""


@pytest.mark.parametrize("allow", [False, True])
def test_the_run_skips_with_the_reason_the_plan_gives(pytester, allow):
    """pytest's own skip evaluation of the marks skip_disruptive adds (as the plugin adds them at collection):
    the opt-in's reason comes first, even before a check's own skip; with the option the check runs."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_run=RUN_FILE)
    result = pytester.runpytest("-rs", "-p", "no:randomly", *(["--allow-disruptive"] if allow else []))
    outcomes = result.parseoutcomes()
    if allow:
        assert outcomes == {"passed": 2, "skipped": 1}, result.stdout.str()
        assert DISRUPTIVE_SKIP_REASON not in result.stdout.str()
        result.stdout.fnmatch_lines(["*a skip of the check's own*"])
    else:
        assert outcomes == {"passed": 1, "skipped": 2}, result.stdout.str()
        skips = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
        assert len(skips) == 2 and all(DISRUPTIVE_SKIP_REASON in line for line in skips), skips


A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"
REQUIRED = f"""
    version: 1
    kubernetes:
      "1.34":
        tests:
          - {{id: {A}, name: node reboot}}
          - {{id: {B}, name: pod to pod}}
"""


def gate_run(tmp_path, message: str):
    cases = [
        synthetic.case("suites/t.py::test_a", Verdict.SKIPPED, test_id=A, message=message),
        synthetic.case("suites/t.py::test_b", Verdict.PASSED, test_id=B),
    ]
    path = artifacts.write_run(
        tmp_path / "results" / "run", cases, start=1_000, result="SUCCESS", profile=synthetic.profile("v1.34.4")
    )
    required = tmp_path / "required.yaml"
    required.write_text(textwrap.dedent(REQUIRED))
    return path, required


def test_the_gate_says_a_required_disruptive_check_was_not_run_and_names_the_option(tmp_path, capsys):
    path, required = gate_run(tmp_path, "skipped: " + DISRUPTIVE_SKIP_REASON)
    result = judge(artifacts.load_run(path), load_required(required))
    assert not result.ok
    [(test_id, _, why)] = result.blocking
    assert test_id == A and why.startswith("not run: a disruptive check") and "--allow-disruptive" in why
    assert main(["gate", str(path), "--required", str(required)]) == ExitCode.GATE
    assert "--allow-disruptive" in capsys.readouterr().out


def test_the_gate_keeps_any_other_skip_as_a_skip(tmp_path):
    path, required = gate_run(tmp_path, "skipped: needs a Ready Linux worker node")
    [(_, _, why)] = judge(artifacts.load_run(path), load_required(required)).blocking
    assert why.startswith("skipped:") and "--allow-disruptive" not in why


def test_wincon_run_and_plan_take_the_option():
    from wincon.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["run", "--allow-disruptive"]).allow_disruptive is True
    assert parser.parse_args(["run"]).allow_disruptive is False
    assert parser.parse_args(["plan", "--allow-disruptive"]).allow_disruptive is True


def test_wincon_run_hands_the_option_to_pytest(monkeypatch):
    seen: dict[str, Any] = {}

    def fake_run(results_dir: Any, pytest_args: list[str], **kwargs: Any) -> int:
        seen["args"] = pytest_args
        return 0

    monkeypatch.setattr("wincon.results.runner.run", fake_run)
    assert main(["run", "--allow-disruptive", "--", "-k", "reboot"]) == 0
    assert seen["args"][-1] == "--allow-disruptive" and "-k" in seen["args"]
    assert main(["run", "--", "-k", "reboot"]) == 0
    assert "--allow-disruptive" not in seen["args"]


# --------------------------------------------------------------------------- the pipelines that own their clusters


def test_the_pipeline_opts_in_on_the_cluster_it_creates_and_only_when_told_on_another(tmp_path):
    from tests.unit.test_ci_scripts import dry_pipeline

    def pytest_lines(*args: str) -> list[str]:
        return [line for line in dry_pipeline(*args, tmp_path=tmp_path) if line.startswith("pytest ")]

    aks = pytest_lines("--cloud", "aks")
    [parallel] = [line for line in aks if "--results-context parallel" in line]
    [serial] = [line for line in aks if "--results-context serial" in line]
    assert "--allow-disruptive" in serial.split() and "--allow-disruptive" not in parallel.split()
    gate = pytest_lines("--cloud", "gke", "--mode", "gate", "--kubernetes-version", "1.35")
    assert len(gate) == 1 and "--allow-disruptive" in gate[0].split()
    theirs = pytest_lines("--cloud", "kubeconfig", "--kubeconfig", "/k")
    assert theirs and not any("--allow-disruptive" in line.split() for line in theirs)
    told = pytest_lines("--cloud", "kubeconfig", "--kubeconfig", "/k", "--allow-disruptive")
    assert any("--allow-disruptive" in line.split() for line in told if "--results-context serial" in line)
