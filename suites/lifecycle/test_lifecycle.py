"""Container lifecycle on Windows: postStart and preStop hooks (exec and httpGet), the termination grace
period, termination messages and exit codes. Hook effects are observed from outside the hooked
container: through a volume shared with a second container, or in the log of a recorder pod (the ``recorder``
fixture, suites/lifecycle/conftest.py: one per OS and build, shared by the module's checks)."""

from __future__ import annotations

import re

import pytest

from wincon.checks.memory import MIB, Peak
from wincon.checks.pods import admitted_and_scheduled, create_or_reject, eventually, os_pod, run_os_pod, windows_pod
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.kube import ApiException
from wincon.cluster.waits import BehaviourNotObserved, WorkloadFailed, pod_failure, wait_for_pod
from wincon.commandline.errors import InfrastructureError, expect_deviation
from wincon.network.flows import no_answer
from wincon.windows import connectivity as conn
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.lifecycle]

NETEXEC = ["netexec", "--http-port=8080", "--udp-port=8081"]
OOM_WAIT = 120  # seconds a container over its memory limit is given to be OOM-killed (Linux: a few seconds)
OOM_LIMIT_MIB = 200  # the memory hog's limit (and request)
# The share of its limit the hog is seen holding before "not OOM-killed" is evidence. Not 95 % as for the compute
# checks' loads: the limit also counts the process's own memory beside its chunks, and the chunks stop at the last
# whole one under the limit, so the hog may hold up to a chunk (10 MB) and its own baseline less than 200Mi.
OOM_HELD = 0.9


def recorded(kube, recorder) -> str:
    return call(kube.core.read_namespaced_pod_log, recorder.name, recorder.namespace)


def wait_recorded(kube, recorder, text: str, timeout: float = 60) -> str:
    def seen():
        log = recorded(kube, recorder)
        return log if text in log else None

    # A behaviour wait: the hook must reach the recorder; if it never does, the test fails with the log it saw.
    return eventually(
        seen,
        timeout,
        f"{text!r} in the recorder's log",
        behaviour=True,
        seen=lambda: recorded(kube, recorder)[-500:] or "an empty log",
    )


def recorded_or_gone(kube, recorder, text: str, name: str, timeout: float = 90) -> str:
    """The recorder's log once ``text`` is in it, or once pod ``name`` (being deleted) is gone, whichever comes
    first: what the pod's end could still report is complete at either. The deletion itself is not waited for
    once the evidence is in (on real Windows nodes a pod's deletion takes tens of seconds after its hook)."""

    def done():
        log = recorded(kube, recorder)
        if text in log:
            return log
        return recorded(kube, recorder) if gone(kube, name) else None

    return eventually(done, timeout, f"{text!r} in the recorder's log, or pod {name} deleted", interval=0.5)


def http_hook(recorder, message: str) -> dict:
    return {"httpGet": {"host": recorder.ip, "port": 8080, "path": f"/echo?msg={message}"}}


def curl_hook(recorder, message: str, target_os: str = "windows") -> dict:
    url = f"http://{recorder.ip}:8080/echo?msg={message}"
    command = ["cmd", "/c", f"curl.exe -s {url}"] if target_os == "windows" else ["curl", "-s", url]
    return {"exec": {"command": command}}


def run_hooked_pod(kube, wincon, namespace: str, body: dict):
    """``run_os_pod`` for a pod whose postStart hook is the behaviour checked: a container the kubelet killed
    because its hook failed (event FailedPostStartHook) fails the check with that event, not as a crash."""
    try:
        return run_os_pod(wincon, namespace, body)
    except WorkloadFailed as exc:
        failed = kube.events(body["metadata"]["name"], "FailedPostStartHook")
        if not failed:
            raise
        raise BehaviourNotObserved(
            f"the postStart hook failed: the kubelet reported FailedPostStartHook ({failed[-1].message}) "
            f"and killed the container: {exc}"
        ) from exc


