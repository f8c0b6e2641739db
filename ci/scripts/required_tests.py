#!/usr/bin/env python3
"""Print the pytest node ids of the required tests of one Kubernetes minor (gating/required.yaml).

    python3 ci/scripts/required_tests.py --kubernetes-version 1.31 > required-tests.txt
    pytest -n 0 @required-tests.txt ...

The ids are resolved by collecting the suites (no cluster needed). A required id that no suite test
carries is an error (exit 4) naming the id: the gate would call it missing anyway, and a typo in the
required list should fail before a cluster is paid for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from wincon.commandline.optionnames import add_option

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # --k8s-version: the old spelling, hidden, warns (docs/options.md); so not argparse's required=True, which an
    # alias would not satisfy
    add_option(parser, "--kubernetes-version", deprecated=["--k8s-version"], help="the Kubernetes minor, X.Y")
    parser.add_argument("--required", type=Path, help="the required list (default: gating/required.yaml)")
    args = parser.parse_args(argv)
    if not args.kubernetes_version:
        parser.error("the following arguments are required: --kubernetes-version")
    from wincon.commandline.errors import WinconError
    from wincon.results.gate import collect_suite_ids, load_required, minor_of

    try:
        required = load_required(args.required)
        minor = minor_of(args.kubernetes_version)
        if minor not in required.versions:
            print(
                f"required_tests.py: error: {required.path} lists no required tests for Kubernetes "
                f'{args.kubernetes_version}\n  fix: add a kubernetes/"{minor}" entry or pass another '
                "--kubernetes-version",
                file=sys.stderr,
            )
            return 4
        suite = collect_suite_ids()
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    missing = [f"{test_id} ({name})" for test_id, name in required.versions[minor].items() if test_id not in suite]
    if missing:
        print(
            "required_tests.py: error: required ids that no suite test carries: "
            + ", ".join(missing)
            + "\n  fix: correct gating/required.yaml (`wincon gate --validate` checks it)",
            file=sys.stderr,
        )
        return 4
    for test_id in required.versions[minor]:
        print(suite[test_id])
    return 0


if __name__ == "__main__":
    sys.exit(main())
