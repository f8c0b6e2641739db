"""`wincon publish` to a directory, to GCS (gcp-storage-emulator) and to an allure-docker-service.

The allure-docker-service here is an HTTP server started by the test that implements the service's
contract: POST /login (JWT cookies + CSRF token when security is on), GET/POST /projects,
POST /send-results?project_id= with {"results": [{"file_name", "content_base64"}]}, and
GET /generate-report?project_id=.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.results import artifacts
from wincon.results.model import Verdict

SECRET = "s3cr3t-Pa55word-for-the-test"


@pytest.fixture
def run_dir(tmp_path):
    cases = [
        synthetic.case("suites/networking/test_a.py::test_ok", Verdict.PASSED),
        synthetic.case("suites/networking/test_a.py::test_ping", Verdict.XFAILED, limitation="icmp"),
    ]
    path = artifacts.write_run(
        tmp_path / "results" / "r1", cases, start=1_790_000_000, result="SUCCESS", profile=synthetic.profile()
    )
    allure = path / "allure-results"
    allure.mkdir()
    for i in range(5):
        (allure / f"{i:08d}-0000-4000-8000-000000000000-result.json").write_text(json.dumps({"name": f"t{i}"}))
    (allure / "environment.properties").write_text("cni=flannel\n")
    return path


def local_files(run_dir):
    return sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ----------------------------------------------------------------------------- directory


def test_directory_publish_is_complete_and_idempotent(run_dir, tmp_path, capsys):
    dest = tmp_path / "logs" / "wincon-nightly"
    assert main(["publish", str(run_dir), "--to", str(dest)]) == ExitCode.OK
    count = len(local_files(run_dir))
    assert f"{count} files sent, 0 already there" in capsys.readouterr().out
    target = dest / "1790000000"
    assert local_files(target) == local_files(run_dir)
    assert (dest / "latest-build.txt").read_text().strip() == "1790000000"
    assert main(["publish", str(run_dir), "--to", str(dest)]) == ExitCode.OK
    assert f"0 files sent, {count} already there" in capsys.readouterr().out
    assert [p.name for p in dest.iterdir() if p.is_dir()] == ["1790000000"]


def test_a_half_written_run_is_not_published(run_dir, tmp_path, capsys):
    (run_dir / "finished.json").unlink()
    assert main(["publish", str(run_dir), "--to", str(tmp_path / "dest")]) == ExitCode.RESULTS
    assert "finished.json: missing" in capsys.readouterr().err
    assert not (tmp_path / "dest").exists()


# ----------------------------------------------------------------------------- Google Cloud Storage


@pytest.fixture
def gcs(monkeypatch):
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket="wincon-results")
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    try:
        yield
    finally:
        server.stop()


def bucket_names():
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="test", credentials=AnonymousCredentials())
    return sorted(blob.name for blob in client.list_blobs("wincon-results"))


def test_gcs_publish_uses_the_testgrid_layout(gcs, run_dir, capsys):
    assert main(["publish", str(run_dir), "--to", "gs://wincon-results/logs/wincon-nightly"]) == ExitCode.OK
    prefix = "logs/wincon-nightly/1790000000/"
    names = bucket_names()
    assert "logs/wincon-nightly/latest-build.txt" in names
    assert sorted(n.removeprefix(prefix) for n in names if n.startswith(prefix)) == local_files(run_dir)
    assert any(n.startswith(prefix + "artifacts/junit_wincon_") for n in names)


def test_gcs_transient_errors_are_retried(gcs, run_dir, monkeypatch, capsys):
    from google.api_core.exceptions import ServiceUnavailable
    from google.cloud.storage import Blob

    real = Blob.upload_from_filename
    failures = {"count": 0}

    def flaky(self, filename, *args, **kwargs):
        if filename.endswith("build-log.txt") and failures["count"] < 2:
            failures["count"] += 1
            raise ServiceUnavailable("backend busy")
        return real(self, filename, *args, **kwargs)

    monkeypatch.setattr(Blob, "upload_from_filename", flaky)
    assert main(["publish", str(run_dir), "--to", "gs://wincon-results/logs/j", "--backoff", "0.01"]) == ExitCode.OK
    assert failures["count"] == 2
    assert "logs/j/1790000000/build-log.txt" in bucket_names()


def test_gcs_failed_upload_names_the_file_and_a_rerun_finishes_without_duplicates(gcs, run_dir, monkeypatch, capsys):
    from google.api_core.exceptions import Forbidden
    from google.cloud.storage import Blob

    real = Blob.upload_from_filename

    def refuse_log(self, filename, *args, **kwargs):
        if filename.endswith("build-log.txt"):
            raise Forbidden("caller does not have storage.objects.create access")
        return real(self, filename, *args, **kwargs)

    monkeypatch.setattr(Blob, "upload_from_filename", refuse_log)
    url = "gs://wincon-results/logs/j"
    assert main(["publish", str(run_dir), "--to", url, "--backoff", "0.01"]) == ExitCode.PUBLISH
    err = capsys.readouterr().err
    assert "uploading build-log.txt to gs://wincon-results/logs/j/1790000000/build-log.txt failed" in err
    assert "403" in err and "storage.objects.create" in err and "re-run the same" in err
    # finished.json goes last: a reader never sees this build as finished while files are missing.
    assert "logs/j/1790000000/finished.json" not in bucket_names()
    monkeypatch.setattr(Blob, "upload_from_filename", real)
    assert main(["publish", str(run_dir), "--to", url]) == ExitCode.OK
    out = capsys.readouterr().out
    names = bucket_names()
    assert len(names) == len(set(names)) == len(local_files(run_dir)) + 1  # + latest-build.txt
    assert {n.split("/")[2] for n in names if n.count("/") > 2} == {"1790000000"}
    # The first attempt stopped at build-log.txt; the rest (build-log, started, finished) are sent now.
    assert f"3 files sent, {len(local_files(run_dir)) - 3} already there" in out


# ----------------------------------------------------------------------------- allure-docker-service


class AllureService:
    """The allure-docker-service contract, in memory, with fault injection."""

    def __init__(self, user=None, password=None):
        self.user, self.password = user, password
        self.projects: dict[str, dict[str, bytes]] = {}
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.fail_next: list[int] = []  # statuses the next send-results calls get
        self.refuse_file = ""  # a file name send-results answers 400 for
        self.reports = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/allure-docker-service"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self):
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, body, cookies=()):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for cookie in cookies:
                    self.send_header("Set-Cookie", cookie)
                self.end_headers()
                self.wfile.write(data)

            def authorised(self, method):
                if not service.user:
                    return True
                cookie = self.headers.get("Cookie", "")
                if "access_token_cookie=jwt-ok" not in cookie:
                    return False
                return method == "GET" or self.headers.get("X-CSRF-TOKEN") == "csrf-ok"

            def route(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                service.requests.append((method, self.path, dict(self.headers), raw))
                parts = urlsplit(self.path)
                path = parts.path.removeprefix("/allure-docker-service")
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if path == "/login" and method == "POST":
                    creds = json.loads(raw)
                    if (creds.get("username"), creds.get("password")) != (service.user, service.password):
                        return self.reply(401, {"meta_data": {"message": "Invalid username/password"}})
                    cookies = ["access_token_cookie=jwt-ok; Path=/", "csrf_access_token=csrf-ok; Path=/"]
                    return self.reply(200, {"data": {"csrf_access_token": "csrf-ok"}}, cookies)
                if not self.authorised(method):
                    return self.reply(401, {"meta_data": {"message": "Missing cookie or CSRF token"}})
                if path.startswith("/projects/") and method == "GET":
                    project = path.rsplit("/", 1)[1]
                    if project not in service.projects:
                        return self.reply(404, {"meta_data": {"message": f"project_id '{project}' not found"}})
                    return self.reply(200, {"data": {"project": {"id": project}}})
                if path == "/projects" and method == "POST":
                    service.projects.setdefault(json.loads(raw)["id"], {})
                    return self.reply(201, {"meta_data": {"message": "Project successfully created"}})
                if path == "/send-results" and method == "POST":
                    project = query.get("project_id", "default")
                    if project not in service.projects:
                        return self.reply(404, {"meta_data": {"message": f"project_id '{project}' not found"}})
                    if service.fail_next:
                        return self.reply(service.fail_next.pop(0), {"meta_data": {"message": "busy"}})
                    results = json.loads(raw)["results"]
                    if any(r["file_name"] == service.refuse_file for r in results):
                        return self.reply(400, {"meta_data": {"message": f"{service.refuse_file}: bad content"}})
                    for r in results:
                        service.projects[project][r["file_name"]] = base64.b64decode(r["content_base64"])
                    return self.reply(200, {"meta_data": {"message": "Results successfully sent"}})
                if path == "/generate-report" and method == "GET":
                    service.reports += 1
                    project = query["project_id"]
                    url = f"{service.url}/projects/{project}/reports/{service.reports}/index.html"
                    return self.reply(200, {"data": {"report_url": url}})
                return self.reply(404, {"meta_data": {"message": "no such endpoint"}})

            def do_GET(self):
                self.route("GET")

            def do_POST(self):
                self.route("POST")

        return Handler

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *args):
        self.server.shutdown()
        self.server.server_close()


def test_allure_service_receives_every_result_and_generates_the_report(run_dir, capsys):
    with AllureService() as service:
        assert main(["publish", str(run_dir), "--to", service.url, "--project", "nightly"]) == ExitCode.OK
        out = capsys.readouterr().out
    expected = {p.name: p.read_bytes() for p in (run_dir / "allure-results").iterdir()}
    assert service.projects["nightly"] == expected
    assert service.reports == 1
    assert f"report: {service.url}/projects/nightly/reports/1/index.html" in out


def test_allure_service_credentials_come_from_the_environment_and_are_never_shown(run_dir, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("WINCON_ALLURE_USER", "ci-bot")
    monkeypatch.setenv("WINCON_ALLURE_PASSWORD", SECRET)
    with AllureService("ci-bot", SECRET) as service:
        assert main(["publish", str(run_dir), "--to", service.url]) == ExitCode.OK
        service.refuse_file = "00000003-0000-4000-8000-000000000000-result.json"
        assert main(["publish", str(run_dir), "--to", service.url, "--backoff", "0"]) == ExitCode.PUBLISH
    captured = capsys.readouterr()
    assert service.projects["wincon"]  # logged in: uploads were accepted
    login = [r for r in service.requests if r[1].endswith("/login")]
    assert login and json.loads(login[0][3])["password"] == SECRET  # sent to the service, in the body only
    shown = captured.out + captured.err + caplog.text
    assert SECRET not in shown
    assert "00000003-0000-4000-8000-000000000000-result.json" in captured.err and "HTTP 400" in captured.err


def test_allure_service_wrong_password_is_named_without_the_password(run_dir, monkeypatch, capsys):
    monkeypatch.setenv("WINCON_ALLURE_USER", "ci-bot")
    monkeypatch.setenv("WINCON_ALLURE_PASSWORD", SECRET + "-wrong")
    with AllureService("ci-bot", SECRET) as service:
        assert main(["publish", str(run_dir), "--to", service.url, "--backoff", "0"]) == ExitCode.PUBLISH
    err = capsys.readouterr().err
    assert "logging in" in err and "HTTP 401" in err
    assert SECRET not in err


def test_credentials_in_the_url_are_refused_without_echoing_them(run_dir, capsys):
    assert main(["publish", str(run_dir), "--to", f"http://ci-bot:{SECRET}@127.0.0.1:9/x"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    assert "WINCON_ALLURE_PASSWORD" in captured.err


def test_allure_service_transient_errors_are_retried_and_a_failed_send_finishes_on_rerun(run_dir, capsys):
    with AllureService() as service:
        service.fail_next = [503, 502]
        assert main(["publish", str(run_dir), "--to", service.url, "--backoff", "0.01"]) == ExitCode.OK
        assert service.reports == 1
        service.projects.clear()
        service.fail_next = [503] * 3
        assert main(["publish", str(run_dir), "--to", service.url, "--retries", "3", "--backoff", "0"]) == 9
        err = capsys.readouterr().err
        assert "failed after 3 attempts" in err and "HTTP 503" in err and "send-results" in err
        assert service.reports == 1  # no report from a half-sent run
        assert main(["publish", str(run_dir), "--to", service.url]) == ExitCode.OK
    assert sorted(service.projects["wincon"]) == sorted(p.name for p in (run_dir / "allure-results").iterdir())
    assert service.reports == 2


def test_an_unreachable_service_is_named_after_the_retries(run_dir, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["publish", str(run_dir), "--to", url, "--retries", "2", "--backoff", "0"]) == ExitCode.PUBLISH
    err = capsys.readouterr().err
    assert f"checking project wincon on {url} failed after 2 attempts: ConnectionError" in err


def test_a_secured_service_without_credentials_in_the_environment_is_refused(run_dir, monkeypatch, capsys):
    monkeypatch.delenv("WINCON_ALLURE_USER", raising=False)
    monkeypatch.delenv("WINCON_ALLURE_PASSWORD", raising=False)
    with AllureService("ci-bot", SECRET) as service:
        assert main(["publish", str(run_dir), "--to", service.url, "--backoff", "0"]) == ExitCode.PUBLISH
    assert "was refused: HTTP 401" in capsys.readouterr().err
    assert not service.projects
