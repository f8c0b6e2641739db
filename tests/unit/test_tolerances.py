"""Every tolerance keeps its check able to fail (issue 40, "Every tolerance has its counter-case"; the table is in
docs/verdicts.md, "Tolerances and their counter-cases"). Each test here feeds a check's judging code the evidence of
the failure its tolerance must still catch, with no cluster, and shows the check fails; each would pass (and so
fail here) if the tolerance were widened to swallow that failure.
"""

from __future__ import annotations

import time
from types import SimpleNamespace as NS
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from tests.support import suites
from wincon.checks import node as NODE
from wincon.checks import pods as PODS
from wincon.cluster import client as CLIENT
from wincon.cluster.exec import ExecResult
from wincon.cluster.waits import BehaviourNotObserved, WorkloadFailed
from wincon.commandline.errors import (
    DeviationObserved,
    InfrastructureError,
    SuiteError,
    UnreadableOutput,
    linux_control,
)
from wincon.workloads.pinning import WrongNode

TYPES = suites.load("suites/storage/test_volume_types.py")
CPU = suites.load("suites/scheduling/test_cpu_limits.py")


@pytest.fixture(autouse=True)
def first_node(monkeypatch):
    """The node choice by unrequested CPU reads the API (wincon.checks.scheduling.least_requested, its own unit test):
    here the check takes the first node, as with no other load."""
    monkeypatch.setattr(CPU, "least_requested", lambda api_client, nodes, resource: nodes[0])


# --------------------------------------------------------------------------- the ConfigMap/Secret environment re-read
# suites/storage/test_volume_types.py::test_config_map_and_secret_as_environment_and_volume asks the environment
# once more when its echo printed nothing with exit 0 (73365e1: an exec's output lost on a loaded node). What it
# must still catch: a variable that is empty (both reads print nothing) or holds another value.


class SequenceKube:
    """Answers each exec of a command line with the next answer given for it (the last one again after that)."""

    def __init__(self, answers: dict[str, list[ExecResult]]) -> None:
        self.answers = answers
        self.ran: list[str] = []

    def exec(self, pod: object, command: list[str], container: object = None, **kwargs: object) -> ExecResult:
        key = " ".join(command)
        self.ran.append(key)
        queue = self.answers[key]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def environment_check(kind: str, env_reads: list[ExecResult]) -> SequenceKube:
    """Run the check as its Linux control with the given environment reads and a volume file holding the value."""
    _, key, value, _, _ = TYPES.SOURCES[kind]
    file = TYPES.path("linux", kind.lower(), key)
    kube = SequenceKube(
        {
            " ".join(TYPES.echo_env("linux", TYPES.ENV[kind])): env_reads,
            " ".join(TYPES.read(file)): [ExecResult(0, f'content of file "{file}": {value}\n', "")],
        }
    )
    pod = NS(metadata=NS(name="reader", namespace="ns"))
    with linux_control():
        TYPES.test_config_map_and_secret_as_environment_and_volume(lambda _: (pod, kube), "linux", kind)
    return kube


@pytest.mark.parametrize("kind", ["configMap", "secret"])
def test_an_environment_read_empty_twice_still_fails_the_check(kind):
    empty = ExecResult(0, "", "")
    with pytest.raises(AssertionError, match="environment: ''"):
        environment_check(kind, [empty, empty])


@pytest.mark.parametrize("kind", ["configMap", "secret"])
def test_a_lost_first_read_then_another_value_fails_the_check(kind):
    with pytest.raises(AssertionError, match="environment: 'other"):
        environment_check(kind, [ExecResult(0, "", ""), ExecResult(0, "other-value\n", "")])


@pytest.mark.parametrize("kind", ["configMap", "secret"])
def test_a_wrong_value_or_a_failed_exec_is_judged_on_its_first_read(kind):
    """Only a lost output (exit 0, nothing printed) is asked again: a value is judged as read."""
    _, _, value, _, _ = TYPES.SOURCES[kind]
    for first in (ExecResult(0, "other-value\n", ""), ExecResult(1, "", "sh: error")):
        with pytest.raises(AssertionError, match="environment"):
            environment_check(kind, [first, ExecResult(0, f"{value}\n", "")])


@pytest.mark.parametrize("kind", ["configMap", "secret"])
def test_a_lost_first_read_then_the_value_passes(kind):
    _, _, value, _, _ = TYPES.SOURCES[kind]
    kube = environment_check(kind, [ExecResult(0, "", ""), ExecResult(0, f"{value}\n", "")])
    assert sum("echo" in line for line in kube.ran) == 2


