"""`wincon publish RESULTS --to DEST`: copy a finished run where dashboards read it.

DEST is one of

* a directory: the run lands in ``DEST/<build-id>/`` (DEST plays ``logs/<job>``);
* ``gs://bucket/logs/<job>``: objects ``logs/<job>/<build-id>/...``, the layout TestGrid's updater
  reads, plus ``logs/<job>/latest-build.txt`` as Prow writes it;
* ``http(s)://host[:port][/allure-docker-service]``: an allure-docker-service; the run's
  ``allure-results/`` go to ``POST /send-results``, then ``GET /generate-report`` builds the report.

Every destination is idempotent: object names come from the run (its build id and its files), and a
file already there with the same checksum is skipped, so re-running a publish that failed half-way
finishes the job without duplicates. ``finished.json`` goes last, because TestGrid reads a build as
finished once it exists. Transient errors (connection resets, timeouts, HTTP 429/5xx) are retried with
exponential backoff (tenacity); anything else stops at once, naming the file and why.

Credentials come from the environment only and are never printed: Google's usual application default
credentials (``GOOGLE_APPLICATION_CREDENTIALS``...) for gs://, ``WINCON_ALLURE_USER`` and
``WINCON_ALLURE_PASSWORD`` for an allure-docker-service with security enabled.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import requests
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from wincon.commandline.errors import PublishError, UsageError
from wincon.results.artifacts import LATEST_BUILD, Run, atomic_write_bytes, load_run

T = TypeVar("T")
CREDENTIAL_ENV = ("WINCON_ALLURE_USER", "WINCON_ALLURE_PASSWORD")
FIX = "re-run the same `wincon publish` command: files already published are skipped, the rest are sent"
_BATCH_BYTES = 4 * 1024 * 1024


@dataclass
class RetryPolicy:
    attempts: int = 5
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_wait: float = 30.0


@dataclass
class Summary:
    destination: str
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    report_url: str = ""

    def render(self) -> str:
        text = (
            f"published to {self.destination}: {len(self.uploaded)} files sent, "
            f"{len(self.skipped)} already there (same checksum)"
        )
        if self.report_url:
            text += f"\nreport: {self.report_url}"
        return text


class TransientError(Exception):
    """A failure worth retrying: the same request may well succeed a moment later."""


def redact(text: str) -> str:
    """``text`` without credentials: URL user-info and the values of the credential variables."""
    text = re.sub(r"(?<=://)[^/@\s]+@", "***@", text)
    for name in CREDENTIAL_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 3:
            text = text.replace(value, "***")
    return text


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (TransientError, requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError)):
        return True
    try:
        from google.api_core import exceptions as gexc
    except ImportError:  # pragma: no cover - google-cloud-storage is a dependency
        return False
    return isinstance(
        exc,
        (
            gexc.TooManyRequests,
            gexc.InternalServerError,
            gexc.BadGateway,
            gexc.ServiceUnavailable,
            gexc.GatewayTimeout,
            gexc.RetryError,
        ),
    )


def _with_retries(policy: RetryPolicy, what: str, action: Callable[[], T]) -> T:
    """Run ``action``, retrying transient errors; raise PublishError naming ``what`` when it gives up."""
    retrying = Retrying(
        stop=stop_after_attempt(max(1, policy.attempts)),
        wait=wait_exponential(multiplier=policy.backoff, min=policy.backoff, max=policy.max_wait),
        retry=retry_if_exception(_is_transient),
        reraise=True,
    )
    try:
        return retrying(action)
    except PublishError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes one clear message
        tries = f" after {policy.attempts} attempts" if _is_transient(exc) else ""
        reason = redact(f"{type(exc).__name__}: {exc}".strip())
        raise PublishError(f"{what} failed{tries}: {reason}", FIX) from None


def _files(run: Run) -> list[Path]:
    """The run's files, finished.json last (readers take it as the sign the build is complete)."""
    files = sorted(
        p
        for p in run.path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(run.path).parts)
    )
    finished = run.path / "finished.json"
    return [p for p in files if p != finished] + [finished]


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return base64.b64encode(digest.digest()).decode()


