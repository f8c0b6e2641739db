"""The data-plane gate decides per node: on a cluster with real and simulated Windows nodes, an item's verdict
counts only where the nodes its pods ran on have a data plane (wincon.clusterinfo.nodes.data_plane_for), and the plan
says the same, item by item, where the build decides placement.

Pods are "placed" in these suites as every placed pod is checked: ``assert_ran_on`` on a pod the scheduler
bound to a node, which records the node on the running item.
"""

import json
import re
import textwrap
from types import SimpleNamespace

import pytest

from tests.unit import fakes
from tests.unit.test_plugin import LIMITS
from wincon.clusterinfo import nodes
from wincon.clusterinfo.profile import ClusterProfile, NodeProfile
from wincon.network.pods import PodRef

windows_node = fakes.profile_windows_node
LINUX = fakes.profile_linux_node("lin1")
# One real and one simulated Windows node of the same build: the build cannot decide, placement does.
SAME_BUILD = [windows_node("win-real", 20348, False), windows_node("win-kwok", 20348, True), LINUX]
# A real ltsc2022 node and a simulated ltsc2019 node: the build each test pins to decides.
TWO_BUILDS = [windows_node("win2022", 20348, False), windows_node("win2019", 17763, True), LINUX]

HEAD = """
import pytest
from wincon.commandline.errors import DeviationObserved
from wincon.network.pods import PodRef
from wincon.workloads.pinning import assert_ran_on

def place(profile, node, build=None):
    \"\"\"A pod the scheduler bound to ``node``, checked as every placed pod is.\"\"\"
    return assert_ran_on({"metadata": {"name": "p"}, "spec": {"nodeName": node}}, profile, build=build)
"""

OUTCOME = re.compile(r"^(suites/test_s\.py::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)", re.M)


@pytest.fixture
def suite(pytester):
    """Run ``body`` against a profile of ``nodes`` (cni win-overlay, where icmp-egress applies); per-test
    outcomes by node id."""
    pytester.makefile(".yaml", limitations=LIMITS)
    pytester.mkdir("suites")

    def run(body, nodes, *args):
        (pytester.path / "suites" / "test_s.py").write_text(HEAD + textwrap.dedent(body))
        profile = {"server_version": "v1.34.4", "cni": "win-overlay", "cni_backend": "vxlan", "nodes": nodes}
        (pytester.path / "profile.json").write_text(json.dumps(profile))
        result = pytester.runpytest_subprocess(
            "suites", "--profile-file", "profile.json", "--limitations", "limitations.yaml", "-v", "-rA", *args
        )
        return result, {m.group(1): m.group(2) for m in OUTCOME.finditer(result.stdout.str())}

    return run


def test_every_verdict_of_a_pod_on_a_simulated_node_is_a_skip_and_on_the_real_node_it_counts(suite):
    """It ran on the simulated node and passed, asserted, or observed the limitation's deviation: skipped each
    time. The same item with its pod on the real node: passed, failed, xfailed (before, every Windows data-plane
    item skipped on this cluster, the real node's too)."""
    body = """
    @pytest.mark.dataplane
    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0701")
    @pytest.mark.parametrize("node", ["win-real", "win-kwok"])
    @pytest.mark.parametrize("ending", ["passes", "asserts"])
    def test_plain(profile, node, ending):
        place(profile, node)
        assert ending == "passes", "no reply"

    @pytest.mark.dataplane
    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0702")
    @pytest.mark.limitation("icmp-egress")
    @pytest.mark.parametrize("node", ["win-real", "win-kwok"])
    def test_limited(profile, node):
        place(profile, node)
        raise DeviationObserved("icmp-egress: ping: request timed out")

    @pytest.mark.dataplane
    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0703")
    @pytest.mark.parametrize("node", ["win-real", "win-kwok"])
    def test_gated(profile, node, data_plane):
        place(profile, node)
        data_plane("ping 10.0.0.1", where="pod p", pod_node=node)
    """
    result, outcomes = suite(body, SAME_BUILD)
    assert outcomes == {
        "suites/test_s.py::test_plain[passes-win-real]": "PASSED",
        "suites/test_s.py::test_plain[passes-win-kwok]": "SKIPPED",
        "suites/test_s.py::test_plain[asserts-win-real]": "FAILED",
        "suites/test_s.py::test_plain[asserts-win-kwok]": "SKIPPED",
        "suites/test_s.py::test_limited[win-real]": "XFAIL",
        "suites/test_s.py::test_limited[win-kwok]": "SKIPPED",
        "suites/test_s.py::test_gated[win-real]": "PASSED",
        "suites/test_s.py::test_gated[win-kwok]": "SKIPPED",
    }, result.stdout.str()
    result.stdout.fnmatch_lines(["*the check ran its pods on win-kwok (no data plane) and passed*"])
    result.stdout.fnmatch_lines(["*the check ran its pods on win-kwok (no data plane) and raised: AssertionError*"])
    result.stdout.fnmatch_lines(["*the check ran its pods on win-kwok (no data plane) and xfailed*"])
    result.stdout.fnmatch_lines(["*(its pods ran on win-kwok); would run: pod p: ping 10.0.0.1*"])


