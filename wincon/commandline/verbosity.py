"""`wincon -v` and `wincon -q` (kubectl's habit of one verbosity switch on the command itself).

-v: every command wincon starts (an audit hook on subprocess.Popen: pytest, kwokctl, containerd...) and every
HTTP request it makes, one line each on stderr: ``wincon: exec: ...``, ``wincon: api: GET https://... 200`` for the
Kubernetes client's (urllib3's request lines, with the status) and ``wincon: api: GET https://...`` for the
registry reads (urllib.request's audit event, before the answer: no status). -vv adds
urllib3's connection lines. -q: wincon's own output is cut to the errors (a line with ``error:`` and its indented
fix) and the command's summary line (the last line that starts as the command's summary does, e.g. ``plan: ``,
``wincon run: ``; else the last line). Output of a program wincon starts (pytest in `run`) is not filtered:
`run` passes -q/-v on to pytest instead.
"""

from __future__ import annotations

import io
import logging
import shlex
import sys
from collections.abc import Sequence
from typing import Any, TextIO

_state: dict[str, Any] = {"level": 0, "hooked": False, "handler": None}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen" and _state["level"] > 0:
        argv = args[1]
        text = shlex.join(str(a) for a in argv) if isinstance(argv, (list, tuple)) else str(argv)
        print(f"wincon: exec: {text}", file=sys.stderr, flush=True)
    elif event == "urllib.Request" and _state["level"] > 0:  # the registry reads (urllib.request): before the answer
        url, _data, _headers, method = args
        print(f"wincon: api: {method or 'GET'} {url}", file=sys.stderr, flush=True)


class _ApiLines(logging.Handler):
    """urllib3's request lines ('https://host:443 "GET /path HTTP/1.1" 200 123') as ``wincon: api: GET url 200``."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if '"' in message:
            where, request, rest = message.split('"', 2)
            method, path = (request.split() + ["", ""])[:2]
            status = rest.split()[0] if rest.split() else ""
            print(f"wincon: api: {method} {where.strip()}{path} {status}".rstrip(), file=sys.stderr, flush=True)
        elif _state["level"] > 1:
            print(f"wincon: api: {message}", file=sys.stderr, flush=True)


def verbose(level: int) -> None:
    """Show the commands and API requests of this process from now on (until restore)."""
    _state["level"] = level
    if not _state["hooked"]:  # an audit hook cannot be removed: one, for the life of the process, reading the level
        sys.addaudithook(_audit)
        _state["hooked"] = True
    logger = logging.getLogger("urllib3.connectionpool")
    handler = _ApiLines(logging.DEBUG)
    logger.addHandler(handler)
    _state["logger_level"] = logger.level
    logger.setLevel(logging.DEBUG)
    _state["handler"] = handler


class _SummaryOnly(io.TextIOBase):
    """stdout under -q: keeps the lines, prints the summary one at the end."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        self.prefixes = tuple(prefixes)
        self.text = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def summary(self) -> str:
        lines = [line for line in self.text.splitlines() if line.strip()]
        chosen = [line for line in lines if line.startswith(self.prefixes)]
        return (chosen or lines or [""])[-1]


class _ErrorsOnly(io.TextIOBase):
    """stderr under -q: an ``error:`` line and the indented lines after it (its fix) go through, the rest not."""

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.pending = ""
        self.passing = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.passing = "error:" in line or (self.passing and line.startswith((" ", "\t")))
            if self.passing:
                self.real.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.real.flush()


def quiet(prefixes: Sequence[str]) -> None:
    """From now on (until restore) print only errors and, at the end, the summary line."""
    sys.stdout = _SummaryOnly(prefixes)  # type: ignore[assignment]
    sys.stderr = _ErrorsOnly(sys.stderr)  # type: ignore[assignment]


def restore(stdout: TextIO, stderr: TextIO) -> None:
    """Back to normal output; under -q, print the summary line the command wrote."""
    if isinstance(sys.stderr, _ErrorsOnly):
        sys.stderr.write("\n" if sys.stderr.pending else "")
    if isinstance(sys.stdout, _SummaryOnly):
        line = sys.stdout.summary()
        if line:
            print(line, file=stdout, flush=True)
    sys.stdout, sys.stderr = stdout, stderr
    _state["level"] = 0
    if _state["handler"] is not None:
        logger = logging.getLogger("urllib3.connectionpool")
        logger.removeHandler(_state["handler"])
        logger.setLevel(_state.get("logger_level", logging.NOTSET))
        _state["handler"] = None
