import json
import textwrap

import pytest

from tests.support import suites
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import ExitCode, LimitationsError
from wincon.documents.limitations import Limitation, load, match, parse_version

ENTRY = """\
version: 1
limitations:
  - id: icmp-egress
    title: ICMP to destinations outside the cluster gets no reply
    area: networking
    statement: ICMP packets cannot leave the cluster network through win-overlay.
    sources: [{file: 000_4130a90def37a825.txt, section: Networking}]
    applies_when: {cni: [win-overlay, win-bridge, azure-cni]}
    mode: xfail
    note: still stated by the current documentation of this test fixture
"""


def win(build, runtime_version="1.7.20", kubelet="v1.34.4", runtime="containerd"):
    return NodeProfile(
        name=f"w{build}",
        kubelet_version=kubelet,
        os="windows",
        arch="amd64",
        ready=True,
        simulated=False,
        windows_build=build,
        runtime=runtime,
        runtime_version=runtime_version,
    )


def profile(cni="flannel", backend="vxlan", version="v1.34.4", builds=(20348,), runtime_version="1.7.20"):
    nodes = [win(b, runtime_version, kubelet=version) for b in builds]
    return ClusterProfile(version, nodes=nodes, cni=cni, cni_backend=backend)


def lim(**kw):
    base = dict(
        id="x",
        title="a limitation title",
        area="networking",
        statement="a statement",
        sources=({"file": "000_4130a90def37a825.txt", "section": "S"},),
        mode="xfail",
    )
    return Limitation(**{**base, **kw})


def write(tmp_path, text):
    path = tmp_path / "limitations.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_valid_file_loads(tmp_path):
    entries = load(write(tmp_path, ENTRY))
    assert list(entries) == ["icmp-egress"] and entries["icmp-egress"].applies_when["cni"][0] == "win-overlay"


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (("mode: xfail", "mode: maybe"), "entry 0 (icmp-egress): field 'mode'"),
        (("000_4130a90def37a825.txt", "999_unknown.txt"), "entry 0 (icmp-egress): field 'sources.0.file'"),
        (("cni: [win-overlay", "cni: [wireguard"), "entry 0 (icmp-egress): field 'applies_when.cni.0'"),
        (("applies_when: {", "applies_when: {colour: red, "), "field 'applies_when'"),
        (("    title: ICMP to destinations outside the cluster gets no reply\n", ""), "'title' is a required property"),
        (("id: icmp-egress", "id: ICMP Egress"), "field 'id'"),
    ],
)
def test_a_malformed_entry_names_file_entry_and_field(tmp_path, mutation, expected):
    path = write(tmp_path, ENTRY.replace(*mutation))
    with pytest.raises(LimitationsError) as err:
        load(path)
    assert str(path) in err.value.message and expected in err.value.message
    assert err.value.exit_code == ExitCode.LIMITATIONS and err.value.fix


def test_duplicate_ids_are_rejected(tmp_path):
    second = ENTRY.split("limitations:\n")[1]
    with pytest.raises(LimitationsError, match="duplicate id"):
        load(write(tmp_path, ENTRY + second))


def test_invalid_yaml_and_missing_file_are_errors(tmp_path):
    with pytest.raises(LimitationsError, match="not valid YAML"):
        load(write(tmp_path, "version: 1\nlimitations: [\n"))
    with pytest.raises(LimitationsError, match="file not found"):
        load(tmp_path / "nope.yaml")


def test_skip_mode_requires_a_reason(tmp_path):
    with pytest.raises(LimitationsError, match="skip_reason"):
        load(write(tmp_path, ENTRY.replace("mode: xfail", "mode: skip")))


@pytest.mark.parametrize(
    ("cni", "backend", "applies"),
    [
        ("flannel", "vxlan", True),
        ("flannel", "host-gw", True),
        ("azure-cni", None, True),
        ("calico", None, False),
        ("unknown", None, False),
        ("antrea", None, False),
    ],
)
def test_cni_condition_matches_through_aliases(cni, backend, applies):
    entry = lim(applies_when={"cni": ["win-overlay", "win-bridge", "azure-cni"]})
    result = match(entry, profile(cni, backend))
    assert result.applies is applies and result.facts