def shell(target_os: str, line: str) -> list[str]:
    """``line`` run by the OS's shell: cmd on Windows, sh on Linux."""
    return ["cmd", "/c", line] if target_os == "windows" else ["sh", "-c", line]


def with_pull_policy(first: dict, extra: dict) -> dict:
    """A second container's settings, with the first one's imagePullPolicy (Linux controls pull nothing)."""
    return {**({"imagePullPolicy": first["imagePullPolicy"]} if "imagePullPolicy" in first else {}), **extra}


def gone(kube, name):
    core = kube.core
    try:
        call(core.read_namespaced_pod, name, kube.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return None


def poststart_paths(target_os: str) -> tuple[str, str]:
    """The post-start check's shared directory and the file its hook writes there."""
    shared = "C:\\shared" if target_os == "windows" else "/shared"
    return shared, f"{shared}\\poststart.txt" if target_os == "windows" else f"{shared}/poststart.txt"


def poststart_exec_pod(wincon, target_os: str, build: int | None) -> dict:
    """The post-start check's pod: container main's exec postStart hook writes a file into a shared emptyDir,
    container observer (pause) mounts it too."""
    shared, file = poststart_paths(target_os)
    mounts = [{"name": "shared", "mountPath": shared}]
    hook = {"exec": {"command": ["/agnhost", "mounttest", f"--new-file-0644={file}"]}}
    body = os_pod(
        wincon,
        "poststart-exec",
        target_os,
        build,
        container_extra={"volumeMounts": mounts, "lifecycle": {"postStart": hook}},
        volumes=[{"name": "shared", "emptyDir": {}}],
    )
    first = body["spec"]["containers"][0]
    body["spec"]["containers"].append(
        container("observer", first["image"], args=["pause"], **with_pull_policy(first, {"volumeMounts": mounts}))
    )
    return body


# Made ahead: the hook's file stays in the pod's emptyDir, read whenever the check comes to it.
@pytest.mark.test_id("463adfaa-a39f-4c7c-85ae-6cd4518fcdb2")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(poststart_exec_pod)
def test_post_start_exec_hook_effect_is_seen_by_a_neighbour_container(kube, wincon, namespace, build, target_os):
    """ "postStart & preStop container lifecycle events" (002_8a7e76f95009f44f.txt, Pods): an exec postStart hook writes a file a second container of the pod reads (agnhost mounttest writes and reads it on both OSes)."""
    _, file = poststart_paths(target_os)
    pod = run_hooked_pod(kube, wincon, namespace, poststart_exec_pod(wincon, target_os, build))
    result = kube.exec(pod, ["/agnhost", "mounttest", f"--file-content={file}"], container="observer")
    # mounttest prints the path with Go's %q (a Windows path's backslashes doubled): read it as the storage checks do.
    content = conn.mounttest_content(result.stdout or "", file) if result.ok else None
    assert content == "mount-tester new file", f"{result.stdout!r} {result.stderr}"


# The recorder checks below are made ahead once their recorder runs (Recorders.ready: their manifests hold its IP,
# and a postStart hook must reach it): each hook's request stays in the recorder's log, and a preStop hook or a
# trap runs only when the check deletes its pod.
def poststart_http_pod(wincon, target_os: str, build: int | None, recorder) -> dict:
    hook = http_hook(recorder, "poststart-http")
    return os_pod(wincon, "poststart-http", target_os, build, container_extra={"lifecycle": {"postStart": hook}})


@pytest.mark.test_id("1e89770b-1e55-4e62-90ab-1fdfaad07a1f")
@pytest.mark.dataplane
@pytest.mark.documents("kep-windows-node-support", "What works today")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(poststart_http_pod)
def test_post_start_http_hook_reaches_the_recorder(kube, wincon, namespace, build, recorder, data_plane, target_os):
    """ "postStart & preStop container lifecycle events" (003_414b2f1c5dd978a2.txt, What works today): an httpGet postStart hook calls the recorder pod."""
    pod = run_hooked_pod(kube, wincon, namespace, poststart_http_pod(wincon, target_os, build, recorder))
    data_plane("read the recorder's log for GET /echo?msg=poststart-http", where=f"pod {pod.metadata.name}")
    assert "GET /echo?msg=poststart-http" in wait_recorded(kube, recorder, "msg=poststart-http")


def prestop_pod(wincon, target_os: str, build: int | None, recorder, kind: str) -> dict:
    message = f"prestop-{kind.lower()}"
    hook = curl_hook(recorder, message, target_os) if kind == "exec" else http_hook(recorder, message)
    return os_pod(
        wincon,
        message,
        target_os,
        build,
        terminationGracePeriodSeconds=30,
        container_extra={"lifecycle": {"preStop": hook}},
    )


@pytest.mark.test_id("d3018cb5-8026-4a27-b6d2-f65d229f4bcb")
@pytest.mark.dataplane
@pytest.mark.parametrize("kind", ["exec", "httpGet"])
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.CURL_EXE, same_as_control=True)
@waves.ahead(prestop_pod)
def test_pre_stop_hook_runs_when_the_pod_is_deleted(
    kube, wincon, namespace, build, recorder, data_plane, kind, target_os
):
    """ "postStart & preStop container lifecycle events" (002_8a7e76f95009f44f.txt, Pods): deleting the pod runs its preStop hook, which the recorder sees."""
    message = f"prestop-{kind.lower()}"
    pod = run_os_pod(wincon, namespace, prestop_pod(wincon, target_os, build, recorder, kind))
    data_plane(f"delete pod {message}, then read the recorder's log for msg={message}", where=pod.spec.node_name)
    call(kube.core.delete_namespaced_pod, message, namespace)
    # The hook runs before the container is stopped: its request is the evidence, the deletion's end is not.
    log = recorded_or_gone(kube, recorder, f"msg={message}", message)
    assert f"msg={message}" in log, f"the recorder heard no msg={message} before the pod was gone: {log[-500:]!r}"


