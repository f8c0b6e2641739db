"""`wincon plan` and the run give the same skip, with the same reason, for the run-time skips decided by a fact the
profile reads in discovery: the cluster's RuntimeClasses (the two Hyper-V checks) and its cluster DNS Service
(kube-system/kube-dns: the three dnsPolicy/dnsConfig checks).

One rule each (wincon.clusterinfo.capabilities.CAPABILITIES, named by ``@pytest.mark.requires``): collection applies it to
the profile (capabilities.skip_missing), the check applies it at run time (capabilities.require) reading only what
the profile lacks. The plan here is `wincon plan`'s own collection of the real suite files on a profile file; the
checks run on fakes of the same facts. A profile file without the facts (older than them) plans "run" with a
"decided at run time" note, and the check reads the fact as before. Before this change the plan said "run" where
the run skipped (the first two tests failed against the suite files and wincon at 31e251f)."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from tests.unit.test_plan_runtime_facts import run_hyperv
from wincon.checks.scheduling import hyperv_runtime_class
from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.commands import collect

IMAGES_FILE = "suites/scheduling/test_image_os_version.py"
HYPERV_FILE = "suites/scheduling/test_hyperv_isolation.py"
CPUS = "test_hyperv_isolated_container_sees_the_nodes_processors"
UTILITY_VM = "test_hyperv_isolated_pod_of_two_containers_runs_in_a_utility_vm"
IMAGES = suites.load(IMAGES_FILE)
HYPERV = suites.load(HYPERV_FILE)
UPSTREAM_CLASS = ("runhcs-wcow-hypervisor", "runhcs-wcow-hypervisor")  # (name, handler): upstream hyperv.go:36


def win(name: str) -> dict[str, Any]:
    """A Ready real Windows node of build 17763 with 4 CPUs, as a profile file holds it."""
    return fakes.profile_windows_node(
        name,
        17763,
        os_version="ltsc2019",
        cpu_capacity="4",
        kubelet_feature_gates={"PodAndContainerStatsFromCRI": False},
    )


def profile_json(**facts: Any) -> dict[str, Any]:
    linux = {"name": "l1", "os": "linux", "arch": "amd64", "ready": True, "simulated": False}
    return {"server_version": "v1.34.4", "cni": "flannel", "cloud": "azure", "nodes": [win("win-0"), linux]} | facts


def plan(data: dict[str, Any], tmp_path, *files: str) -> dict[str, dict[str, Any]]:
    """`wincon plan --profile-file` of ``files``: the row of each test, by its id within the file."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    dump, output = collect(list(files), ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    return {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}


def agree(row: dict[str, Any], skipped: str | None) -> None:
    """The plan's row and the run's outcome: a skip with the very reason, or a run (the plan's xfail included)."""
    if row["outcome"] == "skip":
        assert skipped is not None and skipped == row["reason"], (row, skipped)
    else:
        assert skipped is None, (row, skipped)


# --------------------------------------------------------------------------- the Hyper-V checks, on fakes


class Cluster:
    """What the Hyper-V checks read at run time: ``classes`` (RuntimeClasses, None: the read is refused)."""

    def __init__(self, classes: list[tuple[str, str]]) -> None:
        self.classes = classes
        self.reads: list[str] = []
        self.created: list[dict[str, Any]] = []
        self.namespace, self.pod_start_timeout, self.api_client = "ns", 300, None
        self.core = NS(read_node=lambda name: NS(status=NS(capacity={"cpu": "4"})))

    def runtime_classes(self, kube: Any) -> list[tuple[str, str]]:
        self.reads.append("runtimeclasses")
        return self.classes

    def create(self, body: dict[str, Any]) -> None:
        self.created.append(body)

    def wait_pod(self, name: str, **kwargs: Any) -> Any:
        raise AssertionError(f"{name}: the fake ends the check at its first pod")

    def exec(self, pod, command, container=None, where=None):
        from wincon.cluster.exec import ExecResult

        return ExecResult(0, "4\r\n", "")


def pod_body(wincon, name, build, node=None, **kwargs) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{}], **kwargs}}


