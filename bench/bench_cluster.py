"""Benchmark of the local cluster: `up` to all nodes Ready, and `down`, with the binaries cached.

Targets (issue 2, on the 2-core machines): up under 30 s, down under 5 s. Prints each run and the
median; exits 0 whatever the figures (a benchmark reports, the reader judges), 10 when the cluster
cannot be built or started.

    python bench/bench_cluster.py [--runs 3] [--name lc-bench]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from wincon.errors import WinconError
from wincon.localcluster import cluster
from wincon.localcluster.topology import Topology

UP_TARGET = 30.0
DOWN_TARGET = 5.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--name", default="lc-bench")
    args = parser.parse_args(argv)
    ups: list[float] = []
    downs: list[float] = []
    try:
        cluster.down(args.name)  # start from nothing
        for run in range(1, args.runs + 1):
            start = time.monotonic()
            cluster.up(args.name, Topology())
            ups.append(time.monotonic() - start)
            start = time.monotonic()
            cluster.down(args.name)
            downs.append(time.monotonic() - start)
            print(f"run {run}: up to all nodes Ready {ups[-1]:.1f} s, down {downs[-1]:.2f} s", flush=True)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        cluster.down(args.name)
        return int(exc.exit_code)
    for what, values, target in (("up to Ready", ups, UP_TARGET), ("down", downs, DOWN_TARGET)):
        median = statistics.median(values)
        verdict = "within" if median < target else "OVER"
        print(
            f"{what:<12} median {median:6.2f} s  (min {min(values):.2f}, max {max(values):.2f}; "
            f"target {target:.0f} s: {verdict})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
