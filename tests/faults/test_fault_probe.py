"""Fault injection (issue 40): a liveness exec probe that never answers fails the every-kind probe check.

Against a local cluster with real Linux nodes, the every-kind probe check's Linux control
(``suites/probes/test_probes.py``, passing exec, httpGet and tcpSocket probes) first runs as it is, where it must
pass; then it runs again while a watcher hangs the exec path of its pod: as soon as the pod is Ready, the ``sh`` of
its container (``/bin/sh``, busybox's link, replaced through ``/proc/<pid>/root``, the container's own root) becomes
a script that sleeps. The liveness probe ``sh -c "exit 0"`` then starts and never answers: the runtime ends each
run at the probe's timeoutSeconds and the kubelet reports the probe failed ('command timed out'), and after
failureThreshold of them restarts the container (whose new root has busybox's ``sh`` again). The check must fail
(never pass, xfail or skip); at c48de23 it passed (its 13 s watch ended before the restart, and it dropped 'timed
out' as a slow answer). Each check's time and the time from the fault to its end are printed.

Only that pod's container is touched, and nothing outlives it: its ``/bin/sh`` is put back afterwards if the
container still runs (a restarted container starts from the image; the run removes its namespace at its end).
It runs on the fault modules' shared cluster (tests/faults/conftest.py: a fresh ``faults-<hex>``, or the one
``WINCON_FAULT_CLUSTER=<name>`` names).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from tests.faults.conftest import DATA_PATH, assert_broken, in_group, run_checks
from tests.support import suites
from wincon.localcluster import cluster, images, netns

pytestmark = in_group(DATA_PATH)  # one worker, one cluster, one fault at a time (conftest)

EVERY_KIND = ("suites/probes/test_probes.py", "probes_of_every_kind_are_accepted")
POD = "all-probes"  # the every-kind check's pod
MARKER = "wincon-fault: a probe that never answers"
HUNG_SH = f"#!/bin/busybox sh\n# {MARKER}\nexec /bin/busybox sleep 3600\n"


@dataclass
class Hung:
    """One container whose ``sh`` the fault replaced: the process it was reached through, the container, what
    ``/bin/sh`` pointed to before, and when (``time.monotonic``)."""

    pid: int
    container_id: str
    link: str
    at: float


def container_pid(name: str, container_id: str) -> int | None:
    """A process of the container (cgroupfs driver: its cgroup's last component is the container's id)."""
    for pid in sorted(netns.cgroup_pids(name)):
        with contextlib.suppress(OSError):
            if any(line.endswith("/" + container_id) for line in Path(f"/proc/{pid}/cgroup").read_text().split()):
                return pid
    return None


def hang_sh(pid: int) -> str:
    """Replace the container's ``/bin/sh`` (seen through process ``pid``'s root) by HUNG_SH; return its old link."""
    sh = Path(f"/proc/{pid}/root/bin/sh")
    link = os.readlink(sh)
    new = sh.with_name(".sh.wincon-fault")
    new.write_text(HUNG_SH)
    new.chmod(0o755)
    os.replace(new, sh)
    return link


def restore_sh(hung: Hung) -> bool:
    """Put the container's ``/bin/sh`` link back where the container still runs and still has the fault's script;
    True when it did."""
    sh = Path(f"/proc/{hung.pid}/root/bin/sh")
    try:
        groups = Path(f"/proc/{hung.pid}/cgroup").read_text().split()
        if not any(line.endswith("/" + hung.container_id) for line in groups):
            return False  # the process is gone (its number taken by another): its container and root with it
        if sh.is_symlink() or MARKER not in sh.read_text():
            return False
    except (OSError, UnicodeDecodeError):  # the process is gone: its container (and its root) with it
        return False
    back = sh.with_name(".sh.wincon-restore")
    back.unlink(missing_ok=True)
    os.symlink(hung.link, back)
    os.replace(back, sh)
    return True


def ready_containers(core: client.CoreV1Api) -> list[tuple[str, str]]:
    """(pod uid, container id) of container main of every Ready pod named POD."""
    found = []
    for pod in core.list_pod_for_all_namespaces(field_selector=f"metadata.name={POD}").items:
        conditions = pod.status.conditions or []
        if any(c.type == "Ready" and c.status == "True" for c in conditions):
            for status in pod.status.container_statuses or []:
                if status.name == "main" and status.container_id and status.state.running:
                    found.append((pod.metadata.uid, status.container_id.split("://", 1)[-1]))
    return found


@contextmanager
def exec_probe_hung(name: str, kubeconfig: Path) -> Iterator[list[Hung]]:
    """While the block runs, container main of each pod named POD has its ``sh`` replaced by a script that sleeps as
    soon as the pod is Ready (read every 0.2 s), once a pod (the container the kubelet starts anew is left as it
    is). Yields the containers hung (filled as they are); afterwards every one still running gets its ``sh``
    back."""
    api = cluster._api_client(kubeconfig)
    core = client.CoreV1Api(api)
    hung: list[Hung] = []
    stop = threading.Event()
    died: list[BaseException] = []

    def watch() -> None:
        try:
            pods: set[str] = set()
            while not stop.wait(0.2):
                for uid, container_id in ready_containers(core):
                    pid = None if uid in pods else container_pid(name, container_id)
                    if pid is None:
                        continue
                    try:
                        link = hang_sh(pid)
                    except FileNotFoundError:  # that process ended meanwhile (a probe's): another one next time
                        continue
                    pods.add(uid)
                    hung.append(Hung(pid, container_id, link, time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported by the block: a fault half-injected must not pass
            died.append(exc)

    watcher = threading.Thread(target=watch, name="exec-probe-hung", daemon=True)
    watcher.start()
    try:
        yield hung
    finally:
        stop.set()
        watcher.join(timeout=10)
        for each in hung:
            restore_sh(each)
        api.close()
    if died:
        raise AssertionError(f"the fault stopped part-way: {died[0]!r}") from died[0]


def test_hung_liveness_exec_probe_fails_the_every_kind_probe_check(fault_cluster, tmp_path):
    name, kubeconfig = fault_cluster
    before = run_checks(kubeconfig, EVERY_KIND, tmp_path)
    with exec_probe_hung(name, kubeconfig) as hung:
        after = run_checks(kubeconfig, EVERY_KIND, tmp_path)
    assert hung, f"the fault hung no probe: no pod {POD} was Ready on a real node"
    for nodeid, message in after.messages.items():
        print(f"[liveness exec probe hung] {nodeid}: {message[:600]}")
    assert_broken("liveness exec probe hung", before, after, injected_at=hung[0].at)
    # Failed for the hung probe: the kubelet's timed-out probe, or the restart it led to.
    unsaid = {k: m for k, m in after.messages.items() if "timed out" not in m and "restarted" not in m}
    assert not unsaid, f"these failures name neither the timed-out probe nor a restart: {unsaid}"


def probe_pod(probes) -> dict:
    """The every-kind check's pod as its Linux control makes it (the check's own probes, netexec), by hand."""
    main = {
        "name": "main",
        "image": images.references()["agnhost"],
        "imagePullPolicy": "IfNotPresent",
        "args": probes.NETEXEC,
        "livenessProbe": probes.probe("exec", True, target_os="linux", timing=probes.TOLERANT_LIVENESS),
        "readinessProbe": probes.probe("httpGet", True, timing=probes.TOLERANT),
        "startupProbe": probes.probe("tcpSocket", True, timing=probes.STARTUP),
    }
    spec = {"os": {"name": "linux"}, "nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [main]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD}, "spec": spec}


def test_hung_liveness_probe_restarts_the_container_within_the_checks_window(fault_cluster):
    """The counter-case of the every-kind check's watch itself (probe_window, REPORT_SECONDS included): the check's
    own pod, hung as above, is restarted by the kubelet within the window the check watches from Ready, measured
    on the real kubelet (the check itself stops at the first timed-out probe it is told of, sooner)."""
    name, kubeconfig = fault_cluster
    probes = suites.load("suites/probes/test_probes.py")
    body = probe_pod(probes)
    window = probes.probe_window(body["spec"]["containers"][0]["livenessProbe"], 30)
    api = cluster._api_client(kubeconfig)
    core = client.CoreV1Api(api)
    namespace = f"wincon-fault-probe-{os.getpid()}"
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        core.create_namespaced_pod(namespace, body)
        deadline = time.monotonic() + 120
        while not any(
            c.type == "Ready" and c.status == "True"
            for c in core.read_namespaced_pod(POD, namespace).status.conditions or []
        ):
            assert time.monotonic() < deadline, "the probe pod was not Ready within 120 s"
            time.sleep(0.2)
        ready = time.monotonic()
        with exec_probe_hung(name, kubeconfig) as hung:
            restarted = None
            while restarted is None and time.monotonic() - ready < window + 30:
                statuses = core.read_namespaced_pod(POD, namespace).status.container_statuses or []
                if any(s.restart_count for s in statuses):
                    restarted = time.monotonic()
                time.sleep(0.2)
            said = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={POD},reason=Unhealthy")
        assert hung, "the fault hung nothing"
        messages = [e.message for e in said.items]
        print(f"[liveness exec probe hung] Ready, then hung {hung[0].at - ready:.1f} s later; the kubelet: {messages}")
        assert restarted is not None, f"the kubelet did not restart the hung container within {window + 30:.0f} s"
        took = restarted - ready
        print(f"[liveness exec probe hung] restart seen {took:.1f} s after Ready; the check watches {window:.0f} s")
        assert took <= window, f"the restart came {took:.1f} s after Ready, past the check's {window:.0f} s window"
        assert any("timed out" in m for m in messages), messages
    finally:
        core.delete_namespace(namespace)
        deadline = time.monotonic() + 120
        while any(n.metadata.name == namespace for n in core.list_namespace().items) and time.monotonic() < deadline:
            time.sleep(1)
        api.close()


def test_the_hung_probe_fault_is_gone_afterwards(fault_cluster):
    name, _ = fault_cluster
    left = []
    for pid in netns.cgroup_pids(name):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            sh = Path(f"/proc/{pid}/root/bin/sh")
            if not sh.is_symlink() and MARKER in sh.read_text():
                left.append(pid)
    assert not left, f"processes whose container still has the fault's sh: {left}"
