"""suites/scheduling/test_memory_limits.py on a fake API: each Windows node's free memory is read once the pods
being deleted there that request memory have gone (wincon.checks.scheduling.unrequested_once_settled, as the CPU
checks read it since 83e0e98). Read at once, a pod still being deleted counts: the filler takes too little, and
once that pod has gone the 1 GiB pod that must not fit could be scheduled after all. The filler is sized as
upstream v1.37.2 sizes it (memory_limits.go:119-123): allocatable less the existing reservation (requests and
overhead of the node's pods), its own Pod Overhead as a DryRun create answers it, and 256 MiB; on a 1.35 or 1.36
cluster with 100 MiB instead of 256 MiB (memory_limits.go:112 at v1.35.4 and v1.36.3: allocatable less 100 MiB),
as the stats checks follow the cluster's release since 1d6eec7 (issue 40, item 9's twin)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError

MEMORY = suites.load("suites/scheduling/test_memory_limits.py")
CHECK = MEMORY.test_pod_past_allocatable_memory_fails_scheduling_for_insufficient_memory
MI = 1024 * 1024


def pod(name: str, memory: str, deleting: bool = False, overhead: str | None = None):
    return fakes.requesting_pod(name, "memory", memory, namespace="other", deleting=deleting, overhead=overhead)


def node_api(monkeypatch, *answers: list, overhead: dict | None = None) -> fakes.NodePodsApi:
    """Node win-0 (4 GiB allocatable): its pods answer after answer (the last one repeats), on a fake clock; a
    DryRun pod gets ``overhead``."""
    return fakes.NodePodsApi(monkeypatch, *answers, allocatable={"memory": "4Gi"}, overhead=overhead)


class Kube:
    """The check's pods: the fillers bound by name, the 1 GiB pod refused for memory, then placed on win-0."""

    def __init__(self, api: fakes.NodePodsApi) -> None:
        self.api, self.created, self.steps = api, {}, []
        self.properties: dict[str, str] = {}

    def create(self, body: dict) -> None:
        name = body["metadata"]["name"]
        self.created[name] = body
        self.steps.append(f"create {name} at {self.api.now:.0f}s")

    def wait_pod(self, name, done, timeout=None, failure=None, behaviour=False, describe=""):
        self.steps.append(f"wait {name}")
        return NS(spec=NS(node_name="win-0"), metadata=NS(name=name))

    def wait_event(self, name, reason, timeout=60.0, behaviour=False):
        return [NS(message="0/3 nodes are available: 1 Insufficient memory.")]

    def read_pod(self, name):
        return NS(spec=NS(node_name=None))

    def delete_pod(self, name, grace=None):
        self.steps.append(f"delete {name}")


def run(monkeypatch, *answers: list, overhead: dict | None = None, server_version: str = "v1.37.2") -> Kube:
    """The check on win-0 under a cluster whose API server reports ``server_version``; its fixtures are handed by
    name, as pytest hands them; the properties it records end in ``kube.properties``."""
    kube = Kube(node_api(monkeypatch, *answers, overhead=overhead))
    monkeypatch.setattr(MEMORY, "schedulable_windows_nodes", lambda profile: ["win-0"])
    monkeypatch.setattr(
        MEMORY,
        "windows_pod",
        lambda wincon, name, build, node=None: {"metadata": {"name": name}, "spec": {"containers": [{}]}},
    )
    monkeypatch.setattr(MEMORY, "assert_ran_on", lambda pod, profile, os_name: None)
    request = NS(node=NS(user_properties=[]))
    wincon = NS(profile=ClusterProfile(server_version=server_version), api_client=None, pod_start_timeout=300)
    fixtures = {"request": request, "kube": kube, "wincon": wincon, "namespace": "ns"}
    CHECK(**{name: fixtures[name] for name in inspect.signature(CHECK).parameters})
    kube.properties = dict(request.node.user_properties)
    return kube


def filler_limit(kube: Kube) -> int:
    return int(kube.created["mem-test-0"]["spec"]["containers"][0]["resources"]["limits"]["memory"])


def test_the_filler_is_sized_once_the_pods_being_deleted_have_gone(monkeypatch):
    """Before: the free memory was read at once, with the 1 GiB pod still being deleted counted (limit 2972 MiB)."""
    kept = pod("kept", "1Gi")
    going = [kept, pod("going", "1Gi", deleting=True)]
    kube = run(monkeypatch, going, going, [kept])
    # 4 GiB allocatable, 1 GiB requested by the pod that stays, no overhead, less upstream's 256 MiB buffer.
    assert filler_limit(kube) == (4096 - 1024 - 256) * MI
    assert kube.steps[0] == "create mem-test-0 at 4s"  # after two polls 2 s apart: the deleted pod had gone


