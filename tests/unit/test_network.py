"""wincon.network: pod and Service references, the manifests the networking suites deploy, endpoint
addresses, and the flow checks' use of the data-plane gate (on a fake Kube)."""

import json
from types import SimpleNamespace as NS

import pytest

from wincon.cluster.exec import ExecResult
from wincon.clusterinfo.profile import NodeProfile
from wincon.commandline.errors import InfrastructureError
from wincon.network import pods, services
from wincon.network.flows import FlowChecks
from wincon.network.objects import NetworkObjects
from wincon.network.pods import PodRef
from wincon.windows import connectivity as conn


def node(name="win1", build=20348, taints=(), ready=True, os_name="windows"):
    return NodeProfile(
        name=name,
        os=os_name,
        arch="amd64",
        ready=ready,
        simulated=False,
        windows_build=build if os_name == "windows" else None,
        taints=tuple(taints),
    )


class Catalog:
    images = {"agnhost": 1, "nettools": 1}

    def image(self, key, os_name="windows", build=None):
        if key == "nettools" and build == 17763:
            raise InfrastructureError("no nettools for 17763", "")
        return f"reg/{key}:{os_name}-{build}"


def api_pod(name="p", ip="10.0.0.5", ips=("10.0.0.5", "fd00::5"), node_name="win1", host_ip="192.168.0.2"):
    return NS(
        metadata=NS(name=name),
        spec=NS(node_name=node_name),
        status=NS(pod_ip=ip, pod_ips=[NS(ip=i) for i in ips], host_ip=host_ip),
    )


# ----------------------------------------------------------------------------- pods


def test_pod_ref_carries_every_address_and_the_node():
    ref = pods.pod_ref(api_pod(), "windows", "netexec", tools="tools")
    assert (ref.ip, ref.ips, ref.node, ref.host_ip) == ("10.0.0.5", ("10.0.0.5", "fd00::5"), "win1", "192.168.0.2")
    assert ref.tool_container == "tools"
    assert pods.pod_ref(api_pod(ips=()), "linux", "netexec").ips == ("10.0.0.5",)


def test_a_running_pod_without_an_ip_is_an_infrastructure_error():
    with pytest.raises(InfrastructureError, match="has no IP"):
        pods.pod_ref(api_pod(ip=None, ips=()), "windows", "netexec")


def test_windows_netserver_is_pinned_to_its_node_and_build_and_labelled_to_be_selected_alone():
    manifest = pods.windows_netserver_manifest(Catalog(), "netserver-0", node(), hostname="netserver-0")
    spec = manifest["spec"]
    assert spec["os"] == {"name": "windows"}
    assert spec["nodeSelector"]["kubernetes.io/hostname"] == "win1"
    assert spec["nodeSelector"]["node.kubernetes.io/windows-build"] == "10.0.20348"
    assert manifest["metadata"]["labels"] == {"app": "netserver", pods.NETSERVER_LABEL: "netserver-0"}
    assert spec["containers"][0]["image"] == "reg/agnhost:windows-20348"
    assert spec["hostname"] == "netserver-0"


def test_windows_client_gets_the_tools_container_only_where_the_catalog_has_one():
    manifest, tools = pods.windows_client_manifest(Catalog(), "client", node())
    assert tools and [c["name"] for c in manifest["spec"]["containers"]] == ["netexec", "tools"]
    manifest, tools = pods.windows_client_manifest(Catalog(), "client", node(build=17763))
    assert not tools and [c["name"] for c in manifest["spec"]["containers"]] == ["netexec"]


def test_hostprocess_pod_runs_in_the_host_network_as_a_local_account():
    manifest = pods.hostprocess_manifest(Catalog(), "node-0", node())
    spec = manifest["spec"]
    assert spec["hostNetwork"] is True
    assert spec["securityContext"]["windowsOptions"] == {"hostProcess": True, "runAsUserName": pods.HOSTPROCESS_USER}


def test_linux_netexec_is_labelled_as_a_linux_netserver():
    manifest = pods.linux_netexec_manifest(Catalog(), "lin-netserver-0", node("lin1", os_name="linux"))
    assert manifest["spec"]["os"] == {"name": "linux"}
    assert manifest["metadata"]["labels"]["app"] == pods.LINUX_NETSERVERS
    named = pods.linux_netexec_manifest(
        Catalog(), "lin-netserver-1", node("lin2", os_name="linux"), hostname="lin-netserver-1", subdomain="lin-ns"
    )
    assert (named["spec"]["hostname"], named["spec"]["subdomain"]) == ("lin-netserver-1", "lin-ns")


