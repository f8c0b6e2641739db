"""Where the local cluster keeps its binaries and state, and which versions it is built from.

Everything lives outside the work tree, under ``${WINCON_CACHE:-~/.cache/wincon}``:

- ``bin/<key>/``: the built binaries, ``<key>`` being a hash of ``versions.toml``'s bytes;
- ``clusters/<name>/``: one directory per running cluster (kubeconfig, topology, logs of ``up``).

kwokctl keeps its own state (pki, etcd data, component logs and pids) under
``${KWOK_WORKDIR:-~/.kwok}/clusters/<name>/``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from wincon.errors import UsageError

VERSIONS_FILE = Path(__file__).with_name("versions.toml")
DEFAULT_CLUSTER_NAME = "wincon"
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def cache_root() -> Path:
    """The wincon cache: ``$WINCON_CACHE`` or ``~/.cache/wincon``."""
    return Path(os.path.abspath(Path(os.environ.get("WINCON_CACHE") or "~/.cache/wincon").expanduser()))


def load_versions() -> dict[str, Any]:
    """The pinned versions, read from ``versions.toml``."""
    with VERSIONS_FILE.open("rb") as fh:
        return tomllib.load(fh)


def versions_key() -> str:
    """A short hash of ``versions.toml``'s contents: the binary cache key."""
    return hashlib.sha256(VERSIONS_FILE.read_bytes()).hexdigest()[:16]


def bin_dir() -> Path:
    """The directory the binaries of the pinned versions are (or will be) built into."""
    return cache_root() / "bin" / versions_key()


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
