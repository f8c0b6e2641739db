"""What the cluster lacks, said one way (issue 43, item 3): the suites' live probes (the metrics API, a Linux
control's image, StorageClasses, the kubelet's reservations and log queries, the certificates.k8s.io/v1 resources,
GMSA, stop signals, HostProcess, pod-level resources, the gated securityContext fields) are capabilities of wincon/clusterinfo/capabilities.py (``requires``), read once per run: an item is skipped at
collection with the cluster's reason, so `wincon plan` and the run agree; a read that fails leaves the check to
decide at run time (``require_live``), and the plan says so. No suite conftest decides skips any more."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

import wincon.checks.controllers as controllers
import wincon.cluster.client as cluster_client
import wincon.cluster.kube as kube_mod
import wincon.cluster.kubelet as kubelet
import wincon.session.context as context_mod
from tests.support import suites
from wincon.checks import gmsa, lifecycle
from wincon.clusterinfo import capabilities

ROOT = Path(__file__).resolve().parents[2]


class Config:
    def __init__(self, profile_file: str | None = None) -> None:
        self.stash = pytest.Stash()
        self.profile_file = profile_file

    def getoption(self, name: str, default: object = None) -> object:
        return self.profile_file if name == "wincon_profile_file" else default


class Item:
    """A collected item as capabilities reads it: its requires marker, its OS (target_os), its config."""

    def __init__(self, config: Config, *requires: str, os_name: str = "linux", name: str = "test_x") -> None:
        self.config = config
        self.stash = pytest.Stash()
        self.name = f"{name}[{os_name}]"
        self.nodeid = f"suites/x/test_x.py::{self.name}"
        self.callspec = NS(params={"target_os": os_name})
        self.markers = [pytest.mark.requires(*requires).mark]

    def iter_markers(self, name: str | None = None) -> list[pytest.Mark]:
        return [m for m in self.markers if name is None or m.name == name]

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.mark)

    def skip_reason(self) -> str | None:
        return next((m.kwargs["reason"] for m in self.markers if m.name == "skip"), None)


PROFILE = NS(server_version="v1.37.2", k8s_minor="1.37")  # the profile holds nothing these capabilities need


def collect(item: Item) -> str | None:
    capabilities.skip_missing(item, PROFILE)  # type: ignore[arg-type]
    return item.skip_reason()


@pytest.fixture
def cluster(monkeypatch):
    """A live cluster's context (what get_context gives) whose reads the tests set; Kube a stand-in."""
    context = NS(
        catalog=NS(linux_missing=lambda key: None),
        api_client=None,
        profile=NS(ready_windows_nodes=[], linux_nodes=[]),
    )
    monkeypatch.setattr(context_mod, "get_context", lambda config: context)
    monkeypatch.setattr(kube_mod, "Kube", lambda context, namespace: NS(storage=NS(list_storage_class=None)))
    return context


# ----------------------------------------------------------------------------- the metrics API and its control


def test_hpa_scaling_is_skipped_without_the_metrics_api_and_runs_where_it_is_served(monkeypatch, cluster):
    monkeypatch.setattr(controllers, "metrics_api_available", lambda kube: "metrics-server is not installed")
    monkeypatch.setattr(controllers, "metrics_api_installed", lambda kube: False)
    assert collect(Item(Config(), "metrics-api")) == (
        "HPA scaling needs the resource metrics API: metrics-server is not installed"
    )
    monkeypatch.setattr(controllers, "metrics_api_available", lambda kube: None)
    assert collect(Item(Config(), "metrics-api")) is None


def test_a_registered_but_unavailable_metrics_api_is_not_a_skip(monkeypatch, cluster):
    """Registered but not Available is the cluster failing: the check runs and ends in an error naming the
    APIService's condition (test_hpa.require_metrics_api), never a skip at collection or at run time here."""
    down = "the APIService v1beta1.metrics.k8s.io is not available (FailedDiscoveryCheck: connection refused)"
    monkeypatch.setattr(controllers, "metrics_api_available", lambda kube: down)
    monkeypatch.setattr(controllers, "metrics_api_installed", lambda kube: True)
    item = Item(Config(), "metrics-api")
    assert collect(item) is None
    assert capabilities.plan_note(item, PROFILE) == ""  # type: ignore[arg-type]
    assert capabilities.require_live(item, "metrics-api") is None  # type: ignore[arg-type]


