"""Registry credentials, read the way container tools read them (issue 42 item 4).

Two sources, as a user of docker, crane or containerd already has them:

- the docker config file: ``--docker-config PATH`` (a config.json, or a directory holding one, as docker's own
  ``--config``), else ``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``; its ``auths`` entries, each
  keyed by a registry host (``host[:port]``, ``https://host/...``; docker hub's ``https://index.docker.io/v1/``),
  with a base64 ``auth`` (``user:password``), or ``username`` and ``password``, or an ``identitytoken`` (an OAuth2
  refresh token, exchanged at the registry's token service as docker does). A ``credHelpers`` entry for the host,
  or a ``credsStore``, keeps the secret in a helper program this command does not run: that is reported as such,
  naming the fix, never silently read as "no credentials".
- a pull secret of the cluster (type ``kubernetes.io/dockerconfigjson``: the same document under
  ``.dockerconfigjson``; the older ``kubernetes.io/dockercfg`` too, its ``auths`` at the top level), named
  ``--image-pull-secret NAMESPACE/NAME`` or ``NAME`` (then in the ``default`` namespace).

A registry that asks for credentials none of these give, or refuses those given, is a :class:`RegistryAuthError`
(exit 12) naming the registry, where the credentials came from and the fix; where only a credential helper
holds them, the registry is read anonymously and, if it refuses, the error names that helper.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wincon.commandline.errors import ExitCode, UsageError, WinconError

DEFAULT_SECRET_NAMESPACE = "default"
DOCKER_HUB_KEYS = ("index.docker.io", "docker.io", "registry-1.docker.io")
CREDENTIALS_FIX = (
    "give this machine the registry's credentials as docker does: `docker login HOST` (or a config.json whose "
    '"auths" has HOST) read from --docker-config, $DOCKER_CONFIG or ~/.docker/config.json, or name the pull secret '
    "of the cluster with --image-pull-secret NAMESPACE/NAME"
)


class RegistryAuthError(WinconError):
    """The registry wants credentials that were not given, or refused those given."""

    exit_code = ExitCode.REGISTRY_AUTH


@dataclass(frozen=True)
class Credential:
    """One registry's credentials: a user and password, or an identity (refresh) token."""

    username: str = ""
    password: str = ""
    identity_token: str = ""
    source: str = ""  # where they were read: for messages, never the secret itself

    def basic(self) -> str:
        """The ``Authorization`` header value of HTTP basic authentication."""
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


@dataclass(frozen=True)
class Credentials:
    """The credentials of one docker config document, by registry host."""

    auths: dict[str, Credential] = field(default_factory=dict)
    helpers: dict[str, str] = field(default_factory=dict)  # host -> credential helper (credHelpers)
    store: str = ""  # credsStore
    source: str = ""  # "docker config PATH", "pull secret NS/NAME", or "" where nothing was found

    def for_host(self, host: str) -> Credential | None:
        """The ``auths`` entry of ``host`` (docker hub's keys are one registry), None without one."""
        for key in DOCKER_HUB_KEYS if host in DOCKER_HUB_KEYS else (host,):
            if key in self.auths:
                return self.auths[key]
        return None

    def helper_for(self, host: str) -> str:
        """Where a credential helper, which wincon does not run, holds ``host``'s credentials (a ``credHelpers``
        entry, else the ``credsStore``); "" where none does. The registry is then read anonymously, and this is
        said if it refuses."""
        keys = DOCKER_HUB_KEYS if host in DOCKER_HUB_KEYS else (host,)
        helper = next((self.helpers[k] for k in keys if k in self.helpers), "")
        if helper:
            return f"docker-credential-{helper} (credHelpers entry of {self.source})"
        return f"docker-credential-{self.store} (credsStore of {self.source})" if self.store else ""


HELPER_FIX = (
    "put {host}'s credentials in the auths of a config.json that names no credsStore/credHelpers and pass it with "
    "--docker-config (`DOCKER_CONFIG=DIR docker login {host}` writes one), or name the cluster's pull secret with "
    "--image-pull-secret NAMESPACE/NAME"
)


def registry_key(key: str) -> str:
    """The host[:port] an ``auths`` key names (``https://host/v1/`` -> ``host``)."""
    text = key.strip()
    if "://" in text:
        text = urllib.parse.urlsplit(text).netloc
    return text.split("/", 1)[0].lower()