# --------------------------------------------------------------------------- the API client's retries
# wincon/cluster/client.py call(): transient errors (TRANSIENT_STATUSES, dropped connections) are retried, at most
# RETRY_ATTEMPTS times within RETRY_SECONDS. What it must still catch: any other refusal at once, and a transient
# error that does not pass, raised after the bound (an error of the cluster, never swallowed).


class Failing:
    def __init__(self, status: int) -> None:
        self.status = status
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise ApiException(status=self.status, reason="from the test")


@pytest.fixture
def no_backoff(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    return slept


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_a_refusal_that_is_not_transient_is_raised_at_its_first_answer(no_backoff, status):
    refused = Failing(status)
    with pytest.raises(ApiException) as err:
        CLIENT.call(refused, "ns")
    assert err.value.status == status and refused.calls == 1 and not no_backoff


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_transient_error_that_never_passes_is_raised_after_the_bound(no_backoff, status):
    busy = Failing(status)
    with pytest.raises(ApiException) as err:
        CLIENT.call(busy, "ns")
    assert err.value.status == status
    assert busy.calls == CLIENT.RETRY_ATTEMPTS == 6
    assert len(no_backoff) == CLIENT.RETRY_ATTEMPTS - 1 and all(s <= 8.0 for s in no_backoff)


# --------------------------------------------------------------------------- the CPU-limit ceiling's margin
# suites/scheduling/test_cpu_limits.py lets a 500m limit read up to MAX_CORES_UNDER_500M (0.54: the limit plus 8 %,
# ec0bb10, as upstream cpu_limits.go:76 states) over a window of at least 20 s. What it must still catch: a pod using
# more than that, which is the deviation itself (a failure in the Linux control, the expected failure only on a
# Windows node). Its cluster counter-case: tests/faults/test_fault_cpu.py::test_lifted_cpu_limits_fail_test_cpu_limits.


def cpu_check(monkeypatch, cores: dict[str, float]) -> None:
    """The Linux control, its one window reading ``cores`` for each limited pod and 0.9 for the unlimited twin (an
    error where that window cannot judge, as the check's own load_window)."""
    monkeypatch.setattr(CPU, "nodes_for", lambda *a: [NS(name="worker-0")])
    monkeypatch.setattr(CPU, "burn_pod", lambda *a: {})
    window = cores | {CPU.twin_of(name): 0.9 for name in cores}  # each limited pod's own twin

    def load_window(kube, node, started, load, judges, wait, what):
        if not judges(window):
            raise InfrastructureError(f"the node could not show the limit matters: {window}", "run it elsewhere")
        return CPU.Window(windows=[window])

    monkeypatch.setattr(CPU, "load_window", load_window)
    running = NS(
        status=NS(phase="Running", container_statuses=[NS(state=NS(running=NS(started_at="2026-11-28T14:00:00Z")))])
    )
    deleted: set[str] = set()

    def read_pod(name: str) -> NS:
        if name in deleted:
            raise ApiException(status=404)
        return running

    kube = NS(
        namespace="ns", api_client=None, create=lambda body: None, wait_pod=lambda *a, **k: running, read_pod=read_pod
    )
    kube.delete_pod = lambda name, grace=None: deleted.add(name)
    request = NS(node=NS(user_properties=[]))
    with linux_control():
        CPU.test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it(
            request, kube, NS(profile=None, pod_start_timeout=5), None, lambda *a, **k: None, "linux"
        )


@pytest.mark.parametrize("over", [0.55, 0.84, 1.0])
def test_a_pod_over_the_ceiling_fails_the_cpu_limit_control(monkeypatch, over):
    """0.55: just past the margin; 0.84: what upstream's own bound lets pass; 1.0: a pod with no cap on a 2-core
    node (the lifted-CPU-limit fault's reading)."""
    with pytest.raises(
        AssertionError, match=f"over 0\\.54 core over a 20 s window: cpu-500m \\(limit 500m\\) uses {over:.3f}"
    ):
        cpu_check(monkeypatch, {"cpu-0p5": 0.5, "cpu-500m": over})


def test_pods_within_the_ceiling_pass_and_a_pod_that_did_no_work_fails(monkeypatch):
    cpu_check(monkeypatch, {"cpu-0p5": 0.5, "cpu-500m": 0.54})
    with pytest.raises(InfrastructureError, match="could not show the limit matters"):
        cpu_check(monkeypatch, {"cpu-0p5": 0.5, "cpu-500m": 0.0})  # a load that did not run judges nothing


# --------------------------------------------------------------------------- behaviour waits that poll
# wincon/checks/pods.py eventually(): a check polled until it holds, within its timeout (the quota's figures, a
# preempted pod gone, live stats). What it must still catch: a behaviour never observed is a failure that says what
# was seen (BehaviourNotObserved), never a pass, and a setup wait that runs out is the cluster's error.


def test_a_behaviour_never_observed_within_its_wait_is_a_failure_saying_what_was_seen(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    asked: list[int] = []

    def never() -> dict | None:
        asked.append(1)
        return None

    with pytest.raises(BehaviourNotObserved, match=r"quota counting: not observed within 0s; observed: pods 0"):
        PODS.eventually(never, 0.05, "quota counting", behaviour=True, seen=lambda: "pods 0")
    assert len(asked) >= 2  # polled, not judged on one read
    with pytest.raises(InfrastructureError, match="quota counting: not observed"):
        PODS.eventually(never, 0.05, "quota counting")


def test_a_behaviour_observed_late_within_its_wait_passes_with_what_it_saw(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    answers = iter([None, None, {"pods": "1"}])
    assert PODS.eventually(lambda: next(answers), 5, "quota counting", behaviour=True) == {"pods": "1"}


def test_an_event_never_recorded_within_a_behaviour_wait_is_a_failure_naming_the_events_seen(monkeypatch):
    """wait_for_event polls for its event (event recording is asynchronous); behaviour=True: none is a failure."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    monkeypatch.setattr(PODS, "events_for", lambda api_client, namespace, name, reason: [])
    listed = NS(items=[NS(reason="Started"), NS(reason="Pulled")])
    monkeypatch.setattr(PODS.client, "CoreV1Api", lambda api_client: NS(list_namespaced_event=lambda *a, **k: listed))
    with pytest.raises(
        BehaviourNotObserved, match=r"no Unhealthy event about ns/p within 0s; its events: \['Pulled', 'Started'\]"
    ):
        PODS.wait_for_event(None, "ns", "p", "Unhealthy", timeout=0.05, behaviour=True)
    with pytest.raises(InfrastructureError, match="no Unhealthy event about ns/p"):
        PODS.wait_for_event(None, "ns", "p", "Unhealthy", timeout=0.05)


# --------------------------------------------------------------------------- the sweep: two empty sides
# wincon/checks/node.py summary_problems compared the pods /stats/summary lists with the pods expected: with none
# expected and none listed, "" == "" passed on no evidence (as issue 40's item 2). resource_metrics_problems with no
# pod named judged the node's series alone. Nothing to judge is the suite's gap (an error), never a pass.


def test_stats_with_no_pod_expected_are_the_suites_error_not_a_pass():
    with pytest.raises(SuiteError, match="nothing to judge"):
        NODE.summary_problems({"pods": []}, "ns", set())
    node_series = [NODE.Sample(name, {}, 1.0) for name in NODE.NODE_SERIES]
    with pytest.raises(SuiteError, match="nothing to judge"):
        NODE.resource_metrics_problems(node_series, "ns", [])


def test_stats_of_the_expected_pods_are_still_judged():
    assert NODE.summary_problems({"pods": []}, "ns", {"p"}) == ["lists pods [], expected ['p']"]
    node_series = [NODE.Sample(name, {}, 1.0) for name in NODE.NODE_SERIES]
    assert "no container_cpu_usage_seconds_total for pod p" in NODE.resource_metrics_problems(node_series, "ns", ["p"])


# --------------------------------------------------------------------------- the sweep: a filter that matched itself
# suites/scheduling/test_image_os_version.py start_and_wait took a start failure for the Hyper-V deviation where its
# message held one of NO_HYPERV's phrases, "hyperv" among them. The message names the pod and its namespace (the
# wait's "pod <ns>/<name>: ..."; the kubelet's CrashLoopBackOff "back-off %s restarting failed container=%s pod=%s"
# with format.Pod's "<name>_<ns>(<uid>)", k8s.io/kubernetes v1.37.2 pkg/kubelet/kuberuntime/kuberuntime_manager.go:2102
# and pkg/kubelet/util/format/pod.go:40), and both hold "hyperv": the pods are hyperv-two and hyperv-older, and the
# namespace is named after the test. So any crash or image pull failure of these checks read as the expected failure.

IMAGES = suites.load("suites/scheduling/test_image_os_version.py")
HV_NAMESPACE = "wincon-test-hyperv-isolated-pod-a1b2c3d4-gw0-9f3e"


def hyperv_start(monkeypatch, failure: Exception) -> None:
    scheduled = NS(spec=NS(node_name="win-0"))

    def wait_for_pod(api_client, namespace, name, done, timeout, failure=None):
        if done is IMAGES.pod_scheduled:
            return scheduled
        raise failure_raised

    failure_raised = failure
    monkeypatch.setattr(IMAGES, "wait_for_pod", wait_for_pod)
    monkeypatch.setattr(IMAGES, "assert_all_ran_on", lambda *a, **k: None)
    kube = NS(create=lambda body: None, api_client=None, namespace=HV_NAMESPACE, pod_start_timeout=5)
    body = {"metadata": {"name": "hyperv-two"}}
    IMAGES.start_and_wait(
        kube, None, lambda *a, **k: None, body, 20348, "two containers under Hyper-V", "hyperv-lim", IMAGES.NO_HYPERV
    )


def test_a_crash_of_a_pod_named_hyperv_is_not_the_hyperv_deviation(monkeypatch):
    crash = (
        f"pod {HV_NAMESPACE}/hyperv-two: CrashLoopBackOff in container second: back-off 10s restarting failed "
        f"container=second pod=hyperv-two_{HV_NAMESPACE}(0b7c1e2a-5d1f-4c7e-9a55-3f1d2c9e8b70)"
    )
    with pytest.raises(WorkloadFailed, match="CrashLoopBackOff"):
        hyperv_start(monkeypatch, WorkloadFailed(crash))


def test_an_image_pull_failure_of_a_pod_named_hyperv_stays_the_clusters_error(monkeypatch):
    pull = f"pod {HV_NAMESPACE}/hyperv-two: ErrImagePull in container main: failed to pull and unpack image"
    with pytest.raises(InfrastructureError, match="ErrImagePull") as err:
        hyperv_start(monkeypatch, InfrastructureError(pull))
    assert not isinstance(err.value, DeviationObserved)


def test_the_runtimes_own_words_for_no_hyperv_handler_are_still_the_deviation(monkeypatch):
    """A message holding one of the check's own phrases, "no runtime for" (synthetic: the phrase the check lists)."""
    refused = (
        f"pod {HV_NAMESPACE}/hyperv-two: CreateContainerError in container main: failed to get sandbox runtime: "
        'no runtime for "runhcs-wcow-hypervisor" is configured'
    )
    with pytest.raises(DeviationObserved, match="hyperv-lim: .*no runtime for"):
        hyperv_start(monkeypatch, WorkloadFailed(refused))


# --------------------------------------------------------------------------- the sweep: an unreadable answer as silence
# suites/networking/test_udp_and_hybrid_egress.py node_reaches_pod_over_udp (the Linux node's netexec /dial) caught
# the parser's ValueError and counted an exit-0 answer that is not netexec's JSON as a try nothing answered, so the
# check failed "the node did not reach the pod". conn.collect_dial's rule: such an answer is UnreadableOutput, the
# suite's own gap (an error), at once.

UDP = suites.load("suites/networking/test_udp_and_hybrid_egress.py")


class OneTry:
    """FlowChecks.until's contract, one try: (whether ``ok`` held, the result)."""

    kube = NS(namespace="ns")

    def __init__(self, result: ExecResult) -> None:
        self.result = result

    def until(self, pod, command, ok, tries=5, container=None):
        return ok(self.result), self.result


LINUX_HOST = NS(os="linux", name="host-lin-worker-0", ip="172.30.0.3", tool_container=None, node="lin-worker-0")
TARGET = NS(name="netserver-0", ip="10.244.1.5")


def test_an_unreadable_netexec_answer_over_udp_is_the_suites_error_not_silence():
    with pytest.raises(UnreadableOutput, match="did not answer JSON"):
        UDP.node_reaches_pod_over_udp(OneTry(ExecResult(0, "<html>502 Bad Gateway</html>", "")), LINUX_HOST, TARGET)


def test_the_targets_name_in_netexecs_answer_over_udp_passes_and_silence_fails():
    answered = ExecResult(0, '{"responses": ["netserver-0"]}', "")
    assert UDP.node_reaches_pod_over_udp(OneTry(answered), LINUX_HOST, TARGET)[0]
    # netexec's own error for a UDP read that timed out (agnhost netexec.go:509 at k8s.io/kubernetes v1.37.2)
    silent = ExecResult(0, '{"errors": ["reading from udp connection failed. err:\'i/o timeout\'"]}', "")
    assert not UDP.node_reaches_pod_over_udp(OneTry(silent), LINUX_HOST, TARGET)[0]
    assert not UDP.node_reaches_pod_over_udp(OneTry(ExecResult(7, "", "connection refused")), LINUX_HOST, TARGET)[0]


# --------------------------------------------------------------------------- the sweep: "ran on Windows" over no pod
# wincon/checks/pods.py assert_all_ran_on checked each pod of a list: given none (a label that matched nothing), it
# passed, and the check went on to trust a result no Windows pod gave. No pod is WrongNode (a failure), never a pass.


def test_no_pod_is_not_shown_to_have_run_on_a_windows_node():
    with pytest.raises(WrongNode, match="no pod to check"):
        PODS.assert_all_ran_on([], NS(nodes=[]), "windows", 20348)
