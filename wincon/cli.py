"""The `wincon` command line: one sub-command per concern, each registered by its own module.

A module that offers commands exposes ``register(subparsers) -> None``; each parser it adds sets
``func=handler`` where ``handler(args) -> int`` returns an exit code. Handlers raise
:class:`wincon.commandline.errors.WinconError` for anything the user can fix; this module prints it once, with
the fix, and exits with the error's documented code.
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from wincon import __version__
from wincon.commandline.errors import ExitCode, WinconError

# Modules that add sub-commands, in the order they appear in `wincon --help`.
COMMAND_MODULES = (
    "wincon.localcluster.cli",  # cluster build|up|down|status|kubeconfig
    "wincon.commandline.commands",  # profile, limitations, lint, cleanup, prepull, plan
    "wincon.workloads.imageverify",  # images verify
    "wincon.results.cli",  # run, report, publish, dashboard, gate
)

EXIT_CODES_HELP = "\n".join(f"  {code.value:>2}  {code.name.lower()}" for code in ExitCode)


class Parser(argparse.ArgumentParser):
    """argparse's parser with the usage error of the README's exit table: exit 4 (argparse's own 2 is
    "interrupted" there), after the usage of the command whose option was bad. Sub-commands' parsers are of this
    class too (argparse makes them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {message}\n  fix: see `{self.prog} --help`\n")


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every sub-command's parser under ``parser``, nested ones (``cluster up``, ``images verify``) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
                yield sub
                yield from _subparsers(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="wincon",
        description="Conformance suite for the Windows nodes of Kubernetes clusters.",
        epilog="exit codes:\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wincon {__version__}")
    add_verbosity(parser, default=0)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command family not installed in this build
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    for sub in _subparsers(parser):  # the deepest command given is the one whose usage an unknown option shows
        sub.set_defaults(wincon_parser=sub)
        add_verbosity(sub, default=argparse.SUPPRESS)  # `wincon run -v` as well as `wincon -v run`
    return parser


def add_verbosity(parser: argparse.ArgumentParser, default: Any) -> None:
    """-v/--verbose and -q/--quiet, on `wincon` and on each command (a command's own keeps the top one's value
    unless given: its default is SUPPRESS)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default,
        help="show the commands wincon runs and the API requests it makes, on stderr; `run` passes -v to pytest "
        "(-vv: twice)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if default == 0 else default,
        help="print only errors and the command's summary line (`run` passes -qq to pytest); --json output is "
        "printed whole",
    )


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that talks to a cluster shares, with the same meaning as in pytest."""
    parser.add_argument(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster config)"
    )
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    stderr, held = sys.stderr, io.StringIO()  # an old spelling's warning, which -q (given after it, maybe) drops
    sys.stderr = held
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit:  # a usage error or --help: say all
        sys.stderr = stderr
        stderr.write(held.getvalue())
        raise
    sys.stderr = stderr
    if not args.quiet:
        stderr.write(held.getvalue())
    command = getattr(args, "wincon_parser", None) or parser
    if unknown:  # argparse would name them after the top-level usage, and exit 2
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.verbose and args.quiet:
        command.error("-v and -q ask for more and for less output: give one")
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    from wincon.commandline import verbosity

    stdout, stderr = sys.stdout, sys.stderr
    try:
        if args.quiet and not getattr(args, "json", False):
            verbosity.quiet(summary_prefixes(command.prog))
        elif args.verbose:
            verbosity.verbose(args.verbose)
        try:
            return int(args.func(args))
        finally:
            verbosity.restore(stdout, stderr)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("wincon: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


def summary_prefixes(prog: str) -> tuple[str, ...]:
    """How a command's summary line starts (`plan: `, `wincon run: `, `lint: `), for -q."""
    words = prog.split()[1:]  # "wincon cluster up" -> cluster up
    return (
        tuple(dict.fromkeys([f"{' '.join(words)}: ", f"{words[-1]}: ", f"wincon {' '.join(words)}: "])) if words else ()
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
