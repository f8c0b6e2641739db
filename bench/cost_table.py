"""Write the cost scheduler's committed table (wincon/session/test_seconds.json) from a run's JUnit files.

``wincon.session.scheduling`` weighs each test by its seconds in the last run beside the current one; with no run
beside it (a first run, the bench's fresh results directory) it reads this table, and a test missing from both
weighs its static weight. The table is each test's own time (set-up, call and teardown, as pytest measured it) in
the parallel phase of a full run on the local cluster under the Windows pod-latency model; ``--source`` says which.

    python bench/cost_table.py --source "bench_run.py --modes on -n 4 -- suites at <commit>, ..." \\
        <run 1's results>/artifacts/junit_wincon_<stamp>_01.xml <run 2's ...> ...

Given several runs' files, each test weighs its median time over them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wincon.session import scheduling  # noqa: E402


def table(paths: list[Path], source: str) -> dict[str, object]:
    """The table's content: its source and each test's seconds (rounded to 0.1 s), sorted by node id. Given the
    JUnit files of several runs (one file each), a test's seconds are its median over the runs that ran it: a
    Windows pod's start under the model is a draw of 0 to 60 s, so one run's time says little of one test."""
    runs = [scheduling.junit_seconds([path]) for path in paths]
    names = sorted({name for run in runs for name in run})
    if not names:
        raise SystemExit(f"no test case in {', '.join(map(str, paths))}: nothing to write")
    seconds = {name: statistics.median(run[name] for run in runs if name in run) for name in names}
    return {"source": source, "seconds": {k: round(v, 1) for k, v in seconds.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", nargs="+", type=Path, help="the parallel phase's JUnit file of each full run")
    parser.add_argument("--source", required=True, help="which run: command, commit, date, model")
    parser.add_argument("--out", type=Path, default=scheduling.TABLE)
    args = parser.parse_args(argv)
    data = table(args.junit, args.source)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    seconds = data["seconds"]
    assert isinstance(seconds, dict)
    print(f"{args.out}: {len(seconds)} tests, {sum(seconds.values()):.1f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
