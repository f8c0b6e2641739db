"""Where the local cluster keeps its binaries and state, and which versions it is built from.

Everything lives outside the work tree, under ``${WINCON_CACHE:-~/.cache/wincon}``:

- ``bin/<key>/``: the built binaries of one Kubernetes release, ``<key>`` being a hash of its resolved versions;
- ``clusters/<name>/``: one directory per running cluster (kubeconfig, topology, logs of ``up``).

kwokctl keeps its own state (pki, etcd data, component logs and pids) under
``${KWOK_WORKDIR:-~/.kwok}/clusters/<name>/``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from wincon.commandline.errors import UsageError
from wincon.documents import releases as kube_releases

DEFAULT_CLUSTER_NAME = "wincon"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def cache_root() -> Path:
    """The wincon cache: ``$WINCON_CACHE`` or ``~/.cache/wincon``."""
    return Path(os.path.abspath(Path(os.environ.get("WINCON_CACHE") or "~/.cache/wincon").expanduser()))


VERSIONS_FILE = kube_releases.VERSIONS_FILE  # read by wincon.documents.releases alone


def releases() -> list[str]:
    """The Kubernetes minors the local cluster can be built at (``1.35``, ...), oldest first."""
    return kube_releases.releases()


def default_release() -> str:
    """The minor used when none is asked for (versions.toml's ``default``, :func:`wincon.documents.releases.default_release`)."""
    return kube_releases.default_release()


def resolve_release(spec: str | None = None) -> str:
    """The minor that ``spec`` names, or nothing for versions.toml's default (:func:`wincon.documents.releases.resolve`; the
    command line alone reads ``$WINCON_KUBERNETES_VERSION``: wincon.documents.releases.requested)."""
    return kube_releases.resolve(spec)


def load_versions(release: str | None = None) -> dict[str, Any]:
    """The versions of one release (``resolve_release(release)``): :meth:`wincon.documents.releases.Release.versions`."""
    return kube_releases.get(resolve_release(release)).versions()


def go_version_key(name: str) -> tuple[int, ...]:
    """``go1.27.3`` (or ``1.27``) -> ``(1, 27, 3)``: go versions compared by their numbers (a pre-release such as
    ``go1.27rc1`` counts as its minor, ``(1, 27)``)."""
    match = re.match(r"^(?:go)?(\d+(?:\.\d+)*)", name.strip())
    if not match:
        raise ValueError(f"not a Go version: {name!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def machine_go() -> str | None:
    """The machine's own ``go`` command: ``$WINCON_GO``, else ``go`` on PATH; None where there is none."""
    return os.environ.get("WINCON_GO") or shutil.which("go")


@functools.cache
def machine_go_version(go: str) -> str:
    """What ``go`` itself is (``go1.26.8``), asked with GOTOOLCHAIN=local so that it never answers for a toolchain
    it would switch to; '' where it cannot say."""
    try:
        answer = subprocess.run(
            [go, "env", "GOVERSION"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "GOTOOLCHAIN": "local"},
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    version = answer.stdout.strip()
    return version if answer.returncode == 0 and re.match(r"^go\d", version) else ""


def go_environment(versions: dict[str, Any], go: str | None = None) -> dict[str, str]:
    """The environment a go command needs for one release (``load_versions``'s answer): ``GOTOOLCHAIN`` set to
    versions.toml's ``go_toolchain`` where the release names one and the machine's go (``go``, default
    :func:`machine_go`) is older than it, nothing otherwise. The one place every go command of a release (the
    build's, a module download's) takes its toolchain from."""
    toolchain = versions["kubernetes"].get("go_toolchain")
    if not toolchain:
        return {}
    go = go or machine_go()
    have = machine_go_version(go) if go else ""
    if have and go_version_key(have) >= go_version_key(str(toolchain)):
        return {}
    return {"GOTOOLCHAIN": str(toolchain)}


def release_of(module: str, version: str) -> str | None:
    """The minor whose Kubernetes module and version ``module@version`` is (:func:`wincon.documents.releases.release_of`)."""
    return kube_releases.release_of(module, version)


def module_go_environment(module: str, version: str, go: str | None = None) -> dict[str, str]:
    """The environment of a go command that downloads ``module@version``: that of its release
    (:func:`go_environment`) where it is a release's Kubernetes module, nothing otherwise."""
    release = release_of(module, version)
    return go_environment(load_versions(release), go) if release else {}


def versions_key(release: str | None = None) -> str:
    """A short hash of one release's resolved versions: the key of its binary cache. Another release's
    table, or a comment, does not change it."""
    resolved = json.dumps(load_versions(release), sort_keys=True).encode()
    return hashlib.sha256(resolved).hexdigest()[:16]


def bin_dir(release: str | None = None) -> Path:
    """The directory the binaries of one release are (or will be) built into."""
    return cache_root() / "bin" / versions_key(release)


def kwok_workdir() -> Path:
    """kwokctl's own work directory (it honours ``$KWOK_WORKDIR``, default ``~/.kwok``)."""
    # Absolute, as kwokctl makes it: the path is how wincon finds the cluster's processes in /proc.
    return Path(os.path.abspath(Path(os.environ.get("KWOK_WORKDIR") or "~/.kwok").expanduser()))


def default_cluster_name() -> str:
    """``$WINCON_CLUSTER_NAME`` or ``wincon``."""
    return os.environ.get("WINCON_CLUSTER_NAME") or DEFAULT_CLUSTER_NAME


def check_name(name: str) -> str:
    """Return ``name`` if it can name a cluster (a DNS label of at most 40 characters), else raise."""
    if not _NAME_RE.match(name or ""):
        raise UsageError(
            f"invalid cluster name {name!r}",
            "use lower-case letters, digits and '-', starting and ending with a letter or digit, "
            "at most 40 characters (for example 'wincon' or 'lc-alice')",
        )
    return name


def state_dir(name: str) -> Path:
    """wincon's state directory of cluster ``name``."""
    return cache_root() / "clusters" / check_name(name)


def kwok_cluster_dir(name: str) -> Path:
    """kwokctl's work directory of cluster ``name`` (pki, etcd data, pids, component logs)."""
    return kwok_workdir() / "clusters" / check_name(name)