def grace_steps(recorder) -> str:
    # The same sh line on both OSes: upstream's conformance preStop hook runs `sh -c "curl http://..."` in the
    # agnhost image on Windows nodes too (lifecycle_hook.go:161), and seq and sleep are busybox applets of the
    # Windows image (test/images/busybox/Dockerfile_windows, BUSYBOX_EXES; agnhost's Windows BASEIMAGE).
    return f"for i in $(seq 1 20); do curl -s http://{recorder.ip}:8080/echo?msg=grace-step-$i; sleep 1; done"


def grace_pod(wincon, target_os: str, build: int | None, recorder) -> dict:
    return os_pod(
        wincon,
        "grace",
        target_os,
        build,
        terminationGracePeriodSeconds=30,
        container_extra={"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", grace_steps(recorder)]}}}},
    )


@pytest.mark.test_id("e99e3084-4237-47f8-b65c-0a521ad527bf")
@pytest.mark.dataplane
@pytest.mark.limitation("termination-grace-period")
@pytest.mark.documents("k8s-windows-intro", "V1.Pod.terminationGracePeriodSeconds")
@pytest.mark.windows_form(forms.PRESTOP_SH_CURL, forms.BUSYBOX_W32_APPLETS, same_as_control=True)
@waves.ahead(grace_pod)
def test_pre_stop_hook_may_use_the_termination_grace_period(
    kube, wincon, namespace, build, recorder, data_plane, target_os
):
    """ "V1.Pod.terminationGracePeriodSeconds - ... the ENTRYPOINT process is sent CTRL_SHUTDOWN_EVENT, then Windows waits 5 seconds by default" (000_4130a90def37a825.txt): a 20 s shutdown step within a 30 s grace period completes."""
    pod = run_os_pod(wincon, namespace, grace_pod(wincon, target_os, build, recorder))
    steps = grace_steps(recorder)
    data_plane(f"delete pod grace; its preStop hook reports 20 steps, one a second: {steps}", where=pod.spec.node_name)
    call(kube.core.delete_namespaced_pod, "grace", namespace)
    # The 20th step reported completes the evidence; a hook cut off short of it is known once the pod is gone.
    log = recorded_or_gone(kube, recorder, "msg=grace-step-20", "grace")
    # netexec logs the request's whole query (".../echo?msg=grace-step-7&..."): take the step's digits only.
    last = max((int(step) for step in re.findall(r"grace-step-(\d+)", log)), default=0)
    # The hook must have reported at all: a recorder that heard nothing says nothing of the grace period.
    with expect_deviation(
        "termination-grace-period",
        accepts=lambda: 0 < last < 20,
        deviation="the preStop hook ran and was cut off before its 20 steps",
    ):
        assert last == 20, f"the shutdown step was cut off after {last} of 20 seconds"


