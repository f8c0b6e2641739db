"""`wincon images verify` (wincon/workloads/imageverify.py) on manifest lists recorded from public sources, served by a
registry stand-in on 127.0.0.1 that answers as the OCI distribution API does (a 401 with a Bearer challenge, an
anonymous token, the manifest list for the Accept types sent)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import InfrastructureError
from wincon.workloads.catalog import Catalog
from wincon.workloads.imageverify import split_reference, verify, windows_builds

ROOT = Path(__file__).resolve().parents[2]

# `docker manifest inspect hello-world:latest`, its Windows entries as recorded in docker-library/hello-world#56
# (the Linux entries were elided there): RS4 (17134) and RS5 (17763) only.
HELLO_WORLD = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
    "manifests": [
        {
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "size": 1357,
            "digest": "sha256:04efdea6de289ea7f3d9ddbb8317a82bcd0cfefb397a68a42d53af0737fa74b8",
            "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.17134.706"},
        },
        {
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "size": 1046,
            "digest": "sha256:057a2292b00553b4ab8e090487aaa8068bf8da87abd563875ffcbfadaf2d03ac",
            "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.17763.437"},
        },
    ],
}
# mcr.microsoft.com/windows/nanoserver:ltsc2022 as pinned in docker-library/official-images#13874: one Windows entry,
# 10.0.20348.1487 (an ltsc2022-only manifest list).
NANOSERVER_LTSC2022 = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
    "manifests": [
        {
            "digest": "sha256:3c078dce916ed3f67207c120ead28db500cd14389c27f451cd215e144c5143e8",
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.1487"},
            "size": 574,
        }
    ],
}


def node(name: str, build: int, containerd: str, simulated: bool = False) -> NodeProfile:
    return NodeProfile(
        name=name,
        os="windows",
        arch="amd64",
        ready=True,
        simulated=simulated,
        windows_build=build,
        runtime="containerd",
        runtime_version=containerd,
    )


# The AKS nodes of MicrosoftDocs/azure-aks-docs articles/aks/upgrade-windows-os.md (kubectl get nodes -o wide).
WS2025 = node("akswspool000000", 26100, "2.0.4+azure")
WS2022 = node("akspoolws000000", 20348, "1.6.6+azure")


class Registry(BaseHTTPRequestHandler):
    """/v2/<repo>/manifests/<tag> behind an anonymous Bearer token, as a public registry answers."""

    documents: dict[str, dict[str, Any]] = {}
    seen: list[dict[str, str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        port = self.server.server_address[1]
        if self.path.startswith("/token?"):
            self.seen.append({"token_query": self.path})
            return self._send(200, {"token": "anonymous-token"})
        if self.path.startswith("/storage/"):  # where a registry redirects a blob: no token of its own
            self.seen.append({"storage": self.path, "authorization": self.headers.get("Authorization", "")})
            return self._send(200, self.documents[self.path])
        if self.headers.get("Authorization") != "Bearer anonymous-token":
            self.send_response(401)
            challenge = f'Bearer realm="http://127.0.0.1:{port}/token",service="stand-in",scope="repository:x:pull"'
            self.send_header("WWW-Authenticate", challenge)
            self.end_headers()
            return None
        self.seen.append({"path": self.path, "accept": self.headers.get("Accept", "")})
        document = self.documents.get(self.path)
        if document and "redirect" in document:
            self.send_response(307)
            self.send_header("Location", document["redirect"].replace("PORT", str(port)))
            self.end_headers()
            return None
        return self._send(200, document) if document else self._send(404, {"errors": [{"code": "MANIFEST_UNKNOWN"}]})

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def registry():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Registry.documents, Registry.seen = {}, []
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def catalog_on(registry: str) -> Catalog:
    return Catalog.load(repo_map={"promoterE2eRegistry": f"{registry}/e2e", "gcRegistry": f"{registry}/k8s"})


def test_windows_builds_are_read_from_recorded_manifest_lists():
    assert windows_builds(HELLO_WORLD) == [17134, 17763]
    assert windows_builds(NANOSERVER_LTSC2022) == [20348]
    assert windows_builds({"schemaVersion": 2, "config": {}, "layers": []}) is None  # a single manifest


def test_references_split_as_the_registries_name_them():
    assert split_reference("registry.k8s.io/e2e-test-images/agnhost:2.66.1") == (
        "registry.k8s.io",
        "e2e-test-images/agnhost",
        "2.66.1",
    )
    assert split_reference("127.0.0.1:5000/e2e/busybox:1.37.0-2") == ("127.0.0.1:5000", "e2e/busybox", "1.37.0-2")
    assert split_reference("hello-world:latest") == ("registry-1.docker.io", "library/hello-world", "latest")


def test_verify_reads_through_the_token_flow_and_decides_per_node_and_isolation(registry):
    catalog = catalog_on(registry)
    Registry.documents = {"/v2/e2e/agnhost/manifests/2.66.1": NANOSERVER_LTSC2022}
    profile = ClusterProfile("v1.33.12", nodes=[WS2025, WS2022, node("win2025-0", 26100, "2.0.4+azure", True)])
    found = verify(catalog, profile, ["agnhost"], ("process", "hyperv"))
    assert any("token_query" in s and "scope=repository" in s["token_query"] for s in Registry.seen)
    (request,) = [s for s in Registry.seen if "path" in s]
    assert "application/vnd.oci.image.index.v1+json" in request["accept"]
    verdicts = {(f.node, f.isolation): f.verdict for f in found}
    assert set(verdicts) == {(n, i) for n in ("akswspool000000", "akspoolws000000") for i in ("process", "hyperv")}
    ws2025_process = verdicts["akswspool000000", "process"]
    assert ws2025_process.runs and ws2025_process.entry == 20348  # containerd 2.0.4 accepts ltsc2022 on 26100
    ws2025_hyperv = verdicts["akswspool000000", "hyperv"]
    assert not ws2025_hyperv.runs and "HCS_E_IMAGE_MISMATCH" in ws2025_hyperv.reason
    assert "records a ltsc2025 entry for agnhost:2.66.1" in ws2025_hyperv.reason  # the catalog says another exists
    assert verdicts["akspoolws000000", "process"].runs and verdicts["akspoolws000000", "hyperv"].runs  # exact


def test_verify_refuses_a_list_without_a_usable_entry(registry):
    catalog = catalog_on(registry)
    Registry.documents = {"/v2/e2e/busybox/manifests/1.37.0-2": HELLO_WORLD}
    found = verify(catalog, ClusterProfile("v1.33.12", nodes=[WS2022]), ["busybox"], ("process",))
    (finding,) = found
    assert not finding.verdict.runs
    assert "build 20348" in finding.verdict.reason and "17134, 17763" in finding.verdict.reason
    assert finding.line().startswith("REFUSED: busybox")


def test_a_missing_image_and_an_unreachable_registry_are_infrastructure_errors(registry):
    catalog = catalog_on(registry)
    with pytest.raises(InfrastructureError, match="does not exist in its registry"):
        verify(catalog, ClusterProfile("v1.33.12", nodes=[WS2025]), ["pause"], ("process",))
    closed = Catalog.load(repo_map={"promoterE2eRegistry": "127.0.0.1:9/e2e"})
    with pytest.raises(InfrastructureError, match="cannot read the manifest"):
        verify(closed, ClusterProfile("v1.33.12", nodes=[WS2025]), ["agnhost"], ("process",))


def test_simulated_nodes_need_no_registry():
    profile = ClusterProfile("v1.37.2", nodes=[node("win2025-0", 26100, "2.0.4+azure", True)])
    assert verify(Catalog.load(), profile, None, ("process",), fetch=lambda ref: pytest.fail(ref)) == []


def test_the_command_exits_3_on_a_refused_pairing_and_0_when_every_entry_runs(registry, tmp_path):
    Registry.documents = {"/v2/e2e/agnhost/manifests/2.66.1": NANOSERVER_LTSC2022}
    repo_list = tmp_path / "repo-list.yaml"
    repo_list.write_text(f"promoterE2eRegistry: {registry}/e2e\n")
    nodes = [
        {"name": "akswspool000000", "os": "windows", "arch": "amd64", "ready": True, "simulated": False,
         "windows_build": 26100, "runtime": "containerd", "runtime_version": "2.0.4+azure"},
    ]  # fmt: skip
    profile = tmp_path / "profile.json"

    def run(*extra: str, classes: list[dict[str, str]] | None = None) -> subprocess.CompletedProcess:
        data = {"server_version": "v1.33.12", "nodes": nodes, "runtime_classes": classes}
        profile.write_text(json.dumps(data))
        command = [sys.executable, "-m", "wincon", "images", "verify", "--profile-file", str(profile)]
        command += ["--image", "agnhost", "--image-repo-list", str(repo_list), *extra]
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)

    ok = run()
    assert ok.returncode == 0, ok.stderr
    assert "runs: agnhost" in ok.stdout and "process isolation" in ok.stdout
    hyperv = run(classes=[{"name": "runhcs-wcow-hypervisor", "handler": "runhcs-wcow-hypervisor"}])
    assert hyperv.returncode == 3, hyperv.stdout + hyperv.stderr
    assert "REFUSED: agnhost" in hyperv.stdout and "agnhost on akswspool000000 (build 26100, hyperv)" in hyperv.stderr


def test_prepull_verifies_before_it_deploys_anything_on_real_windows_nodes(monkeypatch):
    """`wincon prepull` on a cluster with a real WS2025 node offering Hyper-V: an ltsc2022-only image is refused
    before the DaemonSet exists; with an entry of the node's build the pull goes ahead. Simulated nodes skip it."""
    from types import SimpleNamespace

    from wincon.commandline import commands
    from wincon.workloads import imageverify, prepull

    deployed: list[str] = []
    monkeypatch.setattr(prepull, "prepull", lambda api, profile, catalog, run_id, **kw: deployed.append(run_id))
    hyperv = [("runhcs-wcow-hypervisor", "runhcs-wcow-hypervisor")]
    real = ClusterProfile("v1.33.12", nodes=[WS2025], runtime_classes=hyperv)
    args = SimpleNamespace(
        image_repo_list=None, timeout=10, pod_start_timeout=10, kubeconfig=None, context=None, image_pull_secret=None
    )

    def run(profile: ClusterProfile, document: dict[str, Any]) -> None:
        monkeypatch.setattr(commands, "_profile", lambda a: (None, profile))
        monkeypatch.setattr(imageverify, "fetch_manifest", lambda reference, **kw: document)
        commands.cmd_prepull(args)

    with pytest.raises(InfrastructureError) as refused:
        run(real, NANOSERVER_LTSC2022)
    assert "on akswspool000000 (build 26100, hyperv)" in str(refused.value) and not deployed
    every_build = {
        "manifests": [
            {"platform": {"architecture": "amd64", "os": "windows", "os.version": f"10.0.{b}.1"}}
            for b in (20348, 26100)
        ]
    }
    run(real, every_build)
    assert len(deployed) == 1
    simulated = ClusterProfile("v1.37.2", nodes=[node("win2025-0", 26100, "2.0.4+azure", True)])
    run(simulated, {"manifests": []})  # never read: nothing is pulled on simulated nodes
    assert len(deployed) == 2