def test_a_module_scoped_pod_on_a_simulated_node_counts_for_every_item_that_uses_it(suite):
    """The shared server is placed while the first item sets up; the second item placed its own pod on the real
    node, but the server it talks to sits on the simulated one: skipped too."""
    body = """
    @pytest.fixture(scope="module", params=["win-real", "win-kwok"])
    def server(request, profile):
        place(profile, request.param)
        return PodRef("server", "10.0.0.5", ("10.0.0.5",), request.param, "", "windows", "netexec")

    @pytest.mark.dataplane
    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0711")
    def test_first(server):
        assert False, "no answer from the server"

    @pytest.mark.dataplane
    @pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0712")
    def test_second(server, profile, data_plane):
        place(profile, "win-real")
        data_plane("curl http://10.0.0.5", where="pod client", pod_node="win-real")
    """
    result, outcomes = suite(body, SAME_BUILD)
    assert outcomes == {
        "suites/test_s.py::test_first[win-real]": "FAILED",
        "suites/test_s.py::test_second[win-real]": "PASSED",
        "suites/test_s.py::test_first[win-kwok]": "SKIPPED",
        "suites/test_s.py::test_second[win-kwok]": "SKIPPED",
    }, result.stdout.str()


BUILD_SUITE = """
@pytest.fixture
def build(request, profile):
    from wincon.session.fixtures import build_for

    return build_for(request.node.nodeid, sorted({n.windows_build for n in profile.ready_windows_nodes}))

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0721")
@pytest.mark.parametrize("n", range(8))
def test_on_its_build(build, n, profile, data_plane):
    node = {20348: "win2022", 17763: "win2019"}[build]
    place(profile, node, build=build)
    data_plane("hostname", pod_node=node)

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0722")
def test_unpinned(data_plane):
    data_plane("hostname")
"""


def test_where_the_build_decides_the_plan_and_the_run_agree_item_by_item(suite, pytester):
    """ltsc2022 real, ltsc2019 simulated: a test pinned to 20348 runs and passes, one pinned to 17763 skips, in
    the plan and in the run; a test pinned to no build may land on either, and the plan says so."""
    plan_run, _ = suite(BUILD_SUITE, TWO_BUILDS, "--collect-only", "--wincon-plan-out", "plan.json")
    assert plan_run.ret == 0, plan_run.stdout.str()
    rows = {row["nodeid"]: row for row in json.loads((pytester.path / "plan.json").read_text())["tests"]}
    result, outcomes = suite(BUILD_SUITE, TWO_BUILDS)
    expected = {"run": "PASSED", "skip": "SKIPPED"}
    pinned = {k: v for k, v in rows.items() if "test_on_its_build" in k}
    assert {expected[row["outcome"]] for row in pinned.values()} == {"PASSED", "SKIPPED"}, pinned
    assert {k: expected[row["outcome"]] for k, row in pinned.items()} == {
        k: v for k, v in outcomes.items() if k in pinned
    }, result.stdout.str()
    unpinned = rows["suites/test_s.py::test_unpinned"]
    assert unpinned["outcome"] == "run"
    note = "depends on the node: runs where its pods land on a real node; skips on a simulated one (win2019)"
    assert note in unpinned["reason"]
    assert outcomes["suites/test_s.py::test_unpinned"] == "SKIPPED"  # no pod placed: every node must be real