def test_vxlan_only_limitation_does_not_apply_to_host_gw():
    entry = lim(applies_when={"cni": ["flannel-vxlan"]})
    assert match(entry, profile("flannel", "vxlan")).applies
    assert not match(entry, profile("flannel", "host-gw")).applies


def test_build_and_version_conditions():
    old_build = lim(applies_when={"windows_build": "<20348"})
    assert match(old_build, profile(builds=(17763,))).applies
    assert not match(old_build, profile(builds=(20348,))).applies
    old_k8s = lim(applies_when={"kubelet_version": "<1.24"})
    assert match(old_k8s, profile(version="v1.23.9")).applies
    assert not match(old_k8s, profile(version="v1.34.4")).applies


def test_lifted_in_a_later_release_or_build_or_runtime():
    by_k8s = lim(lifted_in={"kubelet_version": "1.26", "note": "HostProcess containers GA"})
    assert match(by_k8s, profile(version="v1.25.3")).applies
    result = match(by_k8s, profile(version="v1.34.4"))
    assert not result.applies and "kubelet 1.34.4 >= 1.26" in result.explain()
    by_build = lim(lifted_in={"windows_build": 20348, "note": "fixed in Windows Server 2022"})
    assert match(by_build, profile(builds=(17763,))).applies
    assert not match(by_build, profile(builds=(20348,))).applies
    by_runtime = lim(lifted_in={"containerd_version": "1.7", "note": "fixed in containerd 1.7"})
    assert match(by_runtime, profile(runtime_version="1.6.21")).applies
    assert not match(by_runtime, profile(runtime_version="1.7.20+azure")).applies


def test_untestable_entries_never_apply():
    assert not match(lim(untestable="a statement about deployment tooling"), profile()).applies


def test_unconditional_entry_applies_everywhere():
    result = match(lim(), profile())
    assert result.applies and result.explain() == "node w20348, applies on every node"


def test_the_projects_limitations_file_is_valid():
    entries = load()
    assert len(entries) >= 20
    for entry in entries.values():
        assert entry.sources and entry.statement


def test_lifted_in_with_two_keys_needs_both():
    entry = lim(lifted_in={"kubelet_version": "1.23", "containerd_version": "1.6", "note": "HostProcess needs both"})
    assert match(entry, profile(version="v1.34.4", runtime_version="1.5.13")).applies
    assert match(entry, profile(version="v1.22.0", runtime_version="1.7.20")).applies
    assert not match(entry, profile(version="v1.34.4", runtime_version="1.7.20")).applies


# --- matched against the node the check runs on (issue 12)


def test_a_build_condition_applies_to_the_node_of_that_build_only():
    """It used to apply cluster-wide as soon as any node matched."""
    old_build = lim(applies_when={"windows_build": "<20348"})
    mixed = profile(builds=(17763, 20348))
    old, new = mixed.windows_nodes
    assert match(old_build, mixed, node=old).applies
    assert not match(old_build, mixed, node=new).applies
    across = match(old_build, mixed)
    assert not across.applies and "depends on the node: applies on w17763 only" in across.explain()
    assert match(old_build, mixed, nodes=[old]).applies


def test_the_kubelets_version_decides_not_the_api_servers():
    entry = lim(applies_when={"kubelet_version": "<1.24"})
    skewed = ClusterProfile("v1.34.4", nodes=[win(20348, kubelet="v1.23.17")], cni="flannel", cni_backend="vxlan")
    result = match(entry, skewed)
    assert result.applies and "kubelet 1.23.17 <1.24" in result.explain()
    lifted = lim(lifted_in={"kubelet_version": "1.26", "note": "HostProcess containers GA"})
    assert match(lifted, skewed).applies  # the API server is 1.34, but the node's kubelet is not


@pytest.mark.parametrize("kubelet", ["", "unknown", "vX"])
def test_an_unparseable_kubelet_version_is_unknown_and_never_applies(kubelet):
    """It used to read as 0.0, which satisfies every '<' condition."""
    entry = lim(applies_when={"kubelet_version": "<1.24"})
    result = match(entry, profile(version=kubelet))
    assert not result.applies
    assert result.unknown == ("kubelet version of node w20348",)
    assert "unknown" in result.explain()