def test_a_control_lacking_its_image_skips_with_the_catalogs_reason_and_its_twin_runs(monkeypatch, cluster):
    reason = "image resource-consumer (r/resource-consumer:1.13) is not on this cluster's Linux nodes"
    cluster.catalog = NS(linux_missing=lambda key: reason if key == "resource-consumer" else None)
    monkeypatch.setattr(controllers, "metrics_api_available", lambda kube: "metrics-server is not installed")
    monkeypatch.setattr(controllers, "metrics_api_installed", lambda kube: False)
    config = Config()
    control = Item(config, "resource-consumer-image", "metrics-api", os_name="linux")
    twin = Item(config, "resource-consumer-image", "metrics-api", os_name="windows")
    assert collect(control) == reason, "the image's reason first, as the control's own image() gives at run time"
    assert collect(twin) == "HPA scaling needs the resource metrics API: metrics-server is not installed"


# ----------------------------------------------------------------------------- StorageClasses


def storage_class(provisioner: str = "rancher.io/local-path", default: bool = False, expand: bool = False) -> NS:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return NS(metadata=NS(annotations=annotations), provisioner=provisioner, allow_volume_expansion=expand)


def test_storage_checks_needing_a_missing_class_skip_with_their_own_reasons_on_one_read(monkeypatch, cluster):
    reads: list[int] = []

    def listed(fn):
        reads.append(1)
        return NS(items=[storage_class(default=True)])

    monkeypatch.setattr(cluster_client, "call", listed)
    config = Config()
    assert collect(Item(config, "default-storage-class")) is None
    assert collect(Item(config, "block-storage-class")) == "no StorageClass of a block-capable (disk) provisioner"
    assert collect(Item(config, "expandable-storage-class")) == "no StorageClass allows volume expansion"
    assert len(reads) == 1, "the StorageClasses are read once per run"
    monkeypatch.setattr(cluster_client, "call", lambda fn: NS(items=[]))
    assert collect(Item(Config(), "default-storage-class")) == (
        "the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned"
    )


def test_a_profile_file_reads_nothing_and_decides_nothing(monkeypatch, cluster):
    monkeypatch.setattr(cluster_client, "call", lambda fn: pytest.fail("read against a profile file"))
    item = Item(Config(profile_file="profile.json"), "default-storage-class")
    assert collect(item) is None
    assert capabilities.plan_note(item, PROFILE) == (  # type: ignore[arg-type]
        "decided at run time: the run skips where the cluster has no StorageClass of the kind the check needs "
        "(this plan asks no live cluster)"
    )
    twin = Item(Config(profile_file="profile.json"), "resource-consumer-image", os_name="windows")
    assert collect(twin) is None and capabilities.plan_note(twin, PROFILE) == "", "a Linux control's image only"  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the kubelet's reservations


def node(name: str, os_name: str, data_plane: bool = True) -> NS:
    return NS(name=name, os=os_name, ready=True, data_plane=data_plane, taints=[], windows_build=26100)


def reservations(monkeypatch, cluster, configs: dict[str, dict], real_windows: bool = True) -> list[str]:
    cluster.profile = NS(
        ready_windows_nodes=[node("win-0", "windows", real_windows)], linux_nodes=[node("worker-0", "linux")]
    )
    asked: list[str] = []

    def configz(api_client, name, path, timeout=60.0):
        asked.append(name)
        if name not in configs:
            raise RuntimeError("no answer")
        return {"kubeletconfig": configs[name]}, 0.01

    monkeypatch.setattr(kubelet, "kubelet_json", configz)
    return asked