def _content_type(path: Path) -> str:
    return {
        ".json": "application/json",
        ".xml": "application/xml",
        ".txt": "text/plain; charset=utf-8",
        ".html": "text/html; charset=utf-8",
        ".js": "application/javascript",
        ".css": "text/css",
        ".png": "image/png",
    }.get(path.suffix, "application/octet-stream")


# ----------------------------------------------------------------------------- a directory


def publish_directory(run: Run, root: Path, policy: RetryPolicy) -> Summary:
    target = root / run.build_id
    summary = Summary(str(target))
    for path in _files(run):
        rel = path.relative_to(run.path).as_posix()
        dest = target / rel
        if dest.is_file() and dest.stat().st_size == path.stat().st_size and _md5(dest) == _md5(path):
            summary.skipped.append(rel)
            continue

        def copy(path: Path = path, dest: Path = dest) -> None:
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
            os.close(fd)
            try:
                shutil.copyfile(path, tmp)
                os.replace(tmp, dest)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

        _with_retries(policy, f"copying {rel} to {dest}", copy)
        summary.uploaded.append(rel)
    latest = root / LATEST_BUILD
    current = latest.read_text().strip() if latest.is_file() else ""
    if not current.isdigit() or int(current) < int(run.build_id):
        atomic_write_bytes(latest, f"{run.build_id}\n".encode())
    return summary


# ----------------------------------------------------------------------------- Google Cloud Storage


def _storage_client() -> Any:
    from google.cloud import storage

    if os.environ.get("STORAGE_EMULATOR_HOST"):
        from google.auth.credentials import AnonymousCredentials

        return storage.Client(
            project=os.environ.get("GOOGLE_CLOUD_PROJECT", "wincon"), credentials=AnonymousCredentials()
        )
    return storage.Client(project=os.environ.get("GOOGLE_CLOUD_PROJECT"))


def publish_gcs(run: Run, url: str, policy: RetryPolicy) -> Summary:
    parts = urlsplit(url)
    bucket_name, job_prefix = parts.netloc, parts.path.strip("/")
    if not bucket_name:
        raise UsageError(f"{url}: no bucket name", "use gs://BUCKET/logs/JOB")
    prefix = f"{job_prefix}/{run.build_id}" if job_prefix else run.build_id
    summary = Summary(f"gs://{bucket_name}/{prefix}")
    client = _with_retries(policy, "connecting to Google Cloud Storage", _storage_client)
    bucket = client.bucket(bucket_name)
    existing: dict[str, str] = _with_retries(
        policy,
        f"listing gs://{bucket_name}/{prefix}/",
        lambda: {b.name: b.md5_hash for b in client.list_blobs(bucket_name, prefix=prefix + "/")},
    )
    for path in _files(run):
        rel = path.relative_to(run.path).as_posix()
        name = f"{prefix}/{rel}"
        if existing.get(name) and existing[name] == _md5(path):
            summary.skipped.append(rel)
            continue

        def upload(path: Path = path, name: str = name) -> None:
            bucket.blob(name).upload_from_filename(str(path), content_type=_content_type(path))

        _with_retries(policy, f"uploading {rel} to gs://{bucket_name}/{name}", upload)
        summary.uploaded.append(rel)

    latest_name = f"{job_prefix}/{LATEST_BUILD}" if job_prefix else LATEST_BUILD

    def bump_latest() -> None:
        blob = bucket.blob(latest_name)
        current = blob.download_as_text().strip() if blob.exists() else ""
        if not current.isdigit() or int(current) < int(run.build_id):
            blob.upload_from_string(f"{run.build_id}\n", content_type="text/plain")

    _with_retries(policy, f"updating gs://{bucket_name}/{latest_name}", bump_latest)
    return summary


# ----------------------------------------------------------------------------- allure-docker-service


def _raise_for(response: requests.Response, what: str) -> None:
    if response.status_code == 429 or response.status_code >= 500:
        raise TransientError(f"HTTP {response.status_code} from {what}: {response.text[:200]}")
    if response.status_code >= 400:
        detail = response.text[:300].strip()
        raise PublishError(f"{what} was refused: HTTP {response.status_code}: {redact(detail)}", FIX)


