"""One name per concept across wincon's commands and the pytest plugin's options (issue 42, item 3).

Before: `run --cluster-name` but `cluster up --name`; `run --kubernetes-version` but `gate --k8s-version`; the commands'
`--profile-file` but pytest's `--wincon-profile`; `cleanup --ttl` but pytest's `--namespace-ttl`; `prepull --timeout`
but pytest's `--pod-start-timeout`; `limitations --file` but pytest's `--limitations`. The table is
wincon.cli.OPTION_NAMES (docs/options.md shows it); the old spellings still parse, hidden, saying they are deprecated.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import pytest
from _pytest.config.argparsing import Parser as PytestParser

from wincon.cli import _subparsers, build_parser, main
from wincon.commandline.optionnames import OPTION_NAMES, DeprecatedAlias
from wincon.session.options import add_options


@pytest.fixture(autouse=True)
def not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deprecation line is left to the main pytest process (DeprecatedAlias: xdist's workers parse the command line
    again); these tests, run themselves by an xdist worker of the project's own tests, parse as a main process does."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


REPO = Path(__file__).resolve().parents[2]


def option_actions() -> dict[str, list[argparse.Action]]:
    """Every option of every `wincon` command (key: ``wincon cluster up``) and of the pytest plugin (key:
    ``pytest``), hidden ones included (a hidden action has ``help == argparse.SUPPRESS``)."""
    places = {sub.prog: [a for a in sub._actions if a.option_strings] for sub in _subparsers(build_parser())}
    pytest_parser = PytestParser(_ispytest=True)
    add_options(pytest_parser)
    places["pytest"] = [option._action for option in pytest_parser.getgroup("wincon").options]
    return places


def options_table() -> str:
    """docs/options.md's table: each concept of OPTION_NAMES, its spelling, who takes it, its old spellings."""
    places = option_actions()
    rows = ["| concept | option | taken by | deprecated (hidden, one release) |", "|---|---|---|---|"]
    for name in OPTION_NAMES:
        takers = [
            place.removeprefix("wincon ") if place != "pytest" else "pytest"
            for place, actions in places.items()
            if any(name.canonical in a.option_strings and a.help != argparse.SUPPRESS for a in actions)
        ]
        where = ", ".join(f"`{t}`" for t in takers) if len(takers) < 12 else f"every command ({len(takers)})"
        old = ", ".join(f"`{o}`" for o in name.deprecated)
        rows.append(f"| {name.concept} | `{name.canonical}` | {where or '(none yet)'} | {old} |")
    return "\n".join(rows) + "\n"


PLACES = option_actions()
BY_DEST = {dest: name for name in OPTION_NAMES for dest in name.all_dests}
CANONICAL = {name.canonical for name in OPTION_NAMES}


