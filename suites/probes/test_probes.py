"""Liveness, readiness and startup probes of kinds exec, httpGet and tcpSocket on Windows pods."""

from __future__ import annotations

import pytest

from wincon import forms
from wincon.checks.node import consistently
from wincon.checks.pods import events_for, eventually, os_pod, run_os_pod, wait_for_event
from wincon.cluster.client import call
from wincon.cluster.waits import pod_running_ready
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.probes]

NETEXEC = ["netexec", "--http-port=8080", "--udp-port=8081"]
SIDE_NETEXEC = ["netexec", "--http-port=8082", "--udp-port=8083"]
FAST = {"periodSeconds": 2, "failureThreshold": 1, "timeoutSeconds": 1}
# A probe that must keep passing gets room for a slow answer under load (3 misses in a row, 5 s each): with FAST,
# one answer over 1 s on a busy node restarted the container whose liveness probe passes (a false failure seen in
# a clean-clone CI run). It still restarts a container whose probe fails within 3 x 2 s.
TOLERANT = {"periodSeconds": 2, "failureThreshold": 3, "timeoutSeconds": 5}
# How long a container with a TOLERANT probe is watched for a restart: as long as a failing probe of its would take
# to restart it (3 misses 2 s apart, the last one timed out) and a period more.
TOLERANT_WINDOW = TOLERANT["periodSeconds"] * (TOLERANT["failureThreshold"] + 1) + TOLERANT["timeoutSeconds"]
# A startup probe that must pass gets the time its server takes to listen on a busy node (15 tries 2 s apart): with
# FAST, one refused or slow first try restarted the container of the every-kind check in a clean-clone CI run
# (stop 38: started and ready, restart_count 1).
STARTUP = {"periodSeconds": 2, "failureThreshold": 15, "timeoutSeconds": 5}
# How the kubelet words a probe that got no answer in timeoutSeconds (exec: 'command ... timed out'; httpGet:
# 'context deadline exceeded'; tcpSocket: 'i/o timeout'): a slow answer on a busy node, not a failed probe.
SLOW_ANSWER = ("timed out", "deadline exceeded", "i/o timeout")


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


def main_restarted_within(kube, pod_name: str) -> str | None:
    """Watch container main of the pod for TOLERANT_WINDOW, as long as a failing TOLERANT liveness probe would take
    to restart it: None when it was never restarted, else when and how often it was."""
    return consistently(
        lambda: f"container main restarted {n} time(s)" if (n := restarts(kube.read_pod(pod_name), "main")) else None,
        seconds=TOLERANT_WINDOW,
    )


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


