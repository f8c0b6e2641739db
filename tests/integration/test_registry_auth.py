"""`wincon images verify` against the local registry with authentication on (issue 42 item 4).

Debian's docker-registry (tests/integration/test_image_verify_registry.py starts it the same way) with its htpasswd
authentication: one user whose password is stored as a bcrypt hash (the PyPI ``bcrypt`` package, a dev dependency),
so every request without that user's password is answered 401 with a ``Basic`` challenge. A Windows manifest list
is pushed with the password; then the command, as a user runs it: without credentials it exits 12 naming the fix,
with a docker config holding the password it reads the list and exits 0, with a wrong password it exits 12 saying
the registry refused the credentials of that file.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from tests.integration.test_image_verify_registry import push_windows_list, serve_registry
from wincon.cli import main
from wincon.commandline.errors import ExitCode
from wincon.workloads.catalog import Catalog

USER, PASSWORD = "wincon", "pull-me-7c1f"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("auth-registry")
    htpasswd = root / "htpasswd"
    htpasswd.write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=6)).decode()}\n")
    with serve_registry(root, f"auth: {{htpasswd: {{realm: wincon-test, path: {htpasswd}}}}}\n") as address:
        yield address


@pytest.fixture
def command(auth_registry, tmp_path, monkeypatch) -> list[str]:
    """`wincon images verify` of agnhost on one real WS2025 node, the catalog's e2e registry mapped to the
    registry; no docker config of the user's is read ($DOCKER_CONFIG names an empty directory)."""
    agnhost = Catalog.load().images["agnhost"]
    push_windows_list(
        auth_registry, f"e2e/{agnhost.name}", agnhost.tag, [20348, 26100], basic(USER, PASSWORD)
    )  # fmt: skip
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "empty"))
    repo_list = tmp_path / "repo-list.yaml"
    repo_list.write_text(f"promoterE2eRegistry: {auth_registry}/e2e\n")
    node = {"name": "akswspool000000", "os": "windows", "arch": "amd64", "ready": True, "simulated": False,
            "windows_build": 26100, "runtime": "containerd", "runtime_version": "2.0.4+azure"}  # fmt: skip
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"server_version": "v1.37.2", "nodes": [node]}))
    return ["images", "verify", "--profile-file", str(profile), "--image", "agnhost", "--image-repo-list",
            str(repo_list), "--isolation", "process", "--isolation", "hyperv"]  # fmt: skip


def docker_config(path: Path, registry: str, user: str, password: str) -> Path:
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    path.write_text(json.dumps({"auths": {registry: {"auth": auth}}}))
    return path


def test_without_credentials_the_command_exits_12_naming_the_fix(command, auth_registry, capsys):
    assert main(command) == ExitCode.REGISTRY_AUTH == 12
    err = capsys.readouterr().err
    assert f"registry {auth_registry}: it wants credentials (HTTP 401) and none were given" in err
    assert "fix: give this machine the registry's credentials as docker does: `docker login HOST`" in err
    assert "--docker-config" in err and "--image-pull-secret" in err


def test_with_the_docker_config_it_reads_the_list_and_judges(command, auth_registry, tmp_path, capsys, monkeypatch):
    config = docker_config(tmp_path / "config.json", auth_registry, USER, PASSWORD)
    assert main([*command, "--docker-config", str(config), "--json"]) == ExitCode.OK
    verdicts = json.loads(capsys.readouterr().out)["verdicts"]
    assert [(v["isolation"], v["state"], v["verdict"]["entry"]) for v in verdicts] == [
        ("process", "runs", 26100),
        ("hyperv", "runs", 26100),
    ]
    # $DOCKER_CONFIG, as docker reads it, without the option
    other = tmp_path / "dockerdir"
    other.mkdir()
    docker_config(other / "config.json", f"http://{auth_registry}/", USER, PASSWORD)
    monkeypatch.setenv("DOCKER_CONFIG", str(other))
    assert main(command) == ExitCode.OK
    assert capsys.readouterr().out.count("runs: agnhost") == 2


def test_a_wrong_password_is_refused_clearly(command, auth_registry, tmp_path, capsys):
    config = docker_config(tmp_path / "config.json", auth_registry, USER, "not-the-password")
    assert main([*command, "--docker-config", str(config)]) == ExitCode.REGISTRY_AUTH
    err = capsys.readouterr().err
    assert f"registry {auth_registry}: it (for e2e/agnhost) refused the credentials of docker config {config}" in err
    assert f"`docker login {auth_registry}` again" in err


def test_a_pull_secret_of_the_cluster_gives_the_credentials(command, auth_registry, api, kubeconfig, capsys):
    """`--image-pull-secret NAMESPACE/NAME`: the secret is read from the cluster under test and its
    .dockerconfigjson used as a docker config; a secret with a wrong password is refused, naming the secret."""
    from kubernetes import client

    from wincon.cluster.namespaces import NamespaceRegistry

    namespaces = NamespaceRegistry(api, "registryauth", "w0")
    try:
        home = namespaces.create("secret-home")
        for name, password in (("regcred", PASSWORD), ("stale", "an-old-password")):
            auth = base64.b64encode(f"{USER}:{password}".encode()).decode()
            document = json.dumps({"auths": {auth_registry: {"auth": auth}}}).encode()
            client.CoreV1Api(api).create_namespaced_secret(
                home,
                {"metadata": {"name": name}, "type": "kubernetes.io/dockerconfigjson",
                 "data": {".dockerconfigjson": base64.b64encode(document).decode()}},
            )  # fmt: skip
        cluster = ["--kubeconfig", str(kubeconfig), "--image-pull-secret"]
        assert main([*command, *cluster, f"{home}/regcred", "--json"]) == ExitCode.OK
        states = [v["state"] for v in json.loads(capsys.readouterr().out)["verdicts"]]
        assert states == ["runs", "runs"]
        assert main([*command, *cluster, f"{home}/stale"]) == ExitCode.REGISTRY_AUTH
        assert (
            f"refused the credentials of pull secret {home}/stale auths['{auth_registry}']" in capsys.readouterr().err
        )
        assert main([*command, *cluster, f"{home}/absent"]) == ExitCode.USAGE
        assert f"the pull secret {home}/absent cannot be read (404" in capsys.readouterr().err
    finally:
        namespaces.delete_all()
