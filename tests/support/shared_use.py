"""Use of the one local cluster the integration tests share across pytest-xdist workers, as a reader/writer lock.

Most tests only use the shared cluster (``kubeconfig``): any number of them may run at once, one per worker. A
few stop one of its processes for a moment to show what its loss looks like (MetalLB's controller, the egress
proxy, metrics-server): while one of those runs, no other test may use the cluster, or it would read the stopped
process as broken (a clean-clone CI read MetalLB's controller as not running while another worker had it stopped).
Those take the lock exclusively (``flock(LOCK_EX)``), every other test shares it (``LOCK_SH``), on one file in the
cluster's state directory (removed with the cluster by ``down``).
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


@contextmanager
def holding(path: Path, exclusive: bool, wait: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold ``path``'s lock, exclusively or shared, for the block; raise TimeoutError naming the file after ``wait``
    seconds without it."""
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
                    raise TimeoutError(
                        f"no {kind} use of the shared test cluster within {wait:.0f} s ({path})"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
