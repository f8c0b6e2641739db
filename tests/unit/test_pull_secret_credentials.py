"""Registry credentials read as container tools read them (wincon.workloads.registryauth), the token flow with them
(wincon.workloads.imageverify), and `wincon images verify --json`."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from wincon.cli import main
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import ExitCode, UsageError
from wincon.workloads import imageverify, registryauth
from wincon.workloads.catalog import Catalog
from wincon.workloads.registryauth import Credentials, RegistryAuthError, load_docker_config, parse_config


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_auths_entries_base64_auth_username_password_and_identity_tokens():
    document = {
        "auths": {
            "https://index.docker.io/v1/": {"auth": b64("hubuser:hubpass")},
            "myregistry.example:5000": {"username": "u", "password": "p:with:colons"},
            "https://acr.example/v2/": {"auth": b64("00000000-0000-0000-0000-000000000000:"), "identitytoken": "rt"},
            "helper-left.example": {},
        }
    }
    found = parse_config(document, "docker config X")
    hub = found.for_host("registry-1.docker.io")
    assert hub is not None and (hub.username, hub.password) == ("hubuser", "hubpass")
    assert hub.source == "docker config X auths['https://index.docker.io/v1/']"
    plain = found.for_host("myregistry.example:5000")
    assert plain is not None and plain.basic() == "Basic " + b64("u:p:with:colons")
    acr = found.for_host("acr.example")
    assert acr is not None and acr.identity_token == "rt"
    assert found.for_host("helper-left.example") is None and found.for_host("other.example") is None


def test_a_credential_helper_is_named_when_the_registry_refuses_the_anonymous_read(token_registry):
    """A helper's credentials cannot be read here: the registry is read anonymously (a public one still answers,
    as for a user whose Docker Desktop config has a credsStore), and a refusal names the helper and the fix."""
    key = token_registry
    helpers = parse_config({"auths": {}, "credHelpers": {key: "acr-env"}}, "docker config C")
    assert helpers.for_host(key) is None and helpers.helper_for("elsewhere.example") == ""
    with pytest.raises(RegistryAuthError) as error:
        verify_with(token_registry, helpers)
    assert error.value.exit_code == ExitCode.REGISTRY_AUTH == 12
    assert "they are in the credential helper docker-credential-acr-env (credHelpers entry of docker config C)" in (
        error.value.message
    )
    assert "--docker-config" in error.value.fix and "--image-pull-secret" in error.value.fix
    assert TokenRegistry.token_requests[-1]["authorization"] == ""  # the anonymous attempt was made
    store = parse_config({"auths": {"a.example": {}}, "credsStore": "desktop"}, "docker config C")
    assert store.helper_for("registry-1.docker.io") == "docker-credential-desktop (credsStore of docker config C)"


def test_bad_auth_values_name_the_file_and_the_entry():
    with pytest.raises(UsageError, match=r"auths\['r.example'\]: its auth is not base64"):
        parse_config({"auths": {"r.example": {"auth": "not base64!"}}}, "docker config F")
    with pytest.raises(UsageError, match="decodes to no user:password"):
        parse_config({"auths": {"r.example": {"auth": b64("nocolon")}}}, "docker config F")


def test_the_config_file_is_found_as_docker_finds_it(tmp_path, monkeypatch):
    home, other = tmp_path / "home", tmp_path / "other"
    (home / ".docker").mkdir(parents=True)
    other.mkdir()
    (home / ".docker" / "config.json").write_text(json.dumps({"auths": {"h.example": {"auth": b64("home:1")}}}))
    (other / "config.json").write_text(json.dumps({"auths": {"h.example": {"auth": b64("other:2")}}}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DOCKER_CONFIG", raising=False)
    assert load_docker_config().for_host("h.example").username == "home"  # type: ignore[union-attr]
    monkeypatch.setenv("DOCKER_CONFIG", str(other))
    assert load_docker_config().for_host("h.example").username == "other"  # type: ignore[union-attr]
    explicit = load_docker_config(str(home / ".docker"))  # a directory, as docker's --config
    assert explicit.for_host("h.example").username == "home"  # type: ignore[union-attr]
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "none"))
    assert load_docker_config() == Credentials()
    with pytest.raises(UsageError, match="does not exist") as missing:
        load_docker_config(str(tmp_path / "absent.json"))
    assert missing.value.exit_code == ExitCode.USAGE


def test_a_pull_secret_reads_as_its_docker_config():
    document = {"auths": {"r.example": {"auth": b64("u:p")}}}
    secret = {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64(json.dumps(document))}}
    found = registryauth.secret_credentials(secret, "regcred")
    assert found.for_host("r.example").source == "pull secret default/regcred auths['r.example']"  # type: ignore[union-attr]
    legacy = {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64(json.dumps(document["auths"]))}}
    assert registryauth.secret_credentials(legacy, "ns/old").for_host("r.example").password == "p"  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="is not NAME or NAMESPACE/NAME"):
        registryauth.split_secret("a/b/c")


class TokenRegistry(http.server.BaseHTTPRequestHandler):
    """A registry behind a token service, as the clouds' registries are: /v2/ answers 401 with a Bearer
    challenge; the token service gives a token for user/password (GET with basic auth) or for the refresh token
    (POST grant_type=refresh_token), 401 otherwise; the manifest needs that token."""

    token_requests: list[dict[str, str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _token(self, grant: dict[str, str]) -> None:
        self.token_requests.append({**grant, "authorization": self.headers.get("Authorization", "")})
        good = self.headers.get("Authorization") == "Basic " + b64("u:right") or grant.get("refresh_token") == "rt"
        if good:
            self._send(200, {"access_token": "T"})
        else:
            self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self._token(dict(urllib.parse.parse_qsl(self.rfile.read(length).decode())))

    def do_GET(self) -> None:
        if self.path.startswith("/token"):
            return self._token(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query)))
        if self.headers.get("Authorization") == "Bearer T":
            return self._send(200, {"manifests": [{"platform": {"os": "windows", "architecture": "amd64",
                                                               "os.version": "10.0.26100.1"}}]})  # fmt: skip
        host = self.headers["Host"]
        challenge = f'Bearer realm="http://{host}/token",service="{host}",scope="repository:e2e/agnhost:pull"'
        self._send(401, {"errors": [{"code": "UNAUTHORIZED"}]}, {"WWW-Authenticate": challenge})


@pytest.fixture
def token_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    TokenRegistry.token_requests = []
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


WS2025 = NodeProfile(
    name="akswspool000000", os="windows", arch="amd64", ready=True, simulated=False, windows_build=26100,
    runtime="containerd", runtime_version="2.0.4+azure",
)  # fmt: skip


def verify_with(address: str, credentials: Credentials | None) -> list[imageverify.Finding]:
    catalog = Catalog.load(repo_map={"promoterE2eRegistry": f"{address}/e2e"})
    profile = ClusterProfile("v1.37.2", nodes=[WS2025])
    return imageverify.verify(catalog, profile, ["agnhost"], ("process",), credentials=credentials)


def test_the_token_service_gets_the_password_or_the_refresh_token_and_refuses_clearly(token_registry):
    key = token_registry
    password = parse_config({"auths": {key: {"auth": b64("u:right")}}}, "docker config P")
    (finding,) = verify_with(token_registry, password)
    assert finding.verdict.runs
    assert TokenRegistry.token_requests[-1]["authorization"] == "Basic " + b64("u:right")
    assert TokenRegistry.token_requests[-1]["scope"] == "repository:e2e/agnhost:pull"
    token = parse_config({"auths": {key: {"auth": b64("<token>:"), "identitytoken": "rt"}}}, "docker config T")
    assert verify_with(token_registry, token)[0].verdict.runs
    grant = TokenRegistry.token_requests[-1]
    assert grant["grant_type"] == "refresh_token" and grant["service"] == key and grant["authorization"] == ""
    wrong = parse_config({"auths": {key: {"auth": b64("u:wrong")}}}, "docker config W")
    with pytest.raises(RegistryAuthError) as refused:
        verify_with(token_registry, wrong)
    assert f"its token service http://{key}/token refused the credentials of docker config W" in refused.value.message
    with pytest.raises(RegistryAuthError) as anonymous:
        verify_with(token_registry, Credentials())
    assert "wants credentials (HTTP 401) and none were given" in anonymous.value.message
    assert "docker login" in anonymous.value.fix and anonymous.value.exit_code == 12


def test_images_verify_json_carries_the_text_outputs_verdicts(tmp_path, monkeypatch, capsys):
    ltsc2022 = {"manifests": [{"platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0.20348.1"}}]}
    monkeypatch.setattr(imageverify, "fetch_manifest", lambda reference, **kw: ltsc2022)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # no config.json: no credentials
    nodes = [dict(WS2025.__dict__), {"name": "unknown-build", "os": "windows", "arch": "amd64", "ready": True,
                                   "simulated": False, "windows_build": None}]  # fmt: skip
    profile = tmp_path / "profile.json"
    classes = [{"name": "runhcs-wcow-hypervisor", "handler": "runhcs-wcow-hypervisor"}]
    data = {"server_version": "v1.37.2", "nodes": nodes, "runtime_classes": classes}
    profile.write_text(json.dumps(data, default=str))
    argv = ["images", "verify", "--profile-file", str(profile), "--image", "agnhost"]
    assert main(argv) == ExitCode.INFRASTRUCTURE  # Hyper-V on 26100 refuses the ltsc2022 entry
    text = capsys.readouterr().out.splitlines()
    assert main([*argv, "--json"]) == ExitCode.INFRASTRUCTURE  # the same exit code
    document = json.loads(capsys.readouterr().out)
    verdicts = document["verdicts"]
    assert [v["state"] for v in verdicts] == ["runs", "refused"]
    assert [(v["node"], v["isolation"], v["verdict"]["entry"]) for v in verdicts] == [
        ("akswspool000000", "process", 20348),
        ("akswspool000000", "hyperv", None),
    ]
    assert document["refused"] == 1 and document["unjudged_nodes"] == ["unknown-build"]
    findings = [imageverify.Finding.from_dict(v) for v in verdicts]
    assert [f.line() for f in findings] == [line for line in text if line.startswith(("runs:", "REFUSED:"))]
    assert any(document["unjudged_note"] in line for line in text)


def test_the_command_names_the_fix_when_a_registry_wants_credentials(tmp_path, monkeypatch, capsys, token_registry):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    (tmp_path / "repo-list.yaml").write_text(f"promoterE2eRegistry: {token_registry}/e2e\n")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"server_version": "v1.37.2", "nodes": [WS2025.__dict__]}, default=str))
    argv = ["images", "verify", "--profile-file", str(profile), "--image", "agnhost"]
    argv += ["--image-repo-list", str(tmp_path / "repo-list.yaml")]
    assert main(argv) == ExitCode.REGISTRY_AUTH
    assert "fix: give this machine the registry's credentials" in capsys.readouterr().err
    config = tmp_path / "creds.json"
    config.write_text(json.dumps({"auths": {f"http://{token_registry}": {"auth": b64("u:right")}}}))
    assert main([*argv, "--docker-config", str(config)]) == ExitCode.OK
    assert "runs: agnhost" in capsys.readouterr().out


def test_the_run_preflight_reads_the_registries_with_the_docker_config_option(tmp_path, monkeypatch):
    """wincon.session.context.verify_images (the run's and the plan's preflight) hands preflight the credentials of
    --docker-config (or of --image-pull-secret, read from the cluster)."""
    from types import SimpleNamespace

    from wincon.session import context as context_mod

    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps({"auths": {"mirror.example": {"auth": b64("u:p")}}}))
    seen: list[Any] = []
    monkeypatch.setattr(imageverify, "preflight", lambda catalog, profile, **kw: seen.append(kw) or ([], "images: ok"))
    options = {"wincon_docker_config": str(config_file), "wincon_image_pull_secret": None}
    config = SimpleNamespace(getoption=lambda name, default=None: options.get(name, default), stash={})
    context = SimpleNamespace(api_client=None, catalog=None, profile=None)
    context_mod.verify_images(config, context)  # type: ignore[arg-type]
    (kwargs,) = seen
    credential = kwargs["credentials"].for_host("mirror.example")
    assert credential is not None and credential.basic() == "Basic " + b64("u:p")
    assert config.stash[context_mod.IMAGES_NOTE_KEY] == "images: ok"
    secret = {"type": "kubernetes.io/dockerconfigjson",
              "data": {".dockerconfigjson": b64(json.dumps({"auths": {"s.example": {"auth": b64("a:b")}}}))}}  # fmt: skip
    monkeypatch.setattr(registryauth, "read_secret", lambda api, spec: secret)
    options["wincon_image_pull_secret"] = "ns/regcred"
    context_mod.verify_images(config, context)  # type: ignore[arg-type]
    assert seen[-1]["credentials"].for_host("s.example").username == "a"
    assert seen[-1]["credentials"].for_host("mirror.example") is None  # the secret's, not the file's
