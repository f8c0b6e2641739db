import tempfile

import pytest

from wincon.cluster.diagnostics import scrub
from wincon.cluster.exec import exit_code_from_status
from wincon.cluster.waits import pod_failure
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.commandline.errors import InfrastructureError, UsageError
from wincon.localcluster import hints
from wincon.workloads.catalog import Catalog, build_compatible, load_repo_list
from wincon.workloads.pinning import WrongNode, assert_ran_on, pin_linux, pin_windows
from wincon.workloads.render import render

CATALOG = """\
version: 1
registries:
  promoterE2eRegistry: upstream.example/e2e-test-images
  winconRegistry: ours.example/wincon
windows_versions:
  ltsc2019: {build: 17763, base_tag: ltsc2019}
  ltsc2022: {build: 20348, base_tag: ltsc2022}
  ltsc2025: {build: 26100, base_tag: ltsc2025}
images:
  agnhost: {registry: promoterE2eRegistry, name: agnhost, tag: "2.52", os: [linux, windows], windows_versions: [ltsc2019, ltsc2022, ltsc2025]}
  old: {registry: winconRegistry, name: old, tag: "1", os: [windows], windows_versions: [ltsc2019]}
  linuxonly: {registry: promoterE2eRegistry, name: jessie-dnsutils, tag: "1.7", os: [linux]}
"""


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(CATALOG)
    return path


@pytest.mark.parametrize(
    ("host", "image", "ok"),
    [
        (17763, 17763, True),
        (17763, 20348, False),
        (20348, 17763, False),
        (20348, 20348, True),
        (26100, 20348, True),
        (26100, 26100, True),
        (20348, 26100, False),
        (26100, 17763, False),
    ],
)
def test_containerd_windows_build_matching(host, image, ok):
    assert build_compatible(host, image) is ok


def test_image_is_chosen_per_os_and_build(catalog):
    cat = Catalog.load(catalog)
    assert cat.image("agnhost", "windows", 20348) == "upstream.example/e2e-test-images/agnhost:2.52"
    assert cat.image("agnhost", "linux") == "upstream.example/e2e-test-images/agnhost:2.52"


def test_an_image_without_a_variant_for_the_host_build_is_refused_before_deploying(catalog):
    cat = Catalog.load(catalog)
    assert cat.image("old", "windows", 17763).endswith("/old:1")
    with pytest.raises(InfrastructureError, match="no variant that runs on Windows build 20348"):
        cat.image("old", "windows", 20348)
    with pytest.raises(UsageError, match="no windows variant"):
        cat.image("linuxonly", "windows", 20348)
    with pytest.raises(UsageError, match="not in the image catalog"):
        cat.image("nope")


def test_a_linux_image_the_nodes_do_not_carry_is_named_at_collection_and_skipped_at_use(catalog):
    """Where the Linux nodes pull nothing (the local cluster), linux_missing names the missing image, so the
    capability resource-consumer-image marks the HPA control skipped at collection with the reason image() skips
    with."""
    cat = Catalog.load(catalog)
    assert cat.linux_missing("agnhost") is None  # any reference can be pulled
    cat.linux_available = {"upstream.example/e2e-test-images/agnhost:2.52"}
    assert cat.linux_missing("agnhost") is None
    reason = cat.linux_missing("linuxonly")
    assert reason and "is not on this cluster's Linux nodes" in reason and "agnhost:2.52" in reason
    with pytest.raises(pytest.skip.Exception) as skipped:
        cat.image("linuxonly", "linux")
    assert str(skipped.value) == reason


def test_repo_list_overrides_registries(catalog, tmp_path):
    repo_list = tmp_path / "repos.yaml"
    repo_list.write_text("promoterE2eRegistry: mirror.internal/e2e\n")
    cat = Catalog.load(catalog, repo_list=repo_list)
    assert cat.image("agnhost", "windows", 17763) == "mirror.internal/e2e/agnhost:2.52"
    repo_list.write_text("- not a map\n")
    with pytest.raises(UsageError, match="must map registry keys"):
        load_repo_list(repo_list)