def parse_config(document: Any, source: str) -> Credentials:
    """The credentials of a docker config document (config.json or a pull secret's .dockerconfigjson)."""
    if not isinstance(document, dict):
        raise UsageError(f"{source} is not a JSON object", 'give a docker config.json ({"auths": {...}})')
    auths_doc = document.get("auths")
    if auths_doc is None and "credHelpers" not in document and "credsStore" not in document:
        # the older .dockercfg layout: the auths entries at the top level
        auths_doc = {k: v for k, v in document.items() if isinstance(v, dict)}
    auths: dict[str, Credential] = {}
    for key, entry in (auths_doc or {}).items():
        if not isinstance(entry, dict):
            raise UsageError(f"{source}: auths[{key!r}] is not an object", "fix the file (`docker login` writes it)")
        credential = _credential(key, entry, source)
        if credential is not None:
            auths[registry_key(key)] = credential
    helpers = {registry_key(k): str(v) for k, v in (document.get("credHelpers") or {}).items()}
    return Credentials(auths, helpers, str(document.get("credsStore") or ""), source)


def _credential(key: str, entry: dict[str, Any], source: str) -> Credential | None:
    where = f"{source} auths[{key!r}]"
    token = str(entry.get("identitytoken") or "")
    username, password = str(entry.get("username") or ""), str(entry.get("password") or "")
    if entry.get("auth"):
        try:
            decoded = base64.b64decode(str(entry["auth"]), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{where}: its auth is not base64 of user:password ({exc})",
                "log in again (`docker login`) or write base64 of USER:PASSWORD there",
            ) from exc
        username, sep, password = decoded.partition(":")
        if not sep:
            raise UsageError(f"{where}: its auth decodes to no user:password pair", "log in again (`docker login`)")
    if not (username and (password or token)) and not token:
        return None  # an entry without a secret (docker leaves {} behind after a helper login)
    return Credential(username, password, token, where)


def config_path(explicit: str | None = None) -> Path | None:
    """The docker config file to read: ``explicit`` (a file, or a directory holding config.json), else
    $DOCKER_CONFIG/config.json, else ~/.docker/config.json; None where the default ones do not exist."""
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise UsageError(
                f"docker config {path} does not exist",
                "pass --docker-config a config.json (or its directory) that `docker login` wrote",
            )
        return path
    directory = os.environ.get("DOCKER_CONFIG")
    path = Path(directory).expanduser() / "config.json" if directory else Path("~/.docker/config.json").expanduser()
    return path if path.is_file() else None


def load_docker_config(explicit: str | None = None) -> Credentials:
    """The credentials of the docker config file (:func:`config_path`); none when there is no such file."""
    path = config_path(explicit)
    if path is None:
        return Credentials()
    source = f"docker config {path}"
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{source} cannot be read as JSON: {exc}", "fix or remove the file") from exc
    return parse_config(document, source)


def split_secret(spec: str) -> tuple[str, str]:
    """(namespace, name) of ``NAMESPACE/NAME`` or ``NAME`` (then the default namespace)."""
    namespace, _, name = spec.rpartition("/")
    if not name or "/" in namespace:
        raise UsageError(f"--image-pull-secret {spec!r} is not NAME or NAMESPACE/NAME", "name one secret")
    return namespace or DEFAULT_SECRET_NAMESPACE, name


def read_secret(api_client: Any, spec: str) -> dict[str, Any]:
    """The pull secret ``spec`` names as a plain dict (type and data), read from the cluster: UsageError when it
    is missing or of another type."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from wincon.cluster.client import call

    namespace, name = split_secret(spec)
    try:
        secret = call(client.CoreV1Api(api_client).read_namespaced_secret, name, namespace, _request_timeout=15)
    except ApiException as exc:
        if exc.status in (403, 404):
            raise UsageError(
                f"the pull secret {namespace}/{name} cannot be read ({exc.status} {exc.reason})",
                f"create it (kubectl create secret docker-registry {name} -n {namespace} --docker-server=HOST "
                "--docker-username=USER --docker-password=PASSWORD) and grant the runner `get` on secrets there",
            ) from exc
        raise
    if secret.type not in ("kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"):
        raise UsageError(
            f"the secret {namespace}/{name} is of type {secret.type}, not kubernetes.io/dockerconfigjson",
            "name a secret that `kubectl create secret docker-registry` made",
        )
    return {"type": secret.type, "data": dict(secret.data or {})}


def secret_credentials(secret: dict[str, Any], spec: str) -> Credentials:
    """The credentials of a pull secret read by :func:`read_secret`."""
    key = ".dockerconfigjson" if secret["type"] == "kubernetes.io/dockerconfigjson" else ".dockercfg"
    source = f"pull secret {'/'.join(split_secret(spec))}"
    try:
        document = json.loads(base64.b64decode(secret["data"].get(key, "")))
    except (ValueError, binascii.Error) as exc:
        raise UsageError(f"{source}: its {key} is not JSON", "recreate the secret") from exc
    return parse_config(document, source)
