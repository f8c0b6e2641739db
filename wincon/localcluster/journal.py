"""Each real node's journal: its kubelet's log lines as entries of unit kubelet.service, so the kubelet's node log
query (``GET /api/v1/nodes/<node>/proxy/logs/?query=kubelet``) reads its own service log with journalctl, as on a
node whose kubelet runs under systemd.

How the kubelet answers a query on Linux (k8s.io/kubernetes v1.37.2 pkg/kubelet/kubelet_server_journal.go:309-347
and kubelet_server_journal_linux.go:34-79): it runs ``journalctl --field _SYSTEMD_UNIT`` to see whether the service
logs to the journal, then ``journalctl --utc --no-pager --output=short-precise --unit=<service>`` with the query's
options; both found on the kubelet's PATH. A local node is not a machine of its own: the real nodes share this
host, its journal (where there is one) and its /var/log. So each node keeps a journal directory of its own
(``<node dir>/journal``), written by systemd's own journal writer (systemd-journal-remote, Debian's
systemd-journal-remote package, reading the journal export format on its standard input) from what this module
follows of the node's kubelet.log, and the kubelet's PATH starts with a ``journalctl`` that is the system's
journalctl reading that directory (``--directory``, nothing else changed). Each entry carries what journald records
for a service's standard output: the unit, the identifier, the kubelet's pid, the node's name, the boot.

Run as ``python -m wincon.localcluster.journal --log <kubelet.log> --journal <dir> --pid-file <kubelet pid file>
--host <node>``: it starts systemd-journal-remote writing ``<dir>/kubelet.journal`` and feeds it each complete line
of the log, from its start, as the kubelet writes them (a restarted kubelet appends to the same log; its pid is
read from the pid file for each batch of lines).
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
JOURNALCTL = "/usr/bin/journalctl"
UNIT = "kubelet.service"
IDENTIFIER = "kubelet"
JOURNAL_FILE = "kubelet.journal"
POLL_SECONDS = 0.2


def journal_dir(node_dir: Path) -> Path:
    return node_dir / "journal"


def bin_dir(node_dir: Path) -> Path:
    """The directory put first on the node's kubelet's PATH: its ``journalctl``."""
    return node_dir / "bin"


def journalctl_script(node_dir: Path) -> str:
    """The node's ``journalctl``: the system's, reading the node's own journal directory."""
    return (
        "#!/bin/sh\n"
        "# wincon local cluster: this node's journal is a directory of its own (the real nodes share one host).\n"
        f'exec {JOURNALCTL} --directory={journal_dir(node_dir)} "$@"\n'
    )


def install_journalctl(node_dir: Path) -> Path:
    """Write the node's ``journalctl`` (see journalctl_script) and make its journal directory; return the bin dir."""
    journal_dir(node_dir).mkdir(parents=True, exist_ok=True)
    bdir = bin_dir(node_dir)
    bdir.mkdir(parents=True, exist_ok=True)
    script = bdir / "journalctl"
    script.write_text(journalctl_script(node_dir))
    script.chmod(0o755)
    return bdir


def _field(name: str, value: bytes) -> bytes:
    """One field of the journal export format: ``NAME=value`` where the value is one line of printable text, else
    the binary form (``NAME``, newline, the size as a 64-bit little-endian integer, the bytes, newline)."""
    if b"\n" not in value and all(b >= 0x20 or b == 0x09 for b in value):
        return name.encode() + b"=" + value + b"\n"
    return name.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"


def export_entry(
    message: bytes, *, pid: int | None, host: str, boot_id: str, realtime_us: int, monotonic_us: int
) -> bytes:
    """One journal entry in the export format, with the fields journald gives a line of a service's stdout."""
    fields = [
        ("__REALTIME_TIMESTAMP", str(realtime_us).encode()),
        ("__MONOTONIC_TIMESTAMP", str(monotonic_us).encode()),
        ("_BOOT_ID", boot_id.encode()),
        ("_HOSTNAME", host.encode()),
        ("_SYSTEMD_UNIT", UNIT.encode()),
        ("_TRANSPORT", b"stdout"),
        ("SYSLOG_IDENTIFIER", IDENTIFIER.encode()),
        ("PRIORITY", b"6"),
    ]
    if pid is not None:
        fields.append(("_PID", str(pid).encode()))
    fields.append(("MESSAGE", message))
    return b"".join(_field(name, value) for name, value in fields) + b"\n"


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")


def ship(chunk: bytes, pending: bytes, out: IO[bytes], *, pid: int | None, host: str, boot_id: str) -> bytes:
    """Write each complete line of ``pending + chunk`` to ``out`` as an entry; return the incomplete rest."""
    data = pending + chunk
    *lines, rest = data.split(b"\n")
    now_us, mono_us = time.time_ns() // 1000, time.monotonic_ns() // 1000
    for line in lines:
        if line.strip():
            entry = export_entry(
                line.rstrip(b"\r"), pid=pid, host=host, boot_id=boot_id, realtime_us=now_us, monotonic_us=mono_us
            )
            out.write(entry)
    if lines:
        out.flush()
    return rest


def follow(log: Path, out: IO[bytes], pid_file: Path, host: str) -> None:
    """Feed ``out`` every line of ``log`` from its start, then as it grows, until ``out`` is closed."""
    boot_id = _boot_id()
    while not log.exists():
        time.sleep(POLL_SECONDS)
    pending = b""
    with log.open("rb") as fh:
        while True:
            chunk = fh.read(65536)
            if chunk:
                pending = ship(chunk, pending, out, pid=_read_pid(pid_file), host=host, boot_id=boot_id)
            else:
                time.sleep(POLL_SECONDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wincon.localcluster.journal", description=__doc__)
    parser.add_argument("--log", type=Path, required=True, help="the kubelet's log file")
    parser.add_argument("--journal", type=Path, required=True, help="the node's journal directory")
    parser.add_argument("--pid-file", type=Path, required=True, help="the file holding the kubelet's pid")
    parser.add_argument("--host", required=True, help="the node's name (the entries' _HOSTNAME)")
    args = parser.parse_args(argv)
    args.journal.mkdir(parents=True, exist_ok=True)
    writer = subprocess.Popen(
        [str(JOURNAL_REMOTE), f"--output={args.journal / JOURNAL_FILE}", "-"], stdin=subprocess.PIPE
    )
    assert writer.stdin is not None
    try:
        follow(args.log, writer.stdin, args.pid_file, args.host)
    except BrokenPipeError:
        print(f"systemd-journal-remote exited ({writer.wait()})", file=sys.stderr)
        return 1
    finally:
        if writer.poll() is None:
            writer.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
