"""Liveness, readiness and startup probes of kinds exec, httpGet and tcpSocket on Windows pods."""

from __future__ import annotations

import time

import pytest

from wincon.checks.node import consistently
from wincon.checks.pods import create_or_reject, events_for, eventually, os_pod, run_os_pod, wait_for_event
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import pod_running_ready
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.probes]

NETEXEC = ["netexec", "--http-port=8080", "--udp-port=8081"]
SIDE_NETEXEC = ["netexec", "--http-port=8082", "--udp-port=8083"]
FAST = {"periodSeconds": 2, "failureThreshold": 1, "timeoutSeconds": 1}
# A probe that must keep passing gets room for a slow answer under load (3 misses in a row, 5 s each): with FAST,
# one answer over 1 s on a busy node restarted the container whose liveness probe passes (a false failure seen in
# a clean-clone CI run). The kubelet still restarts a container whose probe fails (probe_window); the checks whose
# subject is such a probe count every failed one, a timed-out answer included (probe_failures).
TOLERANT = {"periodSeconds": 2, "failureThreshold": 3, "timeoutSeconds": 5}
# A container that a liveness probe fails is stopped with the probe's own grace where it sets one (else the pod's,
# 30 s by default), never less than 2 s (kuberuntime_container.go setTerminationGracePeriod and
# kuberuntime_manager.go:84 minimumGracePeriodInSeconds at v1.37.2): the probes watched for a restart set the
# minimum, so that the watch (probe_window) need not last the pod's 30 s more.
KILL_GRACE = 2
TOLERANT_LIVENESS = {**TOLERANT, "terminationGracePeriodSeconds": KILL_GRACE}
# What the kubelet has done shows in the pod's status once its PLEG has relisted the containers (every 1 s,
# kubelet.go:215 genericPlegRelistPeriod) and its status manager has written the status: time allowed for it,
# after the probe's own sequence. Its counter-case: tests/faults/test_fault_probe.py (a liveness exec probe that
# never answers fails the every-kind check within its window) and tests/unit/test_probe_windows.py.
REPORT_SECONDS = 5
# A startup probe that must pass gets the time its server takes to listen on a busy node (15 tries 2 s apart): with
# FAST, one refused or slow first try restarted the container of the every-kind check in a clean-clone CI run
# (stop 38: started and ready, restart_count 1).
STARTUP = {"periodSeconds": 2, "failureThreshold": 15, "timeoutSeconds": 5}
# The initial-delay check's startup probe waits this long before its first try.
STARTUP_DELAY = 15


def _timing(spec: dict) -> tuple[int, int, int, int]:
    """period, timeout, failureThreshold and initialDelaySeconds of a probe, with the API's defaults."""
    return (
        spec.get("periodSeconds", 10),
        spec.get("timeoutSeconds", 1),
        spec.get("failureThreshold", 3),
        spec.get("initialDelaySeconds", 0),
    )


def first_result_within(spec: dict) -> float:
    """The longest time, from a moment the container runs (and has started, for a liveness or readiness probe),
    until a probe of this timing has given its first result from then on, as the kubelet's prober runs it
    (pkg/kubelet/prober/worker.go at v1.37.2): its worker may first sleep up to a period (:165-167, a worker
    started within a period of the kubelet's own start); no probe counts before the container has run
    initialDelaySeconds (:331); the probes of one worker run one after another off a ticker of the period whose
    ticks wait while a probe runs (:169, :186-201), so the next probe starts at most max(period, timeout) after the
    previous one started; and a probe takes up to its timeout."""
    period, timeout, _, delay = _timing(spec)
    return period + delay + max(period, timeout) + timeout


def probe_window(spec: dict, pod_grace: int | None = None) -> float:
    """The longest time, from a moment the container runs and has started, until the pod's status shows what the
    kubelet did about a probe of this timing that fails from then on: failureThreshold failures in a row
    (worker.go:373), each probe at most max(period, timeout) after the one before; for a liveness probe
    (``pod_grace``: the pod's terminationGracePeriodSeconds) the container's stop, with the probe's grace where it sets
    one, at least 2 s; then REPORT_SECONDS for the status. A readiness probe (``pod_grace`` None) makes the container
    unready instead."""
    period, timeout, threshold, _ = _timing(spec)
    window = first_result_within(spec) + (threshold - 1) * max(period, timeout) + REPORT_SECONDS
    if pod_grace is not None:
        window += max(spec.get("terminationGracePeriodSeconds", pod_grace), KILL_GRACE)
    return window