# ----------------------------------------------------------------------------- data_plane_for, directly


def profile_of(*nodes):
    return ClusterProfile("v1.34.4", list(nodes))


def win(name, simulated, build=20348):
    return NodeProfile(name, "windows", "amd64", True, simulated, windows_build=build)


def lin(name, simulated=False):
    return NodeProfile(name, "linux", "amd64", True, simulated)


def item(nodes=(), target_os=None, funcargs=None):
    """An item whose pods ran on ``nodes`` (recorded), of a control when ``target_os`` is linux."""
    callspec = SimpleNamespace(params={"target_os": target_os}) if target_os else None
    return SimpleNamespace(
        user_properties=[("node", n) for n in nodes],
        callspec=callspec,
        fixturenames=["target_os"] if target_os else [],
        funcargs=funcargs or {},
        nodeid="suites/test_s.py::test_x",
    )


def test_data_plane_for_judges_the_nodes_the_pods_ran_on():
    mixed = profile_of(win("real", False), win("kwok", True), lin("lin1"))
    assert nodes.data_plane_for(item(["real"]), mixed)
    assert not nodes.data_plane_for(item(["kwok"]), mixed)
    assert not nodes.data_plane_for(item(["real", "kwok"]), mixed)
    assert not nodes.data_plane_for(item(["gone"]), mixed)  # a node the profile does not know vouches nothing
    # Nothing placed yet: every node it may land on must be real.
    assert not nodes.data_plane_for(item(), mixed)
    assert nodes.data_plane_for(item(), profile_of(win("real", False), lin("lin1")))
    # A Windows item whose only recorded pod is a Linux one: its Windows side is still undecided.
    assert not nodes.data_plane_for(item(["lin1"]), mixed)
    # A pod its fixture hands it (a module-scoped PodRef) counts as recorded.
    server = PodRef("server", "10.0.0.5", ("10.0.0.5",), "kwok", "", "windows", "netexec")
    assert not nodes.data_plane_for(item(["real"], funcargs={"servers": [server]}), mixed)


def test_a_control_judges_its_linux_nodes_the_same_way():
    cluster = profile_of(win("kwok", True), lin("lin1"), lin("lin-kwok", simulated=True))
    assert nodes.data_plane_for(item(target_os="linux"), cluster)  # a real Linux worker exists
    assert nodes.data_plane_for(item(["lin1"], target_os="linux"), cluster)
    assert not nodes.data_plane_for(item(["lin-kwok"], target_os="linux"), cluster)
    assert nodes.data_plane_where(item(target_os="linux"), cluster) == nodes.MIXED


def test_the_plan_state_is_per_build():
    two = profile_of(win("w22", False, 20348), win("w19", True, 17763))
    assert nodes.data_plane_where(item(), two) == nodes.MIXED
    assert nodes.data_plane_where(item(), profile_of(win("w19", True, 17763))) == nodes.SIMULATED
    assert nodes.data_plane_where(item(), profile_of()) == nodes.SIMULATED


# ----------------------------------------------------------------------------- nodes added after the profile


def node_object(name, simulated, build=20348):
    """A Windows node as the API server returns it (a real one, or one the simulator marks)."""
    annotations = {"kwok.x-k8s.io/node": "fake"} if simulated else {}
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": f"10.0.{build}"},
            "annotations": annotations,
        },
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {
                "operatingSystem": "windows",
                "kubeletVersion": "v1.34.4",
                "containerRuntimeVersion": "containerd://1.7.20",
                "kernelVersion": f"10.0.{build}.2655",
            },
        },
    }


