"""`wincon images verify` against a real registry on this machine (issue 31 part 2).

The registry is distribution's own as Debian packages it (docker-registry 2.8.2, which serves OCI image indexes and
manifests; unpacked into ``${WINCON_CACHE:-~/.cache/wincon}/tools/docker-registry/`` by ``make setup-registry``
where building distribution v3 from the Go module proxy took 11 min the first time), listening on 127.0.0.1 with
its storage in the test's temporary directory, and stopped (by its own pid) after the module. Manifest lists are
built here through the OCI distribution API (blob uploads, image manifests, an index whose Windows entries carry
``os.version``) under the catalog's references (a repo list maps promoterE2eRegistry and gcRegistry to it), and
verify reads them back as it reads any registry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.localcluster import paths
from wincon.workloads.catalog import Catalog
from wincon.workloads.imageverify import verify

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "docker-registry"  # Debian's package of distribution's registry (2.8.2 on Debian 12)
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def registry_binary() -> Path:
    """Debian's docker-registry: installed, or unpacked into the wincon cache by ``make setup-registry`` (part of
    ``make setup``, which ``make test`` runs first); run here where neither is there yet."""
    unpacked = paths.cache_root() / "tools" / PACKAGE / "usr" / "bin" / PACKAGE
    for binary in (Path("/usr/bin") / PACKAGE, unpacked):
        if binary.is_file():
            return binary
    result = subprocess.run(
        ["make", "--no-print-directory", "setup-registry"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    if result.returncode or not unpacked.is_file():
        pytest.fail(
            f"`make setup-registry` did not unpack Debian's {PACKAGE}: {(result.stdout + result.stderr)[-600:]}"
        )
    return unpacked


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_registry(root: Path, extra_config: str = "", host: str = "127.0.0.1") -> Iterator[str]:
    """Distribution's registry on a free port of ``host`` (loopback unless named), its storage under ``root`` and
    ``extra_config`` (YAML lines: an ``auth:`` section, say) appended to its configuration; stopped by its own pid
    on exit. Yields its host:port once ``/v2/`` answers (200, or 401 where it asks for credentials)."""
    binary = registry_binary()
    port = free_port(host)
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: error}\n"
        f"storage: {{filesystem: {{rootdirectory: {root / 'data'}}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: {host}:{port}}}\n" + extra_config
    )
    log = (root / "registry.log").open("w")
    process = subprocess.Popen([str(binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    address = f"{host}:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    break
            except (urllib.error.URLError, OSError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the registry did not serve: {(root / 'registry.log').read_text()[-800:]}")
            time.sleep(0.2)
        yield address
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log.close()


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[str]:
    with serve_registry(tmp_path_factory.mktemp("registry")) as address:
        yield address


def _request(
    method: str, url: str, data: bytes = b"", content_type: str = "", auth: str = ""
) -> urllib.request.addinfourl:
    request = urllib.request.Request(url, data=data if method in ("PUT", "POST") else None, method=method)
    if auth:  # an Authorization header value, for a registry that asks for credentials
        request.add_header("Authorization", auth)
    if content_type:
        request.add_header("Content-Type", content_type)
    return urllib.request.urlopen(request, timeout=30)  # noqa: S310 (the test's own registry)


def push_blob(address: str, repository: str, data: bytes, auth: str = "") -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with _request("POST", f"http://{address}/v2/{repository}/blobs/uploads/", auth=auth) as started:
        location = started.headers["Location"]
    if location.startswith("/"):
        location = f"http://{address}{location}"
    separator = "&" if "?" in location else "?"
    with _request("PUT", f"{location}{separator}digest={digest}", data, "application/octet-stream", auth) as done:
        assert done.status == 201
    return {"digest": digest, "size": len(data)}


def push_manifest(
    address: str, repository: str, reference: str, body: dict, media_type: str, auth: str = ""
) -> dict[str, object]:
    data = json.dumps(body).encode()
    url = f"http://{address}/v2/{repository}/manifests/{reference}"
    with _request("PUT", url, data, media_type, auth) as done:
        assert done.status == 201
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def push_windows_list(address: str, repository: str, tag: str, builds: list[int], auth: str = "") -> None:
    """A manifest list under ``repository:tag`` with one Windows image per build, each annotated
    ``os.version: 10.0.<build>.1``, as images/build.sh and upstream's image builds annotate theirs."""
    entries = []
    for build in builds:
        layer = push_blob(address, repository, f"layer of {repository} for {build}".encode(), auth)
        config = {"architecture": "amd64", "os": "windows", "os.version": f"10.0.{build}.1", "rootfs": {}}
        config_blob = push_blob(address, repository, json.dumps(config).encode(), auth)
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
        }
        descriptor = push_manifest(address, repository, f"{tag}-{build}", manifest, OCI_MANIFEST, auth)
        entries.append(
            {**descriptor, "platform": {"architecture": "amd64", "os": "windows", "os.version": f"10.0.{build}.1"}}
        )
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
    push_manifest(address, repository, tag, index, OCI_INDEX, auth)


