import json

import pytest

from tests.unit.fixtures import node
from wincon.clusterinfo.profile import (
    ClusterProfile,
    detect_cloud,
    detect_cni,
    detect_kube_proxy_mode,
    iter_nodes,
    node_profile,
    os_version_for_build,
    parse_build,
)


@pytest.mark.parametrize(
    ("text", "build"),
    [("10.0.17763", 17763), ("10.0.20348.2655", 20348), ("26100", 26100), ("", None), ("weird", None)],
)
def test_parse_build(text, build):
    assert parse_build(text) == build


def test_builds_map_to_os_versions():
    assert [os_version_for_build(b) for b in (17763, 20348, 26100, 19041)] == ["ltsc2019", "ltsc2022", "ltsc2025", None]


def test_windows_node_facts_come_from_labels_and_node_info():
    n = node_profile(node("akswin000000", taints=[{"key": "os", "value": "windows", "effect": "NoSchedule"}]))
    assert (n.os, n.windows_build, n.os_version, n.runtime, n.runtime_version) == (
        "windows",
        20348,
        "ltsc2022",
        "containerd",
        "1.7.20+azure",
    )
    assert n.taints == ("os=windows:NoSchedule",) and n.ready and not n.simulated
    assert n.internal_ip == "10.240.0.4"


def test_build_falls_back_to_kernel_version_without_label():
    n = node_profile(node("w", build=None, kernel="10.0.17763.6189"))
    assert (n.windows_build, n.os_version) == (17763, "ltsc2019")


def test_kwok_annotation_marks_a_node_simulated():
    assert node_profile(node("w", simulated=True)).simulated


@pytest.mark.parametrize(
    ("provider", "cloud"),
    [
        ("azure:///subscriptions/1/x", "azure"),
        ("gce://proj/us-central1-a/gke-win-1", "gce"),
        ("aws:///us-east-1a/i-0abc", "aws"),
        ("kwok://w1", "kwok"),
        ("", "other"),
        ("kind://docker/k/n", "other"),
    ],
)
def test_cloud_comes_from_provider_id(provider, cloud):
    assert detect_cloud([node_profile(node("n", provider=provider))]) == cloud


FLANNEL_VXLAN = {
    "kube-flannel-cfg": {
        "net-conf.json": json.dumps(
            {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789}}
        )
    }
}
FLANNEL_HOSTGW = {
    "kube-flannel-cfg": {"net-conf.json": json.dumps({"Network": "10.244.0.0/16", "Backend": {"Type": "host-gw"}})}
}


@pytest.mark.parametrize(
    ("daemonsets", "configmaps", "expected"),
    [
        (["kube-flannel-ds", "kube-flannel-ds-windows-amd64", "kube-proxy"], FLANNEL_VXLAN, ("flannel", "vxlan")),
        (["kube-flannel-ds"], FLANNEL_HOSTGW, ("flannel", "host-gw")),
        (["kube-flannel-ds"], {}, ("flannel", None)),
        (["azure-cns", "azure-cns-win", "kube-proxy", "cloud-node-manager-windows"], {}, ("azure-cni", None)),
        (["calico-node", "calico-node-windows"], {"calico-config": {"calico_backend": "vxlan"}}, ("calico", "vxlan")),
        (["antrea-agent", "antrea-agent-windows"], {}, ("antrea", None)),
        (["ovnkube-node"], {}, ("ovn-kubernetes", None)),
        (["kube-proxy", "coredns"], {}, ("unknown", None)),
    ],
)
def test_cni_detection_from_the_objects_each_cni_deploys(daemonsets, configmaps, expected):
    assert detect_cni(daemonsets, configmaps) == expected


def test_malformed_flannel_config_gives_no_backend():
    assert detect_cni(["kube-flannel-ds"], {"kube-flannel-cfg": {"net-conf.json": "{not json"}}) == ("flannel", None)


