"""Processes of a local cluster, found in /proc by a path their command lines carry, and killed for good."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from wincon.commandline.errors import LocalClusterError


def cmdline(pid: int) -> str | None:
    """The command line of a live (non-zombie) process, else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return None
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return None


def with_marker(marker: str) -> list[int]:
    """Every live process (but this one) whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            line = cmdline(int(entry.name))
            if line and marker in line:
                found.append(int(entry.name))
    return sorted(found)


def kill_all(find: Callable[[], list[int]], what: str, timeout: float) -> None:
    """SIGKILL whatever ``find()`` returns until it returns nothing; raise naming the survivors on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = find()
        if not left:
            return
        if time.monotonic() > deadline:
            raise LocalClusterError(
                f"{what} survive SIGKILL: {', '.join(map(str, left))}",
                f"inspect them with `ps -fp {','.join(map(str, left))}`",
            )
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
