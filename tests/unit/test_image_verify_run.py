"""The image preflight of a run and of `wincon plan` on a live cluster (wincon.session.context.verify_images): each Windows
image's manifest list is read before any pod, and a check whose pods go where an image cannot run under the
isolation it requests is an error at setup, before its fixtures, and the plan's row for it says the same error.

The cluster is a stand-in loaded by the suite's conftest: discovery answers the AKS Windows Server 2025 node of
MicrosoftDocs/azure-aks-docs upgrade-windows-os.md (build 26100, containerd 2.0.4+azure) with a Hyper-V
RuntimeClass, and the registry answers every Windows image but busybox with the manifest list of mcr.microsoft.com/windows/
nanoserver:ltsc2022 recorded in docker-library/official-images#13874 (one entry, 10.0.20348.1487). containerd 2.0.4
runs that entry on 26100 in process isolation (from-ltsc2022 rule); Hyper-V needs the exact build. A check is
refused for the images its code names (wincon.workloads.imageuse): the Hyper-V check whose fixture creates an agnhost pod is,
a check whose code names no catalog image may use any, so every refusal of its node applies (issue 40 item 6),
and one naming only busybox (a list with a 26100 entry) is not refused.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from tests.unit import fakes
from tests.unit.test_image_verify import NANOSERVER_LTSC2022
from tests.unit.test_plugin import LIMITS

CONFTEST = """
import json
from pathlib import Path

import wincon.session.context as context
import wincon.workloads.imageverify as imageverify
from wincon.clusterinfo.profile import ClusterProfile

HERE = Path(__file__).parent
STATE = json.loads((HERE / "state.json").read_text())


def discovered(config):  # what discovery of the live cluster answers
    return ClusterProfile.from_dict(STATE["profile"])


def fetch(reference, credentials=None):  # the registry: every image has the recorded list, or the registry is unreachable
    with (HERE / "fetched.txt").open("a") as out:
        out.write(reference + "\\n")
    if STATE["registry"] == "down":
        real = imageverify.fetch_manifest.__wrapped__
        return real(reference.replace(reference.split("/")[0], "127.0.0.1:9", 1), timeout=2)
    name = reference.rsplit("/", 1)[1].split(":")[0]
    return STATE.get("documents", {}).get(name) or STATE["document"]


fetch.__wrapped__ = imageverify.fetch_manifest
context.load_profile = discovered
context.WinconContext.reap = lambda self: []
context.WinconContext.sweep_run = lambda self: None  # no namespaces: the stand-in creates none
context.WinconContext.local_hints = property(lambda self: {})  # not a wincon local cluster
imageverify.fetch_manifest = fetch
"""

SUITE = """
import pytest
from pathlib import Path

CREATED = Path(__file__).parent.parent / "created.txt"


def create(name, image_key):  # stands for a helper that creates a pod of a catalog image
    with CREATED.open("a") as out:
        out.write(f"{name} {image_key}\\n")
    return name


@pytest.fixture
def pod(request):
    return create(request.node.name, "agnhost")


@pytest.fixture
def plain(request):  # a pod of no catalog image
    return create(request.node.name, "mcr.microsoft.com/windows/nanoserver:ltsc2025")


@pytest.fixture
def shell(request):  # a pod of busybox, whose list has an entry of every build
    return create(request.node.name, "busybox")


@pytest.mark.dataplane
@pytest.mark.isolation("hyperv")
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b01")
def test_hyperv(pod):
    assert pod == "test_hyperv"


@pytest.mark.dataplane
@pytest.mark.isolation("hyperv")
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b03")
def test_hyperv_without_catalog_image(plain):
    assert plain == "test_hyperv_without_catalog_image"


@pytest.mark.dataplane
@pytest.mark.isolation("hyperv")
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b04")
def test_hyperv_busybox(shell):
    assert shell == "test_hyperv_busybox"


@pytest.mark.dataplane
@pytest.mark.isolation("hyperv")
@pytest.mark.no_pod("reads the node through the API server")
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b05")
def test_hyperv_no_pod():
    assert True  # stands for a check that reads the API server only


