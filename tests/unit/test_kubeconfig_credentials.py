"""A kubeconfig's embedded credentials leave nothing in the temporary directory, however the process ends
(wincon.cluster.client.load_kubeconfig), and the client still authenticates with them over TLS."""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from wincon.cluster.client import CREDENTIAL_FIELDS, load_api_client

ROOT = Path(__file__).resolve().parents[2]
FAKE_CA = b"-----BEGIN CERTIFICATE-----\nZmFrZS1jYQ==\n-----END CERTIFICATE-----\n"
FAKE_CERT = b"-----BEGIN CERTIFICATE-----\nZmFrZS1jZXJ0\n-----END CERTIFICATE-----\n"
FAKE_KEY = b"-----BEGIN RSA PRIVATE KEY-----\nZmFrZS1rZXk=\n-----END RSA PRIVATE KEY-----\n"


def write_kubeconfig(path: Path, server: str, ca: bytes, cert: bytes, key: bytes) -> Path:
    def data(content: bytes) -> str:
        return base64.b64encode(content).decode()

    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority-data": data(ca)}}],
                "users": [{"name": "u", "user": {"client-certificate-data": data(cert), "client-key-data": data(key)}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


CHILD = """
import sys, time
from wincon.cluster.client import load_api_client
configuration = load_api_client(sys.argv[1]).configuration
read = [open(getattr(configuration, f), "rb").read() for f in ("ssl_ca_cert", "cert_file", "key_file")]
print("loaded", [r.splitlines()[0].decode() for r in read], flush=True)
time.sleep(120)
"""


def test_a_killed_process_leaves_no_credential_in_the_temp_directory(tmp_path):
    """Before load_kubeconfig: the client's mkstemp files (the CA, the client certificate and its key) stayed in
    $TMPDIR after a SIGKILL (its atexit never ran): 3 files."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", FAKE_CA, FAKE_CERT, FAKE_KEY)
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(kubeconfig)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        line = child.stdout.readline() if child.stdout else ""
        # The child read the three credentials back through the paths the configuration names.
        assert line.startswith("loaded"), line
        assert "BEGIN CERTIFICATE" in line and "BEGIN RSA PRIVATE KEY" in line, line
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout:
            child.stdout.close()
    left = sorted(str(p.relative_to(temp)) for p in temp.rglob("*"))
    assert left == [], f"a killed process left in $TMPDIR: {left}"


def test_credentials_named_by_path_are_left_as_they_are(tmp_path):
    for name, content in (("ca.crt", FAKE_CA), ("client.crt", FAKE_CERT), ("client.key", FAKE_KEY)):
        (tmp_path / name).write_bytes(content)
    (tmp_path / "kubeconfig").write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"}}
                ],
                "users": [{"name": "u", "user": {"client-certificate": "client.crt", "client-key": "client.key"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    configuration = load_api_client(str(tmp_path / "kubeconfig")).configuration
    assert [getattr(configuration, f) for f in CREDENTIAL_FIELDS] == [
        str(tmp_path / n) for n in ("ca.crt", "client.crt", "client.key")
    ]


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def pki(tmp_path):
    """A CA, a server certificate for 127.0.0.1 and a client certificate (CN wincon-runner), by openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed here")
    d = tmp_path / "pki"
    d.mkdir()
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
            "-subj", "/CN=test-ca", cwd=d)  # fmt: skip
    for name, extra in (("server", ["-addext", "subjectAltName=IP:127.0.0.1"]), ("client", [])):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={'127.0.0.1' if name == 'server' else 'wincon-runner'}", *extra, cwd=d)  # fmt: skip
        ext = d / f"{name}.ext"
        ext.write_text("subjectAltName=IP:127.0.0.1\n" if name == "server" else "extendedKeyUsage=clientAuth\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "1", "-extfile", ext.name, cwd=d)  # fmt: skip
    return d


def test_the_client_authenticates_over_tls_with_the_held_credentials(tmp_path, pki):
    """Mutual TLS against a server that requires the client certificate: the CA, certificate and key the
    configuration names (held in memory) are the ones urllib3 loads."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            peer = self.connection.getpeercert()
            seen.append(dict(x[0] for x in peer["subject"])["commonName"])
            version = {"major": "1", "minor": "34", "gitVersion": "v1.34.4", "gitCommit": "x", "gitTreeState": "clean"}
            version.update(buildDate="2026-01-01T00:00:00Z", goVersion="go1.24", compiler="gc", platform="linux/amd64")
            body = json.dumps(version).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    context.load_verify_locations(pki / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = write_kubeconfig(
            tmp_path / "kubeconfig",
            f"https://127.0.0.1:{server.server_address[1]}",
            (pki / "ca.crt").read_bytes(),
            (pki / "client.crt").read_bytes(),
            (pki / "client.key").read_bytes(),
        )
        api = load_api_client(str(kubeconfig))
        assert client.VersionApi(api).get_code(_request_timeout=10).git_version == "v1.34.4"
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["wincon-runner"]
    assert not any(str(getattr(api.configuration, f)).startswith(str(tmp_path)) for f in CREDENTIAL_FIELDS)