def visible(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS


def test_the_places_read_are_every_command_and_the_pytest_plugin():
    assert {"wincon run", "wincon gate", "wincon cluster up", "wincon images verify", "pytest"} <= set(PLACES)
    assert any("--allow-disruptive" in a.option_strings for a in PLACES["pytest"])


def test_each_concept_of_the_table_has_its_one_spelling_everywhere():
    wrong = [
        f"{place} spells {BY_DEST[a.dest].concept!r} as {'/'.join(a.option_strings)}; the table says "
        f"{BY_DEST[a.dest].canonical}"
        for place, actions in PLACES.items()
        for a in actions
        if visible(a) and a.dest in BY_DEST and BY_DEST[a.dest].canonical not in a.option_strings
    ]
    assert not wrong, "\n".join(wrong)


def test_no_two_places_spell_one_destination_differently():
    """Beyond the table: options that store into the same name (pytest's ``wincon_`` prefix aside) are one concept,
    and must be spelled alike, e.g. a new command's `--ttl` storing into namespace_ttl."""
    spellings: defaultdict[str, set[tuple[str, ...]]] = defaultdict(set)
    where: defaultdict[str, list[str]] = defaultdict(list)
    for place, actions in PLACES.items():
        for a in actions:
            if visible(a) and a.dest not in ("help", "version"):
                dest = a.dest.removeprefix("wincon_")
                long_names = tuple(sorted(s for s in a.option_strings if s.startswith("--")))
                spellings[dest].add(long_names)
                where[dest].append(f"{place}: {'/'.join(long_names)}")
    drift = {dest: where[dest] for dest, names in spellings.items() if len(names) > 1}
    assert not drift, drift


def test_a_deprecated_spelling_is_shown_nowhere_unless_it_is_another_concepts_own():
    """`--timeout` is prepull's old spelling of the pod start timeout and `cluster up`'s own (how long it waits for
    the cluster): a concept of its own in the table. Every other old spelling is in no --help."""
    old = {o: name for name in OPTION_NAMES for o in name.deprecated if o not in CANONICAL}
    shown = [
        f"{place} shows {o} (deprecated: {old[o].canonical})"
        for place, actions in PLACES.items()
        for a in actions
        if visible(a)
        for o in a.option_strings
        if o in old
    ]
    assert not shown, shown


@pytest.mark.parametrize("sub", list(_subparsers(build_parser())), ids=lambda sub: sub.prog)
def test_a_commands_help_names_none_of_its_hidden_aliases(sub):
    aliases = [s for a in sub._actions if isinstance(a, DeprecatedAlias) for s in a.option_strings]
    text = sub.format_help()
    assert not [s for s in aliases if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", text)], text


def test_every_alias_is_hidden_stores_into_its_canonical_and_is_in_the_table():
    aliases = [(place, a) for place, actions in PLACES.items() for a in actions if isinstance(a, DeprecatedAlias)]
    assert len(aliases) >= 7  # --name x4, --k8s-version, --wincon-profile, --file x2, --ttl, --timeout
    for place, alias in aliases:
        assert not visible(alias), (place, alias.option_strings)
        canonical = next(a for a in PLACES[place] if alias.canonical in a.option_strings)
        assert (canonical.dest, visible(canonical)) == (alias.dest, True), (place, alias.option_strings)
        name = BY_DEST[alias.dest]
        assert name.canonical == alias.canonical and set(alias.option_strings) <= set(name.deprecated), place


@pytest.mark.parametrize(
    "old, new, dest, value",
    [
        (["cluster", "status", "--name", "x"], ["cluster", "status", "--cluster-name", "x"], "name", "x"),
        (
            ["gate", "r", "--k8s-version", "1.34"],
            ["gate", "r", "--kubernetes-version", "1.34"],
            "kubernetes_version",
            "1.34",
        ),  # fmt: skip
        (["limitations", "--file", "l.yaml"], ["limitations", "--limitations", "l.yaml"], "limitations", "l.yaml"),
        (["lint", "--file", "l.yaml"], ["lint", "--limitations", "l.yaml"], "limitations", "l.yaml"),
        (["cleanup", "--ttl", "60"], ["cleanup", "--namespace-ttl", "60"], "namespace_ttl", 60),
        (["prepull", "--timeout", "9"], ["prepull", "--pod-start-timeout", "9"], "pod_start_timeout", 9.0),
    ],
)
def test_an_old_spelling_still_works_and_says_once_which_to_use(old, new, dest, value, capsys):
    parser = build_parser()
    assert getattr(parser.parse_args(new), dest) == value
    assert capsys.readouterr().err == ""
    assert getattr(parser.parse_args(old), dest) == value  # the type of the canonical option applies (int, float)
    err = capsys.readouterr().err.splitlines()
    new_spelling = next(a for a in new if a.startswith("--"))
    command = " ".join(old[:2] if old[0] == "cluster" else old[:1])
    assert err == [f"wincon {command}: warning: {old[-2]} is deprecated, use {new_spelling} "
                   "(the old spelling goes in a later release)"]  # fmt: skip


def test_pytests_old_profile_option_still_works_and_says_so(pytester):
    pytester.makepyfile(
        "def test_one(request):\n    print('profile:', request.config.getoption('wincon_profile_file'))\n"
    )
    result = pytester.runpytest_subprocess("--wincon-profile", "p.json", "-s", "-p", "no:cacheprovider")
    warnings = [line for line in result.stderr.lines if "deprecated" in line]  # pytest parses twice: said once
    assert warnings == [
        "pytest: warning: --wincon-profile is deprecated, use --profile-file (the old spelling goes in a later release)"
    ], result.stderr.lines
    result.stdout.fnmatch_lines(["*profile: p.json*"])
    assert result.ret == 0


def test_plan_takes_the_repo_list_its_registry_errors_name(tmp_path, monkeypatch):
    """The image preflight's errors (which `wincon plan` shows) say to pass --image-repo-list: plan takes it."""
    seen: dict[str, list[str]] = {}
    monkeypatch.setattr(
        "wincon.commandline.commands.collect", lambda paths, options, out: (seen.update(o=options), ({}, ""))[1]
    )
    monkeypatch.chdir(tmp_path)
    main(["plan", "--image-repo-list", "repos.yaml", "--profile-file", "p.json"])
    options = seen["o"]
    assert options[options.index("--image-repo-list") + 1] == str(tmp_path / "repos.yaml")
    assert options[options.index("--profile-file") + 1] == str(tmp_path / "p.json")
    assert "--wincon-profile" not in options


def test_docs_options_md_shows_the_table():
    text = (REPO / "docs" / "options.md").read_text()
    assert options_table() in text, "docs/options.md's table differs; paste options_table() of this test:\n" + (
        options_table()
    )


def test_the_benchmarks_take_the_canonical_spellings() -> None:
    """bench/*.py take each concept's one spelling (``--cluster-name``; the old ``--name`` only as a hidden
    deprecated alias through add_option), so a command copied from wincon's docs works on a benchmark too."""
    import ast

    # --timeout is deprecated as the pod start timeout only: it is `cluster up`'s canonical spelling, and the
    # benchmarks' own bound of a run.
    deprecated = {old for name in OPTION_NAMES for old in name.deprecated} - {name.canonical for name in OPTION_NAMES}
    bench = Path(__file__).resolve().parents[2] / "bench"
    primary: dict[str, list[str]] = defaultdict(list)
    for script in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            # add_argument(name, ...) spells its first argument; add_option(parser, canonical, ...) its second.
            first = {"add_argument": 0, "add_option": 1}.get(called)
            if first is None or len(node.args) <= first or not isinstance(node.args[first], ast.Constant):
                continue
            if node.args[first].value in deprecated:
                primary[script.name].append(node.args[first].value)
    assert not primary, f"benchmarks that take a deprecated spelling as their option's name: {dict(primary)}"
    assert "--cluster-name" in (bench / "bench_flakes.py").read_text()
