"""The README's two commands on a fresh machine (issue 35): `.ci/run` runs exactly them, in the README's order;
the Makefile runs every Python command from the project's virtualenv (made with the machine's python3, installed
again only when pyproject.toml changes) and nothing from the system's Python; the main job's clusters and the
tests' are named apart, and `make test` stops no cluster."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import DEFAULT_TEST_CLUSTER

ROOT = Path(__file__).resolve().parents[2]
CI_RUN = ROOT / ".ci" / "run"
# What `make main` does first (its prerequisites), timed apart by .ci/run as a phase of its own.
SETUP = "make setup binaries"

RECORDER = """#!/usr/bin/env bash
printf '%s %s\\n' "$(basename "$0")" "$*" >> "$CALLS"
while IFS='|' read -r match rc; do
  [[ -n "$match" && "$*" == "$match" ]] && exit "$rc"
done < "$RULES"
exit 0
"""


def readme_commands() -> list[str]:
    """The commands of the README's "Fresh machine" block, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Fresh machine", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def run_ci(tmp_path: Path, rules: str = "") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """.ci/run, copied into an empty checkout, with stand-ins for make and for the virtualenv's python (which its
    EXIT trap calls to bring clusters down): what it ran, in order."""
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy2(CI_RUN, checkout / ".ci" / "run")
    bin_dir, venv_bin = tmp_path / "bin", checkout / ".venv" / "bin"
    for path in (bin_dir / "make", venv_bin / "python"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDER)
        path.chmod(0o755)
    calls, rules_file = tmp_path / "calls.txt", tmp_path / "rules.txt"
    calls.write_text("")
    rules_file.write_text(rules)
    env = {k: v for k, v in os.environ.items() if k not in ("CLUSTER", "WINCON_CLUSTER_NAME", "MAKEFLAGS", "MAKELEVEL")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "CALLS": str(calls), "RULES": str(rules_file)}
    result = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=60
    )
    return result, calls.read_text().splitlines()


def test_the_readme_gives_make_main_then_make_test():
    assert readme_commands() == ["make main", "make test"]


def test_ci_runs_the_readmes_commands_in_its_order_and_then_brings_the_clusters_down(tmp_path):
    result, calls = run_ci(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    makes = [c for c in calls if c.startswith("make ")]
    assert makes == [SETUP, *readme_commands()]
    downs = calls[len(makes) :]
    assert downs == [
        f"python -m wincon cluster down --cluster-name {name}"
        for name in ("wincon", "wincon-ipf", DEFAULT_TEST_CLUSTER)
    ]


def test_a_failed_main_job_fails_ci_before_the_tests_and_the_clusters_still_come_down(tmp_path):
    result, calls = run_ci(tmp_path, rules="main|2\n")
    assert result.returncode == 2
    assert calls[:2] == [SETUP, "make main"] and "make test" not in calls
    assert calls[2:] and all(c.startswith("python -m wincon cluster down --cluster-name ") for c in calls[2:])


def test_ci_prints_the_time_of_each_phase(tmp_path):
    """Issue 41: each phase's time, as it ends and again together at the end."""
    result, _ = run_ci(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.split("== phase times\n", 1)[1].splitlines()
    names = [line.strip().rsplit(": ", 1) for line in summary if line.startswith("   ")]
    assert [name for name, _ in names] == [
        "set-up and the local cluster's build (make setup binaries)",
        "the main job (make main)",
        "the project's tests (make test; the main job's cluster is still running)",
    ]
    assert all(re.fullmatch(r"\d+ s", took) for _, took in names), names
    assert re.search(r"^== CI done in \d+ s$", result.stdout, re.M)


def test_ci_does_nothing_the_readme_does_not():
    """No kernel setting, no package install, no other command: the README's commands do all of it."""
    text = CI_RUN.read_text()
    assert not re.search(r"inotify|sysctl|/proc/sys|pip |apt-get|python3 ", text), text
    phases = re.findall(r'^phase "[^"]+" (.+)$', text, re.M)
    assert phases == [SETUP, *readme_commands()]
    main_prerequisites = re.search(r"^main: (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert main_prerequisites and SETUP == f"make {main_prerequisites[1].strip()}"  # what make main does first
    commands = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"\s*make\b", line) or re.match(r"\s*(python|\.venv)", line)
    ]
    assert [c for c in commands if c.startswith("make")] == []
    assert [c for c in commands if not c.startswith("make")] == [
        '.venv/bin/python -m wincon cluster down --cluster-name "$name" >/dev/null 2>&1 || true'  # in the EXIT trap
    ]