@pytest.mark.dataplane
@pytest.mark.isolation("hyperv")
@pytest.mark.no_pod("declared, but its fixture creates an agnhost pod")
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b06")
def test_hyperv_no_pod_declared_wrongly(pod):
    assert pod == "test_hyperv_no_pod_declared_wrongly"


@pytest.mark.dataplane
@pytest.mark.test_id("0b4f3c1e-7a8d-4e2b-9c61-3f1d2a7e5b02")
def test_process(pod):
    assert pod == "test_process"
"""

OUTCOME = re.compile(r"^suites/test_s\.py::(\S+) (PASSED|FAILED|SKIPPED|ERROR)", re.M)


@pytest.fixture
def cluster(pytester):
    """Write the stand-in cluster (``nodes``, the registry ``up`` or ``down``); return a function running pytest
    (the run, or with ``--wincon-plan-out`` the plan) in a subprocess as `wincon run` and `wincon plan` do."""
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")
    (pytester.path / "suites" / "test_s.py").write_text(textwrap.dedent(SUITE))
    pytester.makeconftest(CONFTEST)

    def setup(nodes: list[dict], registry: str = "up") -> None:
        classes = [{"name": "runhcs-wcow-hypervisor", "handler": "runhcs-wcow-hypervisor"}]
        profile = {"server_version": "v1.33.12", "cni": "azure-cni", "nodes": nodes, "runtime_classes": classes}
        state = {"profile": profile, "document": NANOSERVER_LTSC2022, "documents": DOCUMENTS, "registry": registry}
        (pytester.path / "state.json").write_text(json.dumps(state))

    def run(*args: str):
        return pytester.runpytest_subprocess("suites", "--limitations", "limitations.yaml", "-v", "-rA", *args)

    return setup, run


# busybox's list has an amd64 entry of each build (what test/images/busybox/BASEIMAGE builds for 1.37.0-2, the
# catalog's windows_versions_source): it runs under Hyper-V on the WS2025 node; every other image has the ltsc2022 list.
DOCUMENTS = {
    "busybox": {
        "manifests": [
            {"platform": {"architecture": "amd64", "os": "windows", "os.version": f"10.0.{build}.1"}}
            for build in (17763, 20348, 26100)
        ]
    }
}
WS2025 = fakes.profile_windows_node("akswspool000000", 26100, runtime_version="2.0.4+azure", os_version="ltsc2025")


def test_plan_and_run_refuse_the_hyperv_check_and_run_the_process_check_alike(cluster, pytester):
    setup, run = cluster
    setup([WS2025])
    plan_file = pytester.path / "plan.json"
    planned = run("--collect-only", "-q", "--wincon-plan-out", str(plan_file))
    assert planned.ret == 0, planned.stdout.str()
    dump = json.loads(plan_file.read_text())
    rows = {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}
    assert rows["test_process"]["outcome"] == "run"
    assert rows["test_hyperv_busybox"]["outcome"] == "run"  # names busybox only, which has a 26100 entry
    # Issue 40 item 6: names no catalog image, so it may use any (wincon.workloads.imageuse's rule): every image refused on
    # its node under Hyper-V applies, said as such (it read as "no catalog image" and failed at container creation).
    unread = rows["test_hyperv_without_catalog_image"]
    assert unread["outcome"] == "error"
    assert "wincon.workloads.imageuse found no catalog image named in this check's code" in unread["reason"]
    assert "agnhost (registry.k8s.io/e2e-test-images/agnhost:2.66.1) on akswspool000000" in unread["reason"]
    assert "pause (" in unread["reason"] and "busybox (" not in unread["reason"]  # busybox runs there
    # A check declared no_pod runs no image: no refusal applies (the boot-id, allocatable and service-log checks,
    # which read the API server only, erred on any node with a refusal once "found nothing" meant "any image").
    assert rows["test_hyperv_no_pod"]["outcome"] == "run" and rows["test_hyperv_no_pod"]["no_pod_problem"] is None
    # ... and `wincon lint` holds the declaration to the code: one whose fixture creates an agnhost pod is reported.
    wrong = rows["test_hyperv_no_pod_declared_wrongly"]["no_pod_problem"]
    assert wrong and "names the catalog image(s) agnhost" in wrong
    from wincon.commandline.commands import lint_problems

    problems = lint_problems(dump["tests"], {}, sources={})
    assert [p for p in problems if "no_pod declared" in p] == [
        f"suites/test_s.py::test_hyperv_no_pod_declared_wrongly: {wrong}"
    ]
    hyperv = rows["test_hyperv"]
    assert hyperv["outcome"] == "error"
    assert (
        "agnhost (registry.k8s.io/e2e-test-images/agnhost:2.66.1) on akswspool000000 (build 26100, hyperv"
        in (hyperv["reason"])
    )
    assert "HCS_E_IMAGE_MISMATCH" in hyperv["reason"] and "the list has 20348" in hyperv["reason"]
    assert "records a ltsc2025 entry for agnhost:2.66.1" in hyperv["reason"]  # the tag that would serve
    assert "pause (" not in hyperv["reason"]  # refused on that node too, but this check's code names only agnhost
    assert "1 real Windows node(s), process and hyperv isolation" in dump["images"]
    fetched = (pytester.path / "fetched.txt").read_text().split()
    assert "registry.k8s.io/e2e-test-images/agnhost:2.66.1" in fetched  # the registry was read for the plan
    assert not (pytester.path / "created.txt").exists()

    result = run()
    outcomes = dict(OUTCOME.findall(result.stdout.str()))
    expected = {
        "test_hyperv": "ERROR",
        "test_process": "PASSED",
        "test_hyperv_without_catalog_image": "ERROR",
        "test_hyperv_busybox": "PASSED",
        "test_hyperv_no_pod": "PASSED",
        "test_hyperv_no_pod_declared_wrongly": "PASSED",
    }
    assert outcomes == expected, result.stdout.str()
    created = (pytester.path / "created.txt").read_text().splitlines()  # no pod for the refused one
    assert sorted(line.split()[0] for line in created) == [
        "test_hyperv_busybox",
        "test_hyperv_no_pod_declared_wrongly",
        "test_process",
    ]
    out = result.stdout.str()
    assert "infrastructure error (not a node failure)" in out and "on akswspool000000 (build 26100, hyperv" in out
    assert "pairing(s) refused" in out  # the run's header says what the preflight found
    assert result.ret == 3  # infrastructure errors alone


def test_an_unreachable_registry_stops_the_run_with_the_cause_and_the_fix(cluster, pytester):
    setup, run = cluster
    setup([WS2025], registry="down")
    result = run()
    assert result.ret == 3
    text = result.stdout.str() + result.stderr.str()
    assert "cannot read the manifest of" in text and "--image-repo-list" in text
    assert not (pytester.path / "created.txt").exists()


def test_simulated_windows_nodes_read_no_registry_and_the_run_says_so(cluster, pytester):
    setup, run = cluster
    setup([fakes.profile_windows_node("win2025-0", 26100, True, runtime_version="2.0.4+azure")])
    result = run()
    assert "images: not verified: the Windows nodes are simulated" in result.stdout.str()
    assert not (pytester.path / "fetched.txt").exists()


def test_no_image_verify_reads_no_registry_and_the_plan_says_so(cluster, pytester):
    """The opt-out (a cluster whose nodes pull through a mirror this machine cannot reach; the integration test
    of cluster shapes, whose loaded Windows nodes read as real): no registry read, nothing refused, said so."""
    setup, run = cluster
    setup([WS2025], registry="down")
    plan_file = pytester.path / "plan.json"
    planned = run("--collect-only", "-q", "--no-image-verify", "--wincon-plan-out", str(plan_file))
    assert planned.ret == 0, planned.stdout.str()
    dump = json.loads(plan_file.read_text())
    assert dump["images"] == "images: not verified (--no-image-verify): no registry read"
    rows = {row["nodeid"].split("::")[-1]: row for row in dump["tests"]}
    assert rows["test_hyperv"]["outcome"] == "run"
    assert not (pytester.path / "fetched.txt").exists()
