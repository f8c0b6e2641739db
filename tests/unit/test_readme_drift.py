"""The README cannot drift from the code (issue 42, item 6): its commands list names every command `wincon --help`
lists (and no other), its exit-code table has exactly the codes of wincon.commandline.errors.ExitCode, and its list of the
local cluster's Debian packages is the Makefile's DATAPLANE_PACKAGES."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from wincon.cli import build_parser
from wincon.commandline.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def wincon_commands() -> set[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def readme_commands() -> set[str]:
    """The first word of each command the Commands section names in backticks (`wincon cluster build|up`,
    `profile`, `images verify`), options (`--json`) and placeholders (COMMAND) aside."""
    words = [token.removeprefix("wincon ").split()[0] for token in re.findall(r"`([^`]+)`", section("Commands"))]
    return {w for w in words if re.fullmatch(r"[a-z]+", w)}


def test_the_commands_list_is_wincon_help():
    assert readme_commands() == wincon_commands()


def test_the_exit_code_table_is_the_exit_enum():
    rows = re.findall(r"^\| (\d+) \| ", section("Exit codes"), re.M)
    assert [int(r) for r in rows] == [int(code) for code in ExitCode]


def test_the_package_list_is_the_makefiles():
    makefile = (ROOT / "Makefile").read_text()
    packages = re.search(r"^DATAPLANE_PACKAGES := (.+)$", makefile, re.M)
    assert packages
    fresh = section("Fresh machine: the two commands")
    missing = [p for p in packages[1].split() if not re.search(rf"\b{re.escape(p)}\b", fresh)]
    # Debian's names for three of them read as words in the README: containernetworking-plugins "CNI plugins",
    # busybox-static and util-linux as written.
    missing = [p for p in missing if not (p == "containernetworking-plugins" and "CNI plugins" in fresh)]
    assert missing == [], f"the README's package list lacks {missing}"
