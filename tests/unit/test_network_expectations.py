"""The CNI-aware expectation table of the networking and DNS suites, checked against what collection decides.

For each simulated CNI (flannel VXLAN, flannel host-gw, Azure CNI, Calico, an unknown CNI) the real suite is
collected with a profile of that CNI, as `wincon plan` collects it, and each test's fate is compared with
the table below. The table is written from the seed documents, not from the suite's output:

* 000_4130a90def37a825.txt / 002_8a7e76f95009f44f.txt / 003_414b2f1c5dd978a2.txt: "Outbound communication
  using the ICMP protocol via the win-overlay, win-bridge, and Azure-CNI plugin" is not supported; flannel
  VXLAN delegates to win-overlay and host-gw to win-bridge (002, network plugins table).
* 000 / 002 (CNI Plugins): with "The Flannel VXLAN CNI ... Node-pod connectivity ... only possible for local
  pods".
* 000 / 002 / 001: "Local NodePort access from the node itself fails"; "Accessing service VIPs from nodes"
  does not work ("no such issue when using OVS/OVN", 001); "Host networking mode is not available";
  "Local Traffic Policy and DSR mode"; "ClusterFirstWithHostNet is not supported"; dotted PQDNs do not
  resolve; "multiple DNS resolvers ... slightly different behaviors"; session affinity timeoutSeconds "is
  not supported"; no single-stack IPv6; no IPv6 on "l2bridge, l2tunnel, or overlay networks".
* 000 (v1.15 features): kubectl port-forward arrived in v1.15; 000/002: "Overlay networking support in
  kube-proxy is an alpha release"; 003: "For v1.14, custom pod DNS configuration tests are not running ...
  updates are needed to Azure-CNI, win-bridge, OVN, and flannel".

Two eras are checked: the documents' own (Kubernetes v1.14, Windows Server 2019), where every statement
holds as written, and a current cluster (v1.30, Windows Server 2022), where the statements the documents
themselves date (port-forward from v1.15) and the releases limitations.yaml records in `lifted_in` no
longer make a test an expected failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.session import controls
from wincon.session.collection import APPLIED_KEY
from wincon.session.verdicts import SIMULATED_REASON
from wincon.windows import forms

pytest_plugins = ["pytester"]

SUITE = Path(__file__).resolve().parents[2] / "suites" / "networking"

CNIS: dict[str, tuple[str, str | None]] = {
    "flannel-vxlan": ("flannel", "vxlan"),
    "flannel-host-gw": ("flannel", "host-gw"),
    "azure-cni": ("azure-cni", None),
    "calico": ("calico", None),
    "unknown": ("unknown", None),
}

# Documented everywhere, whatever the CNI (the test function -> the limitation it may deviate by).
EVERY_CNI = {
    "test_nodeport_answers_on_the_node_itself": "nodeport-from-own-node",
    "test_ordinary_windows_pod_with_host_network_shares_the_node_network": "hostnetwork-unsupported",
    "test_host_network_pod_with_cluster_first_with_host_net_resolves_services": "dns-cluster-first-with-host-net",
    "test_service_name_resolves_with_namespace_and_svc": "dns-dotted-pqdn-unresolved",
    "test_pod_reaches_service_by_name_with_namespace": "dns-dotted-pqdn-unresolved",
    "test_nslookup_and_resolve_dnsname_give_the_same_answer": "dns-resolvers-differ",
    "test_session_affinity_ends_after_its_timeout": "session-affinity-timeout",
    "test_external_traffic_policy_local_keeps_the_client_ip": "external-traffic-policy-local",
    "test_windows_pods_talk_on_an_ipv6_single_stack_cluster": "ipv6-single-stack-unsupported",
}
# Dated by the documents themselves: before v1.15 only.
DOCUMENTED_ERA_ONLY = {"test_port_forward_reaches_a_windows_pod": "port-forward-unsupported"}

ICMP = {"test_pod_pings_external_ip": "icmp-egress-through-vfp"}
# service-vip-from-node is retired (no current document carries it): the check's verdict stands alone.
VIP_FROM_NODE: dict[str, str] = {}
VXLAN_NODE_TO_POD = {"test_windows_node_reaches_pod_on_another_node": "flannel-vxlan-node-to-remote-pod"}
IPV6_TESTS = (
    "test_windows_pods_talk_over_ipv6_on_a_dual_stack_cluster",
    "test_windows_pod_reaches_ipv6_cluster_ip_on_a_dual_stack_cluster",
)
IPV6_OVERLAY = dict.fromkeys(IPV6_TESTS, "ipv6-overlay-unsupported")
IPV6_L2BRIDGE = dict.fromkeys(IPV6_TESTS, "ipv6-l2bridge-l2tunnel-unsupported")
# Statements of the v1.14 era, lifted in the releases limitations.yaml records (lifted_in).
OVERLAY_ALPHA = {"test_pod_reaches_service_by_cluster_ip": "overlay-kube-proxy-alpha"}  # beta, on by default: v1.20
DNS_CONFIG = {  # re-enabled: v1.15
    "test_dns_policy_none_applies_dns_config": "dns-config-via-cni",
    "test_dns_policy_default_gives_the_pod_the_nodes_resolvers": "dns-config-via-cni",
    "test_pod_dns_config_with_two_nameservers_resolves_real_names_only": "dns-config-via-cni",
}

DOCUMENTED_ERA: dict[str, dict[str, str]] = {
    "flannel-vxlan": {
        **EVERY_CNI,
        **DOCUMENTED_ERA_ONLY,
        **ICMP,
        **VIP_FROM_NODE,
        **VXLAN_NODE_TO_POD,
        **IPV6_OVERLAY,
        **OVERLAY_ALPHA,
        **DNS_CONFIG,
    },
    "flannel-host-gw": {**EVERY_CNI, **DOCUMENTED_ERA_ONLY, **ICMP, **VIP_FROM_NODE, **IPV6_L2BRIDGE, **DNS_CONFIG},
    "azure-cni": {**EVERY_CNI, **DOCUMENTED_ERA_ONLY, **ICMP, **VIP_FROM_NODE, **IPV6_L2BRIDGE, **DNS_CONFIG},
    # 000/002 state the node-to-Service-VIP limit for every Windows node; 001 exempts only OVS/OVN.
    "calico": {**EVERY_CNI, **DOCUMENTED_ERA_ONLY, **VIP_FROM_NODE},
    # An unknown CNI: only what holds whatever the CNI; nothing is assumed about the plugin.
    "unknown": {**EVERY_CNI, **DOCUMENTED_ERA_ONLY},
}

CURRENT_ERA: dict[str, dict[str, str]] = {
    "flannel-vxlan": {**EVERY_CNI, **ICMP, **VIP_FROM_NODE, **VXLAN_NODE_TO_POD, **IPV6_OVERLAY},
    "flannel-host-gw": {**EVERY_CNI, **ICMP, **VIP_FROM_NODE},  # dual-stack l2bridge: v1.21
    "azure-cni": {**EVERY_CNI, **ICMP, **VIP_FROM_NODE},
    "calico": {**EVERY_CNI, **VIP_FROM_NODE},
    "unknown": {**EVERY_CNI},
}


# Where limitations.yaml and the documents disagree, the table keeps the documents and names the gap.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


ERAS = {
    "v1.14-ltsc2019": ("v1.14.0", 17763, DOCUMENTED_ERA),
    "v1.30-ltsc2022": ("v1.30.4", 20348, CURRENT_ERA),
}


def make_profile(cni: str, server: str, build: int, simulated: bool = False, linux: bool = True) -> dict:
    def node(name: str, os_name: str, windows_build: int | None, ip: str) -> NodeProfile:
        return NodeProfile(
            name=name,
            os=os_name,
            arch="amd64",
            ready=True,
            simulated=simulated,
            kubelet_version=server,
            kube_proxy_version=server,  # nodeInfo.kubeProxyVersion, as the kubelets of both eras report it here
            runtime="containerd",
            runtime_version="1.7.20",
            windows_build=windows_build,
            internal_ip=ip,
        )

    nodes = [node("win-0", "windows", build, "10.240.0.5"), node("win-1", "windows", build, "10.240.0.6")]
    if linux:
        nodes.append(node("linux-0", "linux", None, "10.240.0.4"))
    name, backend = CNIS[cni]
    return ClusterProfile(server_version=server, nodes=nodes, cni=name, cni_backend=backend).to_dict()


def collect(pytester: pytest.Pytester, profile: dict) -> list[pytest.Item]:
    path = pytester.path / "profile.json"
    path.write_text(json.dumps(profile))
    items, _ = pytester.inline_genitems(str(SUITE), "--profile-file", str(path), "-p", "no:wincon_results")
    assert items, "the networking suite collected no tests"
    return items


def unavailable(item: pytest.Item) -> str:
    """Why a Windows item has no Windows form with evidence (its windows_form declares unavailable), or ''."""
    declared = forms.declaration(item) if forms.windows_item(item) else None
    return declared["unavailable"] if declared else ""


def fate(item: pytest.Item) -> tuple[str, str | None]:
    """('xfail', limitation id) / ('skip', reason) / ('run', None), as the plugin marked the item."""
    skip = item.get_closest_marker("skip")
    if skip is not None:
        return "skip", skip.kwargs.get("reason", "")
    xfail = item.get_closest_marker("xfail")
    if xfail is not None:
        applied = [lim.id for lim, _ in item.stash.get(APPLIED_KEY, [])]
        assert xfail.kwargs.get("strict") is True, f"{item.nodeid}: expected failures must be strict"
        assert len(applied) == 1, f"{item.nodeid}: several limitations apply at once: {applied}"
        assert xfail.kwargs["reason"].startswith(f"limitation {applied[0]}:"), xfail.kwargs["reason"]
        return "xfail", applied[0]
    return "run", None


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("cni", list(CNIS))
def test_expectation_table(pytester, cni, era):
    server, build, table = ERAS[era]
    expected = table[cni]
    items = collect(pytester, make_profile(cni, server, build))
    functions = {item.originalname for item in items}
    assert set(expected) <= functions, f"table names tests the suite lacks: {set(expected) - functions}"
    wrong, gaps = [], set()
    for item in items:
        outcome, detail = fate(item)
        want = ("xfail", expected[item.originalname]) if item.originalname in expected else ("run", None)
        if controls.is_control(item):
            want = ("run", None)  # a limitation is Windows's: the Linux control is expected to pass
        elif unavailable(item):  # no Windows form with evidence (wincon/windows/forms.py): skipped, its control runs
            want = ("skip", f"no Windows form with evidence: {unavailable(item)}")
        # The policy engine is a fact apart from the pod network (issue 19): these profiles name none, so it is
        # unknown and the NetworkPolicy checks run (an unknown capability never skips).
        if (outcome, detail) == want:
            continue
        if (cni, item.originalname) in KNOWN_GAPS:
            gaps.add(item.originalname)
        else:
            wrong.append(f"{item.nodeid}: expected {want}, collection gives {(outcome, detail)}")
    assert not wrong, "\n".join(wrong)
    closed = {name for (gap_cni, name) in KNOWN_GAPS if gap_cni == cni} - gaps
    assert not closed, f"limitations.yaml now agrees with the documents for {closed}: drop them from KNOWN_GAPS"
    if gaps:
        pytest.xfail("; ".join(KNOWN_GAPS[(cni, name)] for name in sorted(gaps)))


def test_every_networking_limitation_of_the_table_is_exercised():
    """Each limitation the table expects is referenced by a test of the suite (no table row is dead)."""
    used = {lim for table in DOCUMENTED_ERA.values() for lim in table.values()}
    text = "\n".join(p.read_text() for p in SUITE.glob("test_*.py"))
    for lim in used:
        assert f'limitation("{lim}")' in text, f"{lim} is in the table but no networking test references it"


def test_win_overlay_1803_fails_cluster_ip_flows(pytester):
    """003_414b2f1c5dd978a2.txt: "Overlay networking support in Windows Server 1803 is not fully functional using
    the win-overlay CNI plugin. Specifically service IPs do not work on Windows nodes."""
    items = collect(pytester, make_profile("flannel-vxlan", "v1.19.0", 17134))
    cluster_ip = [i for i in items if i.originalname == "test_pod_reaches_service_by_cluster_ip"]
    assert len(cluster_ip) == 4  # http and udp, each a Linux control and a Windows check
    for item in cluster_ip:
        if controls.is_control(item):
            assert not item.stash.get(APPLIED_KEY, []) and fate_kind(item) == "run", item.nodeid
            continue
        applied = [lim.id for lim, _ in item.stash.get(APPLIED_KEY, [])]
        assert "win-overlay-1803-service-ip" in applied, f"{item.nodeid}: {applied}"
        assert fate_kind(item) == "xfail"
    azure = collect(pytester, make_profile("azure-cni", "v1.19.0", 17134))
    for item in azure:
        if item.originalname == "test_pod_reaches_service_by_cluster_ip":
            assert fate_kind(item) == "run", "1803's service-IP problem is specific to win-overlay"


def fate_kind(item: pytest.Item) -> str:
    if item.get_closest_marker("skip"):
        return "skip"
    return "xfail" if item.get_closest_marker("xfail") else "run"


def test_without_linux_nodes_hybrid_flows_skip_with_the_reason(pytester):
    items = collect(pytester, make_profile("flannel-vxlan", "v1.30.4", 20348, linux=False))
    hybrid = [i for i in items if i.get_closest_marker("hybrid")]
    assert hybrid and any(i.path.name == "test_hybrid.py" for i in hybrid)
    assert any(i.originalname == "test_linux_node_reaches_windows_pod" for i in hybrid)
    for item in hybrid:
        outcome, reason = fate(item)
        assert outcome == "skip" and "Linux worker" in reason, f"{item.nodeid}: {outcome} {reason}"
    for item in items:  # every Linux control skips: no Linux worker can run it
        if controls.is_control(item) and item.path.name != "test_network_policy.py":
            assert fate(item) == ("skip", controls.NO_LINUX_REASON), item.nodeid
    assert all(
        fate(i)[0] != "skip"
        for i in items
        if not i.get_closest_marker("hybrid")
        and not controls.is_control(i)
        and i.path.name != "test_network_policy.py"  # flannel: skipped at collection (no policy engine)
        and not unavailable(i)  # no Windows form with evidence: skipped everywhere (wincon/windows/forms.py)
    )


def test_every_traffic_check_is_gated_and_setup_checks_are_not(pytester):
    """Traffic checks carry `dataplane` (they skip on simulated nodes); the setup checks do not (they run there)."""
    items = collect(pytester, make_profile("flannel-vxlan", "v1.30.4", 20348))
    setup = {
        "test_every_service_type_is_created_over_windows_pods",
        "test_pods_of_both_operating_systems_back_their_services",
    }
    for item in items:
        gated = item.get_closest_marker("dataplane") is not None
        assert gated == (item.originalname not in setup), f"{item.nodeid}: dataplane marker {gated}"
        source = item.function.__code__.co_names + item.function.__code__.co_varnames
        if gated:
            assert "checks" in source, f"{item.nodeid} is marked dataplane but never goes through the checks gate"


def test_on_simulated_nodes_the_plan_says_skip_and_names_the_limitation(pytester, tmp_path):
    """`wincon plan` on the local cluster: data-plane tests show skip with the simulated-nodes reason and the
    limitation that would apply on a real cluster with the same profile."""
    from wincon.session.collection import plan_row

    profile = make_profile("flannel-vxlan", "v1.30.4", 20348, simulated=True)
    items = collect(pytester, profile)
    cluster = ClusterProfile.from_dict(profile)
    rows = {item.nodeid: plan_row(item, cluster) for item in items}
    # The ICMP checks' Windows form has recorded evidence (forms.PING_OUTPUTS): they are collected again and skip
    # at the data-plane gate like every traffic check, the egress one naming its limitation. (Failed before: they
    # skipped at collection with "no Windows form with evidence" on every cluster.)
    pings = {n: r for n, r in rows.items() if "pings" in n and "[windows" in n}
    assert len(pings) == 3, sorted(pings)  # external IP, pod on the same node, pod on another node
    for nodeid, row in pings.items():
        assert row["outcome"] == "skip" and row["reason"].startswith(SIMULATED_REASON), (nodeid, row)
        assert row["windows_form"]["evidence"] == list(forms.PING_OUTPUTS), nodeid
    egress = next(r for n, r in pings.items() if "test_pod_pings_external_ip" in n)
    assert "icmp-egress-through-vfp" in egress["reason"]
    dotted = next(r for n, r in rows.items() if "test_pod_reaches_service_by_name_with_namespace[windows" in n)
    assert dotted["outcome"] == "skip"
    assert dotted["reason"].startswith(SIMULATED_REASON) and "dns-dotted-pqdn-unresolved" in dotted["reason"]
    control = next(r for n, r in rows.items() if "test_pod_reaches_service_by_name_with_namespace[linux" in n)
    assert control["outcome"] == "skip" and control["os"] == "linux" and not control["limitations"]
    setup = next(
        r for n, r in rows.items() if n.endswith("test_every_service_type_is_created_over_windows_pods[ClusterIP]")
    )
    assert setup["outcome"] == "run"
