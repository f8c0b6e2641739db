"""Container images for the real Linux nodes, written without a registry.

Each image is an OCI image (a layer tarball, a config JSON and a manifest) built from files this machine
already has: agnhost and CoreDNS from ``wincon cluster build`` (static binaries), upstream's resource-consumer
(``/consumer`` and ``/consume-cpu/consume-cpu``, built by ``consumer.py`` when ``wincon cluster build`` has built
it; the archive's name says whether it holds it), busybox from Debian's
``busybox-static`` (a shell and the usual tools) and Debian's curl with the shared libraries it loads (the
checks' HTTP client, as curl.exe is on Windows). All of them go into one OCI image-layout archive whose index names every image with the
``io.containerd.image.name`` annotation, so that ``ctr -n k8s.io images import`` loads them into a node's
containerd under the references the suite deploys. Pods use them with ``imagePullPolicy: IfNotPresent``:
nothing is ever pulled.

The references follow the suite's image catalog (``images/catalog.yaml``) under a local repo list
(upstream's ``KUBE_TEST_REPO_LIST`` format) that maps each registry key to a name under ``wincon.local``,
which resolves nowhere; agnhost, built from the release's own tree, takes the tag that release pins
(versions.toml ``agnhost_version``), which the suite's catalog adopts on this cluster (``Catalog.carry``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import consumer, paths

LOCAL_REGISTRY = "wincon.local"
# Registry keys of the image catalog -> local names (upstream's KUBE_TEST_REPO_LIST format).
REPO_LIST = {
    "promoterE2eRegistry": f"{LOCAL_REGISTRY}/e2e-test-images",
    "gcRegistry": f"{LOCAL_REGISTRY}/k8s",
}
BUSYBOX = "/bin/busybox"
# Raise REVISION whenever what goes into the images changes: the archive is rebuilt under the new name.
REVISION = 2
# images-r<REVISION>-<hash of the references>[-rc<resource-consumer's cache key>].oci.tar (archive_path)
ARCHIVE = f"images-r{REVISION}.oci.tar"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LAYER = "application/vnd.oci.image.layer.v1.tar"
_CONFIG = "application/vnd.oci.image.config.v1+json"
_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_ETC = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "etc/nsswitch.conf": "hosts: files dns\n",
}


@dataclass(frozen=True)
class Image:
    """One image: its reference, its layers (by name) and its entrypoint."""

    key: str
    reference: str
    layers: tuple[str, ...]
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()


def references(versions: dict[str, Any] | None = None) -> dict[str, str]:
    """Image key -> reference of every image the real nodes of a release carry (``versions``: its
    wincon.documents.releases.Release.versions(); None: the default release's), the ``images`` of ``cluster status``."""
    return {image.key: image.reference for image in _images(versions)}


RELEASE_FREE = ("busybox", "pause")  # images whose reference no Kubernetes release changes (the catalog's tag)


def reference(key: str) -> str:
    """The local reference of ``busybox`` or ``pause``, the same at every release (agnhost, CoreDNS and
    resource-consumer follow the release: :func:`references` of its versions)."""
    if key not in RELEASE_FREE:
        raise ValueError(f"{key!r} follows the Kubernetes release: ask references(versions) of the cluster's release")
    return references()[key]  # the default release's: the same as any other's for these


def sandbox_image() -> str:
    """The pause image containerd's CRI uses for pod sandboxes."""
    return reference("pause")


def _catalog_reference(key: str, tag: str | None = None) -> str:
    """The local reference of catalog image ``key``: its name under the local repo list, at the catalog's tag unless
    ``tag`` says which the local image is."""
    from wincon.workloads.catalog import Catalog

    catalog = Catalog.load()
    spec = catalog.images[key]
    return f"{REPO_LIST[spec.registry]}/{spec.name}:{tag or spec.tag}"


def _images(versions: dict[str, Any] | None = None) -> list[Image]:
    v = versions or paths.load_versions()
    coredns = v["coredns"]["version"]
    # agnhost is built from the release's own tree: tagged with the agnhost that release pins (versions.toml's
    # agnhost_version, its test/utils/image/manifest.go), not the catalog's, so a run reports the agnhost it runs.
    # The suite deploys that tag on this cluster: the cluster hands its references over (hints "images") and the
    # catalog takes each carried tag (Catalog.carry).
    agnhost = str(v["kubernetes"]["agnhost_version"])
    return [
        # upstream's agnhost image: /agnhost as the entrypoint, plus a shell and the usual tools (busybox).
        Image("agnhost", _catalog_reference("agnhost", agnhost), ("busybox", "curl", "agnhost"), ("/agnhost",)),
        Image("busybox", _catalog_reference("busybox"), ("busybox", "curl"), (), ("sh",)),
        Image("pause", _catalog_reference("pause"), ("agnhost",), ("/agnhost", "pause")),
        Image("coredns", f"{LOCAL_REGISTRY}/k8s/coredns/coredns:{coredns}", ("coredns",), ("/coredns",)),
        *_consumer_images(v),
    ]


def _consumer_images(versions: dict[str, Any]) -> list[Image]:
    """Upstream's resource-consumer, where its binaries are built: ``/consumer`` as the entrypoint (upstream's
    Dockerfile), the working directory ``/`` from which it runs ``./consume-cpu/consume-cpu``, and a shell and the
    usual tools (busybox) as upstream's Debian base has."""
    if consumer.binaries(versions) is None:
        return []
    reference = _catalog_reference(consumer.NAME)
    return [Image(consumer.NAME, reference, ("busybox", "consumer"), ("/consumer",))]


def repo_list_text() -> str:
    """The local repo list, as a YAML file the suite's ``--image-repo-list`` reads."""
    return "".join(f"{key}: {value}\n" for key, value in REPO_LIST.items())


# ----------------------------------------------------------------------------------------- layers


def _tarinfo(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, link
    info.mtime = info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    tar.addfile(_tarinfo(name, tarfile.REGTYPE, mode, len(data)), io.BytesIO(data))


def _add_dirs(tar: tarfile.TarFile, *names: str, mode: int = 0o755) -> None:
    for name in names:
        tar.addfile(_tarinfo(name, tarfile.DIRTYPE, mode))


def _busybox_applets(busybox: str) -> list[str]:
    """The applets busybox-static provides, with their install directories (``/bin/sh``, ``/usr/bin/wget``...)."""
    result = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0 or not result.stdout.strip():
        raise LocalClusterError(
            f"{busybox} --list-full failed: {result.stderr.strip()[:200]}",
            "reinstall Debian's busybox-static (`apt-get install busybox-static`)",
        )
    return sorted(line.strip() for line in result.stdout.splitlines() if line.strip())


def _layer_busybox() -> bytes:
    busybox = shutil.which("busybox") or BUSYBOX
    if not os.path.isfile(busybox) or b"ld-linux" in Path(busybox).read_bytes()[:65536]:
        raise LocalClusterError(
            f"no static busybox at {busybox}: the Linux test images need a shell and their tools",
            "install Debian's busybox-static (`apt-get install busybox-static`); `make setup` does",
        )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_dirs(tar, "bin", "etc", "root", "sbin", "usr", "usr/bin", "usr/sbin", "var", "var/run")
        _add_dirs(tar, "tmp", mode=0o1777)
        _add_file(tar, "bin/busybox", Path(busybox).read_bytes(), 0o755)
        for applet in _busybox_applets(busybox):
            # Debian's static busybox wget crashes (SIGSEGV) on every request: the images carry curl instead.
            if applet not in ("bin/busybox", "usr/bin/wget"):
                depth = applet.count("/")
                tar.addfile(_tarinfo(applet, tarfile.SYMTYPE, 0o777, link="../" * depth + "bin/busybox"))
        for name, text in sorted(_ETC.items()):
            _add_file(tar, name, text.encode(), 0o644)
    return buf.getvalue()


def _shared_objects(binary: str) -> list[str]:
    """The binary's loader and shared libraries, as ``ldd`` lists them (absolute paths)."""
    result = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise LocalClusterError(f"`ldd {binary}` failed: {result.stderr.strip()[:200]}", "reinstall it")
    found = []
    for line in result.stdout.splitlines():
        for word in line.split():
            if word.startswith("/"):
                found.append(word)
    return sorted(set(found))


def _layer_curl() -> bytes:
    """curl (the suites' HTTP client on both OSes) with the shared libraries it loads, at their own paths."""
    curl = shutil.which("curl")
    if not curl:
        raise LocalClusterError(
            "curl is not installed: the Linux test images carry it (the checks' HTTP client on both OSes)",
            "install Debian's curl (`apt-get install curl`); `make setup` does",
        )
    files = [curl, *_shared_objects(curl)]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(f).parent).lstrip("/") for f in files} - {"bin", "usr/bin"})
        _add_dirs(tar, *dirs)
        for path in files:
            _add_file(tar, path.lstrip("/"), Path(path).resolve().read_bytes(), 0o755)
    return buf.getvalue()


