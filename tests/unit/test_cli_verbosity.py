"""`wincon -v` and `wincon -q` (issue 42, item 3): -v shows the programs wincon starts and the API requests it makes;
-q prints only errors and the command's summary line; `run` hands them on to pytest (docs/options.md).

Before: `wincon -v` and `wincon -q` were unknown options (exit 4)."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import synthetic
from wincon.cli import main
from wincon.commandline.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]
VERSION = {
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.4",
    "gitCommit": "0",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class _Api(http.server.BaseHTTPRequestHandler):
    """An API server that knows its version and has no objects."""

    def do_GET(self) -> None:
        body = VERSION if self.path.startswith("/version") else {"kind": "List", "apiVersion": "v1", "items": []}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    yield path, port
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_v_shows_each_api_request_with_its_answer(kubeconfig, capsys):
    path, port = kubeconfig
    assert main(["-v", "cleanup", "--kubeconfig", str(path)]) == ExitCode.OK  # an empty cluster: nothing to reap
    captured = capsys.readouterr()
    assert f"wincon: api: GET http://127.0.0.1:{port}/version/ 200" in captured.err, captured.err
    assert f"wincon: api: GET http://127.0.0.1:{port}/api/v1/namespaces" in captured.err, captured.err
    assert captured.out.splitlines()[-1].startswith("cleanup: 0 namespaces"), captured.out


def test_v_shows_the_registry_reads_too(kubeconfig, capsys):
    """The image verification reads registries with urllib.request, not the Kubernetes client's urllib3."""
    import urllib.request

    from wincon.commandline import verbosity

    _, port = kubeconfig
    stdout, stderr = sys.stdout, sys.stderr
    verbosity.verbose(1)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=10) as answer:
            assert answer.status == 200
    finally:
        verbosity.restore(stdout, stderr)
    assert f"wincon: api: GET http://127.0.0.1:{port}/v2/\n" in capsys.readouterr().err
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=10):  # after restore: silent
        pass
    assert "wincon: api:" not in capsys.readouterr().err


def test_without_v_no_request_is_shown(kubeconfig, capsys):
    path, _ = kubeconfig
    assert main(["cleanup", "--kubeconfig", str(path)]) == ExitCode.OK
    assert "wincon: api:" not in capsys.readouterr().err


def test_v_after_the_command_shows_the_programs_it_starts(tmp_path, capsys):
    """`plan` collects in a pytest of its own: -v names that command line."""
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(synthetic.profile("v1.34.4", 20348, "flannel", "vxlan")))
    code = main(["plan", "-v", "--profile-file", str(profile), "--", str(REPO / "suites/networking/test_egress.py")])
    captured = capsys.readouterr()
    assert code == ExitCode.OK, captured.err
    exec_lines = [line for line in captured.err.splitlines() if line.startswith("wincon: exec: ")]
    assert exec_lines and f"{sys.executable} -m pytest --collect-only" in exec_lines[0], captured.err
    assert "--profile-file" in exec_lines[0]
    assert "\nplan: " in captured.out  # -v adds to stderr; the plan itself is unchanged


def test_q_prints_only_the_summary_line(tmp_path, capsys):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(synthetic.profile("v1.34.4", 20348, "flannel", "vxlan")))
    assert main(["limitations", "--profile-file", str(profile)]) == ExitCode.OK
    full = capsys.readouterr().out.splitlines()
    assert len(full) > 10 and full[-1].endswith("limitations apply to this cluster")
    assert main(["-q", "limitations", "--profile-file", str(profile)]) == ExitCode.OK
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [full[-1]]
    assert captured.err == ""


def test_q_keeps_the_json_whole(tmp_path, capsys):
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(synthetic.profile("v1.34.4", 20348, "flannel", "vxlan")))
    assert main(["limitations", "-q", "--json", "--profile-file", str(profile)]) == ExitCode.OK
    assert len(json.loads(capsys.readouterr().out)) > 10


def test_q_still_prints_errors_with_their_fix(tmp_path, capsys):
    missing = tmp_path / "no-such-run"
    code = main(["-q", "report", str(missing), "--no-html"])
    captured = capsys.readouterr()
    assert code == ExitCode.RESULTS, captured
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0].startswith("wincon: error: ") and str(missing) in lines[0], captured.err
    assert lines[1].startswith("  fix: "), captured.err


def test_q_drops_wincons_other_stderr_lines(capsys):
    """A deprecation warning is not an error: -q drops it, the command still runs."""
    assert main(["-q", "cluster", "status", "--cluster-name", "wincon-no-such-cluster"]) == ExitCode.OK
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("cluster wincon-no-such-cluster: absent\n", "")


def test_v_and_q_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["-v", "profile", "-q"])
    assert exit_info.value.code == ExitCode.USAGE
    assert "-v and -q" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, passed",
    [(["-v", "run"], ["-v"]), (["run", "-vv"], ["-vv"]), (["-q", "run"], ["-qq"]), (["run"], [])],
)
def test_run_passes_the_verbosity_to_pytest(argv, passed, monkeypatch):
    seen: dict[str, list[str]] = {}

    def fake_run(results_dir: object, pytest_args: list[str], **kwargs: object) -> int:
        seen["args"] = pytest_args
        return 0

    monkeypatch.setattr("wincon.results.runner.run", fake_run)
    assert main([*argv, "--", "-k", "dns"]) == ExitCode.OK
    assert seen["args"] == ["--", "-k", "dns", *passed]
