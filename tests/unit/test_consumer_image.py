"""Upstream's resource-consumer on the local cluster (wincon/localcluster/consumer.py, images.py): its own cache
key, the image's layout as upstream's Dockerfile has it, and an archive name that says whether it holds it."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from wincon.documents import upstream
from wincon.localcluster import build, consumer, images, paths
from wincon.workloads.catalog import Catalog


def fake_build(root: Path) -> dict[str, Path]:
    bindir = consumer.bin_dir()
    (bindir / ".built").mkdir(parents=True)
    for name in consumer.BINARIES:
        (bindir / name).write_bytes(b"\x7fELF " + name.encode())
        (bindir / ".built" / name).write_text("built\n")
    return {inside: bindir / name for name, (_, inside, _) in consumer.BINARIES.items()}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    return tmp_path


def test_key_follows_the_kubernetes_entry_only():
    versions = paths.load_versions()
    bumped = {**versions, "kubernetes": {**versions["kubernetes"], "version": "v1.34.5"}}
    other = {**versions, "coredns": {**versions["coredns"], "version": "v9.9.9"}}
    assert consumer.key(versions) == consumer.key(other)  # another component's bump rebuilds nothing here
    assert consumer.key(versions) != consumer.key(bumped)
    assert consumer.bin_dir(versions).parent == paths.cache_root() / "images"
    assert consumer.bin_dir(versions).parent != paths.bin_dir().parent  # not under the cluster's binaries


def test_components_are_upstreams_two_static_packages():
    comps = {c.name: c for c in consumer.components()}
    assert set(comps) == {"consumer", "consume-cpu"}
    assert comps["consumer"].package == "k8s.io/kubernetes/test/images/resource-consumer"
    assert comps["consume-cpu"].package == "k8s.io/kubernetes/test/images/resource-consumer/consume-cpu"
    assert all(c.static and c.ldflags == ("-w",) for c in comps.values())


def test_the_image_layout_is_upstreams():
    """Where upstream's image puts the binaries: ``/consumer`` the entrypoint, and ``consume-cpu/consume-cpu``
    run relative to the working directory ``/`` (utils.go's consumeCPUBinary), in the k8s.io/kubernetes module
    tree the binaries are built from (fetched by the project's download path where the module cache lacks it)."""
    source = upstream.ensure_module(paths.load_versions()["kubernetes"]["version"]) / consumer.SOURCE
    dockerfile = (source / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["/consumer"]' in dockerfile and "ADD consume-cpu /consume-cpu" in dockerfile
    assert 'consumeCPUBinary = "./consume-cpu/consume-cpu"' in (source / "utils.go").read_text()
    assert "SRCS = consumer consume-cpu/consume-cpu" in (source / "Makefile").read_text()
    assert {inside for _, inside, _ in consumer.BINARIES.values()} == {"consumer", "consume-cpu/consume-cpu"}


def test_not_built_means_no_image_and_the_plain_archive(cache):
    assert consumer.binaries() is None
    assert "resource-consumer" not in images.references()
    name = images.archive_path(cache).name
    assert name.startswith(images.ARCHIVE.removesuffix(".oci.tar") + "-") and "-rc" not in name


def test_the_archive_name_follows_the_catalog_s_references(cache, monkeypatch):
    """An archive written under the catalog's former tags is not reused once the catalog moves: its images would
    carry references the suite no longer deploys (nothing is pulled on these nodes)."""
    before = images.archive_path(cache).name
    pause = images.references()["pause"]
    real = Catalog.load

    def bumped(*args, **kwargs):
        loaded = real(*args, **kwargs)
        loaded.images["pause"] = replace(loaded.images["pause"], tag=loaded.images["pause"].tag + "-next")
        return loaded

    monkeypatch.setattr(Catalog, "load", staticmethod(bumped))
    assert images.references()["pause"] == pause + "-next"
    assert images.archive_path(cache).name != before


def test_built_means_the_catalog_reference_and_an_archive_name_of_its_own(cache):
    files = fake_build(cache)
    assert consumer.binaries() == files
    spec = Catalog.load().images["resource-consumer"]
    assert images.references()["resource-consumer"] == f"wincon.local/e2e-test-images/resource-consumer:{spec.tag}"
    name = images.archive_path(cache).name
    assert name != images.ARCHIVE and consumer.key() in name  # an archive written without it is not reused
    (image,) = [i for i in images._images() if i.key == "resource-consumer"]
    assert image.entrypoint == ("/consumer",) and image.layers == ("busybox", "consumer")


def test_a_missing_marker_means_not_built(cache):
    fake_build(cache)
    (consumer.bin_dir() / ".built" / "consume-cpu").unlink()
    assert consumer.binaries() is None


def test_the_layer_puts_each_binary_at_its_path_executable(cache):
    layer = images._layer_files(fake_build(cache))
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["consume-cpu"].isdir()
        assert members["consume-cpu/consume-cpu"].mode == 0o755 and members["consumer"].mode == 0o755
        assert tar.extractfile("consumer").read() == b"\x7fELF consumer"


def test_build_is_skipped_when_built(cache, monkeypatch):
    fake_build(cache)
    monkeypatch.setattr(build, "go_binary", lambda: pytest.fail("nothing to build, no go needed"))
    out = io.StringIO()
    assert consumer.build_binaries(out) == consumer.bin_dir()
    assert "nothing to build" in out.getvalue()


BUILT = consumer.binaries()


@pytest.mark.skipif(BUILT is None, reason="resource-consumer is not built here (`wincon cluster build` builds it)")
def test_the_built_consumer_serves_consume_cpu_and_runs_consume_cpu(tmp_path):
    """The real binaries, laid out as in the image: a ConsumeCPU request is answered and starts consume-cpu."""
    assert BUILT is not None
    for inside, path in BUILT.items():
        (tmp_path / inside).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(path, tmp_path / inside)
    port = 18000 + os.getpid() % 1000
    proc = subprocess.Popen([str(tmp_path / "consumer"), f"-port={port}"], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/ConsumeCPU?millicores=50&durationSec=2"
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=5) as response:
                    answer = response.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert answer.split() == ["ConsumeCPU", "50", "millicores", "2", "durationSec"]
        ps = ""
        for _ in range(20):
            ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            if "consume-cpu/consume-cpu" in ps:
                break
            time.sleep(0.1)
        # utils_common.go ConsumeCPU: exec.Command(consumeCPUBinary, "-millicores=...", "-duration-sec=...")
        assert "./consume-cpu/consume-cpu -millicores=50 -duration-sec=2" in ps
    finally:
        proc.kill()
        proc.wait()