def terminated(pod):
    status = (pod.status.container_statuses or [None])[0] if pod.status else None
    return status.state.terminated if status and status.state else None


def run_to_exit(kube, data_plane, body, what, failure=None):
    """Create a run-once pod (made ahead where its check declared it), pass the data-plane gate, and wait until its
    container has exited."""
    create_or_reject(kube.api_client, kube.namespace, body)
    name = body["metadata"]["name"]
    data_plane(what, where=name)
    return wait_for_pod(
        kube.api_client,
        kube.namespace,
        name,
        done=lambda p: terminated(p) is not None,
        timeout=kube.pod_start_timeout,
        failure=failure,
    )


# The run-once checks below are made ahead: with restartPolicy Never the container exits once and its terminated
# state (exit code, message, the pod's phase) is final, the same whenever the check reads it; nothing is timed.
def message_default_pod(wincon, target_os: str, build: int | None) -> dict:
    """The default-path check's run-once pod: writes all-done to /dev/termination-log (C:\\dev\\termination-log)."""
    write = (
        "echo all-done> C:\\dev\\termination-log" if target_os == "windows" else "echo all-done > /dev/termination-log"
    )
    return os_pod(wincon, "message-default", target_os, build, command=shell(target_os, write), restartPolicy="Never")


@pytest.mark.test_id("67c59a4a-ebd3-4f2e-8bb3-26e030bb65e1")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "V1.Container.terminationMessagePath")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(message_default_pod)
def test_termination_message_written_to_the_default_path_is_reported(kube, wincon, build, data_plane, target_os):
    """ "V1.Container.terminationMessagePath ... The default value is /dev/termination-log, which does work because it does not exist on Windows by default" (000_4130a90def37a825.txt)."""
    pod = run_to_exit(
        kube,
        data_plane,
        message_default_pod(wincon, target_os, build),
        "wait for container main to exit, then read status.containerStatuses[0].state.terminated.message",
    )
    state = terminated(pod)
    assert state.exit_code == 0 and (state.message or "").strip() == "all-done", (
        f"exit {state.exit_code}, message {state.message!r}"
    )


def message_custom_pod(wincon, target_os: str, build: int | None) -> dict:
    """The custom-path check's run-once pod: writes done to its terminationMessagePath C:\\dev\\msg (/dev/msg)."""
    message_path = "C:\\dev\\msg" if target_os == "windows" else "/dev/msg"
    write = f"echo done> {message_path}" if target_os == "windows" else f"echo done > {message_path}"
    return os_pod(
        wincon,
        "message-custom",
        target_os,
        build,
        command=shell(target_os, write),
        restartPolicy="Never",
        container_extra={"terminationMessagePath": message_path},
    )


