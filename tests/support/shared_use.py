"""Use of the one local cluster the integration tests share across pytest-xdist workers, as a reader/writer lock.

Most tests only use the shared cluster (``kubeconfig``): any number of them may run at once, one per worker. A
few stop one of its processes for a moment to show what its loss looks like (MetalLB's controller, the egress
proxy, metrics-server): while one of those runs, no other test may use the cluster, or it would read the stopped
process as broken (a clean-clone CI read MetalLB's controller as not running while another worker had it stopped).
Those take the lock exclusively (``flock(LOCK_EX)``), every other test shares it (``LOCK_SH``), on one file in the
cluster's state directory (removed with the cluster by ``down``).

Beside it, ``measuring_cpu``: the machine's one slot for a run of the CPU-limit checks, whichever cluster it is on.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "shared-use.lock"
WAIT_SECONDS = 900.0  # the longest test of the other worker may hold its share that long (suite runs take minutes)
# The machine's one slot for a run of the CPU-limit checks (below): under the cache, shared by every cluster.
CPU_LOCK = "cpu-measuring.lock"


@contextmanager
def holding(
    path: Path, exclusive: bool, wait: float = WAIT_SECONDS, what: str = "the shared test cluster"
) -> Iterator[None]:
    """Hold ``path``'s lock, exclusively or shared, for the block; raise TimeoutError naming ``what`` and the file
    after ``wait`` seconds without it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    kind = "exclusive" if exclusive else "shared"
                    raise TimeoutError(f"no {kind} use of {what} within {wait:.0f} s ({path})") from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def measuring_cpu(wait: float = WAIT_SECONDS) -> Iterator[None]:
    """The machine's one slot for a run of the CPU-limit checks, held exclusively for the block.

    Those checks (test_cpu_limits.py's and test_compute_limitations.py's CPU cap check) keep a limited pod and its
    unlimited twin busy on one node, and judge the limit only once the twin was given at least 0.75 core: the
    node must show it had CPU to give beyond the limit. Every local cluster's nodes share this machine's two cores,
    so two such runs at once, on two clusters, starve each other's twins. That is what failed the clean-clone CI at
    915ee47: the CPU fault test's clean run (the faults cluster) and the data-plane run (its own cluster) overlapped,
    and both erred "the node could not show the limit matters" with twins at about 0.5 core. The error was the
    honest verdict for that node; the tests that need a clean pass take this slot instead of loosening the check.
    It is a lock on a file under the wincon cache (``flock``), so it holds across xdist workers and test runs."""
    from wincon.localcluster import paths

    with holding(paths.cache_root() / "locks" / CPU_LOCK, True, wait, "the machine's CPU-measuring slot"):
        yield
