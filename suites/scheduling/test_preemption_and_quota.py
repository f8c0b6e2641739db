"""Scheduler preemption and ResourceQuota, both listed among the features Windows pods support. Everything here
is the control plane's work and runs for real on any cluster, simulated nodes included: the scheduler evicts
a lower-priority Windows pod to place a higher-priority one on its node, and the quota admission plugin and
controller count Windows pods and refuse the one that would exceed the quota."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wincon.checks.pods import (
    admitted_and_scheduled,
    eventually,
    schedulable_windows_nodes,
    windows_nodes_of_build,
    windows_pod,
)
from wincon.checks.scheduling import millicores, unrequested_once_settled
from wincon.cluster.client import call
from wincon.cluster.waits import wait_for

pytestmark = [pytest.mark.scheduling]

MARGIN = Decimal("0.1")  # cores left free beside the low-priority pod: less than the high-priority pod needs


def with_cpu(body: dict, cores: Decimal) -> dict:
    quantity = millicores(cores)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": quantity}, "limits": {"cpu": quantity}}
    return body


@pytest.mark.test_id("2f151ef2-7d01-4ffa-833f-66c359dedb6f")
@pytest.mark.decided_at_run_time("the run skips where the node has too little CPU unrequested to fill and preempt")
# serial: fills a node's unrequested CPU, and its priority-1000000 pod may preempt any lower-priority pod on the
# node: other tests' pods (priority 0) would be the scheduler's first victims.
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.documents("kep-windows-node-support", "What works today")
def test_scheduler_preempts_a_lower_priority_windows_pod(kube, wincon, namespace, build, make_priority_class):
    """ "Scheduler preemption" is supported with Windows containers (002_8a7e76f95009f44f.txt, Supported Functionality; 003_414b2f1c5dd978a2.txt, What works today): a higher-priority Windows pod that does not fit evicts a lower-priority one from the node and takes its place."""
    priority_classes = {"low": make_priority_class(10), "high": make_priority_class(1_000_000)}
    allowed = set(schedulable_windows_nodes(wincon.profile))
    nodes = [n.name for n in windows_nodes_of_build(wincon.profile, build) if n.name in allowed]
    if not nodes:
        pytest.skip(f"no Ready, schedulable Windows node of build {build}")
    node = sorted(nodes)[0]
    # Read once the pods of earlier tests being deleted there have gone: they count until then, and their going
    # mid-check would free what the check has just filled (under the pod-latency model, the check run right after
    # itself errored once, and skipped once for too little CPU left).
    free = unrequested_once_settled(wincon.api_client, node, "cpu", wincon.pod_start_timeout)
    if free < MARGIN * 3:
        pytest.skip(f"node {node} has only {millicores(free)} CPU unrequested: too little to fill and preempt")
    big = free - MARGIN
    low = with_cpu(windows_pod(wincon, "low", build, node=node, priorityClassName=priority_classes["low"]), big)
    placed = admitted_and_scheduled(wincon, namespace, low)
    assert placed.spec.node_name == node and placed.spec.priority == 10, placed.spec

    high = with_cpu(windows_pod(wincon, "high", build, node=node, priorityClassName=priority_classes["high"]), big)
    kube.create(high)
    core = kube.core
    winner = wait_for(
        core.list_namespaced_pod,
        "high",
        done=lambda p: p.spec.node_name == node,
        timeout=wincon.pod_start_timeout,
        describe=f"pod high scheduled onto {node} by preempting pod low",
        behaviour=True,
        namespace=namespace,
    )
    assert winner.spec.node_name == node
    preempted = kube.wait_event("low", "Preempted", behaviour=True)
    assert node in (preempted[-1].message or ""), f"Preempted event does not name node {node}: {preempted[-1].message}"

    def low_gone_or_terminating() -> bool:
        pods = {p.metadata.name: p for p in call(core.list_namespaced_pod, namespace).items}
        return "low" not in pods or pods["low"].metadata.deletion_timestamp is not None

    assert eventually(low_gone_or_terminating, 60, "pod low evicted by the preemption", behaviour=True)


@pytest.mark.test_id("516cd41d-5a71-4c34-90f6-db9e38035e48")
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.documents("kep-windows-node-support", "What works today")
def test_resource_quota_counts_windows_pods_and_refuses_the_one_over_it(kube, wincon, namespace, build):
    """ "Resource Quotas" are supported with Windows containers (002_8a7e76f95009f44f.txt, Supported Functionality; 003_414b2f1c5dd978a2.txt, What works today): a Windows pod's CPU request is counted in the namespace's quota, and a pod that would exceed it is refused."""
    core = kube.core
    quota = {"metadata": {"name": "windows-quota"}, "spec": {"hard": {"pods": "2", "requests.cpu": "500m"}}}
    call(core.create_namespaced_resource_quota, namespace, quota)
    eventually(
        lambda: (call(core.read_namespaced_resource_quota, "windows-quota", namespace).status.hard or {}).get("pods"),
        60,
        "the quota controller computing windows-quota",
    )
    first = with_cpu(windows_pod(wincon, "counted", build), Decimal("0.3"))
    admitted_and_scheduled(wincon, namespace, first)

    def used() -> dict | None:
        status = call(core.read_namespaced_resource_quota, "windows-quota", namespace).status
        figures = status.used or {}
        return figures if figures.get("pods") == "1" and figures.get("requests.cpu") == "300m" else None

    figures = eventually(used, 60, "windows-quota counting pod counted (pods 1, requests.cpu 300m)", behaviour=True)
    assert figures["requests.cpu"] == "300m"

    over = with_cpu(windows_pod(wincon, "over-quota", build), Decimal("0.3"))
    created, rejection = kube.submit(over, dry_run=False)
    assert rejection is not None, "a Windows pod exceeding requests.cpu 500m of the quota was admitted"
    assert rejection.status == 403 and "exceeded quota" in rejection.message, rejection.describe()
