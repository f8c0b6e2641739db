"""Helpers of wincon/checks: rollout undo as kubectl does it, taint toleration, build spreading, invariants."""

from __future__ import annotations

import pytest
from kubernetes import client

from wincon.checks import controllers
from wincon.checks.controllers import REVISION, Invariant, RolloutError, undo
from wincon.checks.pods import slug
from wincon.clusterinfo.nodes import tolerated as _tolerated
from wincon.session.fixtures import build_for


def template(image: str, hash_label: str | None = None) -> client.V1PodTemplateSpec:
    labels = {"app": "iisn"}
    if hash_label:
        labels["pod-template-hash"] = hash_label
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="iis-container", image=image)]),
    )


def deployment(image: str, annotations: dict | None = None, paused: bool = False) -> client.V1Deployment:
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name="iisn", uid="dep-uid", annotations=annotations or {}),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "iisn"}), template=template(image), paused=paused
        ),
    )


def replicaset(name: str, revision: int, image: str, annotations: dict | None = None) -> client.V1ReplicaSet:
    owner = client.V1OwnerReference(
        api_version="apps/v1", kind="Deployment", name="iisn", uid="dep-uid", controller=True
    )
    return client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(
            name=name,
            uid=f"{name}-uid",
            annotations={REVISION: str(revision), **(annotations or {})},
            owner_references=[owner],
        ),
        spec=client.V1ReplicaSetSpec(
            selector=client.V1LabelSelector(match_labels={"app": "iisn"}), template=template(image, name[-5:])
        ),
        status=client.V1ReplicaSetStatus(replicas=0),
    )


class FakeApps:
    def __init__(self, dep, replicasets):
        self.dep = dep
        self.replicasets = replicasets
        self.patches = []

    def read_namespaced_deployment(self, name, namespace):
        return self.dep

    def list_namespaced_replica_set(self, namespace, label_selector=""):
        assert label_selector == "app=iisn"
        return client.V1ReplicaSetList(items=self.replicasets)

    def patch_namespaced_deployment(self, name, namespace, body):
        self.patches.append(body)


@pytest.fixture
def fake(monkeypatch):
    def install(dep, replicasets):
        apps = FakeApps(dep, replicasets)
        monkeypatch.setattr(controllers.client, "AppsV1Api", lambda api_client: apps)
        return apps

    return install


CAUSE = {"kubernetes.io/change-cause": "kubectl set image ... v2"}


def test_undo_restores_the_previous_revision_template_without_its_hash(fake):
    rs1 = replicaset("iisn-aaaaa", 1, "iis:v1")
    rs2 = replicaset("iisn-bbbbb", 2, "iis:v2", CAUSE)
    apps = fake(deployment("iis:v2", {REVISION: "2", **CAUSE}), [rs2, rs1])
    assert undo(client.ApiClient(), "ns", "iisn") == 1
    (patch,) = apps.patches
    ops = {op["path"]: op for op in patch}
    assert ops["/spec/template"]["op"] == "replace"
    assert ops["/spec/template"]["value"]["spec"]["containers"][0]["image"] == "iis:v1"
    assert ops["/spec/template"]["value"]["metadata"]["labels"] == {"app": "iisn"}, "pod-template-hash must go"
    # The Deployment keeps its own revision annotation and takes the ReplicaSet's others (no change-cause here).
    assert ops["/metadata/annotations"]["value"] == {REVISION: "2"}


def test_undo_to_a_named_revision_and_errors(fake):
    rs1 = replicaset("iisn-aaaaa", 1, "iis:v1")
    rs2 = replicaset("iisn-bbbbb", 2, "iis:v2")
    rs3 = replicaset("iisn-ccccc", 3, "iis:v3")
    apps = fake(deployment("iis:v3"), [rs1, rs2, rs3])
    assert undo(client.ApiClient(), "ns", "iisn", to_revision=1) == 1
    assert apps.patches[0][0]["value"]["spec"]["containers"][0]["image"] == "iis:v1"
    with pytest.raises(RolloutError, match="no revision 7"):
        undo(client.ApiClient(), "ns", "iisn", to_revision=7)
    fake(deployment("iis:v1"), [rs1])
    with pytest.raises(RolloutError, match="no rollout history"):
        undo(client.ApiClient(), "ns", "iisn")
    fake(deployment("iis:v2", paused=True), [rs1, rs2])
    with pytest.raises(RolloutError, match="paused"):
        undo(client.ApiClient(), "ns", "iisn")


def test_undo_skips_when_the_template_already_matches(fake):
    rs1 = replicaset("iisn-aaaaa", 1, "iis:v1")
    rs2 = replicaset("iisn-bbbbb", 2, "iis:v1")
    apps = fake(deployment("iis:v1"), [rs1, rs2])
    assert undo(client.ApiClient(), "ns", "iisn") == 1
    assert apps.patches == []


def test_undo_ignores_replicasets_the_deployment_does_not_own(fake):
    stray = replicaset("other-zzzzz", 5, "iis:stray")
    stray.metadata.owner_references[0].uid = "someone-else"
    rs1 = replicaset("iisn-aaaaa", 1, "iis:v1")
    rs2 = replicaset("iisn-bbbbb", 2, "iis:v2")
    apps = fake(deployment("iis:v2"), [stray, rs1, rs2])
    assert undo(client.ApiClient(), "ns", "iisn") == 1
    assert apps.patches[0][0]["value"]["spec"]["containers"][0]["image"] == "iis:v1"


def test_invariant_records_each_violation_once_and_delegates_done():
    inv = Invariant(lambda n: n >= 3, lambda n: "too many" if n > 3 else None)
    assert [inv(n) for n in (1, 4, 4, 3)] == [False, True, True, True]
    assert inv.violations == ["too many"] and inv.observed == 4


@pytest.mark.parametrize(
    "taint, tolerated",
    [
        ("os=windows:NoSchedule", True),
        ("os=Win1809:NoSchedule", False),
        ("sku=windows:NoSchedule", True),
        ("dedicated=gpu:NoExecute", False),
        ("anything=x:PreferNoSchedule", True),
    ],
)
def test_windows_tolerations_against_node_taints(taint, tolerated):
    from wincon.workloads.pinning import WINDOWS_TOLERATIONS

    assert _tolerated(taint, WINDOWS_TOLERATIONS) is tolerated


def test_exists_toleration_matches_any_value():
    assert _tolerated("dedicated=gpu:NoSchedule", [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
    assert not _tolerated(
        "dedicated=gpu:NoExecute", [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    )


def test_build_for_is_stable_per_test_and_spreads_over_builds():
    builds = [17763, 20348]
    ids = [f"suites/x.py::test_{i}" for i in range(40)]
    chosen = [build_for(i, builds) for i in ids]
    assert chosen == [build_for(i, builds) for i in ids], "the same test always gets the same build"
    assert set(chosen) == set(builds), "forty tests must cover both builds"
    assert build_for("any", []) is None


def test_slug_makes_dns_label_fragments():
    assert slug("podSecurityContext.runAsUser") == "podsecuritycontext-runasuser"
    assert slug("a..b__c") == "a-b-c"
    assert len(slug("x" * 100)) == 40