def test_the_reserved_cpu_check_skips_where_its_kubelet_reserves_nothing(monkeypatch, cluster):
    asked = reservations(monkeypatch, cluster, {"worker-0": {}, "win-0": {"kubeReserved": {"cpu": "500m"}}})
    config = Config()
    control, check = Item(config, "kubelet-reservations"), Item(config, "kubelet-reservations", os_name="windows")
    again = Item(config, "kubelet-reservations", os_name="linux", name="test_y")
    assert collect(control) == "the kubelet of worker-0 reserves no CPU or memory (kubeReserved, systemReserved unset)"
    assert collect(check) is None, "the Windows kubelet reserves CPU: the check runs"
    assert collect(again) == control.skip_reason()
    assert asked == ["worker-0", "win-0"], "each node's /configz read once, only for the checks that need it"


def test_an_unreadable_configz_is_decided_at_run_time_and_the_plan_says_so(monkeypatch, cluster):
    asked = reservations(monkeypatch, cluster, {}, real_windows=False)
    config = Config()
    control, check = Item(config, "kubelet-reservations"), Item(config, "kubelet-reservations", os_name="windows")
    assert [collect(control), collect(check)] == [None, None]
    assert asked == ["worker-0"], "a simulated node's kubelet is never asked"
    note = capabilities.plan_note(control, PROFILE)  # type: ignore[arg-type]
    assert note.startswith("decided at run time: the run skips where the kubelet the check asks reserves nothing")
    assert "the plan could not read it: RuntimeError: no answer" in note
    assert capabilities.plan_note(check, PROFILE) == ""  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- GMSA and stop signals


def test_gmsa_missing_skips_at_collection_and_at_run_time_with_the_same_reason(monkeypatch, cluster):
    missing = gmsa.GmsaSupport(None, "no GMSACredentialSpec CRD (gmsacredentialspecs.windows.k8s.io): ...")
    monkeypatch.setattr(gmsa, "detect_gmsa", lambda kube: missing)
    item = Item(Config(), "gmsa", os_name="windows")
    assert collect(item) == missing.reason
    with pytest.raises(pytest.skip.Exception, match="no GMSACredentialSpec CRD"):
        capabilities.require_live(item, "gmsa")  # type: ignore[arg-type]


def test_gmsa_unreadable_at_collection_is_read_again_at_run_time_and_its_failure_is_the_checks(monkeypatch, cluster):
    def refused(kube):
        raise RuntimeError("Forbidden: customresourcedefinitions")

    monkeypatch.setattr(gmsa, "detect_gmsa", refused)
    item = Item(Config(), "gmsa", os_name="windows")
    assert collect(item) is None
    assert "Forbidden: customresourcedefinitions" in capabilities.plan_note(item, PROFILE)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="Forbidden"):
        capabilities.require_live(item, "gmsa")  # type: ignore[arg-type]
    monkeypatch.setattr(gmsa, "detect_gmsa", lambda kube: gmsa.GmsaSupport("v1"))
    assert capabilities.require_live(item, "gmsa").version == "v1"  # type: ignore[arg-type]


def test_stop_signals_dropped_by_the_api_server_skip_with_the_gate(monkeypatch, cluster):
    monkeypatch.setattr(lifecycle, "stop_signal_kept", lambda context, namespace: False)
    item = Item(Config(), "stop-signals", os_name="windows")
    assert collect(item) == lifecycle.GATE_OFF
    kept = Item(Config(), "stop-signals", os_name="windows")
    monkeypatch.setattr(lifecycle, "stop_signal_kept", lambda context, namespace: True)
    assert collect(kept) is None


def test_an_unknown_capability_is_a_usage_error():
    with pytest.raises(pytest.UsageError, match="requires unknown capability 'metrics'"):
        collect(Item(Config(), "metrics"))


# ----------------------------------------------------------------------------- the suites say it one way


def test_no_suite_conftest_decides_skips_at_collection():
    """The suites' conftests hold fixtures only: no pytest_collection_modifyitems hook (issue 43, item 3)."""
    conftests = sorted((ROOT / "suites").rglob("conftest.py"))
    assert conftests, "the suites have conftests"
    hooked = [
        str(path.relative_to(ROOT))
        for path in conftests
        for stmt in ast.walk(ast.parse(path.read_text()))
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "pytest_collection_modifyitems"
    ]
    assert hooked == []