def test_kube_proxy_mode_prefers_the_windows_daemonset_args():
    ds = {
        "kube-proxy": ["--config=/var/lib/kube-proxy/config.conf"],
        "kube-proxy-windows": ["--proxy-mode=kernelspace"],
    }
    assert detect_kube_proxy_mode(ds, {"kube-proxy": {"config.conf": "mode: iptables"}}) == "kernelspace"
    assert detect_kube_proxy_mode({}, {}) is None


def test_the_windows_kube_proxy_mode_is_never_read_from_the_linux_configmap():
    """AKS runs the Windows kube-proxy as a Windows service: the kube-proxy ConfigMap is the Linux one's (it
    used to give 'ipvs' or 'iptables' for the Windows nodes). Only kernelspace, Windows's own mode, counts."""
    linux = {"kube-proxy": {"config.conf": "kind: X\nmode: ipvs\n"}}
    assert detect_kube_proxy_mode({"kube-proxy": []}, linux) is None
    assert detect_kube_proxy_mode({}, {"kube-proxy": {"config.conf": 'mode: ""'}}) is None
    assert detect_kube_proxy_mode({}, {"kube-proxy": {"config.conf": "mode: kernelspace"}}) == "kernelspace"


def test_cni_aliases_cover_the_windows_plugin_flannel_uses():
    vxlan = ClusterProfile("v1.34.4", cni="flannel", cni_backend="vxlan")
    hostgw = ClusterProfile("v1.34.4", cni="flannel", cni_backend="host-gw")
    assert "win-overlay" in vxlan.cni_aliases and "win-bridge" not in vxlan.cni_aliases
    assert "win-bridge" in hostgw.cni_aliases and "flannel-host-gw" in hostgw.cni_aliases
    assert ClusterProfile("v1", cni="unknown").cni_aliases == frozenset({"unknown"})


def test_data_plane_is_false_when_any_windows_node_is_simulated():
    real = node_profile(node("w1"))
    fake = node_profile(node("w2", simulated=True))
    assert ClusterProfile("v1.34.4", nodes=[real]).data_plane
    assert not ClusterProfile("v1.34.4", nodes=[real, fake]).data_plane
    assert not ClusterProfile("v1.34.4", nodes=[]).data_plane


def test_profile_round_trips_through_json_and_restricts_to_a_build():
    nodes = [
        node_profile(node("w19", build="10.0.17763")),
        node_profile(node("w22")),
        node_profile(node("l", os_name="linux")),
    ]
    profile = ClusterProfile("v1.34.4-gke.100", nodes=nodes, cni="azure-cni", cloud="azure")
    again = ClusterProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert again.to_dict() == profile.to_dict()
    assert (again.k8s_version, again.k8s_minor, again.windows_builds) == ("1.34.4", "1.34", [17763, 20348])
    only = profile.restrict_to_build(20348)
    assert [n.name for n in only.windows_nodes] == ["w22"] and len(only.linux_nodes) == 1


class _Pages:
    """A list_node that serves pages of 2 and counts calls: discovery must page, not list everything at once."""

    def __init__(self, total):
        self.items = [node(f"n{i}") for i in range(total)]
        self.calls = []

    def list_node(self, limit, _preload_content, _continue=None):
        start = int(_continue or 0)
        self.calls.append((limit, start))
        page = self.items[start : start + limit]
        token = str(start + limit) if start + limit < len(self.items) else None

        class R:
            data = json.dumps({"items": page, "metadata": {"continue": token}})

        return R()


def test_nodes_are_read_page_by_page():
    api = _Pages(5)
    names = [n["metadata"]["name"] for n in iter_nodes(api, page_size=2)]
    assert names == [f"n{i}" for i in range(5)]
    assert api.calls == [(2, 0), (2, 2), (2, 4)]