# ----------------------------------------------------------------------------- the Makefile

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def make_env() -> dict[str, str]:
    """This environment without make's own variables and without those the Makefile lets the environment set
    (``NAME ?= default``): the Makefile's defaults are what these tests read (ci/fresh-check.sh sets CLUSTER)."""
    overridable = re.findall(r"^([A-Za-z_][A-Za-z0-9_]*) *\?=", (ROOT / "Makefile").read_text(), re.M)
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", *overridable)}


def make_n(*args: str, venv: Path | None = None) -> list[str]:
    """`make -n ARGS` in the checkout (environment: ``make_env``): the commands make would run (recursive makes
    print theirs too)."""
    extra = [f"VENV={venv}"] if venv else []
    env = make_env()
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", *extra, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if not line.startswith("make: Nothing to be done")]


def fake_venv(tmp_path: Path, stamp_newer: bool) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    stamp = venv / ".installed-wincon-dev"
    stamp.write_text("")
    mtime = (ROOT / "pyproject.toml").stat().st_mtime + (100 if stamp_newer else -100)
    os.utime(stamp, (mtime, mtime))
    return venv


@needs_make
def test_a_missing_virtualenv_is_made_with_the_machines_python3_and_the_project_installed_into_it(tmp_path):
    venv = tmp_path / "none-yet"
    lines = make_n("setup-python", venv=venv)
    assert lines[0] == f"rm -rf {venv}"
    assert lines[1].startswith(f"python3 -m venv {venv} || ") and "apt-get install -y -qq python3-venv" in lines[2]
    assert lines[3:] == [
        f"{venv}/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'",
        f"touch {venv}/.installed-wincon-dev",
    ]


@needs_make
def test_an_up_to_date_virtualenv_costs_nothing_and_a_newer_pyproject_reinstalls(tmp_path):
    env = make_env()
    up_to_date = fake_venv(tmp_path / "a", stamp_newer=True)
    question = ["make", "-q", f"VENV={up_to_date}", "setup-python"]
    assert subprocess.run(question, cwd=ROOT, env=env, capture_output=True, timeout=60).returncode == 0
    assert make_n("setup-python", venv=up_to_date) == []
    venv = fake_venv(tmp_path / "b", stamp_newer=False)
    assert make_n("setup-python", venv=venv) == [
        f"{venv}/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'",
        f"touch {venv}/.installed-wincon-dev",
    ]


# A Python tool in a command's place: at the start, or after ; & | ( or a shell keyword; not an argument (-m ruff).
PYTHON_TOOLS = re.compile(r"(^|[;&|(]|\b(?:do|then|else))\s*(python3?|pip3?|pytest|ruff|mypy|wincon)\b")


@needs_make
@pytest.mark.parametrize("target", ["main", "test", "lint"])
def test_every_python_command_of_the_readmes_targets_runs_from_the_virtualenv(tmp_path, target):
    venv = fake_venv(tmp_path, stamp_newer=True)
    lines = make_n(target, venv=venv)
    python_lines = [line for line in lines if f"{venv}/bin/python" in line]
    assert python_lines, lines
    bare = [line for line in lines if PYTHON_TOOLS.search(line.replace(f"{venv}/bin/python", "VENV_PYTHON"))]
    assert bare == [], "a Python tool run from outside the virtualenv"
    assert not any("pip install" in line for line in lines), "an up-to-date virtualenv installs nothing"
    if target in ("lint", "test"):  # make test runs lint's line too, in the background
        text = "\n".join(lines)
        assert f"{venv}/bin/python -m ruff check ." in text and f"{venv}/bin/python -m ruff format --check ." in text