def requires_of(module: Any, function: Any) -> set[str]:
    marks = [*getattr(function, "pytestmark", []), *getattr(module, "pytestmark", [])]
    return {arg for mark in marks if mark.name == "requires" for arg in mark.args}


@pytest.mark.parametrize(
    ("path", "fixture", "capability"),
    [
        ("suites/gmsa/test_gmsa.py", "gmsa_version", "gmsa"),
        ("suites/lifecycle/test_stop_signals.py", "stop_signals", "stop-signals"),
    ],
)
def test_every_check_taking_a_capabilitys_fixture_declares_it(path, fixture, capability):
    """The fixture skips at run time by the capability's rule; the plan says it only for checks that declare it."""
    module = suites.load(path)
    taking = [
        f
        for name, f in vars(module).items()
        if name.startswith("test_") and fixture in f.__code__.co_varnames[: f.__code__.co_argcount]
    ]
    assert taking, f"no check of {path} takes {fixture}"
    assert [f.__name__ for f in taking if capability not in requires_of(module, f)] == []


def test_each_live_capability_says_what_it_reads():
    for name, live in capabilities.LIVE.items():
        assert live.fact and callable(live.read) and callable(live.lacks), name


# ----------------------------------------------------------------------------- HostProcess pods


def host_process(monkeypatch, cluster, answer) -> list[dict]:
    """The API server's answer to the dry-run HostProcess pod: ``answer(body)`` -> (created, rejection)."""
    import wincon.checks.api_rules as api_rules

    cluster.catalog = NS(image=lambda key, os_name, build: f"registry.example/{key}")
    sent: list[dict] = []

    def submit(api_client, namespace, body, dry_run=True):
        assert dry_run and namespace == "default"
        sent.append(body)
        return answer(body)

    monkeypatch.setattr(api_rules, "submit_pod", submit)
    return sent


def test_host_process_refused_by_the_api_server_skips_the_windows_checks_not_their_controls(monkeypatch, cluster):
    from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED

    refused = NS(describe=lambda: f"403 Forbidden: {HOST_PROCESS_DISALLOWED}")
    sent = host_process(monkeypatch, cluster, lambda body: (None, refused))
    config = Config()
    check, control = Item(config, "host-process", os_name="windows"), Item(config, "host-process", os_name="linux")
    assert collect(check) == f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}"
    assert collect(control) is None
    [body] = sent
    assert body["spec"]["hostNetwork"] is True
    assert body["spec"]["securityContext"]["windowsOptions"]["hostProcess"] is True


def test_host_process_dropped_skips_and_kept_runs(monkeypatch, cluster):
    host_process(monkeypatch, cluster, lambda body: ({"spec": {"securityContext": {}}}, None))
    assert collect(Item(Config(), "host-process", os_name="windows")) == capabilities.HOST_PROCESS_DROPPED
    host_process(monkeypatch, cluster, lambda body: (body, None))
    assert collect(Item(Config(), "host-process", os_name="windows")) is None


def test_host_process_refused_otherwise_is_decided_by_the_check(monkeypatch, cluster):
    other = NS(describe=lambda: "403 Forbidden: violates PodSecurity baseline:latest")
    host_process(monkeypatch, cluster, lambda body: (None, other))
    item = Item(Config(), "host-process", os_name="windows")
    assert collect(item) is None
    assert "violates PodSecurity" in capabilities.plan_note(item, PROFILE)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- what the run decided before (issue 43)


