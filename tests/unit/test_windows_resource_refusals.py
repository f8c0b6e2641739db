"""suites/api/test_windows_resource_refusals.py on constructed API answers: each check passes on the API server's
own answer and fails on any other (accepted, another refusal, a second cause, a refused change stored anyway).

The refusals are built as k8s.io/apimachinery v0.36.1 builds them (pkg/api/errors/errors.go NewInvalid:284-311:
422, reason Invalid, one cause per field error with its ErrorBody as message; a root path prints "[]",
pkg/util/validation/field/path.go:106-114), with the messages of k8s.io/kubernetes v1.35.4
pkg/apis/core/validation/validation.go:6230 and :4745. The PATCH goes through wincon.checks.api_rules.resize_pod
with a fake CoreV1Api, so the Status body is parsed as the check parses a real one.
"""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.support import suites
from wincon.checks import api_rules
from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile

SUITE = suites.load("suites/api/test_windows_resource_refusals.py")


def status_error(name: str, causes: list[tuple[str, str]], code: int = 422, reason: str = "Invalid") -> ApiException:
    """An ApiException carrying the Status NewInvalid builds for ``causes`` ((field, ErrorBody) pairs)."""
    errors = ", ".join(f"{f}: {m}" for f, m in causes)
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Pod "{name}" is invalid: {"[" + errors + "]" if len(causes) > 1 else errors}',
        "reason": reason,
        "details": {
            "name": name,
            "kind": "Pod",
            "causes": [{"reason": "FieldValueForbidden", "message": m, "field": f} for f, m in causes],
        },
        "code": code,
    }
    return ApiException(status=code, reason="Unprocessable Entity", body=json.dumps(body))


WINDOWS_RESIZE = [("[]", "Forbidden: windows pods cannot be resized")]
WINDOWS_POD_RESOURCES = [("spec.resources", "Forbidden: may not be set for a windows pod")]


def pod(name: str, cpu: str = "100m", resources: dict | None = None, os_name: str = "windows") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "os": {"name": os_name},
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
    }
    if resources is not None:
        spec["resources"] = resources
    return {"metadata": {"name": name}, "spec": spec}


class FakeCore:
    """CoreV1Api: the resize PATCH answers ``resize`` (a pod dict, or an ApiException raised); reads answer
    ``stored`` (a pod dict, or None: 404)."""

    def __init__(self, resize: Any = None, stored: dict | None = None) -> None:
        self.resize, self.stored = resize, stored
        self.patches: list[Any] = []
        self.created: list[dict] = []

    def patch_namespaced_pod_resize(self, name, namespace, body, _preload_content=True):
        self.patches.append(body)
        if isinstance(self.resize, Exception):
            raise self.resize
        return NS(data=json.dumps(self.resize).encode())

    def read_namespaced_pod(self, name, namespace):
        if self.stored is None:
            raise ApiException(status=404, reason="Not Found")
        return self.stored


class FakeKube:
    def __init__(self, core: FakeCore, submitted: tuple[Any, Any] = (None, None)) -> None:
        self.core, self.namespace, self.submitted = core, "ns", submitted
        self.api_client = NS(sanitize_for_serialization=lambda obj: obj)
        self.bodies: list[dict] = []

    def submit(self, body, dry_run=True):
        assert dry_run is False, "the checks create for real"
        self.bodies.append(body)
        return self.submitted


WINCON = NS(
    api_client=NS(),
    catalog=NS(image=lambda key, os_name, build: f"{key}-{os_name}"),
    profile=NS(
        linux_nodes=[NS(name="worker-1", ready=True, data_plane=True), NS(name="worker-0", ready=True, data_plane=True)]
    ),
)


@pytest.fixture
def core(monkeypatch) -> FakeCore:
    fake = FakeCore()
    monkeypatch.setattr(api_rules.client, "CoreV1Api", lambda api_client: fake)
    monkeypatch.setattr(SUITE, "create_or_reject", lambda api_client, namespace, body: fake.created.append(body))
    return fake


# --------------------------------------------------------------------------- resize


def run_windows_resize(core: FakeCore) -> None:
    SUITE.test_api_server_answers_an_in_place_resize_by_the_pods_os(FakeKube(core), WINCON, "ns", 20348, "windows")


def test_windows_resize_refused_by_the_windows_rule_passes(core):
    core.resize, core.stored = status_error("resize-windows", WINDOWS_RESIZE), pod("resize-windows")
    run_windows_resize(core)
    assert core.patches == [SUITE.RESIZE]


def test_windows_resize_accepted_fails(core):
    core.resize = core.stored = pod("resize-windows", cpu="150m")
    with pytest.raises(AssertionError, match="accepted"):
        run_windows_resize(core)


def test_windows_resize_refused_for_another_reason_fails(core):
    """A Linux-only refusal (a node without resize support) is not the Windows rule."""
    core.resize = status_error(
        "resize-windows", [("spec", "Forbidden: Pod running on node without support for resize")]
    )
    core.stored = pod("resize-windows")
    with pytest.raises(AssertionError, match="no cause 'Forbidden: windows pods cannot be resized' at \\[\\]"):
        run_windows_resize(core)


def test_windows_resize_refused_by_a_webhook_in_the_same_words_fails(core):
    core.resize = status_error("resize-windows", WINDOWS_RESIZE, code=403, reason="Forbidden")
    core.stored = pod("resize-windows")
    with pytest.raises(AssertionError, match="refused it otherwise"):
        run_windows_resize(core)


def test_windows_resize_refused_with_a_second_cause_fails(core):
    core.resize = status_error("resize-windows", WINDOWS_RESIZE + [("spec", "Invalid value: QOS")])
    core.stored = pod("resize-windows")
    with pytest.raises(AssertionError, match="other reasons too"):
        run_windows_resize(core)