def _layer_binary(path: Path, name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_file(tar, name, path.read_bytes(), 0o755)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------- archive


def _blob(blobs: dict[str, bytes], data: bytes) -> dict[str, Any]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"digest": digest, "size": len(data)}


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def archive_path(bindir: Path | None = None, versions: dict[str, Any] | None = None) -> Path:
    """Where the image archive of the pinned versions is kept (next to the binaries it is built from). Its name
    carries a hash of the references it holds, so that an archive written under other references (the image
    catalog moved to another tag) is not reused, and says whether it holds resource-consumer, so an archive
    written before that was built is not reused after."""
    v = versions or paths.load_versions()
    held = json.dumps(sorted(references(v).items())).encode()
    name = ARCHIVE.replace(".oci.tar", f"-{hashlib.sha256(held).hexdigest()[:12]}.oci.tar")
    if consumer.binaries(v) is not None:  # the references' hash kept: a moved tag is not reused either
        name = name.replace(".oci.tar", f"-rc{consumer.key(v)}.oci.tar")
    return (bindir or paths.bin_dir(v["kubernetes"]["minor"])) / name


def _layer_files(files: dict[str, Path]) -> bytes:
    """One layer of static binaries at the given paths inside the image (their directories included)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(inside).parent) for inside in files} - {"."})
        _add_dirs(tar, *dirs)
        for inside, path in sorted(files.items()):
            _add_file(tar, inside, path.read_bytes(), 0o755)
    return buf.getvalue()


def build_archive(bindir: Path | None = None, versions: dict[str, Any] | None = None) -> Path:
    """Write the OCI archive of every image of a release (``versions``; None: the default release's) once per binary
    cache (reused afterwards); return its path."""
    v = versions or paths.load_versions()
    bindir = bindir or paths.bin_dir(v["kubernetes"]["minor"])
    target = archive_path(bindir, v)
    if target.is_file():
        return target
    layers = {
        "busybox": _layer_busybox(),
        "curl": _layer_curl(),
        "agnhost": _layer_binary(bindir / "agnhost", "agnhost"),
        "coredns": _layer_binary(bindir / "coredns", "coredns"),
    }
    consumer_files = consumer.binaries(v)
    if consumer_files is not None:
        layers["consumer"] = _layer_files(consumer_files)
    blobs: dict[str, bytes] = {}
    layer_desc = {name: {"mediaType": _LAYER, **_blob(blobs, data)} for name, data in layers.items()}
    manifests = []
    for image in _images(v):
        config: dict[str, Any] = {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": [PATH_ENV], "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [layer_desc[name]["digest"] for name in image.layers]},
            "history": [{"created_by": f"wincon: {name} layer"} for name in image.layers],
        }
        if image.entrypoint:
            config["config"]["Entrypoint"] = list(image.entrypoint)
        if image.cmd:
            config["config"]["Cmd"] = list(image.cmd)
        manifest = {
            "schemaVersion": 2,
            "mediaType": _MANIFEST,
            "config": {"mediaType": _CONFIG, **_blob(blobs, _json(config))},
            "layers": [layer_desc[name] for name in image.layers],
        }
        tag = image.reference.rsplit(":", 1)[1]
        manifests.append(
            {
                "mediaType": _MANIFEST,
                **_blob(blobs, _json(manifest)),
                "annotations": {"io.containerd.image.name": image.reference, "org.opencontainers.image.ref.name": tag},
            }
        )
    index = {"schemaVersion": 2, "manifests": manifests}
    tmp = target.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_file(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}), 0o644)
        _add_file(tar, "index.json", _json(index), 0o644)
        _add_dirs(tar, "blobs", "blobs/sha256")
        for digest, data in sorted(blobs.items()):
            _add_file(tar, f"blobs/sha256/{digest.split(':', 1)[1]}", data, 0o644)
    os.replace(tmp, target)
    return target
