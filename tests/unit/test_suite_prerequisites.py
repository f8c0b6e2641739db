"""The storage, controllers and node conftests mark a check (and its Linux control) skipped at collection where the
cluster lacks what it needs, so `wincon plan` and the run agree (both planned a control as run that then skipped)."""

from __future__ import annotations

from types import ModuleType
from types import SimpleNamespace as NS

import pytest

from tests.support import suites


def load(suite: str) -> ModuleType:
    return suites.load(f"suites/{suite}/conftest.py")


class Item:
    def __init__(self, name: str, params: str = "linux") -> None:
        self.originalname = name
        self.name = f"{name}[{params}]"
        self.markers: list[pytest.Mark] = []

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.mark)

    def skip_reason(self) -> str | None:
        return next((m.kwargs["reason"] for m in self.markers if m.name == "skip"), None)


class Config:
    def __init__(self, profile_file: str | None = None) -> None:
        self.stash = pytest.Stash()
        self.profile_file = profile_file

    def getoption(self, name: str, default: object = None) -> object:
        return self.profile_file if name == "wincon_profile_file" else default


def storage_class(name: str, provisioner: str = "rancher.io/local-path", default=False, expand=False) -> NS:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return NS(metadata=NS(name=name, annotations=annotations), provisioner=provisioner, allow_volume_expansion=expand)


def storage(monkeypatch, classes: list[NS]) -> ModuleType:
    module = load("storage")
    monkeypatch.setattr(module, "get_context", lambda config: object())
    monkeypatch.setattr(module, "Kube", lambda context, namespace: NS(storage=NS(list_storage_class=None)))
    monkeypatch.setattr(module, "call", lambda fn: NS(items=classes))
    return module


PVC = "test_persistent_volume_claim_of_the_default_storage_class"
BLOCK = "test_raw_block_volume_is_attached_as_a_device"
EXPAND = "test_expanded_claim_grows_the_filesystem_the_pod_sees"


def test_storage_checks_needing_a_missing_class_are_skipped_at_collection(monkeypatch):
    module = storage(monkeypatch, [storage_class("local", default=True)])
    items = [Item(PVC), Item(PVC, "windows"), Item(BLOCK), Item(EXPAND), Item("test_other")]
    module.pytest_collection_modifyitems(Config(), items)
    assert items[0].skip_reason() is None and items[1].skip_reason() is None, "a default class exists"
    assert items[2].skip_reason() == "no StorageClass of a block-capable (disk) provisioner"
    assert items[3].skip_reason() == "no StorageClass allows volume expansion"
    assert items[4].skip_reason() is None


def test_storage_without_any_class_skips_the_claim_with_the_tests_own_reason(monkeypatch):
    module = storage(monkeypatch, [])
    items = [Item(PVC)]
    module.pytest_collection_modifyitems(Config(), items)
    assert items[0].skip_reason() == (
        "the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned"
    )


def test_storage_against_a_profile_file_decides_nothing(monkeypatch):
    module = storage(monkeypatch, [])
    items = [Item(PVC)]
    module.pytest_collection_modifyitems(Config(profile_file="profile.json"), items)
    assert items[0].skip_reason() is None


def test_hpa_scaling_is_skipped_at_collection_without_the_metrics_api(monkeypatch):
    module = load("controllers")
    carried = NS(catalog=NS(linux_missing=lambda key: None))  # the Linux nodes can run every image
    monkeypatch.setattr(module, "get_context", lambda config: carried)
    monkeypatch.setattr(module, "Kube", lambda context, namespace: object())
    monkeypatch.setattr(module, "metrics_api_available", lambda kube: "metrics-server is not installed")
    monkeypatch.setattr(module, "metrics_api_installed", lambda kube: False)
    items = [Item("test_hpa_scales_a_windows_deployment_under_cpu_load"), Item("test_job_runs")]
    module.pytest_collection_modifyitems(Config(), items)
    assert items[0].skip_reason() == "HPA scaling needs the resource metrics API: metrics-server is not installed"
    assert items[1].skip_reason() is None
    monkeypatch.setattr(module, "metrics_api_available", lambda kube: None)
    served = [Item("test_hpa_scales_a_windows_deployment_under_cpu_load")]
    module.pytest_collection_modifyitems(Config(), served)
    assert served[0].skip_reason() is None


