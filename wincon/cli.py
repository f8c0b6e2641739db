"""The `wincon` command line: one sub-command per concern, each registered by its own module.

A module that offers commands exposes ``register(subparsers) -> None``; each parser it adds sets
``func=handler`` where ``handler(args) -> int`` returns an exit code. Handlers raise
:class:`wincon.errors.WinconError` for anything the user can fix; this module prints it once, with
the fix, and exits with the error's documented code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from wincon import __version__
from wincon.errors import ExitCode, WinconError

# Modules that add sub-commands, in the order they appear in `wincon --help`.
COMMAND_MODULES = (
    "wincon.localcluster.cli",  # cluster build|up|down|status|kubeconfig
    "wincon.commands",  # profile, limitations, lint, cleanup, prepull, plan
    "wincon.imageverify",  # images verify
    "wincon.results.cli",  # run, report, publish, dashboard, gate
)

EXIT_CODES_HELP = "\n".join(f"  {code.value:>2}  {code.name.lower()}" for code in ExitCode)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wincon",
        description="Conformance suite for the Windows nodes of Kubernetes clusters.",
        epilog="exit codes:\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wincon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command family not installed in this build
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that talks to a cluster shares, with the same meaning as in pytest."""
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(args.func(args))
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("wincon: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