LATE_CONFTEST = f"""
import pytest
from wincon.clusterinfo import nodes

LATE = {{"win-late": {node_object("win-late", False)!r}, "win-late-kwok": {node_object("win-late-kwok", True)!r}}}
READS = []

def read(name):
    READS.append(name)
    return LATE.get(name)

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    nodes.set_reader(read)  # the API server, as it answers after the profile was taken

def pytest_sessionfinish(session):
    print("node reads:", sorted(READS))
"""

LATE_SUITE = """
@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0731")
@pytest.mark.parametrize("node", ["win-late", "win-late-kwok"])
@pytest.mark.parametrize("ending", ["passes", "asserts"])
def test_placed(profile, node, ending):
    assert place(profile, node).name == node
    assert ending == "passes", "no reply"

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0732")
@pytest.mark.parametrize("node", ["win-late", "win-late-kwok"])
@pytest.mark.parametrize("ending", ["passes", "asserts"])
def test_gated(node, ending, data_plane):
    data_plane("ping 10.0.0.1", where="pod p", pod_node=node)
    assert ending == "passes", "no reply"

@pytest.mark.dataplane
@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0733")
def test_gone(profile):
    place(profile, "win-gone")
"""


def test_a_node_added_after_the_profile_is_judged_as_it_is(suite, pytester):
    """The profile knows one real Windows node; pods land on nodes added later. A real one: its checks pass or
    fail as they say (before: assert_ran_on failed them with WrongNode, the gate skipped them as simulated). A
    simulated one still skips. A node that went away before it could be read is an error, not a skip. Each late
    node is read once per process."""
    pytester.makeconftest(LATE_CONFTEST)
    result, outcomes = suite(LATE_SUITE, [windows_node("win-real", 20348, False), LINUX])
    assert outcomes == {
        "suites/test_s.py::test_placed[passes-win-late]": "PASSED",
        "suites/test_s.py::test_placed[passes-win-late-kwok]": "SKIPPED",
        "suites/test_s.py::test_placed[asserts-win-late]": "FAILED",
        "suites/test_s.py::test_placed[asserts-win-late-kwok]": "SKIPPED",
        "suites/test_s.py::test_gated[passes-win-late]": "PASSED",
        "suites/test_s.py::test_gated[passes-win-late-kwok]": "SKIPPED",
        "suites/test_s.py::test_gated[asserts-win-late]": "FAILED",
        "suites/test_s.py::test_gated[asserts-win-late-kwok]": "SKIPPED",
        "suites/test_s.py::test_gone": "ERROR",
    }, result.stdout.str()
    result.stdout.fnmatch_lines(["*the check ran its pods on win-late-kwok (no data plane) and passed*"])
    result.stdout.fnmatch_lines(["*win-gone, a node the API server no longer knows*"])
    result.stdout.fnmatch_lines(["*node reads: ?'win-gone', 'win-late', 'win-late-kwok'?"])  # once each


def test_windows_build_narrows_placement_not_the_cluster():
    """--windows-build 20348 on a mixed 2019+2022 cluster: the suite's pods go to 20348 only, the whole cluster
    keeps every node (the DaemonSet check counts them all), and a pod found on the other build is known."""
    cluster = profile_of(win("w22", False, 20348), win("w19", False, 17763), lin("lin1"))
    narrowed = cluster.restrict_to_build(20348)
    assert [n.name for n in narrowed.windows_nodes] == ["w22"]
    assert [n.name for n in narrowed.whole_cluster().windows_nodes] == ["w22", "w19"]
    assert nodes.lookup(narrowed, "w19") is not None
    again = ClusterProfile.from_dict(json.loads(json.dumps(narrowed.to_dict())))  # as xdist workers get it
    assert [n.name for n in again.whole_cluster().windows_nodes] == ["w22", "w19"]
    assert [n.name for n in again.windows_nodes] == ["w22"]