def run_cpus(profile: ClusterProfile, cluster: Cluster, monkeypatch) -> str | None:
    """The Hyper-V CPU-count check on the cluster's own RuntimeClasses; its skip reason, or None where it ran."""
    return run_hyperv(profile, cluster, monkeypatch, runtime_classes=cluster.runtime_classes)


def run_utility_vm(profile: ClusterProfile, cluster: Cluster, monkeypatch) -> str | None:
    """Upstream's Hyper-V check up to its first pod (created: it ran); its skip reason, or None."""
    monkeypatch.setattr(HYPERV, "live_runtime_classes", cluster.runtime_classes)
    monkeypatch.setattr(HYPERV, "windows_pod", pod_body)
    monkeypatch.setattr(HYPERV, "schedulable_windows_nodes", lambda profile: [n.name for n in profile.nodes])
    try:
        HYPERV.test_hyperv_isolated_pod_of_two_containers_runs_in_a_utility_vm(
            cluster, NS(profile=profile, pod_start_timeout=300), 17763, lambda what, where=None, pod_node=None: None
        )
    except pytest.skip.Exception as exc:
        return str(exc.msg)
    except AssertionError:  # the fake's end: the pod was created
        assert cluster.created
    return None


# --------------------------------------------------------------------------- the plan and the run agree


def test_no_hyperv_runtime_class_skips_both_hyperv_checks_in_the_plan_as_in_the_run(tmp_path, monkeypatch):
    """Before: the plan said xfail/run (the profile had no RuntimeClasses), the run skipped on the list it read."""
    data = profile_json(runtime_classes=[{"name": "gvisor", "handler": "runsc"}])
    rows = plan(data, tmp_path, IMAGES_FILE, HYPERV_FILE)
    assert rows[CPUS]["outcome"] == "skip", rows[CPUS]
    assert rows[CPUS]["reason"] == (
        "the cluster has no RuntimeClass with a Hyper-V handler (its RuntimeClasses: gvisor (handler runsc))"
    )
    assert rows[UTILITY_VM]["outcome"] == "skip", rows[UTILITY_VM]
    assert rows[UTILITY_VM]["reason"].startswith("the cluster has no RuntimeClass runhcs-wcow-hypervisor (upstream")
    profile = ClusterProfile.from_dict(data)
    cluster = Cluster([("gvisor", "runsc")])
    agree(rows[CPUS], run_cpus(profile, cluster, monkeypatch))
    agree(rows[UTILITY_VM], run_utility_vm(profile, cluster, monkeypatch))
    assert not cluster.created and not cluster.reads, "decided from the profile: nothing created, nothing read"


def test_the_upstream_class_alone_is_a_hyperv_handler_for_both(tmp_path, monkeypatch):
    data = profile_json(runtime_classes=[{"name": UPSTREAM_CLASS[0], "handler": UPSTREAM_CLASS[1]}])
    rows = plan(data, tmp_path, IMAGES_FILE, HYPERV_FILE)
    for name in (CPUS, UTILITY_VM):
        assert rows[name]["outcome"] in ("run", "xfail"), rows[name]
        assert "decided at run time" not in rows[name]["reason"], rows[name]
    profile = ClusterProfile.from_dict(data)
    cluster = Cluster([])  # a read now would find nothing: the check must not read
    agree(rows[CPUS], run_cpus(profile, cluster, monkeypatch))
    assert cluster.created[0]["spec"]["runtimeClassName"] == "runhcs-wcow-hypervisor"
    agree(rows[UTILITY_VM], run_utility_vm(profile, cluster, monkeypatch))
    assert cluster.created[-1]["spec"]["runtimeClassName"] == "runhcs-wcow-hypervisor" and not cluster.reads


def test_a_hyperv_handler_of_another_name_runs_the_cpu_check_and_skips_upstreams(tmp_path, monkeypatch):
    """Upstream's check names its RuntimeClass (hyperv.go:36); the CPU-count check takes any Hyper-V handler."""
    data = profile_json(runtime_classes=[{"name": "hyperv", "handler": "runhcs-wcow-hypervisor-17763"}])
    rows = plan(data, tmp_path, IMAGES_FILE, HYPERV_FILE)
    assert rows[CPUS]["outcome"] in ("run", "xfail") and rows[UTILITY_VM]["outcome"] == "skip", rows
    assert "its RuntimeClasses: hyperv (handler runhcs-wcow-hypervisor-17763)" in rows[UTILITY_VM]["reason"]
    profile = ClusterProfile.from_dict(data)
    cluster = Cluster([])
    agree(rows[CPUS], run_cpus(profile, cluster, monkeypatch))
    agree(rows[UTILITY_VM], run_utility_vm(profile, cluster, monkeypatch))


