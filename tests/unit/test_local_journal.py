"""wincon.localcluster.journal: the real nodes' journals that the kubelets' node log query reads. The round trip runs
systemd's own writer and reader (systemd-journal-remote, journalctl) with the arguments the kubelet gives
journalctl (k8s.io/kubernetes v1.37.2 pkg/kubelet/kubelet_server_journal_linux.go:34-79)."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from wincon.localcluster import dataplane, journal

TOOLS = [journal.JOURNAL_REMOTE, Path(journal.JOURNALCTL)]


def test_a_printable_line_is_a_text_field_anything_else_binary():
    assert journal._field("MESSAGE", b"I1127 ok") == b"MESSAGE=I1127 ok\n"
    raw = b"colour \x1b[31m"
    assert journal._field("MESSAGE", raw) == b"MESSAGE\n" + struct.pack("<Q", len(raw)) + raw + b"\n"


def test_an_entry_carries_what_journald_records_for_a_service_line():
    entry = journal.export_entry(b"hello", pid=42, host="worker-0", boot_id="ab", realtime_us=5, monotonic_us=3)
    fields = dict(line.split("=", 1) for line in entry.decode().strip().splitlines())
    assert fields == {
        "__REALTIME_TIMESTAMP": "5",
        "__MONOTONIC_TIMESTAMP": "3",
        "_BOOT_ID": "ab",
        "_HOSTNAME": "worker-0",
        "_SYSTEMD_UNIT": "kubelet.service",
        "_TRANSPORT": "stdout",
        "SYSLOG_IDENTIFIER": "kubelet",
        "PRIORITY": "6",
        "_PID": "42",
        "MESSAGE": "hello",
    }
    assert entry.endswith(b"\n\n")  # entries are separated by an empty line


def test_only_complete_lines_are_shipped_and_the_rest_kept():
    out = io.BytesIO()
    rest = journal.ship(b"one\n\ntwo\nthr", b"", out, pid=None, host="h", boot_id="b")
    assert rest == b"thr"
    assert out.getvalue().count(b"MESSAGE=") == 2  # the empty line is no entry
    rest = journal.ship(b"ee\n", rest, out, pid=None, host="h", boot_id="b")
    assert rest == b"" and b"MESSAGE=three\n" in out.getvalue()
    assert b"_PID" not in out.getvalue()  # no pid file read: no pid claimed


def test_the_nodes_journalctl_is_the_systems_reading_the_nodes_directory(tmp_path):
    bdir = journal.install_journalctl(tmp_path)
    script = (bdir / "journalctl").read_text()
    assert f'exec /usr/bin/journalctl --directory={tmp_path / "journal"} "$@"' in script
    assert (bdir / "journalctl").stat().st_mode & 0o111
    assert (tmp_path / "journal").is_dir()


@pytest.mark.parametrize(("minor", "gate"), [("1.35", True), ("1.36", None), ("1.38", None)])
def test_node_log_query_gate_turned_on_only_where_it_is_not_locked_on(minor, gate):
    """Beta and off before 1.36; GA and locked on from 1.36 (removed in 1.39: never named there)."""
    gates = dataplane.kubelet_feature_gates(minor)
    assert gates.get("NodeLogQuery") is gate
    assert gates[dataplane.FEATURE_GATE] is True


@pytest.mark.skipif(
    not all(t.exists() for t in TOOLS) or shutil.which("journalctl") is None,
    reason="systemd-journal-remote or journalctl not installed (make setup-dataplane installs them)",
)
def test_round_trip_through_systemds_writer_and_the_kubelets_journalctl_arguments(tmp_path):
    jdir = tmp_path / "journal"
    jdir.mkdir()
    out = io.BytesIO()
    journal.ship(
        b'I1127 22:34:09.933596   20602 server.go:1336] "Started kubelet"\nI1127 second line\n',
        b"",
        out,
        pid=20602,
        host="worker-1",
        boot_id=journal._boot_id(),
    )
    written = subprocess.run(
        [str(journal.JOURNAL_REMOTE), f"--output={jdir / journal.JOURNAL_FILE}", "-"],
        input=out.getvalue(),
        capture_output=True,
        timeout=30,
    )
    assert written.returncode == 0, written.stderr
    script = journal.install_journalctl(tmp_path) / "journalctl"
    units = subprocess.run([str(script), "--field", "_SYSTEMD_UNIT"], capture_output=True, text=True, timeout=30)
    assert units.stdout.split() == ["kubelet.service"]  # the kubelet's checkForNativeLogger test
    args = ["--utc", "--no-pager", "--output=short-precise", "--unit=kubelet"]
    shown = subprocess.run([str(script), *args], capture_output=True, text=True, timeout=30)
    lines = shown.stdout.splitlines()
    assert len(lines) == 2, shown
    assert 'worker-1 kubelet[20602]: I1127 22:34:09.933596   20602 server.go:1336] "Started kubelet"' in lines[0]
    tail = subprocess.run([str(script), *args, "--pager-end", "--lines=1"], capture_output=True, text=True, timeout=30)
    assert tail.stdout.strip().endswith("kubelet[20602]: I1127 second line")