@needs_make
@pytest.mark.parametrize("target", ["main", "test", "lint"])
def test_make_n_of_the_readmes_targets_runs_nothing(tmp_path, target):
    """`make -n` prints a target's commands and runs none, except a line that names $(MAKE), which it runs whole
    (an earlier make test ran its lint through `$(MAKE) lint &` on the line of the first run, so `make -n test`
    ran the whole suite). The virtualenv's python here records each call."""
    venv = fake_venv(tmp_path, stamp_newer=True)
    calls = tmp_path / "calls"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    python.chmod(0o755)
    assert make_n(target, venv=venv)
    assert not calls.exists(), f"`make -n {target}` ran: {calls.read_text()}"


@needs_make
def test_the_virtualenv_comes_first_on_the_makefiles_path(tmp_path):
    venv = fake_venv(tmp_path, stamp_newer=True)
    env = make_env()
    result = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "-", f"VENV={venv}", "show"],
        input=(ROOT / "Makefile").read_text() + '\nshow:\n\t@echo "$$PATH"\n',
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(os.pathsep)[0] == f"{venv}/bin"


@needs_make
def test_the_main_jobs_clusters_are_not_the_tests_and_make_test_starts_or_stops_none_itself(tmp_path):
    venv = fake_venv(tmp_path, stamp_newer=True)
    main = " ".join(make_n("main", venv=venv))
    names = set(re.findall(r"--(?:cluster-)?name ([a-z0-9-]+)", main))
    assert names == {"wincon", "wincon-ipf"}
    assert DEFAULT_TEST_CLUSTER not in names
    assert f"cluster down --cluster-name {DEFAULT_TEST_CLUSTER}" not in main
    assert "cluster down --cluster-name wincon-ipf" in main and "cluster down --cluster-name wincon " not in main + " "
    test = " ".join(make_n("test", venv=venv))
    assert "cluster up" not in test and "cluster down" not in test  # the tests' own fixtures start and stop theirs


# ----------------------------------------------------------------------------- ci/fresh-check.sh

FRESH_CHECK = ROOT / "ci" / "fresh-check.sh"


def test_the_fresh_check_runs_ci_in_a_clean_clone_with_empty_caches_of_its_own_and_other_cluster_names(tmp_path):
    work = tmp_path / "fresh"
    result = subprocess.run(
        ["bash", str(FRESH_CHECK), "--dry-run"],
        capture_output=True,
        text=True,
        env=dict(os.environ, FRESH_CHECK_DIR=str(work)),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    clone, run = result.stdout.splitlines()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert clone == f"git clone --quiet {ROOT} {work}/wincon && git -C {work}/wincon checkout --quiet {head}"
    assert run.startswith(f"cd {work}/wincon && env ") and run.endswith(" bash .ci/run")
    env = dict(word.split("=", 1) for word in run.split(" env ", 1)[1].removesuffix(" bash .ci/run").split())
    for cache in ("GOPATH", "GOMODCACHE", "GOCACHE", "WINCON_CACHE", "PIP_CACHE_DIR", "npm_config_cache"):
        assert env[cache].startswith(f"{work}/"), cache  # every cache empty, inside the check's own directory
    assert env["CLUSTER"] not in ("wincon", "") and env["WINCON_CLUSTER_NAME"] != DEFAULT_TEST_CLUSTER
    assert not work.exists(), "a dry run makes nothing"


def test_the_fresh_check_refuses_an_unknown_option_with_the_usage_exit():
    result = subprocess.run(["bash", str(FRESH_CHECK), "--bogus"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 4 and "unknown option --bogus" in result.stderr and "usage:" in result.stderr
