"""Download the Go modules of what `wincon cluster build` compiles later while it compiles what comes first.

On an empty module cache each wrapper module's ``go mod tidy`` waits on the Go module proxy: CoreDNS's took 73 s
of wall time for 14 s of CPU on these machines (issue 41), and the build pays such a wait for each of its wrapper
modules, one after another, between compilations that keep both cores busy. :func:`warming` runs, on one
background thread, the same ``go mod tidy`` of each wrapper module the build will need after its first (the
release's Kubernetes, CoreDNS, the add-ons, the resource-consumer) in a throw-away directory, in the order the
build reaches them: the modules land in the module cache (whose own file locks make a download the build starts
meanwhile safe), and the build's own ``go mod tidy`` then finds them there. What is built already is not fetched.

Nothing here decides a build: a prefetch that fails is logged (``prefetch.log`` in the cache root) and the build
runs its own ``go mod tidy`` as before, which reports the failure. When the block ends, the go command the thread
runs is killed and the thread joined: nothing of it outlives the build.
"""

from __future__ import annotations

import contextlib
import functools
import io
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from wincon.localcluster import build, paths

# One job: its label and what it does with a builder and an empty directory (writes a wrapper module and tidies it).
Job = tuple[str, Callable[[build._Builder, Path], object]]


def jobs(release: str) -> list[Job]:
    """What the build of ``release`` will tidy after its first wrapper module, in the order it gets there; only
    what is not built yet."""
    from wincon.documents import releases
    from wincon.localcluster import addons, consumer

    versions = paths.load_versions(release)
    missing = set(build.missing(paths.bin_dir(release), release))
    first = next((c.group for c in build.components(versions) if c.name in missing), None)
    found: list[Job] = []
    for group in dict.fromkeys(c.group for c in build.components(versions) if c.name in missing):
        if group != first:  # the build starts on the first at once: fetching it beside would only race it
            found.append((group, functools.partial(_group_module, group=group, versions=versions)))
    spec = addons.load()
    seen: set[tuple[str, str]] = set()
    for comp in addons.components(spec):
        entry = spec[comp.name]
        if addons.binary(comp.name) is None and (entry["module"], entry["version"]) not in seen:
            seen.add((entry["module"], entry["version"]))
            found.append((comp.name, functools.partial(_addon_module, comp=comp, entry=entry)))
    consumer_versions = releases.get(release).versions()
    if consumer.binaries(consumer_versions) is None:
        found.append((consumer.NAME, functools.partial(_consumer_module, versions=consumer_versions)))
    return found


def _group_module(builder: build._Builder, workdir: Path, *, group: str, versions: dict[str, Any]) -> Path:
    return builder.prepare_module(group, versions, workdir)


def _addon_module(builder: build._Builder, workdir: Path, *, comp: build.Component, entry: dict[str, Any]) -> Path:
    from wincon.localcluster import addons

    return addons.prepare_module(builder, comp, entry, workdir)


def _consumer_module(builder: build._Builder, workdir: Path, *, versions: dict[str, Any]) -> Path:
    from wincon.localcluster import consumer

    return consumer.prepare_module(builder, versions, workdir)


@contextlib.contextmanager
def warming(release: str, out: TextIO, todo: list[Job] | None = None) -> Iterator[threading.Thread | None]:
    """While the block runs, tidy each of ``todo`` (default: :func:`jobs`) on a background thread; at its end, stop
    and join that thread. Yields the thread (None when there is nothing to fetch)."""
    todo = jobs(release) if todo is None else todo
    if not todo:
        yield None
        return
    go = build.go_binary()
    log_path = paths.cache_root() / "prefetch.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    env = build.go_environment(paths.load_versions(release), go)

    def fetch(log: TextIO) -> None:
        builder = build._Builder(go, log_path.parent, log, io.StringIO(), env)
        builder.stop = stop
        for label, job in todo:
            if stop.is_set():
                return
            began = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="wincon-prefetch-") as tmp:
                try:
                    job(builder, Path(tmp))
                except Exception as exc:  # noqa: BLE001 - the build's own tidy reports a real failure
                    log.write(f"[{label}] not fetched: {exc}\n")
                    log.flush()
                    continue
            log.write(f"[{label}] fetched in {build._fmt(time.monotonic() - began)}\n")
            log.flush()

    with log_path.open("a") as log:
        log.write(f"\n== {time.strftime('%Y-%m-%d %H:%M:%S')} fetching {', '.join(label for label, _ in todo)}\n")
        log.flush()
        thread = threading.Thread(target=fetch, args=(log,), name="wincon-prefetch", daemon=True)
        print(
            f"fetching the Go modules of {', '.join(label for label, _ in todo)} in the background while the "
            f"build compiles (log: {log_path})",
            file=out,
            flush=True,
        )
        thread.start()
        try:
            yield thread
        finally:
            stop.set()
            thread.join()
