"""The scheduling, controllers and lifecycle suites' expected failures accept only their own evidence (issue 22
follow-up, h3): each check is run on fakes; the documented deviation's form is the expected failure
(DeviationObserved), a failed assertion of another kind is NotTheDeviation (a failure), and a tool that was not shown
to work first is the suite's error or a failure, never the deviation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from tests.unit import fakes
from wincon.cluster.exec import ExecResult
from wincon.cluster.waits import BehaviourNotObserved, WaitTimeout
from wincon.commandline.errors import DeviationObserved, InfrastructureError, NotTheDeviation, SuiteError

COMPUTE = suites.load("suites/scheduling/test_compute_limitations.py")
IMAGES = suites.load("suites/scheduling/test_image_os_version.py")
RESOURCES = suites.load("suites/scheduling/test_resources.py")
HPA = suites.load("suites/controllers/test_hpa.py")
LIFECYCLE = suites.load("suites/lifecycle/test_lifecycle.py")


@pytest.fixture(autouse=True)
def first_node(monkeypatch):
    """The node choice by unrequested CPU reads the API (wincon.checks.scheduling.least_requested, its own unit test):
    here the check takes the first node, as with no other load."""
    monkeypatch.setattr(COMPUTE, "least_requested", lambda api_client, nodes, resource: nodes[0])


class FakeKube(fakes.CommandKube):
    """Answers each exec by its command line; each pod wait with the pod given for it (or the wait running out)."""

    def __init__(self, answers: dict[str, ExecResult] | None = None, pods: dict[str, Any] | None = None) -> None:
        super().__init__(answers, pods)
        self.pod_start_timeout, self.api_client = 300, None
        self.core = NS(read_node=lambda name: NS(status=NS(capacity={"cpu": "8"})))


def no_gate(what, where=None, pod_node=None):
    pass


# --------------------------------------------------------------------------- resource-limits-pre-1-10


def over_limit(result: str, monkeypatch) -> None:
    monkeypatch.setattr(COMPUTE, "target_node", lambda profile, build, target_os: "win-0")
    monkeypatch.setattr(COMPUTE, "memory_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "apply", lambda *a, **k: None)
    monkeypatch.setattr(COMPUTE, "outcome", lambda kube, name: result)
    COMPUTE.test_container_cannot_commit_more_than_its_memory_limit(
        FakeKube(), NS(profile=None, api_client=None, pod_start_timeout=300), "ns", 17763, no_gate, "windows"
    )


def test_memory_committed_past_the_limit_is_the_deviation_and_an_end_by_itself_is_not(monkeypatch):
    over_limit("terminated: OOMKilled (exit 137)", monkeypatch)
    with pytest.raises(DeviationObserved, match="resource-limits-pre-1-10"):
        over_limit("allocated", monkeypatch)
    with pytest.raises(AssertionError, match="ended as 'terminated: Completed") as failed:
        over_limit("terminated: Completed (exit 0)", monkeypatch)
    assert not isinstance(failed.value, DeviationObserved)


# --------------------------------------------------------------------------- cpu-limits-not-hard (compute suite)


def busy(readings: list[tuple[float, float]], monkeypatch) -> None:
    """The check, its /stats/summary windows reading the cores of the limited pod and of its unlimited twin as
    ``readings`` (limited, twin) one after the other (the last one repeated)."""
    started = datetime.now(UTC) - timedelta(minutes=5)
    pod = NS(status=NS(container_statuses=[NS(state=NS(running=NS(started_at=started)))]))
    left = list(readings)
    monkeypatch.setattr(COMPUTE, "target_nodes", lambda profile, build, target_os: ["win-0"])
    monkeypatch.setattr(COMPUTE, "windows_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "run_os_pods", lambda wincon, namespace, bodies: [pod for _ in bodies])
    monkeypatch.setattr(COMPUTE, "kubelet_json", lambda api, node, path: ({}, ""))
    monkeypatch.setattr(COMPUTE, "cpu_seconds", lambda summary, namespace, name: (started, 0.0))
    monkeypatch.setattr(COMPUTE, "windowed", lambda history: left.pop(0) if len(left) > 1 else left[0])
    monkeypatch.setattr(COMPUTE, "LOAD_WAIT_SECONDS", 0.5)
    monkeypatch.setattr(COMPUTE, "LOAD_POLL_SECONDS", 0.01)
    COMPUTE.test_cpu_limit_caps_a_busy_container(
        FakeKube(), NS(profile=None, api_client=None), "ns", 17763, no_gate, "windows"
    )


def test_usage_over_the_ceiling_is_the_deviation_and_a_load_that_never_ran_is_not(monkeypatch):
    busy([(0.5, 1.4)], monkeypatch)
    busy([(0.0, 0.0), (0.12, 0.3), (0.5, 1.4)], monkeypatch)  # a node busy with other work at first: read again
    with pytest.raises(DeviationObserved, match="cpu-limits-not-hard"):
        busy([(1.9, 1.9)], monkeypatch)
    with pytest.raises(DeviationObserved, match="cpu-limits-not-hard"):
        busy([(0.1, 0.2), (1.9, 1.9)], monkeypatch)
    # A load that never got the CPU: an error naming the readings, neither a failure of the limit nor the deviation.
    with pytest.raises(InfrastructureError, match=r"could not show the limit matters.*0.01/0.02, 0.12/0.15") as errored:
        busy([(0.01, 0.02), (0.12, 0.15)], monkeypatch)
    assert not isinstance(errored.value, AssertionError)


# --------------------------------------------------------------------------- cadvisor-unsupported

# What a Windows node's kubelet serves at /metrics/cadvisor (v1.34.4): cAdvisor's container collector ran and got
# no container (cadvisor_windows.go:57-58), so its error gauge and version only; the machine collector's lines.
WINDOWS_CADVISOR = """# HELP cadvisor_version_info A metric with a constant '1' value labeled by kernel version.
# TYPE cadvisor_version_info gauge
cadvisor_version_info{cadvisorRevision="",cadvisorVersion="",dockerVersion="",kernelVersion="10.0.20348",osVersion="windows"} 1
# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE container_scrape_error gauge
container_scrape_error 0
# HELP machine_cpu_cores Number of logical CPU cores.
# TYPE machine_cpu_cores gauge
machine_cpu_cores{boot_id="",machine_id="",system_uuid=""} 4
# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.
# TYPE machine_scrape_error gauge
machine_scrape_error 0
"""
SERIES = 'container_cpu_usage_seconds_total{{container="main",namespace="ns",pod="{pod}"}} 1.5 1700000000000\n'


def test_the_windows_kubelets_answer_is_the_deviation_and_a_failed_or_partial_one_is_not():
    assert COMPUTE.cadvisor_serves_no_containers(WINDOWS_CADVISOR)
    # the collector failed: no container could be read at all
    assert not COMPUTE.cadvisor_serves_no_containers(
        WINDOWS_CADVISOR.replace("container_scrape_error 0", "container_scrape_error 1")
    )
    # series of other containers, not the pod's: a collector that has not seen it yet, not cAdvisor absent
    assert not COMPUTE.cadvisor_serves_no_containers(WINDOWS_CADVISOR + SERIES.format(pod="other"))
    # not cAdvisor's exposition at all (an empty answer, an error page)
    assert not COMPUTE.cadvisor_serves_no_containers("")
    assert not COMPUTE.cadvisor_serves_no_containers("404 page not found\n")


def cadvisor(text: str, monkeypatch) -> None:
    pod = NS(spec=NS(node_name="win-0"))
    monkeypatch.setattr(COMPUTE, "windows_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "run_os_pod", lambda wincon, namespace, body: pod)
    monkeypatch.setattr(COMPUTE, "call", lambda fn, node, path: text)
    kube = FakeKube()
    kube.core = NS(connect_get_node_proxy_with_path=None)
    COMPUTE.test_cadvisor_metrics_cover_windows_containers(
        kube, NS(profile=NS(ready_windows_nodes=[])), "ns", 17763, no_gate
    )


def test_the_cadvisor_check_accepts_only_the_windows_kubelets_answer(monkeypatch):
    cadvisor(WINDOWS_CADVISOR + SERIES.format(pod="metered"), monkeypatch)
    with pytest.raises(DeviationObserved, match="cadvisor-unsupported"):
        cadvisor(WINDOWS_CADVISOR, monkeypatch)
    with pytest.raises(NotTheDeviation, match="no container series at all"):
        cadvisor(WINDOWS_CADVISOR + SERIES.format(pod="other"), monkeypatch)
    with pytest.raises(NotTheDeviation):
        cadvisor("", monkeypatch)


# --------------------------------------------------------------------------- resource-requests-not-guaranteed


def entitled(result: str | None, monkeypatch) -> None:
    monkeypatch.setattr(COMPUTE, "target_node", lambda profile, build: "win-0")
    monkeypatch.setattr(COMPUTE, "node_memory", lambda kube, node, field: 8 * 1024 * 1024 * 1024)
    monkeypatch.setattr(COMPUTE, "memory_pod", lambda *a, **k: {})
    monkeypatch.setattr(COMPUTE, "apply", lambda *a, **k: None)
    monkeypatch.setattr(COMPUTE, "outcome", lambda kube, name: "allocated" if name == "hog" else result)
    kube = FakeKube(pods={"hog": NS(spec=NS(node_name="win-0"))})
    COMPUTE.test_requested_memory_is_granted_on_an_overprovisioned_node(
        kube, NS(profile=None, api_client=None), "ns", 17763, no_gate, []
    )


def test_a_request_never_held_is_the_deviation_and_a_pod_that_ended_is_not(monkeypatch, clock):
    entitled("allocated", monkeypatch)
    with pytest.raises(DeviationObserved, match="still committing"):
        entitled(None, monkeypatch)
    with pytest.raises(NotTheDeviation, match="terminated: StartError"):
        entitled("terminated: StartError (exit 128)", monkeypatch)


# --------------------------------------------------------------------------- hyperv-single-container-per-pod


def container(name: str, running: bool = False, ready: bool = False, waiting: str = "", ended: str = "") -> Any:
    state = NS(
        running=NS() if running else None,
        waiting=NS(reason=waiting) if waiting else None,
        terminated=NS(reason=ended) if ended else None,
    )
    return NS(name=name, ready=ready, state=state)


def hyperv_pod(*statuses: Any) -> Any:
    return NS(spec=NS(containers=[NS(), NS()]), status=NS(container_statuses=list(statuses)))


def two_containers(pod: Any, monkeypatch) -> None:
    monkeypatch.setattr(IMAGES, "windows_pod", lambda *a, **k: {"metadata": {}, "spec": {"containers": [{}]}})
    monkeypatch.setattr(IMAGES, "start_and_wait", lambda *a, **k: pod)
    IMAGES.test_hyperv_isolated_pod_runs_two_containers(
        FakeKube(pods={"hyperv-two": pod}), NS(), NS(runtime="docker"), 17763, no_gate
    )


def test_a_second_container_that_could_not_run_is_the_deviation(monkeypatch):
    two_containers(hyperv_pod(container("main", True, True), container("second", True, True)), monkeypatch)
    with pytest.raises(DeviationObserved, match="hyperv-single-container-per-pod"):
        two_containers(hyperv_pod(container("main", True, True), container("second", ended="Error")), monkeypatch)
    with pytest.raises(DeviationObserved):
        refused = container("second", waiting="CreateContainerError")
        two_containers(hyperv_pod(container("main", True, True), refused), monkeypatch)


def test_a_second_container_still_starting_is_waited_for_not_taken_for_the_deviation(monkeypatch):
    """Before: the pod Running with its second container still ContainerCreating was the deviation."""
    starting = hyperv_pod(container("main", True, True), container("second", waiting="ContainerCreating"))
    with pytest.raises(WaitTimeout):
        two_containers(starting, monkeypatch)


def test_no_container_running_at_all_is_not_the_deviation(monkeypatch):
    with pytest.raises(NotTheDeviation, match="could not run beside the first"):
        two_containers(hyperv_pod(container("main", ended="Error"), container("second", ended="Error")), monkeypatch)


# --------------------------------------------------------------------------- hyperv-cpu-count-limit


def processors(stdout: str, monkeypatch) -> None:
    monkeypatch.setattr(IMAGES, "live_runtime_classes", lambda kube: [("hyperv", "runhcs-wcow-hypervisor")])
    monkeypatch.setattr(IMAGES, "windows_pod", lambda *a, **k: {"metadata": {}, "spec": {"containers": [{}]}})
    monkeypatch.setattr(IMAGES, "start_and_wait", lambda *a, **k: NS(spec=NS(node_name="win-0")))
    monkeypatch.setattr(IMAGES, "call", lambda fn, name: fn(name))
    kube = FakeKube({"cmd /c echo %NUMBER_OF_PROCESSORS%": ExecResult(0, stdout, "")})
    IMAGES.test_hyperv_isolated_container_sees_the_nodes_processors(
        kube, NS(), NS(ready_windows_nodes=[], runtime_classes=[("hyperv", "runhcs-wcow-hypervisor")]), 17763, no_gate
    )


def test_the_limits_count_of_processors_is_the_deviation_and_another_count_is_not(monkeypatch):
    processors("8\r\n", monkeypatch)  # the node's 8: the behaviour holding
    with pytest.raises(DeviationObserved, match="hyperv-cpu-count-limit"):
        processors("2\r\n", monkeypatch)  # 2000m / 1000, as documented
    with pytest.raises(NotTheDeviation, match="sees 4 processors"):
        processors("4\r\n", monkeypatch)


# --------------------------------------------------------------------------- hugepages-unsupported


def hugepages(probe: ExecResult, listing: ExecResult, monkeypatch) -> FakeKube:
    body = {"metadata": {"name": "hugepages"}, "spec": {"containers": [{"image": "agnhost"}]}}
    monkeypatch.setattr(RESOURCES, "windows_pod", lambda *a, **k: body)
    kube = FakeKube(
        {"cmd /c dir C:\\": probe, "cmd /c dir C:\\hugepages": listing},
        {
            "hugepages": NS(
                spec=NS(node_name="win-0"), status=NS(phase="Running", conditions=[NS(type="Ready", status="True")])
            )
        },
    )
    RESOURCES.test_pod_requesting_hugepages_is_scheduled_on_windows_and_mounts_them(
        kube, NS(pod_start_timeout=300), 17763
    )
    return kube


OK = ExecResult(0, " Directory of C:\\\r\n", "")


def test_a_volume_dir_cannot_list_is_the_deviation_once_dir_works_in_the_pod(monkeypatch):
    hugepages(OK, OK, monkeypatch)
    with pytest.raises(DeviationObserved, match="hugepages-unsupported"):
        hugepages(OK, ExecResult(1, "", "some error"), monkeypatch)


def test_a_dir_that_fails_on_c_is_the_suites_error_and_never_the_deviation(monkeypatch):
    """Before: dir was never shown to work; its failure on the volume was the deviation whatever the cause."""
    with pytest.raises(SuiteError, match="cmd /c dir"):
        hugepages(ExecResult(1, "", "'cmd' is not recognized"), ExecResult(1, "", ""), monkeypatch)


# --------------------------------------------------------------------------- hpa-unsupported-pre-1-14


def hpa(wait_raises: Exception, monkeypatch) -> None:
    monkeypatch.setattr(HPA, "require_metrics_api", lambda kube: None)
    monkeypatch.setattr(HPA, "consumer_deployment", lambda *a, **k: {})
    monkeypatch.setattr(HPA, "deploy_consumer", lambda *a, **k: None)
    monkeypatch.setattr(HPA, "create_hpa", lambda *a, **k: None)
    monkeypatch.setattr(HPA, "consume_cpu", lambda *a, **k: "ConsumeCPU 300 millicores 240 durationSec")

    def wait_for(*args, **kwargs):
        raise wait_raises

    monkeypatch.setattr(HPA, "wait_for", wait_for)
    kube = FakeKube()
    kube.autoscaling = NS(list_namespaced_horizontal_pod_autoscaler=None)
    kube.catalog = None
    HPA.test_hpa_scales_a_windows_deployment_under_cpu_load(kube, "ns", 17763, None, no_gate, "windows")


def test_an_hpa_that_never_scaled_is_the_deviation_and_nothing_else_is(monkeypatch):
    with pytest.raises(DeviationObserved, match="hpa-unsupported-pre-1-14"):
        hpa(BehaviourNotObserved("HPA ns/loaded scaling up: not observed within 300s"), monkeypatch)
    with pytest.raises(NotTheDeviation, match="never scaled"):
        hpa(AssertionError("some other assertion"), monkeypatch)
    with pytest.raises(InfrastructureError):  # the metrics API failing under the wait: the cluster's error
        hpa(InfrastructureError("the APIService v1beta1.metrics.k8s.io is not available"), monkeypatch)


# --------------------------------------------------------------------------- multi-container-pods-pre-1709


def two_in_one(result: ExecResult, monkeypatch) -> None:
    body = {"metadata": {"name": "two-in-one"}, "spec": {"containers": [{"image": "agnhost"}]}}
    monkeypatch.setattr(LIFECYCLE, "os_pod", lambda *a, **k: body)
    monkeypatch.setattr(LIFECYCLE, "run_os_pod", lambda wincon, namespace, body: NS(metadata=NS(name="two-in-one")))
    kube = FakeKube({" ".join(LIFECYCLE.conn.http_get_command("windows", "http://localhost:8080/hostname")): result})
    LIFECYCLE.test_containers_of_a_pod_share_its_network(kube, NS(), "ns", 17763, "windows")


def test_nothing_answering_on_localhost_is_the_deviation_and_another_answer_or_tool_failure_is_not(monkeypatch):
    two_in_one(ExecResult(0, "two-in-one", ""), monkeypatch)
    with pytest.raises(DeviationObserved, match="multi-container-pods-pre-1709"):
        two_in_one(ExecResult(7, "", ""), monkeypatch)  # could not connect
    with pytest.raises(DeviationObserved):
        two_in_one(ExecResult(28, "", ""), monkeypatch)  # timed out
    with pytest.raises(NotTheDeviation, match="other-pod"):
        two_in_one(ExecResult(0, "other-pod", ""), monkeypatch)  # an answer, from another pod
    with pytest.raises(NotTheDeviation):
        two_in_one(ExecResult(22, "", ""), monkeypatch)  # an HTTP error status (curl's --fail)


# --------------------------------------------------------------------------- termination-signals-differ


def trapped(heard: list[str], monkeypatch) -> FakeKube:
    """``heard``: the messages the recorder's log holds once the pod was probed and deleted."""
    pod = NS(metadata=NS(name="trap-term"), spec=NS(node_name="win-0"))
    monkeypatch.setattr(LIFECYCLE, "os_pod", lambda *a, **k: {})
    monkeypatch.setattr(LIFECYCLE, "run_os_pod", lambda wincon, namespace, body: pod)
    monkeypatch.setattr(LIFECYCLE, "call", lambda *a, **k: None)
    monkeypatch.setattr(LIFECYCLE, "recorded", lambda kube, recorder: "".join(f"GET /echo?{m}\n" for m in heard))
    monkeypatch.setattr(LIFECYCLE, "gone", lambda kube, name: True)
    report = "curl -s http://10.0.0.9:8080/echo?msg="
    kube = FakeKube({f"sh -c {report}sigterm-probe": ExecResult(0, "", "")})
    kube.core = NS(delete_namespaced_pod=None)
    recorder = NS(ip="10.0.0.9", name="recorder", namespace="ns")
    LIFECYCLE.test_container_receives_sigterm_when_its_pod_is_deleted(
        kube, NS(), "ns", 17763, recorder, no_gate, "windows"
    )
    return kube


def test_the_trap_report_missing_is_the_deviation_once_the_report_reached_the_recorder(monkeypatch, clock):
    trapped(["msg=sigterm-probe", "msg=sigterm-trapped"], monkeypatch)
    with pytest.raises(DeviationObserved, match="termination-signals-differ"):
        trapped(["msg=sigterm-probe"], monkeypatch)


def test_a_report_that_never_reaches_the_recorder_is_a_failure_not_the_deviation(monkeypatch, clock):
    """Before: the probe did not exist; a report that could not reach the recorder read as the trap never firing."""
    with pytest.raises(BehaviourNotObserved, match="msg=sigterm-probe") as failed:
        trapped([], monkeypatch)
    assert not isinstance(failed.value, DeviationObserved)
