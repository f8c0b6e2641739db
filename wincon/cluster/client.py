"""Connecting to the cluster: kubeconfig loading with clear errors, and the retry policy.

Retries cover transient API errors only (429, 5xx, conflicts, connection resets), bounded in count and
time. Anything else surfaces at once: a 403 is a permissions problem, not something to wait out.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from wincon.commandline.errors import InfrastructureError, KubeconfigError

T = TypeVar("T")

# The Configuration fields that name a file the kubernetes client may have written itself: a kubeconfig's embedded
# certificate-authority-data, client-certificate-data and client-key-data (kube_config.py FileOrData.as_file).
CREDENTIAL_FIELDS = ("ssl_ca_cert", "cert_file", "key_file")

TRANSIENT_STATUSES = frozenset({0, 409, 429, 500, 502, 503, 504})
RETRY_ATTEMPTS = 6
RETRY_SECONDS = 60.0


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: throttling, server errors, conflicts and dropped connections."""
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(
        exc,
        (
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.MaxRetryError,
            urllib3.exceptions.NewConnectionError,
            ConnectionError,
        ),
    )


def retrying(attempts: int = RETRY_ATTEMPTS, seconds: float = RETRY_SECONDS) -> Retrying:
    """The one retry policy of the suite: transient errors only, exponential backoff with jitter."""
    return Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts) | stop_after_delay(seconds),
        wait=wait_exponential_jitter(multiplier=0.5, max=8.0),
        reraise=True,
    )


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call an API function under the retry policy.

    A create whose response was lost in transit (the connection broke after the request went out: the API
    server may have stored the object) and whose retry then hears 409 AlreadyExists returns the stored object,
    read back by name: that object is the one the lost attempt created, not a conflict to wait out.
    """
    lost = False  # an earlier attempt's request went out and its answer never came back
    for attempt in retrying():
        with attempt:
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                if lost and exc.status == 409:  # a create's 409 is AlreadyExists; other calls read back nothing
                    stored = _read_back(fn, args, kwargs)
                    if stored is not None:
                        return stored  # type: ignore[no-any-return]
                raise
            except Exception as exc:
                lost = lost or (is_transient(exc) and not _never_sent(exc))
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _never_sent(exc: BaseException) -> bool:
    """A connection that was refused or never made: the request did not reach the server."""
    reason = getattr(exc, "reason", None) if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    return isinstance(reason, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError))


def _read_back(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The object a ``create_*`` call names, read with the matching ``read_*`` call; None where it cannot say
    (not a create, a dry run, no name in the body, no read function)."""
    name = getattr(fn, "__name__", "")
    api = getattr(fn, "__self__", None)
    read = getattr(api, "read_" + name.removeprefix("create_"), None) if name.startswith("create_") else None
    if read is None or kwargs.get("dry_run"):
        return None
    body = kwargs.get("body", args[-1] if args else None)
    meta = body.get("metadata") if isinstance(body, dict) else getattr(body, "metadata", None)
    obj = meta.get("name") if isinstance(meta, dict) else getattr(meta, "name", None)
    if not obj:
        return None
    if name.startswith("create_namespaced_"):
        namespace = kwargs.get("namespace", args[0] if len(args) > 1 else None)
        return read(obj, namespace)
    return read(obj)


# content -> the path a process reads it at (its in-memory file, or a file in _held_dir); kept open for the
# process's life: urllib3 and the websocket client (exec, port-forward) read them at each new TLS connection.
_held: dict[bytes, str] = {}
_held_fds: list[int] = []
_held_dir: list[str] = []


def _hold(content: bytes) -> str:
    """A path this process can read ``content`` at for its whole life, that leaves nothing behind on any exit.

    Linux: an anonymous in-memory file (memfd_create), read through /proc/self/fd: never on disk, gone with the
    process however it ends (a SIGKILL, an xdist worker killed on interrupt, `timeout`). Elsewhere: a file in a
    private directory of the process removed at a normal exit, as the client itself does.
    """
    if content in _held:
        return _held[content]
    path = ""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("wincon-kubeconfig-credential")  # MFD_CLOEXEC: no child process inherits it
        os.write(fd, content)
        path = f"/proc/self/fd/{fd}"
        if Path(path).is_file():
            _held_fds.append(fd)
        else:  # no /proc (a sandbox without it): the file fallback below
            os.close(fd)
            path = ""
    if not path:
        if not _held_dir:
            _held_dir.append(tempfile.mkdtemp(prefix="wincon-kubeconfig-"))
            atexit.register(shutil.rmtree, _held_dir[0], True)
        handle, path = tempfile.mkstemp(dir=_held_dir[0])
        with os.fdopen(handle, "wb") as out:
            out.write(content)
    _held[content] = path
    return path


