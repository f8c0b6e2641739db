"""The local cluster's default StorageClass by rancher/local-path-provisioner (wincon/localcluster/storage.py):
its build entry, configuration, objects, start, status and teardown, and how the storage suite decides on it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest
from kubernetes import client

from wincon.checks import storage as storage_checks
from wincon.localcluster import addons, dataplane, extras, images, storage


@pytest.fixture
def plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dataplane.Plan:
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    nodes = [
        dataplane.RealNode("worker-0", 0, "172.30.9.2", "10.244.2.0/24"),
        dataplane.RealNode("worker-1", 1, "172.30.9.3", "10.244.3.0/24"),
    ]
    return dataplane.Plan("wincon-t", "172.30.9.0/24", "172.30.9.1", "172.30.9.254", nodes)


def test_it_is_an_addon_pinned_at_v0_0_30_with_the_version_its_build_script_sets():
    (comp,) = [c for c in addons.components() if c.name == storage.NAME]
    assert addons.load()[storage.NAME]["module"] == "github.com/rancher/local-path-provisioner"
    assert comp.package == "github.com/rancher/local-path-provisioner"
    assert "-X main.VERSION=v0.0.30" in comp.ldflags
    # urfave/cli prints "<name> version v0.0.30" for --version: the build checks that output.
    assert comp.version_args == ("--version",) and comp.expect == "v0.0.30" and comp.static


def test_it_is_registered_as_an_addon_module_of_up():
    assert storage in extras.MODULES
    for attr in ("NAME", "start", "objects", "available", "status", "teardown"):
        assert hasattr(storage, attr), attr


def test_the_config_maps_each_real_node_to_a_directory_of_the_cluster_under_its_state_dir(plan, tmp_path):
    config = storage.config(plan)
    state = tmp_path / "clusters" / "wincon-t"
    assert config["nodePathMap"] == [
        {"node": "worker-0", "paths": [str(state / "local-path" / "worker-0")]},
        {"node": "worker-1", "paths": [str(state / "local-path" / "worker-1")]},
    ]
    # No DEFAULT_PATH_FOR_NON_LISTED_NODES: a simulated node gets no volume, and no sharedFileSystemPath
    # (the provisioner refuses both at once).
    assert "sharedFileSystemPath" not in config
    assert all(p.startswith("/") and p != "/" for entry in config["nodePathMap"] for p in entry["paths"])


def test_the_helper_pod_uses_the_local_busybox_image_and_never_pulls():
    (container,) = storage.helper_pod()["spec"]["containers"]
    assert container["image"] == images.references()["busybox"]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["name"] == "helper-pod"  # the container the provisioner reads helper logs from


def test_the_storage_class_is_the_default_waits_for_first_consumer_and_offers_no_expansion(plan):
    sc = storage.storage_class(plan)
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert sc["provisioner"] == "rancher.io/local-path"
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"  # the provisioner needs the chosen node
    assert "allowVolumeExpansion" not in sc
    # Only the real nodes, where the config gives a path: a pod of a claim is never placed on a simulated node.
    assert sc["allowedTopologies"] == [
        {"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["worker-0", "worker-1"]}]}
    ]


def test_the_helper_scripts_make_and_remove_the_volume_directory_they_are_given():
    data = next(o for o in storage.objects(NS()) if o["kind"] == "ConfigMap")["data"]
    assert 'mkdir -m 0777 -p "$VOL_DIR"' in data["setup"]
    assert 'rm -rf "$VOL_DIR"' in data["teardown"]
    kinds = [(o["kind"], o["metadata"].get("namespace")) for o in storage.objects(NS())]
    assert kinds == [
        ("Namespace", None),
        ("ServiceAccount", storage.NAMESPACE),
        ("ConfigMap", storage.NAMESPACE),
    ]


def test_start_says_why_it_does_not_run_when_not_built(plan, monkeypatch):
    monkeypatch.setattr(storage, "binary", lambda: None)
    out = io.StringIO()
    assert storage.start(plan, out) is False
    assert "not built" in out.getvalue() and "no default StorageClass" in out.getvalue()


def test_start_writes_its_config_and_runs_in_worker_0s_namespace(plan, tmp_path, monkeypatch):
    exe = tmp_path / "exe"
    exe.write_text("")
    spawned: list[tuple[Any, ...]] = []
    created: list[dataplane.Plan] = []
    monkeypatch.setattr(storage, "binary", lambda: exe)
    monkeypatch.setattr(storage, "create_storage_class", created.append)
    monkeypatch.setattr(dataplane, "_spawn", lambda *a: spawned.append(a) or 1)
    assert storage.start(plan, io.StringIO()) is True
    assert created == [plan]
    ((cluster, ns, name, args, log, ready),) = spawned
    assert (cluster, name) == ("wincon-t", storage.NAME)
    assert ready == {"log": "Started provisioner controller"}  # what a restart waits for (it has no health endpoint)
    assert ns.endswith("worker-0") or "worker-0" in ns
    assert args[1] == "start"
    cdir = storage.config_dir("wincon-t")
    assert f"--config={cdir / 'config.json'}" in args
    assert f"--kubeconfig={dataplane.node_dir('wincon-t', 'worker-0') / 'kubeconfig'}" in args
    assert json.loads((cdir / "config.json").read_text()) == storage.config(plan)
    assert json.loads((cdir / "helperPod.yaml").read_text()) == storage.helper_pod()
    for node in plan.nodes:
        assert storage.node_path("wincon-t", node.name).is_dir()


def test_teardown_removes_the_volume_directories_and_what_helper_pods_left_in_them(plan):
    storage.write_config(plan)
    volume = storage.node_path("wincon-t", "worker-1") / "pvc-1_ns_data"
    volume.mkdir()
    (volume / "file").write_text("x")
    storage.teardown("wincon-t")
    assert not storage.base_dir("wincon-t").exists()
    storage.teardown("wincon-t")  # harmless when nothing is left


def test_status_names_the_class_the_provisioner_and_the_paths(plan, monkeypatch, tmp_path):
    monkeypatch.setattr(storage, "binary", lambda: tmp_path / "exe")
    proc = {"name": storage.NAME, "pid": 7}
    status = storage.status(plan, [proc, {"name": "other"}])
    assert status["storage_class"] == "standard" and status["provisioner"] == "rancher.io/local-path"
    assert status["process"] == proc and set(status["paths"]) == {"worker-0", "worker-1"}
    monkeypatch.setattr(storage, "binary", lambda: None)
    assert storage.status(plan, [])["storage_class"] is None


class FakeApi:
    def __init__(self, classes: list[dict[str, Any]]) -> None:
        self.classes = classes


def as_client(obj: dict[str, Any]) -> Any:
    """The StorageClass as the official client returns it from the API."""
    return client.ApiClient().deserialize(json.dumps(obj), "V1StorageClass", "application/json")


def test_available_once_the_default_class_of_this_provisioner_exists(plan, monkeypatch):
    reads: list[tuple[str, str]] = []

    class Storage:
        def __init__(self, api: FakeApi) -> None:
            self.api = api

        def list_storage_class(self, **_: Any) -> Any:
            return NS(items=[as_client(c) for c in self.api.classes])

    class Core:
        def __init__(self, api: FakeApi) -> None:
            pass

        def read_namespaced_config_map(self, name: str, namespace: str, **_: Any) -> Any:
            reads.append((namespace, name))
            return NS()

    monkeypatch.setattr(client, "StorageV1Api", Storage)
    monkeypatch.setattr(client, "CoreV1Api", Core)
    other = {**storage.storage_class(plan), "provisioner": "example.com/other"}
    not_default = {**storage.storage_class(plan), "metadata": {"name": "standard"}}
    assert storage.available(FakeApi([other, not_default])) is None
    assert storage.available(FakeApi([other, storage.storage_class(plan)])) is True
    assert reads == [(storage.NAMESPACE, storage.CONFIG_MAP)]


def test_the_storage_suite_runs_the_claim_and_skips_block_and_expansion_on_this_class(plan):
    """Item 3: the suite decides from the StorageClass as the API returns it, as on any cluster (the storage
    capabilities of wincon.clusterinfo.capabilities, wincon.checks.storage.CLASS_NEEDS)."""
    sc = as_client(storage.storage_class(plan))
    decide = {capability: wanted(sc) for capability, (wanted, _) in storage_checks.CLASS_NEEDS.items()}
    assert decide == {
        "default-storage-class": True,  # test_persistent_volume_claim_of_the_default_storage_class runs
        "block-storage-class": False,  # hostPath directories: no raw block device (the raw block check skips)
        "expandable-storage-class": False,  # no allowVolumeExpansion (the expansion check skips)
    }
    assert storage_checks.lacking_class([sc], "default-storage-class") is None


# A claim's pod that never runs (the provisioner stopped: tests/faults/test_fault_storage.py) times out with the
# cluster's reason: the claim's phase and the PV controller's newest event on it.
PROVISIONING = (
    "Waiting for a volume to be created either by the external provisioner 'rancher.io/local-path' or manually by "
    "the system administrator. If volume creation is delayed, please verify that the provisioner is "
    "running and correctly registered."
)


class ClaimCore:
    def __init__(self, phase: str, events: list[Any]) -> None:
        self.phase, self.events, self.selectors = phase, events, []

    def list_namespaced_pod(self, namespace: str, **_: Any) -> Any:  # what wait_for would watch (faked here)
        raise AssertionError("not called: wait_for is faked")

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        volumes = [NS(persistent_volume_claim=None), NS(persistent_volume_claim=NS(claim_name="data"))]
        return NS(spec=NS(volumes=volumes))

    def read_namespaced_persistent_volume_claim(self, name: str, namespace: str, **_: Any) -> Any:
        return NS(status=NS(phase=self.phase))

    def list_namespaced_event(self, namespace: str, field_selector: str, **_: Any) -> Any:
        self.selectors.append(field_selector)
        return NS(items=self.events)


def event(reason: str, message: str, second: int) -> Any:
    import datetime

    when = datetime.datetime(2026, 1, 1, 0, 0, second, tzinfo=datetime.UTC)
    return NS(reason=reason, message=message, last_timestamp=when, event_time=None, metadata=NS())


def test_a_pod_wait_timing_out_on_an_unbound_claim_says_the_claims_reason(monkeypatch):
    from wincon.cluster import waits

    core = ClaimCore("Pending", [event("WaitForFirstConsumer", "waiting for first consumer", 1),
                                event("ExternalProvisioning", PROVISIONING, 9)])  # fmt: skip
    monkeypatch.setattr(waits.client, "CoreV1Api", lambda api_client: core)

    def times_out(*a: object, **k: object) -> None:
        raise waits.WaitTimeout("pod ns/pvc-user did not become ready within 45s (last phase: Pending)", "pulling?")

    monkeypatch.setattr(waits, "wait_for", times_out)
    with pytest.raises(waits.WaitTimeout) as caught:
        waits.wait_for_pod(object(), "ns", "pvc-user")  # type: ignore[arg-type]
    assert caught.value.message == (
        "pod ns/pvc-user did not become ready within 45s (last phase: Pending); "
        f"claim data Pending: ExternalProvisioning: {PROVISIONING}"
    )
    assert caught.value.fix == waits.CLAIM_HINT
    assert core.selectors == ["involvedObject.kind=PersistentVolumeClaim,involvedObject.name=data"]

    core.phase = "Bound"  # a bound claim is not the reason: the timeout's own message and hint stand
    with pytest.raises(waits.WaitTimeout) as caught:
        waits.wait_for_pod(object(), "ns", "pvc-user")  # type: ignore[arg-type]
    assert caught.value.message.endswith("(last phase: Pending)") and caught.value.fix == "pulling?"