def test_host_dial_port_is_stable_in_its_range_and_differs_between_pods():
    port = pods.host_dial_port("ns-a", "lin-node")
    assert port == pods.host_dial_port("ns-a", "lin-node")
    assert pods.HOST_DIAL_PORTS[0] <= port < pods.HOST_DIAL_PORTS[1]
    ports = {pods.host_dial_port(f"ns-{i}", "lin-node") for i in range(50)}
    assert len(ports) > 45  # modules running at once rarely share one


def test_nodes_the_checks_use():
    profile = NS(
        ready_windows_nodes=[node(f"win{i}") for i in (5, 1, 3, 2, 4)],
        linux_nodes=[node("cp", os_name="linux", taints=["node-role.kubernetes.io/control-plane:NoSchedule"])],
    )
    assert [n.name for n in pods.check_windows_nodes(profile)] == ["win1", "win2", "win3", "win4"]
    with pytest.raises(pytest.skip.Exception, match="Linux worker"):
        pods.schedulable_linux_node(profile)
    with pytest.raises(InfrastructureError):
        pods.check_windows_nodes(NS(ready_windows_nodes=[]))
    with pytest.raises(pytest.skip.Exception, match="two Ready Windows nodes"):
        pods.second_windows_node([node()])


def test_api_message_reads_the_status_body():
    assert pods.api_message(NS(body=json.dumps({"message": "forbidden: hostProcess"}), reason="Forbidden")) == (
        "forbidden: hostProcess"
    )
    assert pods.api_message(NS(body=None, reason="Forbidden")) == "Forbidden"


# ----------------------------------------------------------------------------- Services


def test_endpoint_addresses():
    endpoints = NS(subsets=[NS(addresses=[NS(ip="10.0.0.1"), NS(ip="10.0.0.2")]), NS(addresses=None)])
    assert services.endpoints_ips(endpoints) == {"10.0.0.1", "10.0.0.2"}
    slice_ = NS(
        endpoints=[
            NS(addresses=["10.0.0.1"], conditions=NS(ready=True)),
            NS(addresses=["10.0.0.2"], conditions=NS(ready=False)),
            NS(addresses=["10.0.0.3"], conditions=None),
        ]
    )
    assert services.endpoint_slice_ips(slice_) == {"10.0.0.1", "10.0.0.3"}


def svc(kind="ClusterIP", cluster_ip="10.96.0.10", node_ports=(None,)):
    return NS(
        metadata=NS(name="s"),
        spec=NS(
            type=kind, cluster_ip=cluster_ip, ports=[NS(name=f"p{i}", node_port=p) for i, p in enumerate(node_ports)]
        ),
    )


def test_service_ref_checks_the_addresses_each_type_promises():
    ref = services.service_ref(svc(), "ns", "corp.local")
    assert (ref.type, ref.cluster_ip, ref.fqdn) == ("ClusterIP", "10.96.0.10", "s.ns.svc.corp.local")
    assert services.service_ref(svc(cluster_ip="None"), "ns").type == "headless"
    assert services.service_ref(svc("NodePort", node_ports=(30001,)), "ns").node_ports == {"p0": 30001}
    with pytest.raises(AssertionError, match="no cluster IP"):
        services.service_ref(svc(cluster_ip=""), "ns")
    with pytest.raises(AssertionError, match="no node port"):
        services.service_ref(svc("NodePort", node_ports=(None,)), "ns")
    with pytest.raises(AssertionError, match="got a cluster IP"):
        services.service_ref(svc("ExternalName", cluster_ip="10.96.0.11"), "ns")


def test_network_objects_select_the_windows_netservers_by_default(monkeypatch):
    seen = {}
    monkeypatch.setattr("wincon.network.objects.create_service", lambda kube, t, e, d, **p: seen.update(p, domain=d))
    NetworkObjects(NS(namespace="ns"), "corp.local").service("service.yaml", None, name="svc")
    assert seen == {"name": "svc", "selector_key": "app", "selector_value": "netserver", "domain": "corp.local"}
    one = PodRef("netserver-1", "10.0.0.2", ("10.0.0.2",), "win2", "", "windows", "netexec")
    assert NetworkObjects.only(one) == {pods.NETSERVER_LABEL: "netserver-1"}


# ----------------------------------------------------------------------------- flow checks


class FakeKube:
    namespace = "ns"

    def __init__(self, results):
        self.results = list(results)
        self.gates, self.execs = [], []

    def gate(self, command, where=""):
        self.gates.append((tuple(command) if isinstance(command, list) else command, where))

    def exec(self, pod, command, container=None, where=None, timeout=60.0):
        self.gate(command, where=where)
        self.execs.append((pod.name, container, timeout))
        result = self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result


