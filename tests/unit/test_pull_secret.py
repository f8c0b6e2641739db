"""`--image-pull-secret` (issue 42 item 4): every pod the suite creates names the secret, whatever kind carries
it and whichever path creates it, and each namespace the suite creates gets a copy. The kubernetes client's own API
classes send the requests; only the transport (ApiClient.call_api's original) is replaced by a recorder."""

from __future__ import annotations

import copy
import json
import re
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client, utils
from kubernetes.client import rest

from wincon.commandline.errors import UsageError
from wincon.workloads import pullsecret
from wincon.workloads.catalog import Catalog
from wincon.workloads.prepull import daemonset_manifest

SECRET = {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6IHt9fQ=="}}
CONTAINERS = [{"name": "c", "image": "registry.invalid/app:1"}]
POD_SPEC = {"containers": CONTAINERS}
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "a"}}
MANIFESTS: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": POD_SPEC},
    "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "DaemonSet": {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
                  "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                    "spec": {"selector": SELECTOR, "serviceName": "s", "template": TEMPLATE}},
    "ReplicaSet": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                   "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "ReplicationController": {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
                              "spec": {"selector": {"app": "a"}, "template": TEMPLATE}},
    "Job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": TEMPLATE}},
    "CronJob": {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}}},
}  # fmt: skip
SERVICE_ACCOUNT = re.compile(r"/api/v1/namespaces/([^/]+)/serviceaccounts/default")
CREATE = {
    "Pod": lambda api: client.CoreV1Api(api).create_namespaced_pod,
    "Deployment": lambda api: client.AppsV1Api(api).create_namespaced_deployment,
    "DaemonSet": lambda api: client.AppsV1Api(api).create_namespaced_daemon_set,
    "StatefulSet": lambda api: client.AppsV1Api(api).create_namespaced_stateful_set,
    "ReplicaSet": lambda api: client.AppsV1Api(api).create_namespaced_replica_set,
    "ReplicationController": lambda api: client.CoreV1Api(api).create_namespaced_replication_controller,
    "Job": lambda api: client.BatchV1Api(api).create_namespaced_job,
    "CronJob": lambda api: client.BatchV1Api(api).create_namespaced_cron_job,
}


class Recorder:
    """An ApiClient whose transport records each request (path, method, body as sent) and answers 201 with the
    body sent, as the API server answers a create with the object it stored; a read of a namespace's default
    ServiceAccount (NamespaceRegistry.create waits for it) is answered 200 with that ServiceAccount."""

    def __init__(self) -> None:
        self.api = client.ApiClient(client.Configuration())
        self.sent: list[tuple[str, str, Any]] = []
        self.api.call_api = self.call_api

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        request = pullsecret._Request(args, kwargs)
        body = self.api.sanitize_for_serialization(request.body)
        self.sent.append((request.path, request.method, body))
        if not request.raw:  # the client's releases before 37: call_api deserializes itself
            return None
        headers = {"content-type": "application/json"}
        account = SERVICE_ACCOUNT.fullmatch(request.path)
        if request.method == "GET" and account:
            stored = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
            stored["metadata"]["namespace"] = account.group(1)
            answer = SimpleNamespace(status=200, reason="OK", data=json.dumps(stored).encode(), headers=headers)
        else:
            data = json.dumps(body or {}).encode()
            answer = SimpleNamespace(status=201, reason="Created", data=data, headers=headers)
        return rest.RESTResponse(answer)


@pytest.fixture
def recorder() -> Recorder:
    recording = Recorder()
    pullsecret.install(recording.api, "secrets-home/regcred", secret=SECRET)
    return recording


def pull_secrets_of(body: dict[str, Any]) -> list[dict[str, str]]:
    spec = pullsecret.pod_spec(body)
    assert spec is not None, body
    return list(spec.get("imagePullSecrets") or [])


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
def test_every_pod_bearing_kind_created_through_the_client_names_the_secret(recorder, kind):
    manifest = copy.deepcopy(MANIFESTS[kind])
    CREATE[kind](recorder.api)("wincon-t-1", manifest)
    ((path, method, body),) = recorder.sent
    assert method == "POST" and path.startswith(("/api/v1/namespaces/wincon-t-1/", "/apis/"))
    assert pull_secrets_of({**body, "kind": kind}) == [{"name": "regcred"}]
    assert body["spec"] != manifest["spec"] and manifest == MANIFESTS[kind]  # the caller's dict is left as it was
    assert body["metadata"] == manifest["metadata"]


@pytest.mark.parametrize("kind", ["Deployment", "CronJob", "Pod"])
def test_the_workloads_create_from_dict_path_names_the_secret_too(recorder, kind):
    utils.create_from_dict(recorder.api, copy.deepcopy(MANIFESTS[kind]), namespace="wincon-t-2")
    ((_, method, body),) = recorder.sent
    assert method == "POST" and pull_secrets_of({**body, "kind": kind}) == [{"name": "regcred"}]


def test_a_model_object_body_and_a_replace_get_it_once_after_those_already_named(recorder):
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="m"),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="x")],
            image_pull_secrets=[client.V1LocalObjectReference(name="theirs")],
        ),
    )
    client.CoreV1Api(recorder.api).create_namespaced_pod("ns", pod)
    named = {**MANIFESTS["Pod"], "spec": {**POD_SPEC, "imagePullSecrets": [{"name": "regcred"}]}}
    client.CoreV1Api(recorder.api).replace_namespaced_pod("p", "ns", named)
    (_, _, created), (path, method, replaced) = recorder.sent
    assert created["spec"]["imagePullSecrets"] == [{"name": "theirs"}, {"name": "regcred"}]
    assert (path, method) == ("/api/v1/namespaces/ns/pods/p", "PUT")
    assert replaced["spec"]["imagePullSecrets"] == [{"name": "regcred"}]  # not twice


