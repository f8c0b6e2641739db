"""The local cluster's agnhost carries the tag of the agnhost its Kubernetes release pins (versions.toml's
agnhost_version, from that release's test/utils/image/manifest.go), and the suite deploys and reports that tag on the
local cluster: the references the cluster hands over (ConfigMap kube-public/wincon-local-cluster, ``images``) are
what the suite's catalog resolves there (issue 40 item 7: a 1.35 run reported the catalog's 2.66.1)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from wincon.localcluster import images, paths
from wincon.session.context import WinconContext
from wincon.workloads.catalog import Catalog


def local_hints(release: str) -> dict[str, str]:
    """What `wincon cluster up` of ``release`` writes into the hint ConfigMap (cluster._hints, the image part)."""
    versions = paths.load_versions(release)
    return {"image-repo-list": images.repo_list_text(), "images": json.dumps(images.references(versions))}


@pytest.mark.parametrize("release", paths.releases())
def test_the_local_agnhost_is_tagged_with_its_release_s_agnhost(release):
    pinned = paths.load_versions(release)["kubernetes"]["agnhost_version"]
    refs = images.references(paths.load_versions(release))
    assert refs["agnhost"] == f"wincon.local/e2e-test-images/agnhost:{pinned}"
    catalog = Catalog.load()
    assert refs["pause"] == f"wincon.local/k8s/pause:{catalog.images['pause'].tag}"  # the catalog's, as before


def test_the_suite_deploys_the_local_agnhost_s_tag_on_a_1_35_cluster(monkeypatch):
    monkeypatch.delenv("KUBE_TEST_REPO_LIST", raising=False)
    assert paths.load_versions("1.35")["kubernetes"]["agnhost_version"] == "2.59"  # versions.toml's pin for 1.35
    context = WinconContext(SimpleNamespace(getoption=lambda name: None))  # type: ignore[arg-type]
    context._hints = local_hints("1.35")
    catalog = context.catalog
    assert catalog.images["agnhost"].reference(catalog.registries) == "wincon.local/e2e-test-images/agnhost:2.59"
    assert catalog.linux_missing("agnhost") is None  # the Linux nodes carry it: nothing is skipped for it
    assert catalog.image("agnhost", "linux") == "wincon.local/e2e-test-images/agnhost:2.59"
    busybox = catalog.images["busybox"]
    assert busybox.tag == Catalog.load().images["busybox"].tag and catalog.linux_missing("busybox") is None


def test_a_carried_image_of_another_repository_changes_no_tag():
    catalog = Catalog.load(repo_map={"promoterE2eRegistry": "wincon.local/e2e-test-images"})
    tag = catalog.images["agnhost"].tag
    catalog.carry({"agnhost": "elsewhere.local/e2e-test-images/agnhost:0.1", "unknown": "x/y:1"})
    assert catalog.images["agnhost"].tag == tag
    assert catalog.linux_missing("agnhost") is not None  # not carried under the catalog's reference


def test_an_archive_holding_resource_consumer_is_not_reused_once_a_reference_moves(tmp_path, monkeypatch):
    """The archive's name kept only resource-consumer's key once it was built, so an archive written under the
    catalog's 2.66.1 agnhost would have been imported on a cluster whose suite deploys another tag."""
    from tests.unit.test_consumer_image import fake_build

    monkeypatch.setenv("WINCON_CACHE", str(tmp_path))
    fake_build(tmp_path)
    before = images.archive_path(tmp_path).name
    real = images.references
    monkeypatch.setattr(images, "references", lambda versions=None: {**real(versions), "agnhost": "a/agnhost:2.59"})
    after = images.archive_path(tmp_path).name
    assert after != before and f"-rc{images.consumer.key()}" in after