def test_runtime_classes_the_profile_lacks_are_read_by_the_run_and_the_plan_says_so(tmp_path, monkeypatch):
    """An older profile file (no runtime_classes): the plan says run and that the run decides; each check lists
    the RuntimeClasses itself and skips, with the reason the plan gives where it knows them."""
    data = profile_json()
    rows = plan(data, tmp_path, IMAGES_FILE, HYPERV_FILE)
    for name in (CPUS, UTILITY_VM):
        assert rows[name]["outcome"] in ("run", "xfail"), rows[name]
        assert "decided at run time: the profile lacks the cluster's RuntimeClasses" in rows[name]["reason"]
    profile = ClusterProfile.from_dict(data)
    assert profile.runtime_classes is None
    cluster = Cluster([])
    assert run_cpus(profile, cluster, monkeypatch) == (
        "the cluster has no RuntimeClass with a Hyper-V handler (its RuntimeClasses: none)"
    )
    assert run_utility_vm(profile, cluster, monkeypatch).startswith(  # type: ignore[union-attr]
        "the cluster has no RuntimeClass runhcs-wcow-hypervisor (upstream skips the same; its RuntimeClasses: none)"
    )
    assert cluster.reads == ["runtimeclasses", "runtimeclasses"] and not cluster.created
    cluster = Cluster([UPSTREAM_CLASS])
    assert run_cpus(profile, cluster, monkeypatch) is None and run_utility_vm(profile, cluster, monkeypatch) is None
    assert len(cluster.created) == 2


# --------------------------------------------------------------------------- the rules and the profile's facts


def test_the_rule_names_the_first_class_of_a_hyperv_handler():
    assert hyperv_runtime_class([("gvisor", "runsc"), ("hv", "runhcs-wcow-hypervisor")]) == "hv"
    assert hyperv_runtime_class([("a", "HyperV")]) == "a"
    assert hyperv_runtime_class([("runc", "runc")]) is None and hyperv_runtime_class([]) is None


def test_an_unknown_fact_never_skips_at_collection():
    profile = ClusterProfile("v1.34.4")
    for capability in capabilities.RUN_TIME_FACTS:
        assert capabilities.has(profile, capability) is None, capability


def test_the_facts_round_trip_and_an_older_profile_file_has_them_unknown():
    profile = ClusterProfile("v1.34.4", runtime_classes=[UPSTREAM_CLASS], cluster_dns="10.0.0.10")
    again = ClusterProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert (again.runtime_classes, again.cluster_dns) == (profile.runtime_classes, profile.cluster_dns)
    empty = ClusterProfile.from_dict(
        json.loads(json.dumps(ClusterProfile("v1", runtime_classes=[], cluster_dns="").to_dict()))
    )
    assert (empty.runtime_classes, empty.cluster_dns) == ([], "")
    old = ClusterProfile.from_dict({"server_version": "v1.34.4"})
    assert (old.runtime_classes, old.cluster_dns) == (None, None)


