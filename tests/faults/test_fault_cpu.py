"""Fault injection (issue 40): a CPU limit lifted from the container's cgroup turns the CPU-limit checks failed.

Against a local cluster with real Linux nodes, the CPU-limit cap check's Linux control
(``suites/scheduling/test_compute_limitations.py::test_cpu_limit_caps_a_busy_container``: pod ``busy`` limited to
500m beside its unlimited twin ``busy-twin``, both keeping two CPUs busy) first runs as it is, where it must pass;
then it runs again while a keeper thread lifts the CPU quota of every cgroup of each pod named ``busy`` (the pod's
own and its containers', found by the pod's UID under each real node's cgroup root) as soon as it exists: cgroup
v2's ``cpu.max`` set to ``max``, or cgroup v1's ``cpu.cfs_quota_us`` to ``-1`` (these machines mount v1
hierarchies). The API still says the limit is set; the container is no longer held to it, and the check must fail
(never pass, xfail, skip or error). Each lifted cgroup still present afterwards gets its quota back; the check's own
teardown deletes the pods, and their cgroups with them.

The same fault runs on test_cpu_limits.py's Linux control
(``suites/scheduling/test_cpu_limits.py::test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it``: pods
``cpu-0p5`` and ``cpu-500m``, eight busy jobs each, one after the other, each beside its unlimited twin ``<pod>-twin``): the quotas of both
limited pods are lifted, and the check must fail the same way.

It runs on the fault modules' shared cluster (tests/faults/conftest.py: a fresh ``faults-<hex>``, or the one
``WINCON_FAULT_CLUSTER=<name>`` names).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubernetes import client

from tests.faults.conftest import assert_broken, run_checks
from tests.support.shared_use import measuring_cpu
from wincon.localcluster import cluster, netns

# Run by make test after every other test, alone on the machine (tests/support/ordering.py), on a fault cluster of
# their own; the CPU-measuring slot still keeps them apart from any other run of the CPU-limit checks.
pytestmark = pytest.mark.measures_cpu

CPU_CAP = ("suites/scheduling/test_compute_limitations.py", "cpu_limit_caps_a_busy_container")
LIMITED_POD = "busy"  # the check's pod under the 500m limit (CPU_LIMITED there); its twin has no limit to lift
CPU_LIMITS = ("suites/scheduling/test_cpu_limits.py", "cpu_limit_in_either_spelling_holds_a_busy_pod_under_it")
LIMITED_PODS = ("cpu-0p5", "cpu-500m")  # test_cpu_limits.py's pods limited to "0.5" and "500m"; their twins have none
KEEPER_SECONDS = 0.2  # how often the keeper looks for new cgroups of the pod
V2_QUOTA, V1_QUOTA = "cpu.max", "cpu.cfs_quota_us"
KUBEPODS = "kubepods"  # the kubelets' top cgroup under each cgroupRoot (cgroupfs driver)
QOS_DIRS = ("", "burstable", "besteffort")  # a Guaranteed pod's cgroup sits right under kubepods


def unlimited(quota: Path, text: str) -> bool:
    return text.split()[0] == "max" if quota.name == V2_QUOTA else text.strip() == "-1"


def quota_files(name: str, uid: str) -> list[Path]:
    """The CPU quota file of each cgroup of pod ``uid`` (its pod cgroup and every container's below it) under
    cluster ``name``'s cgroup roots (the kubelets' cgroupRoot, cgroupfs driver: ``.../kubepods/<qos>/pod<uid>``),
    parents first. Only the pod's own places are walked: a ``**`` glob of the whole tree raced with the teardown of
    every other pod and raised FileNotFoundError on a cgroup removed under it (CI at 86ee81d)."""
    found: list[Path] = []
    for top in netns.our_cgroups(name):
        for pod_dir in (top / KUBEPODS / qos / f"pod{uid}" for qos in QOS_DIRS):
            for cgroup in netns.cgroup_dirs(pod_dir):  # none where it is absent; a cgroup gone meanwhile is skipped
                for quota in (cgroup / V2_QUOTA, cgroup / V1_QUOTA):
                    if quota.exists():
                        found.append(quota)
    return sorted(set(found), key=lambda p: (len(p.parts), str(p)))


@dataclass
class Lifted:
    """What the keeper lifted: each quota file with the value it held; and what stopped it, if anything did."""

    quotas: dict[Path, str] = field(default_factory=dict)
    died: list[BaseException] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # each lifted pod's UID: its name


def lift(quota: Path) -> str | None:
    """Set ``quota`` to no limit; the value it held, or None where it held none already (or vanished)."""
    try:
        held = quota.read_text()
        if unlimited(quota, held):
            return None
        quota.write_text("max" if quota.name == V2_QUOTA else "-1")
    except FileNotFoundError:
        return None  # its pod torn down meanwhile
    except OSError:
        if not quota.exists():
            return None
        raise
    return held.strip()


@contextmanager
def cpu_limit_lifted(name: str, kubeconfig: Path, pods: tuple[str, ...] = (LIMITED_POD,)) -> Iterator[Lifted]:
    """While the block runs, the CPU quota of every cgroup of each pod named in ``pods`` (any namespace) is lifted as
    soon as the keeper sees it (every KEEPER_SECONDS), and lifted again should anything set it back. Yields what was
    lifted (filled as it goes); afterwards each lifted quota still present gets its value back, parents first."""
    api = cluster._api_client(kubeconfig)
    core = client.CoreV1Api(api)
    lifted, stop = Lifted(), threading.Event()

    def keep() -> None:
        while not stop.wait(KEEPER_SECONDS):
            found = [
                p for pod in pods for p in core.list_pod_for_all_namespaces(field_selector=f"metadata.name={pod}").items
            ]
            for uid, pod_name in sorted((p.metadata.uid, p.metadata.name) for p in found):
                for quota in quota_files(name, uid):
                    held = lift(quota)
                    if held is not None:
                        lifted.quotas.setdefault(quota, held)
                        lifted.names[uid] = pod_name

    def watch() -> None:
        try:
            keep()
        except BaseException as exc:  # noqa: BLE001 - reported by the block: a fault half-injected must not pass
            lifted.died.append(exc)

    keeper = threading.Thread(target=watch, name="cpu-limit-lifted", daemon=True)
    keeper.start()
    try:
        yield lifted
    finally:
        stop.set()
        keeper.join(timeout=30)
        api.close()
        for quota, held in sorted(lifted.quotas.items(), key=lambda item: len(item[0].parts)):
            if quota.exists():
                try:
                    quota.write_text(held)
                except OSError:
                    if quota.exists():
                        raise
    if lifted.died:
        raise AssertionError(f"the fault stopped lifting CPU limits part-way: {lifted.died[0]!r}") from lifted.died[0]


def test_lifted_cpu_limit_fails_the_cpu_limit_check(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    with measuring_cpu():  # no other cluster's CPU-limit check beside it (tests/support/shared_use.py)
        before = run_checks(kubeconfig, CPU_CAP, tmp_path)
        with cpu_limit_lifted(name, kubeconfig) as lifted:
            after = run_checks(kubeconfig, CPU_CAP, tmp_path)
    for quota, held in lifted.quotas.items():
        print(f"[CPU limit lifted] {quota} held {held}")
    for nodeid, message in after.messages.items():
        print(f"[CPU limit lifted] {nodeid}: {message[:600]}")
    assert_broken("CPU limit lifted", before, after)
    # The fault hit the running container: its own cgroup's quota (below the pod's) was lifted, not the pod's alone.
    containers = [q for q in lifted.quotas if not q.parent.name.startswith("pod")]
    assert containers, f"the fault lifted no container's CPU quota: {sorted(map(str, lifted.quotas))}"
    unsaid = {k: m for k, m in after.messages.items() if "under a 500m limit" not in m}
    assert not unsaid, f"these failures are not the limit found lifted: {unsaid}"
    # Nothing left behind: each lifted cgroup is gone with its pod, or holds its own quota again.
    kept = {q: held for q, held in lifted.quotas.items() if q.exists() and q.read_text().strip() != held}
    assert not kept, f"lifted CPU quotas were left: {kept}"


def test_lifted_cpu_limits_fail_test_cpu_limits(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    with measuring_cpu():
        before = run_checks(kubeconfig, CPU_LIMITS, tmp_path)
        with cpu_limit_lifted(name, kubeconfig, LIMITED_PODS) as lifted:
            after = run_checks(kubeconfig, CPU_LIMITS, tmp_path)
    for quota, held in lifted.quotas.items():
        print(f"[CPU limits lifted] {quota} held {held}")
    for nodeid, message in after.messages.items():
        print(f"[CPU limits lifted] {nodeid}: {message[:600]}")
    assert_broken("CPU limits lifted", before, after)
    # Both limited pods' running containers were hit (a container's own cgroup below each pod's), not the pods' alone.
    uids = {q.parent.parent.name.removeprefix("pod") for q in lifted.quotas if not q.parent.name.startswith("pod")}
    hit = {lifted.names[uid] for uid in uids}
    assert hit == set(LIMITED_PODS), (
        f"the fault lifted the container quotas of {hit}: {sorted(map(str, lifted.quotas))}"
    )
    unsaid = {k: m for k, m in after.messages.items() if "core over a 20 s window: cpu-" not in m}
    assert not unsaid, f"these failures are not the limits found lifted: {unsaid}"
    kept = {q: held for q, held in lifted.quotas.items() if q.exists() and q.read_text().strip() != held}
    assert not kept, f"lifted CPU quotas were left: {kept}"