@pytest.mark.test_id("bac55e0a-2f06-460e-ba74-e1604cb79709")
@pytest.mark.dataplane
@pytest.mark.limitation("termination-message-path")
@pytest.mark.documents("k8s-windows-intro", "Feature Restrictions")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(message_custom_pod)
def test_termination_message_written_to_a_custom_path_is_reported(kube, wincon, build, data_plane, target_os):
    """ "Termination message: to be implemented with CRI-ContainerD" and "Single file mapping" (000_4130a90def37a825.txt, Feature Restrictions): a message written to terminationMessagePath C:\\dev\\msg is reported."""
    body = message_custom_pod(wincon, target_os, build)
    pod = run_to_exit(kube, data_plane, body, "wait for container main to exit, then read its termination message")
    with expect_deviation(
        "termination-message-path",
        accepts=lambda: not (terminated(pod).message or "").strip(),
        deviation="no termination message read from the custom path",
    ):
        assert (terminated(pod).message or "").strip() == "done", f"message {terminated(pod).message!r}"


def exit_three_pod(wincon, target_os: str, build: int | None) -> dict:
    """The exit-code check's run-once pod: prints fatal: wincon-exit and exits 3 (FallbackToLogsOnError)."""
    fail = "echo fatal: wincon-exit & exit 3" if target_os == "windows" else "echo fatal: wincon-exit; exit 3"
    return os_pod(
        wincon,
        "exit-three",
        target_os,
        build,
        command=shell(target_os, fail),
        restartPolicy="Never",
        container_extra={"terminationMessagePolicy": "FallbackToLogsOnError"},
    )


@pytest.mark.test_id("53240027-69a2-499f-ac02-fb455135c129")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "API")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
@waves.ahead(exit_three_pod)
def test_exit_code_and_log_tail_are_reported_on_failure(kube, wincon, build, data_plane, target_os):
    """ "Exit Codes follow the same convention where 0 is success, nonzero is failure ... exit codes passed from the Kubernetes components (kubelet, kube-proxy) are unchanged" (000_4130a90def37a825.txt, API)."""
    pod = run_to_exit(
        kube,
        data_plane,
        exit_three_pod(wincon, target_os, build),
        "wait for container main to exit 3; FallbackToLogsOnError puts its log in the message",
    )
    # The kubelet may store the container's exit a sync before the pod's phase (seen on the Linux control).
    pod = kube.wait_pod(
        "exit-three", done=lambda p: p.status.phase in ("Failed", "Succeeded"), timeout=60, failure=None
    )
    state = terminated(pod)
    assert state.exit_code == 3 and pod.status.phase == "Failed", f"exit {state.exit_code}, phase {pod.status.phase}"
    assert "fatal: wincon-exit" in (state.message or ""), f"message {state.message!r}"