def test_windows_resize_refused_but_stored_changed_fails(core):
    core.resize, core.stored = status_error("resize-windows", WINDOWS_RESIZE), pod("resize-windows", cpu="150m")
    with pytest.raises(AssertionError, match="still changed requests.cpu: 150m"):
        run_windows_resize(core)


def run_linux_resize(core: FakeCore) -> None:
    SUITE.test_api_server_answers_an_in_place_resize_by_the_pods_os(FakeKube(core), WINCON, "ns", 20348, "linux")


def test_linux_resize_accepted_and_stored_passes(core):
    core.resize = core.stored = pod("resize-linux", cpu="150m", os_name="linux")
    run_linux_resize(core)
    spec = core.created[0]["spec"]
    assert spec["os"]["name"] == "linux" and spec["nodeSelector"]["kubernetes.io/hostname"] == "worker-0"
    assert spec["containers"][0]["resources"] == SUITE.CONTAINER_RESOURCES


def test_linux_resize_refused_fails(core):
    core.resize = status_error("resize-linux", [("spec", "Forbidden: Pod running on node without support for resize")])
    core.stored = pod("resize-linux", os_name="linux")
    with pytest.raises(AssertionError, match="refused the resize of Linux pod"):
        run_linux_resize(core)


def test_linux_resize_answered_but_not_stored_fails(core):
    core.resize, core.stored = pod("resize-linux", cpu="150m", os_name="linux"), pod("resize-linux", os_name="linux")
    with pytest.raises(AssertionError, match="stored with requests.cpu 100m"):
        run_linux_resize(core)


# --------------------------------------------------------------------------- pod-level resources


def run_windows_pod_resources(core: FakeCore, submitted: tuple[Any, Any]) -> FakeKube:
    kube = FakeKube(core, submitted)
    SUITE.test_api_server_answers_pod_level_resources_by_the_pods_os(kube, WINCON, 20348, "windows")
    return kube


def refused(causes: list[tuple[str, str]], code: int = 422) -> tuple[None, api_rules.Rejection]:
    return None, api_rules.rejection_of(status_error("pod-resources-windows", causes, code=code))


def test_windows_pod_resources_refused_and_not_stored_passes(core):
    kube = run_windows_pod_resources(core, refused(WINDOWS_POD_RESOURCES))
    sent = kube.bodies[0]["spec"]
    assert sent["resources"] == SUITE.POD_RESOURCES and sent["os"]["name"] == "windows"


def test_windows_pod_resources_accepted_fails(core):
    created = pod("pod-resources-windows", resources=SUITE.POD_RESOURCES)
    with pytest.raises(AssertionError, match="accepted"):
        run_windows_pod_resources(core, (created, None))


def test_windows_pod_resources_dropped_skips(core):
    """The gate off: the API server drops spec.resources and validates nothing."""
    with pytest.raises(pytest.skip.Exception, match="PodLevelResources is off"):
        run_windows_pod_resources(core, (pod("pod-resources-windows"), None))


def test_windows_pod_resources_refused_at_another_field_fails(core):
    with pytest.raises(AssertionError, match="no cause"):
        run_windows_pod_resources(
            core, refused([("spec.resources.claims", "Forbidden: may not be set for a windows pod")])
        )


def test_windows_pod_resources_refused_but_stored_fails(core):
    core.stored = pod("pod-resources-windows")
    with pytest.raises(AssertionError, match="must not be stored: reading pod-resources-windows answered 200"):
        run_windows_pod_resources(core, refused(WINDOWS_POD_RESOURCES))


def run_linux_pod_resources(core: FakeCore, submitted: tuple[Any, Any]) -> None:
    kube = FakeKube(core, submitted)
    SUITE.test_api_server_answers_pod_level_resources_by_the_pods_os(kube, WINCON, 20348, "linux")
    assert kube.bodies[0]["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "worker-0"  # a real Linux worker


def test_linux_pod_resources_accepted_and_stored_passes(core):
    created = core.stored = pod("pod-resources-linux", resources=SUITE.POD_RESOURCES, os_name="linux")
    run_linux_pod_resources(core, (created, None))


def test_linux_pod_resources_refused_fails(core):
    with pytest.raises(AssertionError, match="refused Linux pod"):
        run_linux_pod_resources(core, refused([("spec.resources.requests", "Invalid value: 0")]))


def test_linux_pod_resources_stored_otherwise_fails(core):
    created = pod("pod-resources-linux", resources=SUITE.POD_RESOURCES, os_name="linux")
    core.stored = pod("pod-resources-linux", resources={"requests": {"cpu": "100m"}}, os_name="linux")
    with pytest.raises(AssertionError, match="is stored with spec.resources"):
        run_linux_pod_resources(core, (created, None))


# --------------------------------------------------------------------------- the releases that introduced them


@pytest.mark.parametrize(
    ("version", "capability", "has"),
    [
        ("v1.34.4", "in-place-resize", False),
        ("v1.35.4", "in-place-resize", True),
        ("v1.38.0-beta.0", "in-place-resize", True),
        ("v1.33.9", "pod-level-resources", False),
        ("v1.34.4", "pod-level-resources", True),
        ("v1.35.4", "node-log-query", False),
        ("v1.36.3", "node-log-query", True),
        ("v1.37.2-gke.100", "node-log-query", True),
        ("unknown", "in-place-resize", None),
    ],
)
def test_capability_by_the_clusters_minor(version, capability, has):
    profile = ClusterProfile(server_version=version)
    assert capabilities.has(profile, capability) is has
    if has is False:
        assert capabilities.reason(profile, capability).startswith(f"the cluster runs Kubernetes {version}, older than")