def shell(target_os: str, line: str) -> list[str]:
    """``line`` run by the OS's shell: cmd on Windows, sh on Linux."""
    return ["cmd", "/c", line] if target_os == "windows" else ["sh", "-c", line]


def marker_file(target_os: str, name: str) -> str:
    return f"C:\\{name}" if target_os == "windows" else f"/{name}"


# agnhost mounttest on both OSes: exit 0 when the file can be read (or written), 1 when not.
def file_exists(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--file-content={file}"]


def create_file(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--new-file-0644={file}"]


def remove_file(target_os: str, file: str) -> list[str]:
    return shell(target_os, f"del {file}" if target_os == "windows" else f"rm {file}")


def probe(kind: str, passing: bool, port: int = 8080, target_os: str = "windows", timing: dict | None = None) -> dict:
    """A probe of ``kind`` that passes against netexec on ``port``, or fails; ``timing`` FAST unless given."""
    timing = FAST if timing is None else timing
    if kind == "exec":
        return {"exec": {"command": shell(target_os, f"exit {0 if passing else 1}")}, **timing}
    if kind == "httpGet":
        # netexec answers 200 to any path it does not know (its root handler), so a failing httpGet probe asks
        # for /dial without parameters: 400 "request parameter not specified" (found by the Linux control).
        return {"httpGet": {"path": "/healthz" if passing else "/dial", "port": port}, **timing}
    return {"tcpSocket": {"port": port if passing else 9999}, **timing}


def restarts(pod, name: str) -> int:
    return next((s.restart_count for s in pod.status.container_statuses or [] if s.name == name), 0)


def container_status(pod, name: str):
    return next((s for s in pod.status.container_statuses or [] if s.name == name), None)


def probe_failures(api_client, namespace: str, pod_name: str, container: str, kinds: tuple[str, ...]) -> list[str]:
    """The kubelet's Unhealthy events of the ``kinds`` probes ("Liveness", "Readiness", "Startup") of ``container``:
    every failed or errored probe (prober.go at v1.37.2: '<kind> probe failed: <output>', '<kind> probe errored
    ...'), a probe that got no answer within its timeout included ('command ... timed out', 'context deadline
    exceeded', 'i/o timeout'): for the check whose subject is that probe, a probe that does not answer is a probe
    that does not work."""
    path = f"spec.containers{{{container}}}"
    return [
        e.message or ""
        for e in events_for(api_client, namespace, pod_name, "Unhealthy")
        if (getattr(e.involved_object, "field_path", None) or path) == path
        and any((e.message or "").startswith(f"{kind} probe ") for kind in kinds)
    ]


def probes_held(
    kube, api_client, namespace: str, pod_name: str, container: str, probes: dict, pod_grace: int
) -> str | None:
    """Watch ``container`` of the pod, whose ``probes`` ({"Liveness": spec, "Readiness": spec}) must keep passing,
    for as long as the kubelet would take to act on one of them failing from now on (probe_window): None when it
    was never restarted, kept running (and ready, where a readiness probe is watched) and the kubelet reported no
    failed probe of those kinds; else the first of these seen, at once."""
    seconds = max(probe_window(spec, pod_grace if kind == "Liveness" else None) for kind, spec in probes.items())

    def attempt() -> str | None:
        status = container_status(kube.read_pod(pod_name), container)
        if status is None:
            return f"no status of container {container}"
        if status.restart_count:
            return f"container {container} restarted {status.restart_count} time(s)"
        if status.state is None or status.state.running is None:
            return f"container {container} not running: {status.state}"
        if "Readiness" in probes and not status.ready:
            return f"container {container} not ready"
        failed = probe_failures(api_client, namespace, pod_name, container, tuple(probes))
        return f"the kubelet: {failed}" if failed else None

    return consistently(attempt, seconds=seconds)


def startup_probe_gave_up(api_client, namespace: str):
    """A wait's failure for a pod whose startup probe must pass: once the kubelet has restarted its container
    (the startup probe failed failureThreshold times in a row), it says so with the kubelet's last word on the
    probe. Before, such a pod was waited for to the end (120 s): it is restarted every few seconds and never
    Ready while its probe's target cannot be reached."""

    def failure(pod):
        count = restarts(pod, "main")
        if not count:
            return None
        events = events_for(api_client, namespace, pod.metadata.name, "Unhealthy")
        said = [e for e in events if "Startup probe failed" in (e.message or "")]
        newest = max(said, key=lambda e: e.count or 1).message if said else None
        seen = f"the kubelet: {newest}" if newest else "no Startup probe failed event"
        return f"container main restarted {count} time(s) before it was ready: its startup probe gave up ({seen})"

    return failure


def all_probes_pod(wincon, target_os: str, build: int | None) -> dict:
    """The every-kind check's pod: passing exec liveness, httpGet readiness and tcpSocket startup probes."""
    return os_pod(
        wincon,
        "all-probes",
        target_os,
        build,
        args=NETEXEC,
        container_extra={
            "livenessProbe": probe("exec", True, target_os=target_os, timing=TOLERANT_LIVENESS),
            "readinessProbe": probe("httpGet", True, timing=TOLERANT),
            "startupProbe": probe("tcpSocket", True, timing=STARTUP),
        },
    )


@pytest.mark.test_id("73559298-0a87-4182-8572-c82422d843e0")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(all_probes_pod)
def test_probes_of_every_kind_are_accepted_and_the_pod_is_scheduled(
    kube, wincon, namespace, build, data_plane, target_os
):
    """ "Readiness and Liveness probes" are supported for Windows containers (002_8a7e76f95009f44f.txt, Pods): a pod with passing exec, httpGet and tcpSocket probes starts, becomes ready and is never restarted."""
    body = all_probes_pod(wincon, target_os, build)
    liveness = body["spec"]["containers"][0]["livenessProbe"]
    readiness = body["spec"]["containers"][0]["readinessProbe"]
    pod = run_os_pod(wincon, namespace, body, ready=False)
    data_plane("wait for startup (tcpSocket) and readiness (httpGet) to pass; liveness (exec) must not restart")
    # Positive evidence from the kubelet, not the stored spec: the probes ran and passed.
    kube.wait_pod(
        pod.metadata.name,
        done=pod_running_ready,
        timeout=120,
        failure=None,
        behaviour=True,
        describe="started and ready through its probes",
    )
    # Ready says the startup and readiness probes passed; the liveness and readiness probes are then judged by
    # watching the container for as long as the kubelet would take to restart it (or unready it) were one of them
    # failing, and every failed liveness or readiness probe the kubelet reports fails the check, one that got no
    # answer within its timeout included. A startup probe refused before netexec listens is what a startup probe
    # is for: its events are not counted (a startup probe that gave up restarts the container, which is).
    held = probes_held(
        kube,
        wincon.api_client,
        namespace,
        pod.metadata.name,
        "main",
        {"Liveness": liveness, "Readiness": readiness},
        pod.spec.termination_grace_period_seconds,
    )
    status = container_status(kube.read_pod(pod.metadata.name), "main")
    failed = probe_failures(wincon.api_client, namespace, pod.metadata.name, "main", ("Liveness", "Readiness"))
    assert held is None and status.started and status.ready and not failed, (
        f"started {status.started}, ready {status.ready}, {held or 'held'}; "
        f"the kubelet: {failed or 'no failed liveness or readiness probe'}"
    )


def liveness_pod(wincon, target_os: str, build: int | None, kind: str) -> dict:
    """The liveness check's pod: container main with a passing ``kind`` liveness probe, container failing with a
    failing one."""
    body = os_pod(
        wincon,
        f"liveness-{kind.lower()}",
        target_os,
        build,
        args=NETEXEC,
        container_extra={"livenessProbe": probe(kind, True, target_os=target_os, timing=TOLERANT_LIVENESS)},
    )
    first = body["spec"]["containers"][0]
    pull = {"imagePullPolicy": first["imagePullPolicy"]} if "imagePullPolicy" in first else {}
    body["spec"]["containers"].append(
        container(
            "failing", first["image"], args=SIDE_NETEXEC, livenessProbe=probe(kind, False, 8082, target_os), **pull
        )
    )
    return body


@pytest.mark.test_id("42dd3323-fd33-4a32-bfce-3dc12f12acc7")
@pytest.mark.dataplane
@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("exec", marks=pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)),
        pytest.param("httpGet", marks=pytest.mark.windows_form(same_as_control=True)),
        pytest.param("tcpSocket", marks=pytest.mark.windows_form(same_as_control=True)),
    ],
)
@pytest.mark.documents("kep-windows-node-support", "What works today")
@waves.ahead(liveness_pod)
def test_failing_liveness_probe_restarts_the_container_and_passing_one_does_not(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" work on Windows (003_414b2f1c5dd978a2.txt, What works today): a failing liveness probe restarts its container; a passing one leaves its neighbour alone."""
    body = liveness_pod(wincon, target_os, build, kind)
    main_probe = body["spec"]["containers"][0]["livenessProbe"]
    pod = run_os_pod(wincon, namespace, body, ready=False)
    data_plane(f"wait for the {kind} liveness probe of container failing to restart it", where=pod.metadata.name)
    restarted = kube.wait_pod(
        pod.metadata.name,
        done=lambda p: restarts(p, "failing") >= 1,
        timeout=180,
        failure=lambda p: "container main, whose liveness probe passes, was restarted" if restarts(p, "main") else None,
        behaviour=True,
        describe="container failing restarted by its liveness probe",
    )
    assert restarts(restarted, "main") == 0, "the container with a passing liveness probe was restarted"
    # Then main is watched for as long as the kubelet would take to restart it were its probe failing (probe_window):
    # a kubelet with a short crash back-off restarts container failing again within seconds, so its restarts alone
    # do not give main's probe the time to be judged. A failed probe of main's (one that timed out included) fails
    # the check at once.
    held = probes_held(
        kube,
        wincon.api_client,
        namespace,
        pod.metadata.name,
        "main",
        {"Liveness": main_probe},
        restarted.spec.termination_grace_period_seconds,
    )
    assert held is None, f"the container with a passing liveness probe: {held}"
    wait_for_event(wincon.api_client, namespace, pod.metadata.name, "Unhealthy", behaviour=True)
    said = probe_failures(wincon.api_client, namespace, pod.metadata.name, "failing", ("Liveness",))
    assert any(m.startswith("Liveness probe failed") for m in said), (
        f"container failing's liveness probe events: {said}"
    )


def endpoint_readiness(kube, namespace: str, service: str) -> dict[str, bool]:
    """Pod name -> ready, from the Service's EndpointSlices."""
    discovery = kube.discovery
    slices = call(
        discovery.list_namespaced_endpoint_slice, namespace, label_selector=f"kubernetes.io/service-name={service}"
    )
    result = {}
    for eps in slices.items:
        for endpoint in eps.endpoints or []:
            if endpoint.target_ref and endpoint.target_ref.kind == "Pod":
                result[endpoint.target_ref.name] = bool(endpoint.conditions and endpoint.conditions.ready)
    return result


def service(name: str, selector: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector, "ports": [{"port": 8080, "targetPort": 8080}]},
    }


