"""Optional components (wincon/localcluster/addons.py, addons.toml) and metrics-server's objects (metrics.py)."""

from __future__ import annotations

from wincon.localcluster import addons, dataplane, metrics, paths


def test_metrics_server_is_an_addon_pinned_at_v0_9_0_and_checked_by_its_version_output():
    (comp,) = [c for c in addons.components() if c.name == "metrics-server"]
    assert comp.package == "sigs.k8s.io/metrics-server/cmd/metrics-server"
    assert "-X k8s.io/client-go/pkg/version.gitVersion=v0.9.0" in comp.ldflags
    assert comp.version_args == ("--version",) and comp.expect == "v0.9.0" and comp.static


def test_the_addons_have_their_own_cache_key_apart_from_the_cluster_binaries(tmp_path, monkeypatch):
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    assert addons.bin_dir("metrics-server") == tmp_path / "addons" / addons.key("metrics-server")
    assert addons.key("metrics-server") != paths.versions_key()
    assert "metrics-server" not in paths.VERSIONS_FILE.read_text()  # adding it rebuilt nothing else
    assert addons.binary("metrics-server") is None and "metrics-server" in addons.missing()
    bindir = addons.bin_dir("metrics-server")
    bindir.mkdir(parents=True)
    (bindir / "metrics-server").write_text("")
    assert addons.binary("metrics-server") is None  # present but never verified: not built
    (bindir / ".built").mkdir()
    (bindir / ".built" / "metrics-server").write_text("v0.9.0\n")
    assert addons.binary("metrics-server") == bindir / "metrics-server"
    assert "metrics-server" not in addons.missing()


def test_each_addon_has_a_cache_key_of_its_own_so_adding_one_rebuilds_no_other():
    spec = addons.load()
    grown = {**spec, "another": {"module": "example.org/x", "version": "v1.0.0", "package": "example.org/x/cmd/x"}}
    assert addons.key("metrics-server", grown) == addons.key("metrics-server", spec)
    bumped = {**spec, "metrics-server": {**spec["metrics-server"], "version": "v0.9.1"}}
    assert addons.key("metrics-server", bumped) != addons.key("metrics-server", spec)
    (other,) = [c for c in addons.components(grown) if c.name == "another"]
    assert other.ldflags == ("-s", "-w") and other.version_args == ("--version",) and other.expect == "v1.0.0"


def test_metrics_server_is_an_aggregated_apiservice_behind_a_service_on_the_first_real_node():
    plan = dataplane.Plan(
        "wincon-h6",
        "172.30.9.0/24",
        "172.30.9.1",
        "172.30.9.254",
        [dataplane.RealNode("worker-0", 0, "172.30.9.2", "10.244.2.0/24")],
    )
    service, slice_, apiservice = metrics.objects(plan)
    assert apiservice["metadata"]["name"] == "v1beta1.metrics.k8s.io"
    assert apiservice["spec"]["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 443}
    assert service["spec"]["ports"][0]["targetPort"] == metrics.PORT
    assert "selector" not in service["spec"]
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "metrics-server"
    assert slice_["endpoints"][0]["addresses"] == ["172.30.9.2"]
    assert slice_["ports"] == [{"name": "https", "port": metrics.PORT, "protocol": "TCP"}]
    args = metrics.args(plan, dataplane.root("wincon-h6") / "bin" / "metrics-server")
    assert "--bind-address=172.30.9.2" in args and f"--secure-port={metrics.PORT}" in args
    assert all(dataplane.marker("wincon-h6") in a for a in args if a.startswith("--cert-dir="))