@pytest.mark.test_id("73559298-0a87-4182-8572-c82422d843e0")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_probes_of_every_kind_are_accepted_and_the_pod_is_scheduled(
    kube, wincon, namespace, build, data_plane, target_os
):
    """ "Readiness and Liveness probes" are supported for Windows containers (002_8a7e76f95009f44f.txt, Pods): a pod with passing exec, httpGet and tcpSocket probes starts, becomes ready and is never restarted."""
    body = os_pod(
        wincon,
        "all-probes",
        target_os,
        build,
        args=NETEXEC,
        container_extra={
            "livenessProbe": probe("exec", True, target_os=target_os, timing=TOLERANT),
            "readinessProbe": probe("httpGet", True, timing=TOLERANT),
            "startupProbe": probe("tcpSocket", True, timing=STARTUP),
        },
    )
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
    # Ready says the startup and readiness probes passed; the liveness probe is judged by watching the container
    # for as long as a failing one would take to restart it.
    restarted = main_restarted_within(kube, pod.metadata.name)
    status = kube.read_pod(pod.metadata.name).status.container_statuses[0]
    said = [e.message or "" for e in events_for(wincon.api_client, namespace, pod.metadata.name, "Unhealthy")]
    assert restarted is None and status.started and status.ready, (
        f"started {status.started}, ready {status.ready}, {restarted or 'not restarted'}; "
        f"the kubelet: {said or 'no Unhealthy event'}"
    )
    # A startup probe refused before netexec listens is what a startup probe is for; a liveness or readiness
    # probe of a started container that fails (not merely answers late) is a probe that does not work.
    failed = [m for m in said if not m.startswith("Startup probe") and not any(w in m for w in SLOW_ANSWER)]
    assert not failed, failed


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
def test_failing_liveness_probe_restarts_the_container_and_passing_one_does_not(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" work on Windows (003_414b2f1c5dd978a2.txt, What works today): a failing liveness probe restarts its container; a passing one leaves its neighbour alone."""
    body = os_pod(
        wincon,
        f"liveness-{kind.lower()}",
        target_os,
        build,
        args=NETEXEC,
        container_extra={"livenessProbe": probe(kind, True, target_os=target_os, timing=TOLERANT)},
    )
    first = body["spec"]["containers"][0]
    pull = {"imagePullPolicy": first["imagePullPolicy"]} if "imagePullPolicy" in first else {}
    body["spec"]["containers"].append(
        container(
            "failing", first["image"], args=SIDE_NETEXEC, livenessProbe=probe(kind, False, 8082, target_os), **pull
        )
    )
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
    # Then main is watched for as long as a failing probe of its would take to restart it (3 misses 2 s apart,
    # the last one timed out) and a period more: a kubelet with a short crash back-off restarts container
    # failing again within seconds, so its restarts alone do not give main's probe the time to be judged.
    main_restarted = main_restarted_within(kube, pod.metadata.name)
    assert main_restarted is None, f"the container with a passing liveness probe was restarted: {main_restarted}"
    unhealthy = wait_for_event(wincon.api_client, namespace, pod.metadata.name, "Unhealthy", behaviour=True)
    assert any("Liveness probe failed" in e.message for e in unhealthy), [e.message for e in unhealthy]


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


@pytest.mark.test_id("39e25e34-7865-4018-9c8f-7ae93971f80e")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_failing_readiness_probe_takes_the_pod_out_of_service_endpoints(kube, wincon, namespace, build, target_os):
    """ "Readiness and Liveness probes" (002_8a7e76f95009f44f.txt, Pods): when the exec readiness probe starts failing, the pod leaves the Service's ready endpoints, and returns when it passes."""
    ready_file = marker_file(target_os, "ready.txt")
    gate = {"exec": {"command": file_exists(ready_file)}, **FAST}
    body = os_pod(
        wincon,
        "ready-toggle",
        target_os,
        build,
        args=NETEXEC,
        labels={"app": "toggle"},
        container_extra={"readinessProbe": gate},
    )
    kube.create(service("toggle", {"app": "toggle"}))
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


@pytest.mark.test_id("b130ff0d-f21e-4483-be4c-76cef745b53f")
@pytest.mark.dataplane
@pytest.mark.parametrize("kind", ["httpGet", "tcpSocket"])
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
def test_pod_whose_readiness_probe_fails_is_not_a_ready_endpoint(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" (002_8a7e76f95009f44f.txt, Pods): of two pods behind one Service, only the one whose readiness probe passes is a ready endpoint."""
    app = f"rd-{kind.lower()}"
    for name, passing in ((f"{app}-good", True), (f"{app}-bad", False)):
        body = os_pod(
            wincon,
            name,
            target_os,
            build,
            args=NETEXEC,
            labels={"app": app},
            container_extra={"readinessProbe": probe(kind, passing, target_os=target_os)},
        )
        kube.create(body)
    kube.create(service(app, {"app": app}))
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
    body = os_pod(
        wincon,
        "startup-gate",
        target_os,
        build,
        args=NETEXEC,
        container_extra={
            "startupProbe": started,
            "livenessProbe": {"exec": {"command": file_exists(started_file)}, **TOLERANT},
            "readinessProbe": probe("exec", True, target_os=target_os),
        },
    )
    pod = run_os_pod(wincon, namespace, body, ready=False)
    data_plane(f"wait for five failed startup probes, then create {started_file}", where=pod.metadata.name)

    # While the startup probe fails (five times, 10 s), the liveness probe (which would fail too) must not run.
    def startup_failures():
        events = events_for(wincon.api_client, namespace, "startup-gate", "Unhealthy")
        failed = [e for e in events if "Startup probe failed" in (e.message or "")]
        return events if failed and max(e.count or 1 for e in failed) >= 5 else None

    events = eventually(startup_failures, 90, "five failed startup probes of pod startup-gate", behaviour=True)
    messages = [e.message for e in events]
    assert all("Startup probe failed" in m for m in messages), f"other probes ran before startup passed: {messages}"
    held = call(kube.core.read_namespaced_pod, "startup-gate", namespace)
    status = held.status.container_statuses[0]
    assert status.restart_count == 0 and not status.started and not status.ready, status
    assert kube.exec("startup-gate", create_file(started_file)).ok
    ready = kube.wait_pod("startup-gate", done=pod_running_ready, timeout=60, failure=None, behaviour=True)
    status = ready.status.container_statuses[0]
    assert status.started and status.ready and status.restart_count == 0, status


@pytest.mark.test_id("667d1b7e-ac4a-479e-b1f1-8da9a30540f6")
@pytest.mark.dataplane
@pytest.mark.parametrize("kind", ["httpGet", "tcpSocket"])
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_startup_probe_delays_readiness_by_its_initial_delay(
    kube, wincon, namespace, build, data_plane, kind, target_os
):
    """ "Readiness and Liveness probes" (003_414b2f1c5dd978a2.txt, What works today): a readiness probe that passes at once is held back until the startup probe first passes."""
    delay = 15
    startup = {**probe(kind, True, timing=TOLERANT), "initialDelaySeconds": delay}
    body = os_pod(
        wincon,
        f"startup-{kind.lower()}",
        target_os,
        build,
        args=NETEXEC,
        container_extra={"startupProbe": startup, "readinessProbe": probe("exec", True, target_os=target_os)},
    )
    pod = run_os_pod(wincon, namespace, body, ready=False)
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
    assert (ready_at - started_at).total_seconds() >= delay - 1, f"ready {ready_at}, container started {started_at}"