def test_a_node_without_pods_being_deleted_is_read_at_once(monkeypatch):
    kube = run(monkeypatch, [pod("kept", "1Gi")])
    assert filler_limit(kube) == (4096 - 1024 - 256) * MI
    assert kube.steps[0] == "create mem-test-0 at 0s"


def test_pods_that_never_go_are_the_clusters_error_and_nothing_is_created(monkeypatch):
    with pytest.raises(InfrastructureError, match="memory on win-0 still being deleted after 300s: other/stuck"):
        run(monkeypatch, [pod("stuck", "1Gi", deleting=True)])


def test_the_fillers_own_overhead_comes_off_as_the_dry_run_answers_it(monkeypatch):
    """A RuntimeClass (or webhook) gives every pod 300Mi of overhead: the filler's limit leaves it room, else its
    request plus overhead would exceed what is free and the filler itself would not fit (upstream's 1.37 fix)."""
    kube = run(monkeypatch, [pod("kept", "1Gi")], overhead={"memory": "300Mi", "cpu": "10m"})
    assert filler_limit(kube) == (4096 - 1024 - 300 - 256) * MI
    assert kube.api.probes[0]["metadata"]["name"] == "overhead-probe"
    assert kube.api.probes[0]["spec"]["nodeName"] == "win-0"  # the check's own pod, bound as the filler is


def test_the_overhead_of_the_nodes_pods_counts_as_reserved(monkeypatch):
    """The node's DaemonSet pod requests 1Gi and carries 200Mi overhead: both are its reservation."""
    kube = run(monkeypatch, [pod("daemon", "1Gi", overhead="200Mi")])
    assert filler_limit(kube) == (4096 - 1024 - 200 - 256) * MI


def test_a_node_with_no_room_past_the_overhead_and_buffer_is_skipped_with_the_figures(monkeypatch):
    with pytest.raises(pytest.skip.Exception, match="win-0 has 256 MiB memory unreserved.*overhead \\(0 MiB\\)"):
        run(monkeypatch, [pod("big", "3840Mi")])


@pytest.mark.parametrize("version", ["v1.35.4", "v1.36.3"])
def test_before_1_37_the_filler_leaves_100_mib_as_upstream(monkeypatch, version):
    """Failed at c48de23: 1.37's 256 MiB came off on every release (limit 2816 MiB here for upstream's 2972 MiB)."""
    kube = run(monkeypatch, [pod("kept", "1Gi")], server_version=version)
    assert filler_limit(kube) == (4096 - 1024 - 100) * MI
    assert (
        kube.properties["filler_sizing"] == f"100 MiB margin, as upstream before 1.37 (the API server runs {version})"
    )


def test_before_1_37_the_reservation_and_the_fillers_overhead_still_come_off(monkeypatch):
    """The filler is bound by name: one past what the node's pods leave, its own overhead included, would be refused
    by the kubelet, so both come off on every release; only the margin is the release's."""
    kube = run(
        monkeypatch, [pod("daemon", "1Gi", overhead="200Mi")], overhead={"memory": "300Mi"}, server_version="v1.36.3"
    )
    assert filler_limit(kube) == (4096 - 1024 - 200 - 300 - 100) * MI


def test_before_1_37_a_node_with_no_room_past_100_mib_is_skipped_with_that_margin(monkeypatch):
    with pytest.raises(
        pytest.skip.Exception, match="win-0 has 100 MiB memory unreserved.*overhead \\(0 MiB\\) and 100 MiB"
    ):
        run(monkeypatch, [pod("big", "3996Mi")], server_version="v1.35.4")


@pytest.mark.parametrize("version", ["v1.37.2", "v1.38.0-beta.0", "v1.37.2-gke.100"])
def test_from_1_37_the_filler_leaves_256_mib(monkeypatch, version):
    kube = run(monkeypatch, [pod("kept", "1Gi")], server_version=version)
    assert filler_limit(kube) == (4096 - 1024 - 256) * MI
    assert kube.properties["filler_sizing"] == f"256 MiB margin, as upstream from 1.37 (the API server runs {version})"


def test_an_unknown_version_gets_the_newest_releases_margin_and_says_so(monkeypatch):
    kube = run(monkeypatch, [pod("kept", "1Gi")], server_version="unknown")
    assert filler_limit(kube) == (4096 - 1024 - 256) * MI
    assert kube.properties["filler_sizing"] == "256 MiB margin: the API server's version 'unknown' is unknown"