def load_kubeconfig(path: str, context: str | None, configuration: client.Configuration) -> None:
    """``config.load_kube_config`` into ``configuration``, without leaving the kubeconfig's credentials in a
    temporary directory.

    The client writes a kubeconfig's embedded certificate-authority-data, client-certificate-data and
    client-key-data to files of tempfile.mkstemp (kube_config.py _create_temp_file_with_content) and removes them
    only at a normal exit (atexit), so every process killed mid-run (an xdist worker on interrupt, `timeout`,
    SIGKILL) left its PEM files, the client key among them, in /tmp. Here the client writes them into a private
    directory of this call, which is removed as soon as the load returns; the configuration then names copies
    held in memory (``_hold``). Certificate files the kubeconfig names by path are left as they are. (A client
    certificate an exec plugin hands over later, at a credential refresh, is still written by the client itself,
    into that private directory's path, and removed at a normal exit.)
    """
    scratch = tempfile.mkdtemp(prefix="wincon-kubeconfig-load-")
    try:
        config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration, temp_file_path=scratch
        )
        for field in CREDENTIAL_FIELDS:
            value = getattr(configuration, field, None)
            if isinstance(value, str) and os.path.dirname(os.path.abspath(value)) == os.path.abspath(scratch):
                setattr(configuration, field, _hold(Path(value).read_bytes()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


DEFAULT_KUBECONFIG = "~/.kube/config"  # kubectl's (clientcmd.RecommendedHomeFile), also Sonobuoy's and Hydrophone's


def default_kubeconfig() -> str | None:
    """``~/.kube/config`` when it is a file: the kubeconfig kubectl reads when neither a flag nor $KUBECONFIG
    names one."""
    path = Path(DEFAULT_KUBECONFIG).expanduser()
    return str(path) if path.is_file() else None


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An ApiClient for the named kubeconfig and context, else $KUBECONFIG, else ~/.kube/config when it exists,
    else in-cluster config (kubectl's order).

    Raises KubeconfigError naming the file and the fix when the configuration is missing or malformed.
    """
    path = kubeconfig or os.environ.get("KUBECONFIG") or default_kubeconfig()
    configuration = client.Configuration()
    if path:
        # KUBECONFIG may list several files; the client merges them. Check each exists first.
        for part in path.split(os.pathsep):
            if part and not Path(part).expanduser().is_file():
                raise KubeconfigError(
                    f"kubeconfig {part} does not exist",
                    "pass --kubeconfig PATH (or set KUBECONFIG) to a readable kubeconfig file",
                )
        try:
            load_kubeconfig(path, context, configuration)
        except (ConfigException, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise KubeconfigError(
                f"kubeconfig {path} is not usable{f' with context {context!r}' if context else ''}: {exc}",
                "check the file with `kubectl config view --kubeconfig PATH`, or name a valid --context",
            ) from exc
        except Exception as exc:  # yaml errors and the like surface as many types
            raise KubeconfigError(
                f"kubeconfig {path} could not be parsed: {type(exc).__name__}: {exc}",
                "point --kubeconfig at a valid kubeconfig file",
            ) from exc
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise KubeconfigError(
                f"no kubeconfig given, none at {DEFAULT_KUBECONFIG}, and not running inside a cluster",
                "pass --kubeconfig PATH, set KUBECONFIG, or run `wincon cluster up` for the local cluster",
            ) from exc
    configuration.retries = 1  # tenacity owns retries; urllib3's own would multiply them
    return client.ApiClient(configuration)


def check_reachable(api_client: client.ApiClient, attempts: int = 3) -> str:
    """The server's version, or InfrastructureError naming the server when it cannot be reached."""
    host = api_client.configuration.host
    try:
        for attempt in retrying(attempts=attempts, seconds=20):
            with attempt:
                return client.VersionApi(api_client).get_code(_request_timeout=10).git_version
    except ApiException as exc:
        if exc.status in (401, 403):
            raise KubeconfigError(
                f"the API server at {host} refused the credentials ({exc.status} {exc.reason})",
                "refresh the credentials in the kubeconfig, or name another --context",
            ) from exc
        raise InfrastructureError(
            f"the API server at {host} answered {exc.status} {exc.reason}",
            "check the cluster's health; this is not a Windows node failure",
        ) from exc
    except Exception as exc:
        raise InfrastructureError(
            f"the API server at {host} is unreachable: {type(exc).__name__}",
            "check the cluster is running and the kubeconfig points at it (`wincon cluster up` for the local one)",
        ) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def connect(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An ApiClient for a cluster that answers: KubeconfigError or InfrastructureError otherwise."""
    api_client = load_api_client(kubeconfig, context)
    check_reachable(api_client)
    return api_client