class _Cluster:
    """The reads discovery makes, served from objects, each taking 50 ms; counts how many are in flight at once."""

    def __init__(self, nodes, daemonsets, configmaps):
        import threading

        self.nodes, self.daemonsets, self.configmaps = nodes, daemonsets, configmaps
        self.lock, self.in_flight, self.most, self.reads = threading.Lock(), 0, 0, 0

    def read(self, answer):
        import time

        with self.lock:
            self.in_flight += 1
            self.reads += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(0.05)
        with self.lock:
            self.in_flight -= 1
        return answer()

    def apis(self):
        from types import SimpleNamespace

        from kubernetes.client.exceptions import ApiException

        def missing():
            raise ApiException(status=404)

        def config_map(name, namespace):
            data = self.configmaps.get((namespace, name))
            return self.read(lambda: SimpleNamespace(data=data) if data is not None else missing())

        def list_node(limit, _preload_content, _continue=None):
            return self.read(lambda: SimpleNamespace(data=json.dumps({"items": self.nodes, "metadata": {}})))

        def custom(group, version, namespace, plural):
            assert (group, version, plural) == ("apps", "v1", "daemonsets")
            return self.read(lambda: {"items": self.daemonsets.get(namespace, [])})

        service = SimpleNamespace(spec=SimpleNamespace(ip_families=["IPv4"], cluster_ip="10.96.0.10"))
        core = SimpleNamespace(
            list_node=list_node,
            read_namespaced_config_map=config_map,
            read_namespaced_service=lambda name, namespace: self.read(lambda: service),
            list_service_for_all_namespaces=lambda **kw: self.read(lambda: SimpleNamespace(items=[])),
            api_client=None,
        )
        return {
            "CoreV1Api": lambda api: core,
            "CustomObjectsApi": lambda api: SimpleNamespace(list_namespaced_custom_object=custom),
            "VersionApi": lambda api: SimpleNamespace(
                get_code=lambda: self.read(lambda: SimpleNamespace(git_version="v1.34.4"))
            ),
            "NetworkingV1Api": lambda api: SimpleNamespace(
                list_service_cidr=lambda **kw: self.read(lambda: SimpleNamespace(items=[]))
            ),
            "NodeV1Api": lambda api: SimpleNamespace(
                list_runtime_class=lambda **kw: self.read(lambda: SimpleNamespace(items=[]))
            ),
        }


def test_discovery_issues_its_reads_together_and_merges_them_in_namespace_order():
    """About 35 independent reads: issued together (several in flight at once), the profile is the one the same
    objects give read one after another; a ConfigMap of a later namespace in CNI_NAMESPACES wins, as before."""
    from unittest import mock

    from wincon.clusterinfo.profile import CNI_NAMESPACES, NetworkObjects, discover, profile_from

    flannel = {"metadata": {"name": "kube-flannel-ds"}, "spec": {"template": {"spec": {"containers": []}}}}
    nodes = [node("w1"), node("l1", os_name="linux")]
    cluster = _Cluster(
        nodes,
        {"kube-flannel": [flannel]},
        {
            ("kube-system", "kube-flannel-cfg"): {"net-conf.json": '{"Backend": {"Type": "host-gw"}}'},
            ("kube-flannel", "kube-flannel-cfg"): {"net-conf.json": '{"Backend": {"Type": "vxlan"}}'},
        },
    )
    with mock.patch.multiple("kubernetes.client", **cluster.apis()):
        profile = discover(object())
    # version, nodes, services; DaemonSets, ConfigMaps; RuntimeClasses, StorageClasses, kube-dns
    assert cluster.reads == 3 + len(CNI_NAMESPACES) * 5 + 2 + 2
    assert cluster.most > 1, "discovery's reads were made one after another"
    assert CNI_NAMESPACES.index("kube-flannel") > CNI_NAMESPACES.index("kube-system")
    read_in_turn = NetworkObjects(
        nodes=nodes,
        daemonsets={"kube-flannel-ds": flannel},
        configmaps={"kube-flannel-cfg": {"net-conf.json": '{"Backend": {"Type": "vxlan"}}'}},
        cloud=detect_cloud([node_profile(n) for n in nodes]),
    )
    expected = profile_from("v1.34.4", read_in_turn)
    expected.ip_families, expected.load_balancers = ["IPv4"], []
    expected.runtime_classes, expected.cluster_dns = [], "10.96.0.10"
    assert profile.to_dict() == expected.to_dict()
    assert (profile.cni, profile.cni_backend) == ("flannel", "vxlan")  # kube-flannel's ConfigMap, read last