def toggle_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The readiness toggle's Service toggle, then its pod ready-toggle (exec readiness probe on a file)."""
    gate = {"exec": {"command": file_exists(marker_file(target_os, "ready.txt"))}, **FAST}
    body = os_pod(
        wincon,
        "ready-toggle",
        target_os,
        build,
        args=NETEXEC,
        labels={"app": "toggle"},
        container_extra={"readinessProbe": gate},
    )
    return [service("toggle", {"app": "toggle"}), body]


@pytest.mark.test_id("39e25e34-7865-4018-9c8f-7ae93971f80e")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(toggle_objects)
def test_failing_readiness_probe_takes_the_pod_out_of_service_endpoints(kube, wincon, namespace, build, target_os):
    """ "Readiness and Liveness probes" (002_8a7e76f95009f44f.txt, Pods): when the exec readiness probe starts failing, the pod leaves the Service's ready endpoints, and returns when it passes."""
    ready_file = marker_file(target_os, "ready.txt")
    toggle, body = toggle_objects(wincon, target_os, build)
    kube.create(toggle)
    pod = run_os_pod(wincon, namespace, body, ready=False)
    listed = eventually(
        lambda: endpoint_readiness(kube, namespace, "toggle").get("ready-toggle") is not None or None,
        60,
        "pod ready-toggle listed in the EndpointSlice of Service toggle",
        behaviour=True,
    )
    assert listed
    assert kube.exec(pod, create_file(ready_file)).ok
    kube.wait_pod("ready-toggle", done=pod_running_ready, timeout=60, failure=None, behaviour=True)
    eventually(
        lambda: endpoint_readiness(kube, namespace, "toggle").get("ready-toggle"), 60, "endpoint ready", behaviour=True
    )
    assert kube.exec(pod, remove_file(target_os, ready_file)).ok
    kube.wait_pod(
        "ready-toggle",
        done=lambda p: not pod_running_ready(p),
        timeout=60,
        failure=None,
        behaviour=True,
        describe="not ready once its readiness file is gone",
    )
    eventually(
        lambda: endpoint_readiness(kube, namespace, "toggle").get("ready-toggle") is False,
        60,
        "endpoint of ready-toggle marked not ready",
        behaviour=True,
    )