def test_other_kinds_and_other_verbs_are_left_alone(recorder):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    client.CoreV1Api(recorder.api).create_namespaced_service("ns", service)
    client.CoreV1Api(recorder.api).patch_namespaced_pod("p", "ns", {"metadata": {"labels": {"a": "b"}}})
    client.CoreV1Api(recorder.api).create_namespaced_pod_eviction("p", "ns", {"metadata": {"name": "p"}})
    assert [body for _, _, body in recorder.sent] == [
        service,
        {"metadata": {"labels": {"a": "b"}}},
        {"metadata": {"name": "p"}},
    ]


def test_each_namespace_created_gets_a_copy_of_the_secret_under_its_name(recorder):
    from wincon.cluster.namespaces import NamespaceRegistry

    name = NamespaceRegistry(recorder.api, "run1", "gw0").create("secrets")
    (ns_path, ns_method, _), (path, method, body), (sa_path, sa_method, _) = recorder.sent
    assert (ns_path, ns_method) == ("/api/v1/namespaces", "POST")
    assert (path, method) == (f"/api/v1/namespaces/{name}/secrets", "POST")
    assert body["metadata"]["name"] == "regcred" and body["metadata"]["namespace"] == name
    assert body["type"] == "kubernetes.io/dockerconfigjson" and body["data"] == SECRET["data"]
    assert (sa_path, sa_method) == (f"/api/v1/namespaces/{name}/serviceaccounts/default", "GET")  # there at once
    client.CoreV1Api(recorder.api).create_namespace({"metadata": {"name": "wincon-system"}})  # the Leases'
    assert [(p, m) for p, m, _ in recorder.sent[3:]] == [("/api/v1/namespaces", "POST")]  # no copy outlives the run


def test_the_prepull_daemonset_names_it_and_installing_twice_adds_nothing(recorder):
    pullsecret.install(recorder.api, "secrets-home/regcred", secret=SECRET)  # a run's client already has it
    manifest = daemonset_manifest(Catalog.load(), 26100)
    client.AppsV1Api(recorder.api).create_namespaced_daemon_set("wincon-prepull-x", manifest)
    ((_, _, body),) = recorder.sent
    assert pull_secrets_of(body) == [{"name": "regcred"}]
    assert "imagePullSecrets" not in manifest["spec"]["template"]["spec"]


def test_a_missing_source_secret_is_a_usage_error_naming_the_fix():
    from kubernetes.client.exceptions import ApiException

    api = client.ApiClient(client.Configuration())

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise ApiException(status=404, reason="Not Found")

    api.call_api = missing
    with pytest.raises(UsageError) as error:
        pullsecret.install(api, "regcred")
    assert "default/regcred cannot be read (404" in error.value.message
    assert "kubectl create secret docker-registry regcred -n default" in error.value.fix


def test_a_secret_of_another_type_is_refused(monkeypatch):
    from wincon.workloads import registryauth

    opaque = SimpleNamespace(type="Opaque", data={"password": "eA=="})
    monkeypatch.setattr("wincon.cluster.client.call", lambda fn, *a, **k: opaque)
    with pytest.raises(UsageError, match="of type Opaque, not kubernetes.io/dockerconfigjson"):
        registryauth.read_secret(client.ApiClient(client.Configuration()), "ns/generic")


def test_wincon_run_hands_the_option_to_both_phases(monkeypatch, tmp_path):
    from wincon.cli import main

    seen: list[list[str]] = []
    monkeypatch.setattr("wincon.results.runner.run", lambda results, args, **kw: seen.append(list(args)) or 0)
    assert main(["run", "--image-pull-secret", "ns/regcred", "--results-dir", str(tmp_path / "r")]) == 0
    assert seen and seen[0][-2:] == ["--image-pull-secret", "ns/regcred"]


def test_the_pytest_option_installs_it_on_the_suites_client(monkeypatch):
    from wincon.session import context as context_mod

    installed: list[str] = []
    monkeypatch.setattr("wincon.cluster.client.load_api_client", lambda *a: SimpleNamespace())
    monkeypatch.setattr(pullsecret, "install", lambda api, spec: installed.append(spec))
    options = {"wincon_image_pull_secret": "ns/regcred", "wincon_kubeconfig": None, "wincon_context": None}
    config = SimpleNamespace(getoption=lambda name, default=None: options.get(name, default))
    ctx = context_mod.WinconContext(config)  # type: ignore[arg-type]
    assert ctx.api_client is not None and installed == ["ns/regcred"]


def test_the_call_layout_of_the_clients_before_release_37_is_handled_too(recorder):
    """Before 37 the generated API classes called ``call_api(resource_path, method, path_params, query_params,
    header_params, body=...)`` with the path's template; the wrapper reads that layout as well."""
    recorder.api.call_api(
        "/api/v1/namespaces/{namespace}/pods", "POST", {"namespace": "ns"}, [], {}, body=MANIFESTS["Pod"]
    )
    recorder.api.call_api("/api/v1/namespaces", "POST", {}, [], {}, body={"metadata": {"name": "t", "labels": {
        "wincon.io/run-id": "r"}}})  # fmt: skip
    (path, method, body), (_, _, _), (copy_path, _, copied) = recorder.sent
    assert (path, method) == ("/api/v1/namespaces/{namespace}/pods", "POST")  # the template, as that layout sends
    assert pull_secrets_of(body) == [{"name": "regcred"}]
    assert copy_path == "/api/v1/namespaces/t/secrets" and copied["metadata"]["name"] == "regcred"