CLIENT = PodRef("client", "10.0.0.9", ("10.0.0.9",), "win1", "", "windows", "netexec", tools="tools")


def test_every_exec_of_a_check_goes_through_the_gate_with_where_it_runs(monkeypatch):
    monkeypatch.setattr(conn, "attempts", lambda once, tries, **kw: (once() or once(), 2))
    kube = FakeKube([ExecResult(1, "", "refused"), ExecResult(0, "netserver-0", "")])
    ok, last = FlowChecks(kube).http_get(CLIENT, "http://10.0.0.5:8083/hostname", ["netserver-0"])
    assert ok and last.stdout == "netserver-0"
    where = "windows pod client on win1"
    assert {w for _, w in kube.gates} == {where}
    assert kube.execs == [("client", "tools", 90.0), ("client", "tools", 90.0)]


def test_a_failed_exec_counts_as_a_dial_try(monkeypatch):
    tries = []
    monkeypatch.setattr(
        conn,
        "collect_dial",
        lambda once, expected, max_tries, min_tries, **kw: (
            tries.append(once()) or conn.DialOutcome(frozenset(expected))
        ),
    )
    kube = FakeKube([InfrastructureError("exec timed out", "")])
    FlowChecks(kube).dial(CLIENT, "10.0.0.5", 8083, "http", ["netserver-0"])
    assert tries and tries[0].startswith("exec failed: ")
    assert kube.execs == [("client", "netexec", 90.0)]


def test_pod_names_are_what_a_dial_answers_with():
    refs = [PodRef(f"netserver-{i}", f"10.0.0.{i}", (), "win1", "", "windows", "netexec") for i in range(2)]
    assert pods.pod_names(refs) == {"netserver-0", "netserver-1"}


# --- skips only for what is not applicable; broken support fails or errors (issue 12)


class HostProcessKube:
    """A Kube whose pod create answers with ``refusal`` (an ApiException) or whose wait raises ``wait_error``."""

    def __init__(self, refusal=None, wait_error=None):
        self.refusal, self.wait_error = refusal, wait_error

    def create_pod(self, manifest):
        if self.refusal is not None:
            raise self.refusal
        options = NS(host_process=True)
        return NS(spec=NS(security_context=NS(windows_options=options)))

    def wait_pod(self, name):
        raise self.wait_error


def api_error(status, message):
    from kubernetes.client.exceptions import ApiException

    exc = ApiException(status=status, reason="Refused")
    exc.body = json.dumps({"message": message})
    return exc


def test_hostprocess_is_skipped_only_where_the_clusters_policy_forbids_it():
    manifest = {"metadata": {"name": "hp"}, "spec": {}}
    policy = HostProcessKube(api_error(403, 'pods "hp" is forbidden: violates PodSecurity "baseline:latest"'))
    with pytest.raises(pytest.skip.Exception, match="not allowed here"):
        pods.start_hostprocess(policy, manifest)
    broken = HostProcessKube(api_error(422, "spec.containers[0].securityContext: Invalid value"))
    with pytest.raises(pods.Rejected, match="422"):
        pods.start_hostprocess(broken, manifest)


def test_a_hostprocess_container_that_does_not_start_is_a_failure_not_a_skip():
    from wincon.cluster.waits import WorkloadFailed

    crashed = HostProcessKube(wait_error=WorkloadFailed("pod hp: CrashLoopBackOff in container main"))
    with pytest.raises(WorkloadFailed):
        pods.start_hostprocess(crashed, {"metadata": {"name": "hp"}, "spec": {}})


class LoadBalancerKube:
    namespace = "ns"
    profile = NS(cloud="azure")

    def __init__(self, events):
        self.core = NS(
            list_namespaced_event=lambda namespace, field_selector="": NS(items=events),
            list_namespaced_service=None,
        )

    def wait_for(self, *args, **kwargs):
        from wincon.cluster.waits import WaitTimeout

        raise WaitTimeout("LoadBalancer ns/lb did not become ready within 300s")


def test_a_load_balancer_that_never_comes_is_a_skip_only_without_a_provider():
    with pytest.raises(pytest.skip.Exception, match="no LoadBalancer provider"):
        services.wait_for_load_balancer(LoadBalancerKube([]), "lb")
    failed = NS(reason="SyncLoadBalancerFailed", message="quota exceeded for public IPs")
    with pytest.raises(InfrastructureError, match="quota exceeded"):
        services.wait_for_load_balancer(LoadBalancerKube([NS(reason="EnsuringLoadBalancer", message=""), failed]), "lb")