def test_discovery_reads_the_facts_once_and_a_refusal_is_unknown_never_absent():
    from unittest import mock

    from kubernetes.client.exceptions import ApiException

    from tests.unit.test_profile import _Cluster
    from wincon.clusterinfo.profile import discover

    def refused(**kwargs: Any) -> Any:
        raise ApiException(status=403, reason="Forbidden")

    def no_service(name: str, namespace: str) -> Any:
        if (namespace, name) == ("kube-system", "kube-dns"):
            raise ApiException(status=404, reason="Not Found")
        return NS(spec=NS(ip_families=["IPv4"], cluster_ip="10.96.0.1"))

    classes = [NS(metadata=NS(name="hv"), handler="runhcs-wcow-hypervisor")]
    cluster = _Cluster([], {}, {})
    apis = cluster.apis()
    apis["NodeV1Api"] = lambda api: NS(list_runtime_class=lambda **kw: NS(items=classes))
    with mock.patch.multiple("kubernetes.client", **apis):
        profile = discover(object())
    assert profile.runtime_classes == [("hv", "runhcs-wcow-hypervisor")]
    assert profile.cluster_dns == "10.96.0.10"

    core = apis["CoreV1Api"](None)
    core.read_namespaced_service = no_service
    apis["CoreV1Api"] = lambda api: core
    apis["NodeV1Api"] = lambda api: NS(list_runtime_class=refused)
    with mock.patch.multiple("kubernetes.client", **apis):
        profile = discover(object())
    assert (profile.runtime_classes, profile.cluster_dns) == (None, "")


# --------------------------------------------------------------------------- the cluster DNS (kube-system/kube-dns)

DNS_FILES = (
    "suites/networking/test_dns_policy.py",
    "suites/networking/test_pod_dns_servers.py",
    "suites/networking/test_dns.py",
)
DNS_CHECKS = {
    DNS_FILES[0]: "test_dns_policy_cluster_first_resolves_services_through_cluster_dns",
    DNS_FILES[1]: "test_pod_dns_config_with_two_nameservers_resolves_real_names_only",
    DNS_FILES[2]: "test_dns_policy_none_applies_dns_config",
}
NO_CLUSTER_DNS = "the cluster has no kube-system/kube-dns Service (with a cluster IP): no cluster DNS to use"


class Created(Exception):
    """The fake's end: the check got past its skip and made its first pod."""


def run_dns_check(path: str, ip: str | None) -> str | None:
    """The check, its cluster_dns fixture's read giving ``ip``, up to its first pod; its skip reason or None."""
    module = suites.load(path)
    check = getattr(module, DNS_CHECKS[path])

    def make_client(*args: Any, **kwargs: Any) -> Any:
        raise Created()

    given = {
        "checks": NS(),
        "make_client": make_client,
        "os_prefix": "lin-",
        "cluster_dns": NS(ip=ip, domain="cluster.local"),
        "kubernetes_service": NS(fqdn="kubernetes.default.svc.cluster.local.", cluster_ip="10.96.0.1"),
        "wincon": NS(external_ip="192.0.2.1"),
        "target_os": "linux",
        "server_service": NS(),
        "namespace": "ns",
    }
    import inspect

    try:
        check(**{name: given[name] for name in inspect.signature(check).parameters})
    except pytest.skip.Exception as exc:
        return str(exc.msg)
    except Created:
        return None
    raise AssertionError("the fake check neither skipped nor created a pod")


def dns_rows(data: dict[str, Any], tmp_path) -> dict[str, list[dict[str, Any]]]:
    """Each DNS check's rows (its Linux control and its Windows twin)."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    dump, output = collect(list(DNS_FILES), ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in dump["tests"]:
        name = row["nodeid"].split("::")[-1].split("[")[0]
        if name in DNS_CHECKS.values():
            rows.setdefault(name, []).append(row)
    assert set(rows) == set(DNS_CHECKS.values()), sorted(rows)
    return rows


def test_no_kube_dns_service_skips_the_dns_checks_in_the_plan_as_in_the_run(tmp_path):
    """Before: the plan said run for the three checks and their controls, the run skipped on the fixture's read."""
    rows = dns_rows(profile_json(cluster_dns=""), tmp_path)
    for path, name in DNS_CHECKS.items():
        assert rows[name] and all(row["outcome"] == "skip" for row in rows[name]), rows[name]
        for row in rows[name]:
            agree(row, run_dns_check(path, None))
            assert row["reason"] == NO_CLUSTER_DNS


def test_a_cluster_dns_runs_the_dns_checks_and_an_older_profile_leaves_it_to_the_run(tmp_path):
    known = dns_rows(profile_json(cluster_dns="10.96.0.10"), tmp_path)
    old = dns_rows(profile_json(), tmp_path)
    for path, name in DNS_CHECKS.items():
        for row in known[name]:
            assert row["outcome"] != "skip" and "decided at run time" not in row["reason"], row
            agree(row, run_dns_check(path, "10.96.0.10"))
        for row in old[name]:
            assert row["outcome"] != "skip", row
            assert "decided at run time: the profile lacks the kube-system/kube-dns Service" in row["reason"], row
        assert run_dns_check(path, None) == NO_CLUSTER_DNS  # the run reads it: the reason the plan gives