def _batches(files: Iterable[Path]) -> Iterable[list[Path]]:
    batch: list[Path] = []
    size = 0
    for path in files:
        length = path.stat().st_size
        if batch and size + length > _BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += length
    if batch:
        yield batch


def publish_allure_service(
    run: Run, url: str, policy: RetryPolicy, project: str = "wincon", timeout: float = 60.0
) -> Summary:
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise UsageError(
            "the allure-docker-service URL carries credentials (user:password@host)",
            "remove them from the URL and set WINCON_ALLURE_USER and WINCON_ALLURE_PASSWORD instead",
        )
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    results = run.path / "allure-results"
    files = sorted(p for p in results.glob("*") if p.is_file()) if results.is_dir() else []
    if not files:
        raise PublishError(
            f"{results}: no Allure results to send",
            "run the suite with `wincon run` (or pytest --alluredir RESULTS/allure-results)",
        )
    summary = Summary(f"{base} (project {project})")
    session = requests.Session()
    user, password = (os.environ.get(name) for name in CREDENTIAL_ENV)
    if user and password:

        def login() -> None:
            response = session.post(f"{base}/login", json={"username": user, "password": password}, timeout=timeout)
            _raise_for(response, f"logging in to {base} as the user in WINCON_ALLURE_USER")
            csrf = session.cookies.get("csrf_access_token")
            if csrf:
                session.headers["X-CSRF-TOKEN"] = csrf

        _with_retries(policy, f"logging in to {base}", login)

    def ensure_project() -> None:
        response = session.get(f"{base}/projects/{project}", timeout=timeout)
        if response.status_code == 404:
            created = session.post(f"{base}/projects", json={"id": project}, timeout=timeout)
            _raise_for(created, f"creating project {project} on {base}")
            return
        _raise_for(response, f"reading project {project} on {base}")

    _with_retries(policy, f"checking project {project} on {base}", ensure_project)
    for batch in _batches(files):
        names = ", ".join(p.name for p in batch[:3]) + (f" and {len(batch) - 3} more" if len(batch) > 3 else "")

        def send(batch: list[Path] = batch, names: str = names) -> None:
            body = {
                "results": [
                    {"file_name": p.name, "content_base64": base64.b64encode(p.read_bytes()).decode()} for p in batch
                ]
            }
            response = session.post(f"{base}/send-results", params={"project_id": project}, json=body, timeout=timeout)
            _raise_for(response, f"sending {names} to {base}/send-results")

        _with_retries(policy, f"sending allure-results/{names} to {base}/send-results", send)
        summary.uploaded.extend(f"allure-results/{p.name}" for p in batch)

    def generate() -> str:
        response = session.get(
            f"{base}/generate-report",
            params={
                "project_id": project,
                "execution_name": f"wincon {run.label}",
                "execution_from": str(run.path),
                "execution_type": "wincon",
            },
            timeout=timeout,
        )
        _raise_for(response, f"{base}/generate-report")
        try:
            return str(response.json().get("data", {}).get("report_url", ""))
        except ValueError:
            return ""

    summary.report_url = _with_retries(policy, f"generating the report on {base}", generate)
    return summary


# ----------------------------------------------------------------------------- entry point


def publish(results: Path, dest: str, policy: RetryPolicy | None = None, project: str = "wincon") -> Summary:
    policy = policy or RetryPolicy()
    run = load_run(results)  # a half-written run is refused (exit 8) rather than shown as "running"
    if dest.startswith("gs://"):
        return publish_gcs(run, dest, policy)
    if dest.startswith(("http://", "https://")):
        return publish_allure_service(run, dest, policy, project=project)
    if "://" in dest:
        raise UsageError(
            f"{redact(dest)}: unknown destination scheme", "use a directory, gs://BUCKET/logs/JOB or an http(s) URL"
        )
    return publish_directory(run, Path(dest), policy)