def test_node_log_query_skips_where_the_kubelet_asked_serves_no_log_query_on_the_configz_reservations_read(
    monkeypatch, cluster
):
    """decided_at_run_time("... does not enable enableSystemLogQuery") is the node-log-query capability's live read:
    the /configz of the node the check asks, the one read kubelet-reservations takes too."""
    asked = reservations(
        monkeypatch,
        cluster,
        {"worker-0": {"enableSystemLogQuery": True}, "win-0": {"kubeReserved": {"cpu": "500m"}}},
    )
    config = Config()
    check, control = Item(config, "node-log-query", os_name="windows"), Item(config, "node-log-query")
    assert collect(check) == (
        "the kubelet of win-0 does not serve log queries (enableSystemLogQuery is not true in its /configz)"
    )
    assert collect(control) is None
    assert collect(Item(config, "kubelet-reservations", os_name="windows")) is None
    assert asked == ["win-0", "worker-0"], "each node's /configz read once for both capabilities"
    old = NS(server_version="v1.35.4", k8s_minor="1.35")
    item = Item(Config(), "node-log-query", os_name="windows")
    capabilities.skip_missing(item, old)  # type: ignore[arg-type]
    assert "older than 1.36" in (item.skip_reason() or ""), "the release decides first, from the profile"


def pod_answers(monkeypatch, cluster, answer) -> list[dict]:
    return host_process(monkeypatch, cluster, answer)  # the same dry-run stand-in: answer(body) -> (created, refused)


def test_pod_level_resources_dropped_by_the_api_server_skip_both_oses_with_the_checks_reason(monkeypatch, cluster):
    sent = pod_answers(monkeypatch, cluster, lambda body: ({"spec": {"containers": []}}, None))
    config = Config()
    check, control = Item(config, "pod-level-resources", os_name="windows"), Item(config, "pod-level-resources")
    assert collect(check) == collect(control) == capabilities.POD_LEVEL_RESOURCES_DROPPED
    assert [body["spec"]["resources"] for body in sent] == [capabilities.POD_LEVEL_RESOURCES], "one dry run"
    assert sent[0]["spec"]["os"]["name"] == "windows"
    refused = NS(describe=lambda: "422", cause=lambda path: {"field": path} if path == "spec.resources" else None)
    pod_answers(monkeypatch, cluster, lambda body: (None, refused))
    assert collect(Item(Config(), "pod-level-resources", os_name="windows")) is None, "validated: the gate is on"
    other = NS(describe=lambda: "403 Forbidden: a quota", cause=lambda path: None)
    pod_answers(monkeypatch, cluster, lambda body: (None, other))
    item = Item(Config(), "pod-level-resources", os_name="windows")
    assert collect(item) is None
    assert "a Windows pod setting spec.resources was refused" in capabilities.plan_note(item, PROFILE)  # type: ignore[arg-type]


def test_a_gated_security_field_dropped_skips_its_rule_only(monkeypatch, cluster):
    """decided_at_run_time("... drops the field (its feature gate off)") is the gated-security-fields capability: one
    dry run per gated field and place, once per run; a rule whose field the API server dropped skips with the check's
    own reason, the others (and every ungated rule) run."""
    from wincon.checks.api_rules import forbidden_fields

    rules = {rule.id: rule for rule in forbidden_fields()}
    gated = [rule_id for rule_id, rule in rules.items() if rule.feature_gate]
    assert len(gated) == 5, gated
    host_users = rules["podSpec.hostUsers"]

    def answer(body):  # UserNamespacesSupport off: hostUsers dropped; the others validated (refused at their path)
        if host_users.present_in(body):
            return {"spec": {"containers": []}}, None
        return None, NS(describe=lambda: "422", cause=lambda path: {"field": path})

    sent = pod_answers(monkeypatch, cluster, answer)
    config = Config()

    def item(rule_id: str) -> Item:
        it = Item(config, "gated-security-fields", os_name="windows")
        it.callspec.params["rule"] = rules[rule_id]
        return it

    assert {rule_id: collect(item(rule_id)) for rule_id in gated} == {
        **dict.fromkeys(gated),
        "podSpec.hostUsers": "the API server dropped spec.hostUsers (feature gate UserNamespacesSupport is off), "
        "so there is nothing to validate",
    }
    assert len(sent) == 5, "one dry run per gated field and place, once per run"
    ungated = item("podSecurityContext.runAsUser")
    assert collect(ungated) is None and capabilities.plan_note(ungated, PROFILE) == ""  # type: ignore[arg-type]
    assert len(sent) == 5
