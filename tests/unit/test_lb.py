"""MetalLB on the local cluster (wincon/localcluster/lb.py) and how the profile finds a LoadBalancer provider."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile, load_balancer_ingress
from wincon.localcluster import addons, dataplane, extras, lb


def plan(nodes: int = 2, subnet: int = 9) -> dataplane.Plan:
    net = f"172.30.{subnet}"
    return dataplane.Plan(
        "wincon-h3",
        f"{net}.0/24",
        f"{net}.1",
        f"{net}.254",
        [dataplane.RealNode(f"worker-{i}", i, f"{net}.{2 + i}", f"10.244.{2 + i}.0/24") for i in range(nodes)],
    )


def test_controller_and_speaker_are_addons_of_metallb_v0_15_2_checked_by_the_version_they_log():
    spec = addons.load()
    for name, package in ((lb.CONTROLLER, "controller"), (lb.SPEAKER, "speaker")):
        assert spec[name]["module"] == "go.universe.tf/metallb" and spec[name]["version"] == "v0.15.2"
        assert spec[name]["package"] == f"go.universe.tf/metallb/{package}"
        assert "version_ldflag" not in spec[name]  # the version is a constant of its internal/version
    comps = {c.name: c for c in addons.components()}
    assert comps[lb.CONTROLLER].expect == "MetalLB controller starting version 0.15.2"
    assert comps[lb.SPEAKER].expect == "MetalLB speaker starting version 0.15.2"
    assert addons.key(lb.CONTROLLER) != addons.key(lb.SPEAKER)


def test_metallb_is_an_addon_module_started_by_up():
    assert lb in extras.MODULES
    for attr in ("NAME", "start", "objects", "available", "status"):
        assert hasattr(lb, attr), attr


def test_the_pool_is_200_to_220_of_the_node_network_and_holds_no_cluster_address():
    assert lb.pool_range(plan()) == "172.30.9.200-172.30.9.220"
    crowded = plan()
    crowded.nodes.append(dataplane.RealNode("worker-x", 9, "172.30.9.205", "10.244.9.0/24"))
    with pytest.raises(ValueError, match=r"holds 172\.30\.9\.205"):
        lb.pool_range(crowded)


def test_the_l2_advertisement_announces_on_the_nodes_bridge_veth_of_real_nodes_only():
    pool, advert = lb.configuration(plan())
    assert pool["kind"] == "IPAddressPool" and pool["metadata"]["namespace"] == lb.NAMESPACE
    assert pool["spec"]["addresses"] == ["172.30.9.200-172.30.9.220"]
    assert advert["kind"] == "L2Advertisement" and advert["spec"]["ipAddressPools"] == [lb.POOL]
    assert advert["spec"]["interfaces"] == ["eth0"]  # netns.add_netns: the node's end of its veth to the bridge
    selector = advert["spec"]["nodeSelectors"][0]["matchExpressions"]
    assert selector == [{"key": "type", "operator": "NotIn", "values": ["kwok"]}]  # no speaker on simulated nodes


def test_the_probe_is_a_loadbalancer_service_without_selector():
    (svc,) = lb.objects(plan())
    assert svc["spec"]["type"] == "LoadBalancer" and "selector" not in svc["spec"]
    assert (svc["metadata"]["namespace"], svc["metadata"]["name"]) == (lb.NAMESPACE, lb.PROBE)


def test_controller_without_webhook_and_one_speaker_per_node_without_memberlist():
    p = plan()
    bin_root = dataplane.root(p.cluster) / "bin"
    args = lb.controller_args(p, bin_root / lb.CONTROLLER)
    assert "--webhook-mode=disabled" in args and f"--namespace={lb.NAMESPACE}" in args
    assert f"--port={lb.CONTROLLER_PORT}" in args and lb.CONTROLLER_PORT != lb.SPEAKER_PORT
    assert args[0].startswith(dataplane.marker(p.cluster))  # down kills it by the cluster's marker
    for node in p.nodes:
        args = lb.speaker_args(p, node, bin_root / lb.SPEAKER)
        assert f"--node-name={node.name}" in args and f"--host={node.address}" in args
        assert not any(a.startswith("--ml-") for a in args)  # memberlist off: no secret to make
        assert f"--kubeconfig={dataplane.node_dir(p.cluster, node.name) / 'kubeconfig'}" in args


def test_crds_are_read_from_the_module_files(tmp_path):
    bases = tmp_path / lb.CRD_DIR
    bases.mkdir(parents=True)
    (bases / "metallb.io_ipaddresspools.yaml").write_text(
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
        "  name: ipaddresspools.metallb.io\n"
    )
    (bases / "notes.yaml").write_text("kind: Kustomization\n")
    assert [c["metadata"]["name"] for c in lb.crds(tmp_path)] == ["ipaddresspools.metallb.io"]


def test_start_says_why_when_not_built(monkeypatch, capsys):
    import sys

    monkeypatch.setattr(lb, "binaries", lambda: (None, None))
    assert lb.start(plan(), sys.stdout) is False
    assert "MetalLB: not built" in capsys.readouterr().out


def test_status_names_controller_and_speakers(monkeypatch, tmp_path):
    monkeypatch.setattr(lb, "binaries", lambda: (tmp_path / "c", tmp_path / "s"))
    procs = [
        {"name": "metallb", "pid": 1, "running": True, "log": "x"},
        {"name": "worker-0-metallb-speaker", "pid": 2, "running": True, "log": "y"},
        {"name": "worker-0-kubelet", "pid": 3, "running": True, "log": "z"},
    ]
    status = lb.status(plan(), procs)
    assert status["controller"]["pid"] == 1 and [s["pid"] for s in status["speakers"]] == [2]
    assert status["pool"] == "172.30.9.200-172.30.9.220" and status["probe_service"] == "metallb-system/lb-probe"
    assert lb.status(plan(), procs[1:])["pool"] is None  # built but not started (an IPv6 cluster's up skips it)
    monkeypatch.setattr(lb, "binaries", lambda: (None, None))
    assert lb.status(plan(), [])["pool"] is None


def _svc(kind: str, ingress: list[dict[str, str]], name: str = "web") -> NS:
    return NS(
        metadata=NS(namespace="ns", name=name),
        spec=NS(type=kind),
        status=NS(load_balancer=NS(ingress=[NS(ip=i.get("ip"), hostname=i.get("hostname")) for i in ingress])),
    )


def test_the_profile_finds_a_provider_by_a_loadbalancer_services_ingress_address():
    services = [
        _svc("ClusterIP", []),
        _svc("LoadBalancer", [], name="pending"),
        _svc("LoadBalancer", [{"ip": "172.30.9.200"}], name="a"),
        _svc("LoadBalancer", [{"hostname": "lb.example.invalid"}], name="b"),
    ]
    assert load_balancer_ingress(services) == ["ns/a 172.30.9.200", "ns/b lb.example.invalid"]


@pytest.mark.parametrize(
    ("cloud", "found", "has"),
    [
        ("kwok", ["metallb-system/lb-probe 172.30.9.200"], True),
        ("kwok", [], False),  # the local cluster without its MetalLB: nothing else can provide
        ("kwok", None, False),
        ("azure", [], None),  # elsewhere absence proves nothing: the check's own wait decides
        ("other", ["ingress/nginx 10.1.2.3"], True),
    ],
)
def test_the_load_balancer_capability_follows_the_services_found(cloud, found, has):
    profile = ClusterProfile(server_version="v1.34.4", cloud=cloud, load_balancers=found)
    assert capabilities.has(profile, "load-balancer") is has
    if has is False:
        assert "no LoadBalancer provider" in capabilities.reason(profile, "load-balancer")


def test_the_profile_file_keeps_the_load_balancers():
    profile = ClusterProfile(server_version="v1.34.4", cloud="kwok", load_balancers=["a/b 1.2.3.4"])
    assert ClusterProfile.from_dict(profile.to_dict()).load_balancers == ["a/b 1.2.3.4"]
    assert ClusterProfile.from_dict({"server_version": "v1.34.4"}).load_balancers is None


class _SilentKube:
    """A kube whose LoadBalancer Service never gets an address, with the given profile and events."""

    namespace = "ns"

    def __init__(self, profile: ClusterProfile, events: list[NS]) -> None:
        self.profile = profile
        self.core = NS(
            list_namespaced_event=lambda namespace, field_selector="": NS(items=events), list_namespaced_service=None
        )

    def wait_for(self, *args: object, **kwargs: object) -> None:
        from wincon.cluster.waits import WaitTimeout

        raise WaitTimeout("no ingress")


def test_a_service_left_without_address_where_the_profile_saw_a_provider_is_an_error_not_a_skip():
    from wincon.commandline.errors import InfrastructureError
    from wincon.network import services

    serving = ClusterProfile(server_version="v1.34.4", cloud="kwok", load_balancers=["metallb-system/lb-probe 1.2.3.4"])
    with pytest.raises(InfrastructureError, match=r"did not provision Service lb.*serves 1 other.*lb-probe"):
        services.wait_for_load_balancer(_SilentKube(serving, []), "lb")
    refused = NS(reason="AllocationFailed", message='Failed to allocate IP for "ns/lb": no available IPs')
    with pytest.raises(InfrastructureError, match="AllocationFailed: Failed to allocate"):
        services.wait_for_load_balancer(_SilentKube(serving, [refused]), "lb")
    nothing = ClusterProfile(server_version="v1.34.4", cloud="other", load_balancers=[])
    with pytest.raises(pytest.skip.Exception, match="no LoadBalancer provider"):
        services.wait_for_load_balancer(_SilentKube(nothing, []), "lb")


def test_start_goes_on_without_metallb_when_its_module_cannot_be_had(monkeypatch, capsys, tmp_path):
    import sys

    from wincon.commandline.errors import LocalClusterError

    def no_go() -> None:
        raise LocalClusterError("the Go toolchain is not installed", "install Go")

    monkeypatch.setattr(lb, "binaries", lambda: (tmp_path / "c", tmp_path / "s"))
    monkeypatch.setattr(lb, "module_dir", no_go)
    spawned: list[str] = []
    monkeypatch.setattr(dataplane, "_spawn", lambda cluster, ns, name, args, log: spawned.append(name) or 1)
    assert lb.start(plan(), sys.stdout) is False
    assert "could not be configured (the Go toolchain is not installed" in capsys.readouterr().out
    assert spawned == []