def test_unknown_cni_and_runtime_never_apply_and_say_so():
    by_cni = match(lim(applies_when={"cni": ["win-overlay"]}), profile("unknown", None))
    assert not by_cni.applies and by_cni.unknown == ("cni",)
    no_runtime = ClusterProfile("v1.34.4", nodes=[win(20348, runtime="")], cni="flannel", cni_backend="vxlan")
    by_runtime = match(lim(applies_when={"runtime": ["docker"]}), no_runtime)
    assert not by_runtime.applies and by_runtime.unknown == ("runtime of node w20348",)


def test_mixed_runtimes_match_each_node_on_its_own():
    """It used to be 'mixed' cluster-wide, which matched nothing."""
    docker_only = lim(applies_when={"runtime": ["docker"]})
    cluster = ClusterProfile(
        "v1.34.4",
        nodes=[win(17763, runtime="docker", runtime_version="20.10.9"), win(20348)],
        cni="flannel",
        cni_backend="vxlan",
    )
    docker_node, containerd_node = cluster.windows_nodes
    assert match(docker_only, cluster, node=docker_node).applies
    assert not match(docker_only, cluster, node=containerd_node).applies


def test_isolation_is_the_one_the_pods_request():
    """Hyper-V entries used to never apply: isolation was always taken as process."""
    hyperv = lim(applies_when={"isolation": ["hyperv"]})
    assert match(hyperv, profile(), isolation="hyperv").applies
    result = match(hyperv, profile())
    assert not result.applies and "isolation process" in result.explain()


def test_lifted_is_reported_with_the_nodes_facts():
    entry = lim(lifted_in={"containerd_version": "1.7", "note": "fixed in containerd 1.7"})
    result = match(entry, profile(runtime_version="1.7.20+azure"))
    assert not result.applies and "lifted on node w20348 (containerd 1.7.20 >= 1.7)" in result.explain()


def test_parse_version():
    assert str(parse_version("v1.34.4-gke.100")) == "1.34.4"
    assert str(parse_version("1.34")) == "1.34.0"
    assert parse_version("") is None and parse_version("latest") is None


def test_wincon_limitations_lists_the_catalog_without_a_cluster(tmp_path, capsys, monkeypatch):
    """It used to stop with exit 6 when no kubeconfig could be read."""
    from wincon.cli import main

    monkeypatch.delenv("KUBECONFIG", raising=False)
    code = main(["limitations", "--json", "--kubeconfig", str(tmp_path / "missing")])
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert code == 0 and len(rows) == len(load())
    assert all(row["applies"] is None and row["why"].startswith("applicability unknown: no cluster") for row in rows)
    assert "listing with applicability unknown" in out.err


def test_every_entry_says_from_when_it_is_lifted_or_why_it_still_stands(tmp_path):
    bare = ENTRY.replace("    note: still stated by the current documentation of this test fixture\n", "")
    with pytest.raises(LimitationsError, match="entry 0 \\(icmp-egress\\)"):
        load(write(tmp_path, bare))
    short = ENTRY.replace("still stated by the current documentation of this test fixture", "holds")
    with pytest.raises(LimitationsError, match="field 'note'"):
        load(write(tmp_path, short))
    assert all(entry.lifted_in or entry.note or entry.retired for entry in load().values())


V134_LTSC2022 = ClusterProfile(
    "v1.34.4",
    nodes=[win(20348, "1.7.27", kubelet="v1.34.4")],
    cni="flannel",
    cni_backend="vxlan",
    kube_proxy_mode="kernelspace",
    cloud="azure",
)


def test_the_calibrated_catalog_on_a_v1_34_containerd_ltsc2022_cluster():
    """What still applies on a current cluster: documented gaps yes, 2019-era statements no."""
    applies = {lid: match(entry, V134_LTSC2022).applies for lid, entry in load().items()}
    for still in ("icmp-egress-through-vfp", "dns-resolvers-differ", "hugepages-unsupported", "no-oom-killer"):
        assert applies[still], still
    for lifted in (
        "port-forward-unsupported",
        "run-as-username-unavailable",
        "host-privileges-unavailable",
        "cpu-limits-not-hard",
        "hpa-unsupported-pre-1-14",
        "configmap-secret-volumes-pre-1803",
        "docker-ee-runtime-required",
    ):
        assert not applies[lifted], lifted
    assert not applies["hyperv-cpu-count-limit"]  # the pods request process isolation