# --------------------------------------------------------------------------- run-time facts: the plan says so


RUN_TIME = {
    "suites/scheduling/test_resources.py": "test_requests_are_subtracted_from_allocatable_until_failed_scheduling",
    "suites/api/test_host_process.py": "test_valid_host_process_pod_is_admitted_and_scheduled_on_windows",
    "suites/networking/test_services.py": "test_session_affinity_ends_after_its_timeout",
}


def test_a_skip_only_the_run_can_decide_is_named_in_the_plan(tmp_path):
    """decided_at_run_time(what): the plan's row keeps its outcome and says what the run decides (before: a bare
    "run" where the run might skip)."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile_json(cluster_dns="10.96.0.10")))
    dump, output = collect(list(RUN_TIME), ["--wincon", "--profile-file", str(path)], "--wincon-plan-out")
    assert dump, output
    rows = [row for row in dump["tests"] if row["nodeid"].split("::")[-1].split("[")[0] in RUN_TIME.values()]
    assert {row["nodeid"].split("::")[-1].split("[")[0] for row in rows} == set(RUN_TIME.values())
    for row in rows:
        if row["outcome"] == "skip":  # a control without a Linux worker, say: its own reason, no note
            assert "decided at run time" not in row["reason"], row
            continue
        assert "decided at run time: the run skips where" in row["reason"], row
    texts = " ".join(row["reason"] for row in rows)
    assert "too little CPU unrequested" in texts and "--allow-privileged=false" in texts
    assert "ClientIP affinity itself does not hold" in texts


# --------------------------------------------------------------------------- the legacy Hyper-V annotation's runtime

TWO = "test_hyperv_isolated_pod_runs_two_containers"


def test_containerd_nodes_skip_the_legacy_hyperv_annotation_check_in_the_plan_as_in_the_run(tmp_path):
    """Before: on containerd nodes (every current cluster) the plan said run where the run skipped."""
    data = profile_json(runtime_classes=[])
    row = plan(data, tmp_path, IMAGES_FILE)[TWO]
    assert row["outcome"] == "skip", row
    assert row["reason"] == (
        "the legacy Hyper-V annotation is a Docker (dockershim) feature; the Windows nodes run containerd"
    )
    try:
        IMAGES.test_hyperv_isolated_pod_runs_two_containers(None, NS(), ClusterProfile.from_dict(data), 17763, None)
    except pytest.skip.Exception as exc:
        agree(row, str(exc.msg))
    else:
        raise AssertionError("the check did not skip")


def test_docker_nodes_plan_the_legacy_hyperv_annotation_check(tmp_path):
    data = profile_json()
    data["nodes"][0]["runtime"] = "docker"
    row = plan(data, tmp_path, IMAGES_FILE)[TWO]
    assert row["outcome"] in ("run", "xfail"), row
    assert capabilities.has(ClusterProfile.from_dict(data), "docker-runtime") is True


def test_the_gmsa_checks_run_time_skips_are_planned_as_decided_at_run_time(tmp_path):
    """The two gMSA checks that skip in their body (no domain named by the environment; an API server refusing
    inline credential specs) say so in the plan, so a skip there is as planned (before: the plan said a bare
    "run" for both, and the run's skip disagreed with it)."""
    rows = plan(profile_json(), tmp_path, "suites/gmsa/test_gmsa.py")
    domain = rows["test_container_reaches_the_domain_and_an_smb_share_as_the_gmsa"]
    kubelet = rows["test_kubelet_passes_the_credential_spec_down_to_each_container"]
    assert "decided at run time: the run skips where WINCON_GMSA_CREDSPEC" in (domain.get("reason") or ""), domain
    assert kubelet["outcome"] == "run", kubelet
    assert (
        "decided at run time: the run skips where the GMSA admission webhook refuses the pod's inline credential specs"
        in (kubelet.get("reason") or "")
    ), kubelet