def two_in_one_pod(wincon, target_os: str, build: int | None) -> dict:
    """The shared-network check's pod: container main serves netexec, container client (pause) beside it."""
    # Ready only once netexec listens (the kubelet's own connection to the pod's IP): a Running container whose
    # server had not bound its port yet refused the client's first curl on a loaded node (a clean-clone run here).
    serving = {"readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}
    body = os_pod(wincon, "two-in-one", target_os, build, args=NETEXEC, container_extra=serving)
    first = body["spec"]["containers"][0]
    body["spec"]["containers"].append(
        container("client", first["image"], args=["pause"], **with_pull_policy(first, {}))
    )
    return body


# Made ahead: two long-running servers; what one container reaches of the other does not depend on when.
@pytest.mark.test_id("a08e313d-3ad8-4b73-a8d7-64ebd26a1cfe")
@pytest.mark.dataplane
@pytest.mark.limitation("multi-container-pods-pre-1709")
@pytest.mark.documents("k8s-handbook-windows", "Other Known Issues")
@pytest.mark.windows_form(forms.CURL_EXE_EXEC, same_as_control=True)
@waves.ahead(two_in_one_pod)
def test_containers_of_a_pod_share_its_network(kube, wincon, namespace, build, target_os):
    """ "Only Windows Server 1709 or later versions support running multiple containers in a Pod" (001_feb1108140134f87.txt, Other Known Issues): two containers share the pod's IP and reach each other on localhost."""
    pod = run_os_pod(wincon, namespace, two_in_one_pod(wincon, target_os, build))
    url = "http://localhost:8080/hostname"
    # The control's very command line, curl.exe for curl, exec'd as itself on both OSes (no cmd /c: upstream execs
    # curl.exe so in a Windows pod, forms.CURL_EXE_EXEC), so the exec's exit status is curl's own.
    command = conn.http_get_command(target_os, url)
    result = kube.exec("two-in-one", command, container="client", where=f"pod {pod.metadata.name} container client")
    # The deviation: the second container does not share the pod's network, so curl reaches nothing on localhost
    # (could not connect, timed out, empty reply, nothing received: curl.exe has curl's exit codes); another pod's
    # answer, an HTTP error status, a bad URL or a missing curl is not it.
    with expect_deviation(
        "multi-container-pods-pre-1709",
        accepts=lambda: no_answer(result),
        deviation="nothing answered on localhost:8080 in the second container",
    ):
        assert result.ok and result.stdout.strip() == "two-in-one", f"{result.stdout!r} {result.stderr}"


@pytest.mark.test_id("5bc4f8cd-c943-4eaf-a0ec-f5b2cdf530ca")
@pytest.mark.dataplane
@pytest.mark.limitation("no-oom-killer")
@pytest.mark.documents("k8s-windows-guide", "Memory Reservations")
@pytest.mark.windows_form(forms.TESTLIMIT, forms.TESTLIMIT_CHUNKS, forms.STATS_WORKING_SET)
def test_container_over_its_memory_limit_is_oom_killed(kube, wincon, build, data_plane, target_os):
    """ "Windows does not have an out-of-memory process killer as Linux does ... processes will page to disk instead of being subject to out of memory (OOM) termination" (002_8a7e76f95009f44f.txt, Memory Reservations)."""
    limits = {"resources": {"limits": {"memory": f"{OOM_LIMIT_MIB}Mi"}, "requests": {"memory": f"{OOM_LIMIT_MIB}Mi"}}}
    if target_os == "windows":
        # Sysinternals testlimit in upstream's resource-consumer image commits and touches 400 MB in 40 chunks of
        # 10 MB: the chunked form upstream's Windows eviction test runs in Windows pods (eviction.go:161-169,
        # "-d 300Mb -e 1 20000s -c <chunks>"), so the container can fill its limit whatever becomes of the commit
        # that would pass it. Its output is never read: what it holds is read from the kubelet's stats/summary.
        body = windows_pod(
            wincon,
            "memory-hog",
            build,
            image_key="resource-consumer",
            command=["/bin/testlimit.exe", "-accepteula", "-d", "10Mb", "-e", "1", "600s", "-c", "40"],
            restartPolicy="Never",
            container_extra=limits,
        )
    else:  # the Linux control: agnhost stress allocates (and touches) 400 MiB in 10 MiB steps
        stress = ["stress", "--mem-total=400Mi", "--mem-alloc-size=10Mi", "--mem-alloc-sleep=20ms"]
        body = os_pod(
            wincon, "memory-hog", target_os, build, args=stress, restartPolicy="Never", container_extra=limits
        )
    kube.create(body)
    pod = wait_for_pod(
        kube.api_client,
        kube.namespace,
        "memory-hog",
        done=lambda p: terminated(p) is not None or p.status.phase == "Running",
        timeout=kube.pod_start_timeout,
        failure=lambda p: None if terminated(p) is not None else pod_failure(p),  # an image or a crash, at once
    )
    data_plane("wait for container main (200Mi limit, allocating 400 MiB) to be terminated", where="memory-hog")
    peak = Peak(kube.api_client, pod.spec.node_name, "memory-hog", kube.namespace)
    limit = OOM_LIMIT_MIB * MIB

    def ended():
        state = terminated(call(kube.core.read_namespaced_pod, "memory-hog", kube.namespace))
        if state is None:
            peak.read()
        return state

    def held() -> bool:
        return peak.reached(OOM_HELD * limit)

    # The deviation: the container was not OOM-killed although it was seen holding its limit (stats/summary): it
    # ran on past the wait (it pages), or it ended by itself. Neither is evidence before that reading: a container
    # whose first commit was refused, or that never ran its load, put nothing over its limit.
    with expect_deviation(
        "no-oom-killer",
        accepts=held,
        deviation="the container held its 200Mi limit and was not OOMKilled",
    ):
        try:
            state = eventually(
                ended,
                OOM_WAIT,
                "container main of memory-hog terminated",
                interval=5,
                behaviour=True,
                seen=lambda: f"container main still running; {peak.describe()}",
            )
        except BehaviourNotObserved as exc:
            if not held():
                raise InfrastructureError(
                    f"the load was never shown applied: container main ran on without being seen holding its "
                    f"{OOM_LIMIT_MIB}Mi limit ({peak.describe()})",
                    "the node's kubelet must list the pod in stats/summary; read the pod's events",
                ) from exc
            raise
        if state.reason != "OOMKilled" and not held():
            raise InfrastructureError(
                f"the load could not be applied: container main ended {state.reason} (exit {state.exit_code}) "
                f"before it was seen holding its {OOM_LIMIT_MIB}Mi limit ({peak.describe()})",
                "read the pod's logs; the check needs its container to fill its memory limit",
            )
        assert state.reason == "OOMKilled", f"terminated with reason {state.reason!r}, exit code {state.exit_code}"


@pytest.mark.test_id("890a662e-f47f-4f65-af94-8111853b8419")
@pytest.mark.dataplane
@pytest.mark.limitation("exit-codes-differ")
@pytest.mark.documents("k8s-windows-intro", "API Signals")
@pytest.mark.windows_form(forms.BUSYBOX_SH_PROBE, forms.CMD_ECHO_TO_FILE)
def test_container_killed_for_a_failing_liveness_probe_reports_exit_code_137(
    kube, wincon, namespace, build, data_plane, target_os
):
    """ "Exit Codes follow the same convention ... The specific error codes may differ across Windows and Linux" (000_4130a90def37a825.txt, API Signals): a container the kubelet kills should report 137 as on Linux."""
    failing = {"exec": {"command": shell(target_os, "exit 1")}, "periodSeconds": 2, "failureThreshold": 1}
    # A process that ignores the polite stop (netexec exits 0 on SIGTERM, as the Linux control showed), so the
    # kubelet must kill it when the 3 s grace period ends: 137 (128 + SIGKILL) on Linux.
    stubborn = "trap '' TERM; while true; do sleep 1; done"
    body = os_pod(
        wincon,
        "killed",
        target_os,
        build,
        command=["sh", "-c", stubborn],
        terminationGracePeriodSeconds=3,
        container_extra={"livenessProbe": failing},
    )
    pod = run_os_pod(wincon, namespace, body, ready=False)
    data_plane(
        "wait for the failing liveness probe to kill container main; read lastState.terminated.exitCode",
        where=pod.metadata.name,
    )

    def killed_once(p):
        status = (p.status.container_statuses or [None])[0]
        return bool(status and status.restart_count >= 1 and status.last_state and status.last_state.terminated)

    restarted = kube.wait_pod(
        "killed",
        done=killed_once,
        timeout=180,
        failure=None,
        behaviour=True,
        describe="killed by its failing liveness probe",
    )
    code = restarted.status.container_statuses[0].last_state.terminated.exit_code
    with expect_deviation(
        "exit-codes-differ",
        accepts=lambda: code is not None and code != 0,
        deviation="the killed container reports another non-zero exit code",
    ):
        assert code == 137, f"the killed container reported exit code {code}"


def trap_script(recorder) -> tuple[str, str]:
    """The trap's report to the recorder, and the shell line that traps TERM with it."""
    report = f"curl -s http://{recorder.ip}:8080/echo?msg=sigterm-trapped"
    return report, f"trap '{report}; exit 0' TERM; while true; do sleep 1; done"


def trap_pod(wincon, target_os: str, build: int | None, recorder) -> dict:
    _, script = trap_script(recorder)
    return os_pod(wincon, "trap-term", target_os, build, command=["sh", "-c", script], terminationGracePeriodSeconds=20)


@pytest.mark.test_id("74bb818c-146a-44d5-8c78-47585f954947")
@pytest.mark.dataplane
@pytest.mark.limitation("termination-signals-differ")
@pytest.mark.documents("k8s-windows-intro", "API")
@pytest.mark.windows_form(forms.BUSYBOX_SH_PROBE, same_as_control=True)
@waves.ahead(trap_pod)
def test_container_receives_sigterm_when_its_pod_is_deleted(
    kube, wincon, namespace, build, recorder, data_plane, target_os
):
    """ "Signals - Windows interactive apps handle termination differently ... Console apps handle ctrl-c or ctrl-break using a Control Handler" (000_4130a90def37a825.txt, API): a SIGTERM trap should fire on deletion."""
    report, script = trap_script(recorder)
    pod = run_os_pod(wincon, namespace, trap_pod(wincon, target_os, build, recorder))
    data_plane(f"delete pod trap-term; its shell trap reports to the recorder: {script}", where=pod.spec.node_name)
    # The report is shown to reach the recorder from this very pod first (the trap's own curl, another message):
    # only then does a report that never came say the trap never fired. Not heard: a failure (the pod-to-pod flow).
    kube.exec(pod, ["sh", "-c", report.replace("sigterm-trapped", "sigterm-probe")], where=f"pod {pod.metadata.name}")
    wait_recorded(kube, recorder, "msg=sigterm-probe")
    call(kube.core.delete_namespaced_pod, "trap-term", namespace)
    # The trap's report is the evidence; a trap that never fired is known once the pod is gone.
    log = recorded_or_gone(kube, recorder, "msg=sigterm-trapped", "trap-term")
    # No accepts=: one assertion, after the report was shown to reach the recorder from this pod (no Windows form of
    # a trap that fired otherwise is recorded): the pod gone without its report is the deviation.
    with expect_deviation("termination-signals-differ"):
        assert "msg=sigterm-trapped" in log, "the TERM trap never fired"


# Last in the module (an API-level check that needs only the recorder's IP): the first check to ask for a recorder
# is then a Linux control, and the Windows recorders it creates start while the Linux controls run.
@pytest.mark.test_id("0b36cdfa-ac54-4477-b710-5167b84227d4")
@pytest.mark.documents("k8s-windows-guide", "Pods")
def test_hooks_grace_period_and_termination_message_settings_are_accepted(wincon, namespace, build, recorder):
    """ "postStart & preStop container lifecycle events" are supported (002_8a7e76f95009f44f.txt, Pods): a Windows pod with both hook kinds, a grace period and a termination message policy is admitted, stored and placed (API and scheduler; the hooks' effects are the dataplane tests below)."""
    body = windows_pod(
        wincon,
        "all-settings",
        build,
        terminationGracePeriodSeconds=45,
        container_extra={
            "lifecycle": {"postStart": curl_hook(recorder, "accepted"), "preStop": http_hook(recorder, "accepted")},
            "terminationMessagePolicy": "FallbackToLogsOnError",
        },
    )
    pod = admitted_and_scheduled(wincon, namespace, body)
    main = pod.spec.containers[0]
    assert main.lifecycle.post_start._exec.command[0] == "cmd"
    assert main.lifecycle.pre_stop.http_get.host == recorder.ip
    assert pod.spec.termination_grace_period_seconds == 45
    assert main.termination_message_path == "/dev/termination-log", "the documented default path"
    assert main.termination_message_policy == "FallbackToLogsOnError"