# --- each limitation is decided by the version of the component it names (issue 19, item 3)


def skewed(apiserver, kubelet, runtime_version="1.7.20"):
    return ClusterProfile(
        apiserver, nodes=[win(20348, runtime_version, kubelet=kubelet)], cni="flannel", cni_backend="vxlan"
    )


def test_env_var_name_colon_is_decided_by_the_api_servers_version_not_the_kubelets():
    """API server 1.32.2 with kubelet 1.31.5: validation is the API server's, so it is lifted (it used to apply
    on the kubelet's 1.31.5, and the check's pass read as 'appears lifted', exit 1). API server 1.31 with a
    1.34 kubelet: it applies, naming the API server."""
    entry = load()["env-var-name-colon"]
    lifted = match(entry, skewed("v1.32.2", "v1.31.5"))
    assert not lifted.applies and "API server 1.32.2 >= 1.32" in lifted.explain()
    applies = match(entry, skewed("v1.31.4", "v1.34.4"))
    assert applies.applies and "API server 1.31.4 < 1.32" in applies.explain()
    unknown = match(entry, skewed("vX", "v1.31.5"))
    assert not unknown.applies and unknown.unknown == ("API server version",)


def test_the_env_var_checks_take_the_api_servers_422_refusal_as_the_deviation():
    """Below 1.32 the documented deviation is the refusal itself: the checks observe it (DeviationObserved, an
    expected failure where the limitation applies) instead of failing with Rejected; another refusal is not it."""

    from wincon.checks.api_rules import Rejection
    from wincon.commandline.errors import DeviationObserved, NotTheDeviation

    module = suites.load("suites/api/test_windows_conventions.py")
    message = 'Invalid value: "Logging:LogLevel": a valid environment variable name must consist of ...'
    invalid = Rejection(422, "Invalid", "Pod is invalid", ({"field": module.ENV_NAME_FIELD, "message": message},))
    with pytest.raises(DeviationObserved):
        module.refusal_is_the_deviation(invalid)
    webhook = Rejection(403, "Forbidden", "denied by a webhook", ())
    with pytest.raises(NotTheDeviation):
        module.refusal_is_the_deviation(webhook)
    module.refusal_is_the_deviation(None)  # admitted: nothing to observe


@pytest.mark.parametrize("runtime_version", ["main-5a1e6c3", ""])
def test_an_unparseable_runtime_version_never_lets_a_containerd_lift_apply(runtime_version):
    """host-privileges-unavailable is lifted by kubelet >= 1.23 and containerd >= 1.6: with containerd's
    version unknown it used to apply, naming nothing; now it does not apply and the plan names the unknown."""
    entry = load()["host-privileges-unavailable"]
    result = match(entry, skewed("v1.34.4", "v1.34.4", runtime_version))
    assert not result.applies
    assert result.unknown == ("containerd version of node w20348",)
    assert "containerd version of node w20348 unknown" in result.explain()
    # One component known below its lifting version keeps it in force, whatever the other.
    old_kubelet = match(entry, skewed("v1.34.4", "v1.22.17", runtime_version))
    assert old_kubelet.applies and "kubelet 1.22.17 < 1.23" in old_kubelet.explain()


def test_a_retired_entry_never_applies():
    entry = load()["service-vip-from-node"]
    result = match(entry, profile("flannel", "vxlan"))
    assert not result.applies and result.explain().startswith("retired: No current document carries it")


def test_every_version_condition_names_its_component(tmp_path):
    """k8s_version (which version: the API server's, or a kubelet's?) is no longer a key."""
    old = ENTRY.replace(
        "    mode: xfail\n", '    mode: xfail\n    lifted_in: {k8s_version: "1.26", note: "a note of ten"}\n'
    )
    with pytest.raises(LimitationsError, match="k8s_version"):
        load(write(tmp_path, old))