def test_hpa_scaling_runs_where_the_metrics_api_is_registered_but_not_available(monkeypatch):
    """A registered APIService that is not Available is the cluster failing (metrics-server down): not skipped
    at collection; the test itself then ends in an error naming the APIService's condition."""
    module = load("controllers")
    monkeypatch.setattr(module, "get_context", lambda config: NS(catalog=NS(linux_missing=lambda key: None)))
    monkeypatch.setattr(module, "Kube", lambda context, namespace: object())
    down = "the APIService v1beta1.metrics.k8s.io is not available (FailedDiscoveryCheck: connection refused)"
    monkeypatch.setattr(module, "metrics_api_available", lambda kube: down)
    monkeypatch.setattr(module, "metrics_api_installed", lambda kube: True)
    items = [Item("test_hpa_scales_a_windows_deployment_under_cpu_load")]
    module.pytest_collection_modifyitems(Config(), items)
    assert items[0].skip_reason() is None


def test_hpa_scaling_control_is_skipped_at_collection_where_the_linux_nodes_lack_its_image(monkeypatch):
    """The metrics API is served, but the Linux nodes pull nothing and carry no resource-consumer: the control
    is skipped with the catalog's own reason (the one image() skips with at run time); its twin is left alone."""
    module = load("controllers")
    reason = "image resource-consumer (r/resource-consumer:1.13) is not on this cluster's Linux nodes"
    carried = NS(catalog=NS(linux_missing=lambda key: reason if key == "resource-consumer" else None))
    monkeypatch.setattr(module, "get_context", lambda config: carried)
    monkeypatch.setattr(module, "Kube", lambda context, namespace: object())
    monkeypatch.setattr(module, "metrics_api_available", lambda kube: None)
    name = "test_hpa_scales_a_windows_deployment_under_cpu_load"
    control, twin = OsItem(name, "linux"), OsItem(name, "windows")
    module.pytest_collection_modifyitems(Config(), [control, twin])
    assert control.skip_reason() == reason
    assert twin.skip_reason() is None


RESERVED = "test_kube_and_system_reserved_shrink_allocatable_cpu"


class OsItem(Item):
    def __init__(self, name: str, os_name: str) -> None:
        super().__init__(name, os_name)
        self.callspec = NS(params={"target_os": os_name})
        self.nodeid = f"suites/node/test_kubelet.py::{self.name}"


def node_suite(monkeypatch, configs: dict[str, dict], real: bool = True) -> tuple[ModuleType, list[str]]:
    module = load("node")
    asked: list[str] = []
    monkeypatch.setattr(module, "get_context", lambda config: NS(profile=NS(ready_windows_nodes=[]), api_client=None))
    nodes = {"linux": NS(name="worker-0", data_plane=True), "windows": NS(name="win-0", data_plane=real)}
    monkeypatch.setattr(module, "pick_node", lambda profile, os_name, build: nodes[os_name])

    def configz(api_client, node, path, timeout=60.0):
        asked.append(node)
        if node not in configs:
            raise RuntimeError("no answer")
        return {"kubeletconfig": configs[node]}, 0.01

    monkeypatch.setattr(module, "kubelet_json", configz)
    return module, asked


def test_reserved_cpu_check_is_skipped_at_collection_where_its_kubelet_reserves_nothing(monkeypatch):
    module, asked = node_suite(monkeypatch, {"worker-0": {}, "win-0": {"kubeReserved": {"cpu": "500m"}}})
    items = [OsItem(RESERVED, "linux"), OsItem(RESERVED, "windows"), OsItem("test_node_reports_its_boot_id", "linux")]
    module.pytest_collection_modifyitems(Config(), items)
    assert (
        items[0].skip_reason()
        == "the kubelet of worker-0 reserves no CPU or memory (kubeReserved, systemReserved unset)"
    )
    assert items[1].skip_reason() is None, "the Windows kubelet reserves CPU: the check runs"
    assert items[2].skip_reason() is None
    assert asked == ["worker-0", "win-0"], "each node's /configz read once, only for the check that needs it"


def test_reserved_cpu_check_is_left_to_the_test_where_configz_cannot_be_read(monkeypatch):
    module, asked = node_suite(monkeypatch, {}, real=False)
    items = [OsItem(RESERVED, "linux"), OsItem(RESERVED, "windows")]
    module.pytest_collection_modifyitems(Config(), items)
    assert [i.skip_reason() for i in items] == [None, None]
    assert asked == ["worker-0"], "a simulated node's kubelet is never asked"
    module.pytest_collection_modifyitems(Config(profile_file="profile.json"), items)
    assert asked == ["worker-0"], "a profile file decides nothing"
