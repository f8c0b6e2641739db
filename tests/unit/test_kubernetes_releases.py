"""The local cluster's Kubernetes releases (versions.toml's [releases."1.N"] tables, wincon.localcluster.paths):
one table per supported minor and the next pre-release, each resolved and cached apart, with the companion
versions that release's own module tree names."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wincon.commandline.errors import LocalClusterError, UsageError
from wincon.documents import releases as kube_releases
from wincon.localcluster import build, cluster, paths

SUPPORTED = ["1.35", "1.36", "1.37", "1.38"]


@pytest.fixture(autouse=True)
def _no_selected_release(monkeypatch):
    monkeypatch.setenv(kube_releases.VERSION_ENV, "")  # recorded, so that what a test sets is undone after it
    monkeypatch.delenv(kube_releases.VERSION_ENV)


def test_every_supported_minor_and_the_next_pre_release_has_a_table():
    assert paths.releases() == SUPPORTED
    for minor in SUPPORTED:
        k8s = paths.load_versions(minor)["kubernetes"]
        assert re.fullmatch(rf"v{re.escape(minor)}\.\d+(-(alpha|beta|rc)\.\d+)?", k8s["version"]), k8s["version"]
        assert k8s["staging_version"] == "v0." + k8s["version"][len("v1.") :]  # k8s.io/api etc. tag the same patch
        assert k8s["minor"] == minor


def test_the_default_is_the_newest_release_not_a_pre_release():
    final = [m for m in paths.releases() if "-" not in paths.load_versions(m)["kubernetes"]["version"]]
    assert paths.default_release() == final[-1] == "1.37"
    assert paths.resolve_release() == "1.37"
    assert paths.load_versions()["kubernetes"]["version"] == "v1.37.2"


@pytest.mark.parametrize(
    ("spec", "minor"),
    [("1.35", "1.35"), ("v1.36.3", "1.36"), ("1.36.3", "1.36"), ("v1.38.0-beta.0", "1.38"), (" 1.37 ", "1.37")],
)
def test_a_minor_or_a_release_version_names_the_release(spec, minor):
    assert paths.resolve_release(spec) == minor


def test_the_command_line_s_environment_selects_a_release_and_an_explicit_one_wins(monkeypatch):
    environ = {kube_releases.VERSION_ENV: "1.35"}
    assert kube_releases.requested(None, environ) == "1.35"
    assert kube_releases.requested("1.36", environ) == "1.36"
    assert kube_releases.requested(None, {}) is None  # a running cluster's release, else the default, decides
    assert kube_releases.requested("", {kube_releases.VERSION_ENV: " "}) is None


def test_below_the_command_line_the_environment_selects_nothing(monkeypatch):
    monkeypatch.setenv(kube_releases.VERSION_ENV, "1.35")
    assert paths.resolve_release() == "1.37"  # the default: only wincon.documents.releases.requested reads the variable
    assert paths.load_versions()["kubernetes"]["version"] == "v1.37.2"
    assert kube_releases.get().minor == "1.37"


@pytest.mark.parametrize("spec", ["1.34", "v1.37.1", "1.39", "latest", "1"])
def test_an_unknown_version_is_a_usage_error_naming_the_supported_ones(spec):
    with pytest.raises(UsageError) as err:
        paths.resolve_release(spec)
    assert repr(spec) in str(err.value)
    assert "1.35 (v1.35.4)" in err.value.fix and "1.38 (v1.38.0-beta.0)" in err.value.fix


def test_an_unknown_version_from_the_environment_says_where_it_came_from():
    with pytest.raises(UsageError, match=r"\$WINCON_KUBERNETES_VERSION"):
        kube_releases.requested(None, {kube_releases.VERSION_ENV: "1.30"})


def test_each_release_is_cached_apart_and_another_release_s_edit_rebuilds_nothing(tmp_path, monkeypatch):
    keys = {m: paths.versions_key(m) for m in SUPPORTED}
    assert len(set(keys.values())) == len(SUPPORTED)
    edited = tmp_path / "versions.toml"
    text = paths.VERSIONS_FILE.read_text()
    text = text.replace('etcd = "v3.6.6"', 'etcd = "v3.6.7"')  # 1.35's etcd only
    text = text.replace("# kwok is not tied", "# a comment changed\n# kwok is not tied")
    edited.write_text(text)
    monkeypatch.setattr(kube_releases, "VERSIONS_FILE", edited)
    assert paths.versions_key("1.35") != keys["1.35"]
    assert {m: paths.versions_key(m) for m in SUPPORTED[1:]} == {m: keys[m] for m in SUPPORTED[1:]}


def test_only_a_release_that_needs_a_newer_go_sets_the_toolchain(tmp_path):
    go = tmp_path / "go"  # the machine's go as the README has it, whatever this machine's is
    go.write_text("#!/bin/sh\necho go1.26.8\n")
    go.chmod(0o755)
    env = {m: build.go_environment(paths.load_versions(m), str(go)) for m in SUPPORTED}
    assert env == {"1.35": {}, "1.36": {}, "1.37": {}, "1.38": {"GOTOOLCHAIN": "go1.27.3"}}


def test_the_binaries_and_their_versions_follow_the_release():
    comps = {c.name: c for c in build.components(paths.load_versions("1.35"))}
    assert comps["kube-apiserver"].expect == "v1.35.4"
    assert "-X k8s.io/component-base/version.gitMinor=35" in comps["kube-apiserver"].ldflags
    assert comps["etcd"].expect == "3.6.6" and comps["coredns"].expect == "1.13.1"
    assert comps["agnhost"].expect == "2.59"
    assert "-X sigs.k8s.io/kwok/pkg/consts.KubeVersion=v1.35.4" in comps["kwok"].ldflags


def test_missing_binaries_name_the_release_and_the_build_command_for_it(tmp_path, monkeypatch):
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    with pytest.raises(LocalClusterError) as err:
        build.require_binaries("1.36")
    assert "Kubernetes v1.36.3" in str(err.value) and str(paths.bin_dir("1.36")) in str(err.value)
    assert "`wincon cluster build --kubernetes-version 1.36`" in err.value.fix
    with pytest.raises(LocalClusterError) as err:
        build.require_binaries()
    assert "`wincon cluster build`" in err.value.fix


def _record(monkeypatch, record):
    monkeypatch.setattr(cluster, "_read_record", lambda name: record)


def test_a_new_cluster_takes_the_asked_release_else_the_default(monkeypatch):
    _record(monkeypatch, None)
    assert cluster._select_release("c", "1.36", running=False) == "1.36"
    assert kube_releases.VERSION_ENV not in os.environ  # passed down, never written back to the environment
    assert cluster._select_release("c", None, running=False) == "1.37"


def test_a_running_cluster_keeps_its_release_and_refuses_another(monkeypatch):
    _record(monkeypatch, {"kubernetes_release": "1.35", "kubernetes_version": "v1.35.4"})
    assert cluster._select_release("c", None, running=True) == "1.35"
    assert cluster._select_release("c", "v1.35.4", running=True) == "1.35"
    with pytest.raises(LocalClusterError) as err:
        cluster._select_release("c", "1.37", running=True)
    assert "already runs Kubernetes v1.35.4" in str(err.value)
    assert "wincon cluster down --cluster-name c" in err.value.fix
    _record(monkeypatch, {"kubernetes_release": "1.35"})
    assert cluster._select_release("c", None, running=False) == "1.37"  # stale state: a new cluster


def _module_dir(versions: dict) -> Path:
    version = versions["kubernetes"]["version"]
    go = shutil.which("go")
    if not go:
        pytest.fail("the go command is needed to read k8s.io/kubernetes's module tree (install Go, see README)")
    result = subprocess.run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **build.go_environment(versions)},  # 1.38's go.mod needs Go 1.27 even to download
    )
    info = json.loads(result.stdout or "{}")
    if result.returncode or not info.get("Dir"):
        pytest.fail(f"go mod download k8s.io/kubernetes@{version} failed: {info.get('Error') or result.stderr[-400:]}")
    return Path(info["Dir"])


def _dependency(dependencies: str, name: str) -> str:
    match = re.search(rf'(?m)^  - name: "{re.escape(name)}"\n    version: (\S+)', dependencies)
    assert match, f"{name} not in build/dependencies.yaml"
    return match.group(1)


@pytest.mark.parametrize("minor", SUPPORTED)
def test_the_companions_are_those_the_release_s_own_module_tree_names(minor):
    versions = paths.load_versions(minor)
    tree = _module_dir(versions)
    dependencies = (tree / "build" / "dependencies.yaml").read_text()
    assert versions["etcd"]["version"] == "v" + _dependency(dependencies, "etcd")
    assert versions["coredns"]["version"] == "v" + _dependency(dependencies, "coredns-kubeadm")
    manifest = (tree / "test" / "utils" / "image" / "manifest.go").read_text()
    agnhost = re.search(r'configs\[Agnhost\] = Config\{[^,]+, "agnhost", "([^"]+)"\}', manifest)
    assert agnhost and versions["kubernetes"]["agnhost_version"] == agnhost.group(1)
    go_directive = re.search(r"(?m)^go (\d+\.\d+)", (tree / "go.mod").read_text())
    assert go_directive
    needs = tuple(int(p) for p in go_directive.group(1).split("."))
    toolchain = versions["kubernetes"].get("go_toolchain")
    if needs > (1, 26):  # the machine's Go (see README): a newer one must come from GOTOOLCHAIN
        assert toolchain and tuple(int(p) for p in toolchain[2:].split(".")[:2]) >= needs
    else:
        assert toolchain is None


def _windows_kube_proxy_args(kube_version: str) -> list[str]:
    from wincon.localcluster import cni

    (daemonset,) = [
        o for o in cni.kube_proxy(kube_version, "flannel-vxlan") if o["metadata"]["name"] == "kube-proxy-windows"
    ]
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    return [*container.get("command", []), *container.get("args", [])]


def test_the_simulated_overlay_kube_proxy_names_win_overlay_only_where_the_release_has_it():
    for minor in ["1.35", "1.36", "1.37"]:
        tree_version = paths.load_versions(minor)["kubernetes"]["version"]
        assert "--feature-gates=WinOverlay=true" in _windows_kube_proxy_args(tree_version)
    assert "--feature-gates=WinOverlay=true" not in _windows_kube_proxy_args("v1.38.0-beta.0")


# `go mod tidy`'s own words when the Go module proxy refuses a version (this machine, v1.38.0-beta.0's wrapper
# module, 2026-11-27).
TIDY_REFUSED = """go: wincon.local/kubernetesbuild imports
\tk8s.io/kubernetes/pkg/kubelet/watchdog tested by
\tk8s.io/kubernetes/pkg/kubelet/watchdog.test imports
\tk8s.io/ktesting/initoption: k8s.io/ktesting@v0.38.0-beta.0: reading https://proxy.example/k8s.io/ktesting/@v/v0.38.0-beta.0.zip: 403 Forbidden
\tserver response: This module version is not available.
go: wincon.local/kubernetesbuild imports
\tsigs.k8s.io/structured-merge-diff/v7/merge: sigs.k8s.io/structured-merge-diff/v7@v7.0.1: reading https://proxy.example/sigs.k8s.io/structured-merge-diff/v7/@v/v7.0.1.zip: 403 Forbidden
\tserver response: This module version is not available.
"""


def test_a_build_the_proxy_refuses_names_the_module_versions_and_another_release(tmp_path, monkeypatch):
    assert build.refused_modules(TIDY_REFUSED) == [
        "k8s.io/ktesting@v0.38.0-beta.0",
        "sigs.k8s.io/structured-merge-diff/v7@v7.0.1",
    ]
    assert build.refused_modules("go: downloading k8s.io/api v0.37.2\n") == []
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\ncat <<'OUT'\n{TIDY_REFUSED}OUT\nexit 1\n")
    go.chmod(0o755)
    log = (tmp_path / "build.log").open("w")
    builder = build._Builder(str(go), tmp_path, log, log)
    with pytest.raises(LocalClusterError) as err:
        builder.run("resolving the kubernetes module (go mod tidy)", [str(go), "mod", "tidy"], tmp_path)
    assert "does not serve k8s.io/ktesting@v0.38.0-beta.0, sigs.k8s.io/structured-merge-diff/v7@v7.0.1" in str(
        err.value
    )
    assert "--kubernetes-version" in err.value.fix
