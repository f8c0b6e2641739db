"""kubectl's habits (issue 42): ~/.kube/config when neither --kubeconfig nor $KUBECONFIG names a kubeconfig; a bad
option exits 4 (the usage code of the exit table; argparse's own 2 is "interrupted" there) after the usage of the
sub-command it was given to; `--json` on gate and report.

Before this change `wincon profile --bogus` exited 2 after the top-level usage, and with no --kubeconfig and no
$KUBECONFIG a ~/.kube/config was never read (exit 6, "no kubeconfig given")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.support import synthetic
from wincon.cli import _subparsers, build_parser, main
from wincon.cluster.client import load_api_client
from wincon.commandline.errors import ExitCode, KubeconfigError
from wincon.results import artifacts
from wincon.results.model import Verdict

# --------------------------------------------------------------------------- bad options: exit 4, the command's usage


def test_wincon_profile_bogus_exits_4_with_the_profile_usage():
    """The real command line, as a user types it (a process of its own: the exit code is the process's)."""
    done = subprocess.run(
        [sys.executable, "-m", "wincon", "profile", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == ExitCode.USAGE == 4, done.stderr
    assert done.stderr.startswith("usage: wincon profile "), done.stderr
    assert "unrecognized arguments: --bogus" in done.stderr


COMMANDS = [sub.prog.split()[1:] for sub in _subparsers(build_parser())]


def test_every_command_is_covered():
    names = {" ".join(c) for c in COMMANDS}
    assert {"profile", "plan", "run", "gate", "report", "cleanup", "prepull", "images verify", "cluster up"} <= names


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unknown_option_of_any_command_exits_4_after_that_commands_usage(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--no-such-option"])
    assert exit_info.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"usage: wincon {' '.join(command)} "), err
    # (a command with required arguments names those first: still its usage and exit 4)
    assert "unrecognized arguments: --no-such-option" in err or "the following arguments are required" in err, err
    assert f"wincon {' '.join(command)}: error: " in err and "fix:" in err


@pytest.mark.parametrize(
    "argv, usage",
    [
        (["prepull", "--pod-start-timeout", "soon"], "usage: wincon prepull "),  # a bad value
        (["publish", "results"], "usage: wincon publish "),  # a required option missing
        (["--bogus"], "usage: wincon "),  # before any command
    ],
)
def test_bad_values_and_missing_options_exit_4_too(argv, usage, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == ExitCode.USAGE
    assert capsys.readouterr().err.startswith(usage)


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["profile", "--help"])
    assert exit_info.value.code == 0
    assert "usage: wincon profile" in capsys.readouterr().out


# --------------------------------------------------------------------------- ~/.kube/config


def kubeconfig(server: str) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: v1
        kind: Config
        clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
        users: [{{name: u, user: {{token: not-a-secret}}}}]
        contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
        current-context: x
        """
    )


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home directory of this test's own, no $KUBECONFIG, and no in-cluster service account."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_without_flag_or_env_the_home_kubeconfig_is_read(home):
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(kubeconfig("https://127.0.0.1:16443"))
    assert load_api_client().configuration.host == "https://127.0.0.1:16443"


def test_kubeconfig_env_and_flag_come_before_the_home_file(home, tmp_path, monkeypatch):
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(kubeconfig("https://127.0.0.1:16443"))
    named = tmp_path / "named"
    named.write_text(kubeconfig("https://127.0.0.1:26443"))
    monkeypatch.setenv("KUBECONFIG", str(named))
    assert load_api_client().configuration.host == "https://127.0.0.1:26443"
    flag = tmp_path / "flag"
    flag.write_text(kubeconfig("https://127.0.0.1:36443"))
    assert load_api_client(str(flag)).configuration.host == "https://127.0.0.1:36443"


def test_with_no_kubeconfig_anywhere_the_error_names_the_home_file(home):
    with pytest.raises(KubeconfigError, match=r"none at ~/\.kube/config"):
        load_api_client()


# --------------------------------------------------------------------------- --json on gate and report

A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"


def a_run(tmp_path):
    cases = [
        synthetic.case("suites/t.py::test_a", Verdict.PASSED, test_id=A),
        synthetic.case("suites/t.py::test_b", Verdict.FAILED, test_id=B, message="AssertionError: no reply"),
    ]
    path = artifacts.write_run(
        tmp_path / "results" / "run", cases, start=1_000, result="FAILURE", profile=synthetic.profile("v1.34.4")
    )
    required = tmp_path / "required.yaml"
    required.write_text(
        f'version: 1\nkubernetes:\n  "1.34":\n    tests:\n      - {{id: {A}, name: a}}\n      - {{id: {B}, name: b}}\n'
    )
    return path, required


def test_gate_json_says_what_the_text_says_with_the_same_exit_code(tmp_path, capsys):
    path, required = a_run(tmp_path)
    assert main(["gate", str(path), "--required", str(required)]) == ExitCode.GATE
    text = capsys.readouterr().out
    assert main(["gate", str(path), "--required", str(required), "--json"]) == ExitCode.GATE
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["ok"] is False and verdict["kubernetes"] == "1.34"
    assert [p["id"] for p in verdict["passed"]] == [A]
    [blocking] = verdict["blocking"]
    assert blocking["id"] == B and blocking["why"] == "failed: AssertionError: no reply"
    assert f"BLOCKING {B} suites/t.py::test_b: failed: AssertionError: no reply" in text


def test_report_json_lists_each_check_with_its_verdicts(tmp_path, capsys):
    path, _ = a_run(tmp_path)
    assert main(["report", str(path), "--no-html", "--json"]) == ExitCode.OK
    report = json.loads(capsys.readouterr().out)
    by_check = {c["check"]: c for c in report["checks"]}
    assert by_check["suites/t.py::test_a"]["windows"] == "passed"
    assert by_check["suites/t.py::test_b"]["windows"] == "failed"
    assert by_check["suites/t.py::test_b"]["message"] == "AssertionError: no reply"
    assert report["summary"].startswith("windows: 2 checks")


def test_plan_hands_pytest_the_kubeconfig_and_profile_it_was_given_relative_to_the_users_directory(
    tmp_path, monkeypatch
):
    """`wincon plan` collects in the checkout: `--kubeconfig runner.kubeconfig` (docs/your-cluster.md) named a file
    of the user's directory and exited 6 'does not exist' there."""
    seen: dict[str, list[str]] = {}

    def fake_collect(paths: list[str], options: list[str], out_option: str) -> tuple[dict[str, object], str]:
        seen["options"] = options
        return {"tests": []}, ""

    monkeypatch.setattr("wincon.commandline.commands.collect", fake_collect)
    monkeypatch.chdir(tmp_path)
    argv = ["plan", "--kubeconfig", "runner.kubeconfig", "--profile-file", "p.json", "--image-repo-list", "r.yaml"]
    assert main(argv) == ExitCode.NO_TESTS
    options = seen["options"]
    assert options[options.index("--kubeconfig") + 1] == str(tmp_path / "runner.kubeconfig")
    assert options[options.index("--profile-file") + 1] == str(tmp_path / "p.json")
    assert options[options.index("--image-repo-list") + 1] == str(tmp_path / "r.yaml")