def single_manifest(config: dict[str, Any]) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(an OCI image manifest, its config's digest, the config) as a registry serves an image pushed without a
    manifest list: the manifest names no platform, its config blob does (OCI image-spec manifest.md, config.md)."""
    digest = "sha256:" + hashlib.sha256(json.dumps(config).encode()).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest, "size": 2},
        "layers": [],
    }
    return manifest, digest, config


def test_a_single_manifest_is_judged_by_its_config_s_os_architecture_and_build(registry):
    """Issue 40 item 3: a single manifest was accepted for every build and isolation. Now its config blob is read
    (through the same token flow) and judged as an entry would be: an ltsc2022 image on the WS2025 node runs under
    process isolation (containerd 2.0.4) but not under Hyper-V; a Linux image or an arm64 one runs on no node."""
    catalog = catalog_on(registry)
    ltsc2022, digest, config = single_manifest(
        {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.1487"}
    )
    Registry.documents = {"/v2/e2e/agnhost/manifests/2.66.1": ltsc2022, f"/v2/e2e/agnhost/blobs/{digest}": config}
    profile = ClusterProfile("v1.33.12", nodes=[WS2025, WS2022])
    verdicts = {(f.node, f.isolation): f.verdict for f in verify(catalog, profile, ["agnhost"], ("process", "hyperv"))}
    assert f"/v2/e2e/agnhost/blobs/{digest}" in [s.get("path") for s in Registry.seen]  # the config was read
    hyperv = verdicts["akswspool000000", "hyperv"]
    assert not hyperv.runs and "HCS_E_IMAGE_MISMATCH" in hyperv.reason
    assert "a single manifest (no platform list) whose config says windows/amd64 20348" in hyperv.reason
    assert verdicts["akswspool000000", "process"].runs and verdicts["akswspool000000", "process"].entry == 20348
    assert verdicts["akspoolws000000", "process"].runs and verdicts["akspoolws000000", "hyperv"].runs

    for other in ({"architecture": "amd64", "os": "linux"}, {"architecture": "arm64", "os": "windows", "os.version": "10.0.26100.1"}):  # fmt: skip
        manifest, digest, config = single_manifest(other)
        Registry.documents = {"/v2/e2e/agnhost/manifests/2.66.1": manifest, f"/v2/e2e/agnhost/blobs/{digest}": config}
        found = verify(catalog, profile, ["agnhost"], ("process", "hyperv"))
        assert len(found) == 4 and not any(f.verdict.runs for f in found), [f.line() for f in found]
        assert "not a windows/amd64 image" in found[0].verdict.reason


def test_only_the_entries_of_the_node_s_architecture_count(registry):
    """Issue 40 item 3: the platform's architecture was never read, so a list whose only 26100 entry is arm64 was a
    match for an amd64 WS2025 node. Now the amd64 node is judged on its amd64 entries (20348: process isolation on
    containerd 2.0.4 only, never Hyper-V) and an arm64 node of the same build runs its own entry."""
    catalog = catalog_on(registry)
    mixed = {
        "schemaVersion": 2,
        "manifests": [
            {"platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.1487"}},
            {"platform": {"architecture": "arm64", "os": "windows", "os.version": "10.0.26100.2314"}},
            {"platform": {"architecture": "amd64", "os": "linux"}},
        ],
    }
    Registry.documents = {"/v2/e2e/agnhost/manifests/2.66.1": mixed}
    arm = NodeProfile(**{**WS2025.__dict__, "name": "arm2025", "arch": "arm64"})
    profile = ClusterProfile("v1.33.12", nodes=[WS2025, arm])
    verdicts = {(f.node, f.isolation): f.verdict for f in verify(catalog, profile, ["agnhost"], ("process", "hyperv"))}
    hyperv = verdicts["akswspool000000", "hyperv"]
    assert not hyperv.runs and "the list has 20348" in hyperv.reason
    assert "not counted: windows/arm64 26100" in hyperv.reason
    process = verdicts["akswspool000000", "process"]
    assert process.runs and process.entry == 20348  # not the arm64 26100 entry
    assert verdicts["arm2025", "hyperv"].runs and verdicts["arm2025", "hyperv"].entry == 26100
    unknown = NodeProfile(**{**WS2025.__dict__, "name": "noarch", "arch": ""})
    (finding,) = verify(catalog, ClusterProfile("v1.33.12", nodes=[unknown]), ["agnhost"], ("process",))
    assert not finding.verdict.runs and "reports no architecture" in finding.verdict.reason


def test_the_preflight_names_real_nodes_of_unknown_build_instead_of_calling_them_simulated():
    """Issue 40 item 8: real Windows nodes whose build nothing names were dropped and the header said the nodes
    were simulated. Now the note names them and says what it means: nothing is refused there, a check whose pods go
    there runs unverified."""
    from wincon.workloads.imageverify import preflight

    nobuild = NodeProfile(**{**WS2022.__dict__, "name": "win-nobuild", "windows_build": None})
    catalog = Catalog.load()
    refused, note = preflight(catalog, ClusterProfile("v1.37.2", nodes=[nobuild]), fetch=lambda r: pytest.fail(r))
    assert refused == [] and "simulated" not in note
    assert "1 real Windows node(s) of unknown build (win-nobuild" in note and "no check is refused" in note
    every = {"manifests": [{"platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.1"}}]}
    refused, note = preflight(
        catalog, ClusterProfile("v1.37.2", nodes=[WS2022, nobuild], runtime_classes=[]), fetch=lambda r: every
    )
    assert refused == [] and "for 1 real Windows node(s), process isolation: all run" in note
    assert "of unknown build (win-nobuild" in note
    simulated = ClusterProfile("v1.37.2", nodes=[node("win2025-0", 26100, "2.0.4+azure", True)])
    assert "the Windows nodes are simulated" in preflight(catalog, simulated, fetch=lambda r: pytest.fail(r))[1]


def test_a_config_blob_redirected_to_storage_is_read_without_the_registry_s_token(registry):
    """Registries answer a blob with a redirect to their storage; the bearer token is the registry's and is not sent
    to another host (here localhost instead of 127.0.0.1, both this machine)."""
    catalog = catalog_on(registry)
    manifest, digest, config = single_manifest({"architecture": "amd64", "os": "windows", "os.version": "10.0.26100.1"})
    Registry.documents = {
        "/v2/e2e/agnhost/manifests/2.66.1": manifest,
        f"/v2/e2e/agnhost/blobs/{digest}": {"redirect": f"http://localhost:PORT/storage/{digest}"},
        f"/storage/{digest}": config,
    }
    (finding,) = verify(catalog, ClusterProfile("v1.33.12", nodes=[WS2025]), ["agnhost"], ("hyperv",))
    assert finding.verdict.runs and finding.verdict.entry == 26100
    (stored,) = [s for s in Registry.seen if "storage" in s]
    assert stored["authorization"] == ""
    missing = {"/v2/e2e/agnhost/manifests/2.66.1": manifest}  # the config blob is gone: 404
    Registry.documents = missing
    with pytest.raises(InfrastructureError, match="config blob does not exist"):
        verify(catalog, ClusterProfile("v1.33.12", nodes=[WS2025]), ["agnhost"], ("hyperv",))


def test_the_preflight_judges_hyperv_too_where_the_runtime_classes_are_unknown():
    """RuntimeClasses that could not be listed (None) are unknown, not absent: the Hyper-V checks read them live and
    may run, so the preflight judges their pairings too (an ltsc2022-only list cannot run under Hyper-V on the WS2025
    node); a cluster that listed none judges process isolation only."""
    from wincon.workloads.imageverify import preflight

    catalog = Catalog.load()
    unknown = ClusterProfile("v1.33.12", nodes=[WS2025], runtime_classes=None)
    refused, note = preflight(catalog, unknown, fetch=lambda r: NANOSERVER_LTSC2022)
    assert {f.isolation for f in refused} == {"hyperv"} and "HCS_E_IMAGE_MISMATCH" in refused[0].verdict.reason
    assert "process and hyperv isolation (Hyper-V too: the cluster's RuntimeClasses could not be listed)" in note
    refused, note = preflight(catalog, replace(unknown, runtime_classes=[]), fetch=lambda r: NANOSERVER_LTSC2022)
    assert refused == [] and "process isolation: all run" in note