def readiness_pair(wincon, target_os: str, build: int | None, kind: str) -> list[dict]:
    """Pods rd-<kind>-good and rd-<kind>-bad (``kind`` readiness probes that pass and fail), then their Service."""
    app = f"rd-{kind.lower()}"
    bodies = [
        os_pod(
            wincon,
            name,
            target_os,
            build,
            args=NETEXEC,
            labels={"app": app},
            container_extra={"readinessProbe": probe(kind, passing, target_os=target_os)},
        )
        for name, passing in ((f"{app}-good", True), (f"{app}-bad", False))
    ]
    return [*bodies, service(app, {"app": app})]


@pytest.mark.test_id("b130ff0d-f21e-4483-be4c-76cef745b53f")
@pytest.mark.dataplane
@pytest.mark.parametrize("kind", ["httpGet", "tcpSocket"])
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(readiness_pair)
def test_pod_whose_readiness_probe_fails_is_not_a_ready_endpoint(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" (002_8a7e76f95009f44f.txt, Pods): of two pods behind one Service, only the one whose readiness probe passes is a ready endpoint."""
    app = f"rd-{kind.lower()}"
    *bodies, endpoints = readiness_pair(wincon, target_os, build, kind)
    for body in bodies:
        create_or_reject(wincon.api_client, namespace, body)
    kube.create(endpoints)
    for name in (f"{app}-good", f"{app}-bad"):
        kube.wait_pod(
            name,
            done=lambda p: bool(p.status and p.status.phase == "Running"),
            timeout=wincon.pod_start_timeout,
        )
    data_plane(f"wait for the {kind} readiness probe of {app}-bad to fail", where=namespace)
    wait_for_event(wincon.api_client, namespace, f"{app}-bad", "Unhealthy", behaviour=True)
    kube.wait_pod(f"{app}-good", done=pod_running_ready, timeout=60, failure=None, behaviour=True)

    def both_listed():
        states = endpoint_readiness(kube, namespace, app)
        return states if len(states) == 2 and states.get(f"{app}-good") else None

    states = eventually(
        both_listed,
        60,
        f"both pods of {app} in the EndpointSlice, the good one ready",
        behaviour=True,
        seen=lambda: endpoint_readiness(kube, namespace, app),
    )
    assert states == {f"{app}-good": True, f"{app}-bad": False}, states


@pytest.mark.test_id("180e296a-8aad-4370-99d4-2079be405940")
@pytest.mark.dataplane
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_startup_probe_holds_liveness_and_readiness_back_until_it_succeeds(
    kube, wincon, namespace, build, data_plane, target_os
):
    """ "Readiness and Liveness probes" (003_414b2f1c5dd978a2.txt, What works today): until the startup probe passes, a failing liveness probe restarts nothing and a passing readiness probe readies nothing."""
    started_file = marker_file(target_os, "started.txt")
    started = {"exec": {"command": file_exists(started_file)}, "periodSeconds": 2, "failureThreshold": 60}
    liveness = {"exec": {"command": file_exists(started_file)}, **TOLERANT}
    readiness = probe("exec", True, target_os=target_os)
    body = os_pod(
        wincon,
        "startup-gate",
        target_os,
        build,
        args=NETEXEC,
        container_extra={"startupProbe": started, "livenessProbe": liveness, "readinessProbe": readiness},
    )
    pod = run_os_pod(wincon, namespace, body, ready=False)
    running_since = time.monotonic()
    data_plane(f"wait for five failed startup probes, then create {started_file}", where=pod.metadata.name)

    # While the startup probe fails (five times, 10 s), the liveness probe (which would fail too) must not run.
    def startup_failures():
        events = events_for(wincon.api_client, namespace, "startup-gate", "Unhealthy")
        failed = [e for e in events if "Startup probe failed" in (e.message or "")]
        return events if failed and max(e.count or 1 for e in failed) >= 5 else None

    eventually(startup_failures, 90, "five failed startup probes of pod startup-gate", behaviour=True)

    # And for as long as a liveness or readiness probe run without the gate would take to show (its first result,
    # a failure event or Ready, from the moment the container ran: first_result_within), only the startup probe
    # ran, nothing restarted and the container is neither started nor ready.
    def only_startup_ran() -> str | None:
        others = [e.message for e in events_for(wincon.api_client, namespace, "startup-gate", "Unhealthy")]
        others = [m for m in others if "Startup probe failed" not in (m or "")]
        status = container_status(kube.read_pod("startup-gate"), "main")
        if others or status is None or status.restart_count or status.started or status.ready:
            return f"other probes ran before startup passed: {others}; container main: {status}"
        return None

    gate = max(first_result_within(liveness), first_result_within(readiness)) + REPORT_SECONDS
    held = consistently(only_startup_ran, seconds=max(0.0, gate - (time.monotonic() - running_since)))
    assert held is None, held
    assert kube.exec("startup-gate", create_file(started_file)).ok
    ready = kube.wait_pod("startup-gate", done=pod_running_ready, timeout=60, failure=None, behaviour=True)
    status = ready.status.container_statuses[0]
    assert status.started and status.ready and status.restart_count == 0, status


def startup_delay_pod(wincon, target_os: str, build: int | None, kind: str) -> dict:
    """The initial-delay check's pod: a ``kind`` startup probe after 15 s, a readiness probe that passes at once."""
    startup = {**probe(kind, True, timing=TOLERANT), "initialDelaySeconds": STARTUP_DELAY}
    return os_pod(
        wincon,
        f"startup-{kind.lower()}",
        target_os,
        build,
        args=NETEXEC,
        container_extra={"startupProbe": startup, "readinessProbe": probe("exec", True, target_os=target_os)},
    )


@pytest.mark.test_id("667d1b7e-ac4a-479e-b1f1-8da9a30540f6")
@pytest.mark.dataplane
@pytest.mark.parametrize("kind", ["httpGet", "tcpSocket"])
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(startup_delay_pod)
def test_startup_probe_delays_readiness_by_its_initial_delay(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" (003_414b2f1c5dd978a2.txt, What works today): a readiness probe that passes at once is held back until the startup probe first passes."""
    delay = STARTUP_DELAY
    pod = run_os_pod(wincon, namespace, startup_delay_pod(wincon, target_os, build, kind), ready=False)
    data_plane(
        f"compare the Ready time with the container start (startup {kind} after {delay} s)", where=pod.metadata.name
    )
    ready = kube.wait_pod(
        pod.metadata.name,
        done=pod_running_ready,
        timeout=120,
        failure=startup_probe_gave_up(wincon.api_client, namespace),
        behaviour=True,
    )
    started_at = ready.status.container_statuses[0].state.running.started_at
    ready_at = next(c.last_transition_time for c in ready.status.conditions if c.type == "Ready")
    # No probe counts before the container has run initialDelaySeconds (worker.go:331 at v1.37.2), and Ready needs
    # the startup probe's success: Ready comes at least ``delay`` after the start. Both times are the node's clock
    # (the runtime's start, the kubelet's transition), each cut to the second, which keeps that difference: no
    # second of tolerance is owed (with one, a startup probe run a second early passed).
    assert (ready_at - started_at).total_seconds() >= delay, f"ready {ready_at}, container started {started_at}"