def test_a_local_clusters_repo_list_is_read_from_its_hint_without_a_temporary_file(catalog, tmp_path, monkeypatch):
    """The repo list a local cluster hands to the suite (its ConfigMap) is parsed in memory: a run used to leave a
    wincon-repo-list-*.yaml in the temporary directory each time it read it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    repo_map = hints.repo_list({"image-repo-list": "promoterE2eRegistry: wincon.local/e2e-test-images\n"})
    cat = Catalog.load(catalog, repo_map=repo_map)
    assert cat.image("agnhost", "windows", 17763) == "wincon.local/e2e-test-images/agnhost:2.52"
    assert list(scratch.iterdir()) == []
    assert hints.repo_list({}) is None
    with pytest.raises(UsageError, match="in ConfigMap kube-public/wincon-local-cluster must map registry keys"):
        hints.repo_list({"image-repo-list": "- not a map\n"})
    # A repo list given by the user (--image-repo-list, KUBE_TEST_REPO_LIST) still wins over the hint.
    given = tmp_path / "repos.yaml"
    given.write_text("promoterE2eRegistry: mirror.internal/e2e\n")
    cat = Catalog.load(catalog, repo_list=given, repo_map=repo_map)
    assert cat.image("agnhost", "windows", 17763) == "mirror.internal/e2e/agnhost:2.52"


def test_the_projects_catalog_covers_the_core_images_for_every_version():
    cat = Catalog.load()
    for key in ("agnhost", "busybox", "pause"):
        for build in (17763, 20348, 26100):
            assert cat.image(key, "windows", build)


def test_windows_pinning_sets_os_selector_build_and_tolerations():
    spec = pin_windows(
        {"containers": [], "nodeSelector": {"x": "y"}, "tolerations": [{"key": "a", "operator": "Exists"}]}, build=20348
    )
    assert spec["os"] == {"name": "windows"}
    assert spec["nodeSelector"] == {
        "x": "y",
        "kubernetes.io/os": "windows",
        "node.kubernetes.io/windows-build": "10.0.20348",
    }
    assert {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["tolerations"][0] == {"key": "a", "operator": "Exists"}
    again = pin_windows(spec, build=20348)
    assert len(again["tolerations"]) == len(spec["tolerations"])
    linux = pin_linux({"containers": []}, node="l1")
    assert linux["os"] == {"name": "linux"} and linux["nodeSelector"]["kubernetes.io/hostname"] == "l1"


def _profile():
    return ClusterProfile(
        "v1.34.4",
        nodes=[
            NodeProfile("w22", "windows", "amd64", True, False, windows_build=20348),
            NodeProfile("l1", "linux", "amd64", True, False),
        ],
    )


def test_a_pod_that_ran_on_the_wrong_os_is_never_trusted():
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "w22"}}
    assert assert_ran_on(pod, _profile(), build=20348).name == "w22"
    with pytest.raises(WrongNode, match="a linux node, not windows"):
        assert_ran_on({"metadata": {"name": "p"}, "spec": {"nodeName": "l1"}}, _profile())
    with pytest.raises(WrongNode, match="never scheduled"):
        assert_ran_on({"metadata": {"name": "p"}, "spec": {}}, _profile())
    with pytest.raises(WrongNode, match="not build 17763"):
        assert_ran_on(pod, _profile(), build=17763)


def test_render_substitutes_every_parameter(tmp_path):
    template = tmp_path / "t.yaml"
    template.write_text("kind: Service\nmetadata: {name: $name}\n---\nkind: Pod\nmetadata: {name: ${name}-pod}\n")
    docs = render(template, name="web")
    assert [d["metadata"]["name"] for d in docs] == ["web", "web-pod"]
    with pytest.raises(UsageError, match="needs parameter 'name'"):
        render(template)


def test_scrub_removes_tokens_and_keys():
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6eCJ9.c2lnbmF0dXJlLXZhbHVl"
    text = f"Authorization: Bearer abcdefghijklmnop\ntoken: {jwt}\nclient-key-data: LS0tLS1CRUdJTg==\nok line"
    clean = scrub(text)
    assert "abcdefghijklmnop" not in clean and jwt not in clean and "LS0tLS1CRUdJTg" not in clean
    assert "ok line" in clean and clean.count("<redacted>") == 3


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("status: Success\n", 0),
        (
            '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}',
            7,
        ),
    ],
)
def test_exec_exit_code_from_the_status_channel(status, code):
    assert exit_code_from_status(status) == code


@pytest.mark.parametrize(
    "status",
    ["", "  \n", '{"status":"Failure","message":"container c is not running"}', "[not a status]"],
    ids=["missing", "blank", "exec-failure", "unreadable"],
)
def test_exec_without_an_exit_status_is_an_infrastructure_error_not_exit_0_or_1(status):
    """A missing status once read as exit 0 (a false pass); an exec failure as exit 1 (a false refusal)."""
    with pytest.raises(InfrastructureError, match="exec"):
        exit_code_from_status(status)


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _pod(phase="Pending", waiting=None, unschedulable=False, terminated=None, pod_reason=None):
    conds = (
        [_Obj(type="PodScheduled", status="False", reason="Unschedulable", message="0/3 nodes")]
        if unschedulable
        else []
    )
    statuses = (
        [_Obj(name="c", state=_Obj(waiting=_Obj(reason=waiting, message="m"), terminated=None))] if waiting else []
    )
    if terminated:
        reason, code = terminated
        ended = _Obj(reason=reason, exit_code=code, message="msg")
        statuses = [_Obj(name="c", state=_Obj(waiting=None, terminated=ended))]
    return _Obj(
        status=_Obj(
            phase=phase,
            reason=pod_reason,
            message=None,
            conditions=conds,
            init_container_statuses=[],
            container_statuses=statuses,
        )
    )


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (_pod(), None),
        (_pod(waiting="ContainerCreating"), None),
        (_pod(waiting="ImagePullBackOff"), "ImagePullBackOff"),
        (_pod(waiting="CrashLoopBackOff"), "CrashLoopBackOff"),
        (_pod(unschedulable=True), "Unschedulable"),
    ],
)
def test_pod_failure_conditions_end_waits_early(pod, reason):
    result = pod_failure(pod)
    assert (result is None) if reason is None else (reason in result)


@pytest.mark.parametrize(
    ("pod", "said", "raised"),
    [
        # restartPolicy Never: a container that ended in failure is the workload's failure, as a crash is
        (_pod("Failed", terminated=("Error", 1)), "container c terminated Error (exit 1): msg", "WorkloadFailed"),
        (
            _pod("Failed", terminated=("StartError", 128)),
            "container c terminated StartError (exit 128)",
            "WorkloadFailed",
        ),
        # Counter-cases: the node's refusal or loss stays the cluster's (an error), as before
        (_pod("Failed", terminated=("Error", 137), pod_reason="Evicted"), "pod failed: Evicted", "InfrastructureError"),
        (_pod("Failed", terminated=("ContainerStatusUnknown", 137)), "pod failed:", "InfrastructureError"),
        (_pod("Failed", pod_reason="OutOfcpu"), "pod failed: OutOfcpu", "InfrastructureError"),
        (_pod("Failed", terminated=("Completed", 0)), "pod failed:", "InfrastructureError"),
    ],
)
def test_a_failed_pod_names_its_container_and_is_the_workloads_failure_only_without_a_pod_reason(pod, said, raised):
    from wincon.cluster import waits

    reason = pod_failure(pod)
    assert reason.startswith(said), reason
    with pytest.raises((waits.WorkloadFailed, InfrastructureError)) as caught:
        waits._raise_for(reason, "pod p")
    assert type(caught.value).__name__ == raised, caught.value


def _two_containers(restart_policy: str, second: tuple[str, int]) -> _Obj:
    """A Running pod whose first container runs and whose second ended ``second`` (reason, exit code)."""
    running = _Obj(name="first", state=_Obj(waiting=None, terminated=None, running=_Obj()))
    ended = _Obj(reason=second[0], exit_code=second[1], message="msg")
    other = _Obj(name="second", state=_Obj(waiting=None, terminated=ended))
    status = _Obj(phase="Running", reason=None, message=None, conditions=[])
    status.init_container_statuses, status.container_statuses = [], [running, other]
    return _Obj(spec=_Obj(restart_policy=restart_policy), status=status)


def test_a_never_pod_with_a_container_ended_in_failure_fails_its_wait_at_once():
    """Before: a restartPolicy Never pod of two containers, one failed, stayed Running and never Ready: a wait for it
    ran out as the cluster's error (the Hyper-V two-container check's form). Now the workload's failure, named."""
    from wincon.cluster import waits

    reason = pod_failure(_two_containers("Never", ("StartError", 128)))
    assert reason == "container second terminated StartError (exit 128): msg", reason
    with pytest.raises(waits.WorkloadFailed, match="container second terminated StartError"):
        waits._raise_for(reason, "pod p")
    # Counter-cases: the kubelet restarts a container of another policy; a container that completed is not a failure;
    # a container the kubelet lost is the cluster's.
    assert pod_failure(_two_containers("Always", ("Error", 1))) is None
    assert pod_failure(_two_containers("OnFailure", ("Error", 1))) is None
    assert pod_failure(_two_containers("Never", ("Completed", 0))) is None
    assert pod_failure(_two_containers("Never", ("ContainerStatusUnknown", 137))) is None


def test_placement_is_checked_against_the_os_build_and_node_the_manifest_pins():
    from types import SimpleNamespace as NS

    from wincon.workloads.deploy import check_placement, pod_manifest

    manifest = pod_manifest("p", [], os_name="windows", build=20348, node="w22")
    ran = NS(metadata=NS(name="p"), spec=NS(node_name="w22"))
    check_placement(ran, manifest, _profile())
    with pytest.raises(WrongNode, match="not build 17763"):
        check_placement(ran, pod_manifest("p", [], os_name="windows", build=17763), _profile())
    elsewhere = {**manifest, "spec": {**manifest["spec"], "nodeSelector": {"kubernetes.io/hostname": "w19"}}}
    with pytest.raises(WrongNode, match="not on w19"):
        check_placement(ran, elsewhere, _profile())
    with pytest.raises(WrongNode, match="not linux"):
        check_placement(ran, manifest, _profile(), os_name="linux")
