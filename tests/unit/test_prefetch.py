"""wincon.localcluster.prefetch: the build's later Go modules download on a background thread while it compiles.

A fake `go` (WINCON_GO) records each `go mod tidy` it runs (the wrapper module's first line) and answers the
staging look-up of the Kubernetes wrapper; the wincon cache is empty, so every binary counts as missing.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from wincon.localcluster import addons, build, paths, prefetch

FAKE_GO = """#!/bin/sh
# fake go: `go version`, `go mod download -json M@V` (a go.mod with one staging module), `go mod tidy` (recorded)
case "$1 $2" in
  "version "*) echo "go version go1.26.8 linux/amd64" ;;
  "env GOVERSION") echo go1.26.8 ;;
  "mod download")
    printf 'module k8s.io/kubernetes\\nrequire k8s.io/api v0.0.0\\n' > "$PWD/staging.mod"
    printf '{"GoMod": "%s"}\\n' "$PWD/staging.mod" ;;
  "mod tidy")
    echo $$ > "$RECORD.pid"
    [ -n "$SLOW" ] && exec sleep "$SLOW"
    grep -q "$FAIL" go.mod 2>/dev/null && [ -n "$FAIL" ] && { echo "fake go: refused" >&2; exit 1; }
    head -n 1 go.mod >> "$RECORD" ;;
  *) echo "fake go: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    go = tmp_path / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    record = tmp_path / "tidied"
    monkeypatch.setenv("WINCON_GO", str(go))
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path / "cache"))
    return record


def test_every_wrapper_module_after_the_first_is_tidied_in_the_order_the_build_reaches_it(fake_go: Path) -> None:
    release = "1.37"
    versions = paths.load_versions(release)
    groups = list(dict.fromkeys(c.group for c in build.components(versions)))
    todo = prefetch.jobs(release)
    labels = [label for label, _ in todo]
    # The build's first wrapper module is left to the build; the other groups follow in its order, then the
    # add-ons (MetalLB's two binaries share one module: tidied once), then the resource-consumer.
    assert labels[: len(groups) - 1] == groups[1:]
    assert groups[0] not in labels
    modules = {addons.load()[c.name]["module"] for c in addons.components()}
    assert len(labels) == len(groups) - 1 + len(modules) + 1 and labels[-1] == "resource-consumer"

    with prefetch.warming(release, io.StringIO(), todo) as thread:
        assert thread is not None
        deadline = time.monotonic() + 60
        while thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    tidied = fake_go.read_text().splitlines()
    assert tidied == [f"module wincon.local/{label}build" for label in labels]
    log = (Path(os.environ["WINCON_CACHE"]) / "prefetch.log").read_text()
    assert all(f"[{label}] fetched in" in log for label in labels), log


def test_what_is_built_already_is_not_fetched(fake_go: Path) -> None:
    release = "1.37"
    bindir = paths.bin_dir(release)
    (bindir / ".built").mkdir(parents=True)
    for comp in build.components(paths.load_versions(release)):
        (bindir / comp.name).write_text("")
        (bindir / ".built" / comp.name).write_text("built\n")
    labels = [label for label, _ in prefetch.jobs(release)]
    assert labels and not set(labels) & {c.group for c in build.components(paths.load_versions(release))}
    out = io.StringIO()
    with prefetch.warming(release, out, []) as thread:
        assert thread is None
    assert out.getvalue() == ""


def test_the_end_of_the_block_kills_the_go_command_it_runs_and_joins_the_thread(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counter-case of the background: a build that ends (or fails) while a download still runs leaves no go
    command behind, and the block does not wait for the download to finish."""
    monkeypatch.setenv("SLOW", "60")
    pid_file = Path(f"{fake_go}.pid")
    began = time.monotonic()
    with prefetch.warming("1.37", io.StringIO()) as thread:
        assert thread is not None
        while not pid_file.exists() and time.monotonic() - began < 30:
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        os.kill(pid, 0)  # the download runs
    assert not thread.is_alive()
    assert time.monotonic() - began < 20, "the block waited for the download instead of stopping it"
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not fake_go.exists(), "a tidy finished although it was stopped"
    log = (Path(os.environ["WINCON_CACHE"]) / "prefetch.log").read_text()
    assert "was stopped" in log and "fetched in" not in log


def test_a_fetch_that_fails_is_logged_and_the_next_one_still_runs(
    fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure is swallowed on the thread (the build's own tidy reports it): the log says so, it is not counted as
    fetched, and the modules after it are still fetched."""
    monkeypatch.setenv("FAIL", "wincon.local/corednsbuild")
    todo = prefetch.jobs("1.37")
    with prefetch.warming("1.37", io.StringIO(), todo) as thread:
        assert thread is not None
        thread.join(timeout=60)
    log = (Path(os.environ["WINCON_CACHE"]) / "prefetch.log").read_text()
    assert "[coredns] not fetched: resolving the coredns module (go mod tidy) failed (exit 1)" in log
    assert "[coredns] fetched in" not in log
    after = [label for label, _ in todo][[label for label, _ in todo].index("coredns") + 1 :]
    assert after and all(f"[{label}] fetched in" in log for label in after), log