def windows_node(name: str, build: int, containerd: str) -> NodeProfile:
    return NodeProfile(
        name=name, os="windows", arch="amd64", ready=True, simulated=False, windows_build=build,
        runtime="containerd", runtime_version=containerd,
    )  # fmt: skip


def test_verify_refuses_and_accepts_as_the_rules_say_on_a_real_registry(registry):
    catalog = Catalog.load(repo_map={"promoterE2eRegistry": f"{registry}/e2e", "gcRegistry": f"{registry}/k8s"})
    agnhost, busybox, pause = (catalog.images[k] for k in ("agnhost", "busybox", "pause"))
    push_windows_list(registry, f"e2e/{agnhost.name}", agnhost.tag, [17763, 20348])  # no ltsc2025 entry
    push_windows_list(registry, f"e2e/{busybox.name}", busybox.tag, [17763, 20348, 26100])
    push_windows_list(registry, f"k8s/{pause.name}", pause.tag, [17763])  # only Windows Server 2019
    ws2025 = windows_node("akswspool000000", 26100, "2.0.4+azure")
    ws2025_old = windows_node("w2025-containerd-1-7-5", 26100, "1.7.5")
    profile = ClusterProfile("v1.37.2", nodes=[ws2025, ws2025_old])
    found = {
        (f.image, f.node, f.isolation): f.verdict
        for f in verify(catalog, profile, ["agnhost", "busybox", "pause"], ("process", "hyperv"))
    }
    assert len(found) == 3 * 2 * 2
    # an ltsc2022-only image: refused for the Hyper-V 26100 node, accepted where the matcher allows (process
    # isolation on containerd 2.0.4), refused on a containerd whose matcher wants the exact build (1.7.5)
    assert not found["agnhost", "akswspool000000", "hyperv"].runs
    assert "HCS_E_IMAGE_MISMATCH" in found["agnhost", "akswspool000000", "hyperv"].reason
    accepted = found["agnhost", "akswspool000000", "process"]
    assert accepted.runs and accepted.entry == 20348
    assert not found["agnhost", "w2025-containerd-1-7-5", "process"].runs
    # a missing platform: no entry at or near 26100 anywhere
    for key in [("pause", n, i) for n in ("akswspool000000", "w2025-containerd-1-7-5") for i in ("process", "hyperv")]:
        assert not found[key].runs, key
    assert "17763" in found["pause", "akswspool000000", "process"].reason
    # the exact entry runs everywhere
    exact = [verdict for (image, _, _), verdict in found.items() if image == "busybox"]
    assert len(exact) == 4 and all(v.runs and v.entry == 26100 for v in exact)


def push_single_windows_image(address: str, repository: str, tag: str, config: dict[str, str]) -> None:
    """An image pushed without a manifest list: ``repository:tag`` is one image manifest, and only its config blob
    says the platform (``os``, ``architecture``, ``os.version``)."""
    layer = push_blob(address, repository, f"layer of {repository}:{tag}".encode())
    config_blob = push_blob(address, repository, json.dumps({**config, "rootfs": {}}).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
    }
    push_manifest(address, repository, tag, manifest, OCI_MANIFEST)


def test_a_single_manifest_is_judged_by_the_config_blob_the_registry_serves(registry):
    """Issue 40 item 3 on a real registry: the config blob is read back from distribution's blob endpoint and its
    ltsc2022 build decides (process isolation on containerd 2.0.4 runs it on 26100, Hyper-V does not); an arm64
    config runs on no amd64 node."""
    catalog = Catalog.load(repo_map={"promoterE2eRegistry": f"{registry}/e2e", "gcRegistry": f"{registry}/k8s"})
    agnhost, busybox = catalog.images["agnhost"], catalog.images["busybox"]
    ltsc2022 = {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.1487"}
    push_single_windows_image(registry, f"e2e/{agnhost.name}", agnhost.tag, ltsc2022)
    arm = {"architecture": "arm64", "os": "windows", "os.version": "10.0.26100.1"}
    push_single_windows_image(registry, f"e2e/{busybox.name}", busybox.tag, arm)
    profile = ClusterProfile("v1.37.2", nodes=[windows_node("akswspool000000", 26100, "2.0.4+azure")])
    found = {
        (f.image, f.isolation): f.verdict
        for f in verify(catalog, profile, ["agnhost", "busybox"], ("process", "hyperv"))
    }
    assert found["agnhost", "process"].runs and found["agnhost", "process"].entry == 20348
    assert not found["agnhost", "hyperv"].runs and "HCS_E_IMAGE_MISMATCH" in found["agnhost", "hyperv"].reason
    assert "config says windows/amd64 20348" in found["agnhost", "hyperv"].reason
    assert not found["busybox", "process"].runs and not found["busybox", "hyperv"].runs
    assert "not a windows/amd64 image" in found["busybox", "process"].reason
