"""Windows pods as upstream's SecurityContext tests make them: no ``spec.os``, placed by the OS label (plus the
build and the usual Windows tolerations), so the API server applies no Windows rule and the kubelet decides
what the Linux-only fields mean (upstream test/e2e/windows/security_context.go at the pinned v1.34.4).

Everywhere else the suite pins ``spec.os.name: windows`` (wincon/workloads/pinning.py); these checks take it off
again (``without_os``) because the behaviour upstream checks exists only for a pod without it: from v1.25 the
API server refuses runAsUser, runAsGroup and seLinuxOptions on a pod that says it is Windows.

The pods are created and scheduled for real everywhere; whether they run, and what the kubelet reports, needs
a real kubelet: each check passes the ``data_plane`` gate first.
"""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks.api_rules import with_run_as_user_name
from wincon.checks.node import user_name_command
from wincon.checks.pods import create_or_reject, eventually, os_pod, windows_pod, without_os
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_running, pod_running_ready, pod_scheduled
from wincon.commandline.errors import InfrastructureError, expect_deviation
from wincon.windows import forms
from wincon.workloads.pinning import assert_ran_on

pytestmark = [pytest.mark.api]

# The kubelet's refusal (k8s.io/kubernetes v1.34.4 pkg/kubelet/kuberuntime/security_context_windows.go:66), as
# upstream's check reads it (test/e2e/windows/security_context.go:176 and :194).
NON_ROOT_REFUSAL = (
    "container's runAsUserName ({user}) which will be regarded as root identity and will break non-root policy"
)


def placed(kube, wincon, name: str, os_name: str, build: int | None) -> Any:
    """Wait until the scheduler binds the pod, and check it went to a node of ``os_name`` (and ``build``)."""
    pod = kube.wait_pod(name, done=pod_scheduled, timeout=wincon.pod_start_timeout, failure=pod_failure)
    assert_ran_on(pod, wincon.profile, os_name=os_name, build=build if os_name == "windows" else None)
    return pod


def non_root_ids_pod(wincon, target_os: str, build: int | None) -> dict[str, Any]:
    """The run-as-user/group check's pod: no spec.os, runAsUser and runAsGroup 999, runAsNonRoot, restartPolicy
    Never (made ahead: ``waves.ahead``). Upstream's image is pause (security_context.go:217): the kubelet also
    refuses runAsNonRoot where the image's own user is ContainerAdministrator (security_context_windows.go:72-74), so
    the image matters on Windows. The Linux control runs agnhost pause, the image its workers carry."""
    image_key = "pause" if target_os == "windows" else "agnhost"
    body = without_os(os_pod(wincon, "run-ignore-unsupported-fields", target_os, build, image_key=image_key))
    body["spec"]["securityContext"] = {"runAsUser": 999, "runAsGroup": 999, "runAsNonRoot": True}
    body["spec"]["restartPolicy"] = "Never"
    return body


@pytest.mark.test_id("f11ca4a2-924d-4dcb-96f4-df6939143455")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "V1.Container.SecurityContext.runAsNonRoot")
@pytest.mark.windows_form(no_command="runs the pod and reads its status through the API")
# Safe ahead: what is read is the stored spec (create's answer), the node it was bound to and a phase that stays
# Running once reached; nothing is timed from its start and nothing happens before it is created.
@waves.ahead(non_root_ids_pod)
def test_pod_without_os_with_run_as_user_group_and_non_root_runs(kube, wincon, namespace, build, target_os):
    """ "Windows does not have a root user" (000_4130a90def37a825.txt, V1.Container.SecurityContext.runAsNonRoot): a pod without spec.os that sets runAsUser 999, runAsGroup 999 and runAsNonRoot, placed on the node by its OS label, is admitted and reaches Running (upstream security_context.go:204, "should be able to create pod and run containers"; its Linux control: the same pod on a Linux node)."""
    body = non_root_ids_pod(wincon, target_os, build)
    name = body["metadata"]["name"]
    created = create_or_reject(wincon.api_client, namespace, body)
    assert created["spec"].get("os") is None, f"the API server set spec.os: {created['spec'].get('os')}"
    stored = created["spec"]["securityContext"]
    assert (stored.get("runAsUser"), stored.get("runAsGroup"), stored.get("runAsNonRoot")) == (999, 999, True), stored
    pod = placed(kube, wincon, name, target_os, build)
    kube.gate(f"wait for pod {name} to be Running", pod_node=pod.spec.node_name)
    running = kube.wait_pod(name, done=pod_running, timeout=wincon.pod_start_timeout, failure=pod_failure)
    assert running.status.phase == "Running", running.status


SELINUX = {"level": "s0:c24,c9"}


def selinux_pod(wincon, build: int | None) -> dict[str, Any]:
    """The seLinuxOptions check's pod: no spec.os, seLinuxOptions at pod and container level, runAsUserName
    ContainerAdministrator (made ahead: ``waves.ahead``)."""
    body = without_os(windows_pod(wincon, "windows-pod-with-selinux", build))
    body["spec"]["securityContext"] = {"seLinuxOptions": dict(SELINUX)}
    body["spec"]["containers"][0]["securityContext"] = {
        "seLinuxOptions": dict(SELINUX),
        "windowsOptions": {"runAsUserName": "ContainerAdministrator"},
    }
    return body


@pytest.mark.test_id("5023cff8-efb7-47e0-8770-0d36869ec70d")
@pytest.mark.dataplane
@pytest.mark.windows_only(
    "seLinuxOptions are Linux's own: the behaviour is a Windows kubelet ignoring them (on Linux they apply)"
)
@pytest.mark.documents("k8s-windows-intro", "V1.Container.SecurityContext.seLinuxOptions")
@pytest.mark.windows_form(no_command="runs the pod and reads its status through the API")
# Safe ahead: the stored spec, the node it was bound to and a Running and Ready that stays are read; nothing is
# timed from its start.
@waves.ahead(selinux_pod)
def test_windows_pod_without_os_ignores_selinux_options(kube, wincon, namespace, build):
    """ "V1.Container.SecurityContext.seLinuxOptions - not possible on Windows, no SELinux" (000_4130a90def37a825.txt): a pod without spec.os with seLinuxOptions at pod and container level and runAsUserName ContainerAdministrator is admitted and runs, Ready, on its Windows node (upstream security_context.go:139, which waits for Running only)."""
    body = selinux_pod(wincon, build)
    name = body["metadata"]["name"]
    created = create_or_reject(wincon.api_client, namespace, body)
    assert created["spec"]["securityContext"].get("seLinuxOptions") == SELINUX, created["spec"]["securityContext"]
    pod = placed(kube, wincon, name, "windows", build)
    kube.gate(f"wait for pod {name} to be Running and Ready", pod_node=pod.spec.node_name)
    running = kube.wait_pod(name, done=pod_running_ready, timeout=wincon.pod_start_timeout, failure=pod_failure)
    assert running.status.phase == "Running", running.status


def warning_or_started(kube, name: str) -> tuple[str, Any] | None:
    """Upstream's WaitForErrorEventOrSuccess: a Warning event about the pod ('event', it), or its container
    started ('started', the pod); None while neither."""
    core = kube.core
    events = call(core.list_namespaced_event, kube.namespace, field_selector=f"involvedObject.name={name}").items
    warnings = [e for e in events if e.type == "Warning" and e.reason not in ("FailedScheduling",)]
    pulls = [e.message for e in warnings if "pull" in (e.message or "").lower()]
    if pulls:  # the image never arrived: the cluster could not run the check
        raise InfrastructureError(f"pod {name}: {pulls[-1]}", "check the image catalog and the registry access")
    if warnings:
        return "event", warnings
    pod = call(core.read_namespaced_pod, name, kube.namespace)
    for status in (pod.status.container_statuses if pod.status else None) or []:
        state = status.state
        if state and (state.running or (state.terminated and state.terminated.exit_code == 0)):
            return "started", pod
    return None


def account_printed(kube, wincon, name: str) -> str:
    """What the one-shot user-name container printed, once it ended (restartPolicy Never)."""
    kube.wait_pod(
        name,
        done=lambda pod: bool(pod.status and pod.status.phase in ("Succeeded", "Failed")),
        failure=None,
        timeout=wincon.pod_start_timeout,
        describe="its user-name container ended",
    )
    return kube.logs(name)


@pytest.mark.test_id("20527535-9289-4b6d-b8d0-e10283a6643d")
@pytest.mark.dataplane
@pytest.mark.windows_only(
    "windowsOptions.runAsUserName ContainerAdministrator is Windows's root identity (Linux: runAsUser 0)"
)
@pytest.mark.limitation("run-as-non-root-no-root-user")
@pytest.mark.parametrize("user", ["ContainerAdministrator", "CONTAINERADMINISTRATOR"])
@pytest.mark.documents("k8s-windows-intro", "V1.Container.SecurityContext.runAsNonRoot")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
# Not made ahead: its evidence is the Warning event the kubelet emits as it first refuses the container, one of the
# pod's early events (listed, not watched, yet events age out), so the pod starts in the check.
def test_run_as_non_root_refuses_container_administrator_with_the_kubelets_event(kube, wincon, namespace, build, user):
    """ "Windows does not have a root user. The closest equivalent is ContainerAdministrator" (000_4130a90def37a825.txt, V1.Container.SecurityContext.runAsNonRoot): with runAsNonRoot the kubelet refuses runAsUserName ContainerAdministrator, in any letter case, with a Warning event naming the user as given (upstream security_context.go:163 and :181; the pod as upstream's runAsUserNamePod, without spec.os)."""
    name = f"nonroot-{user.lower()}-{'mixed' if user != user.upper() else 'upper'}"
    body = without_os(windows_pod(wincon, name, build, image_key="nonroot", command=user_name_command("windows")))
    body["spec"]["restartPolicy"] = "Never"
    body = with_run_as_user_name(body, user, scope="podSecurityContext")
    body = with_run_as_user_name(body, user, scope="container")
    body["spec"]["securityContext"]["runAsNonRoot"] = True
    create_or_reject(wincon.api_client, namespace, body)
    pod = placed(kube, wincon, name, "windows", build)
    expected = NON_ROOT_REFUSAL.format(user=user)
    kube.gate(f"wait for a Warning event about pod {name} containing {expected!r}", pod_node=pod.spec.node_name)
    kind, found = eventually(
        lambda: warning_or_started(kube, name),
        wincon.pod_start_timeout,
        f"a Warning event about pod {name} or its container starting",
        interval=2,
        behaviour=True,
    )
    # The deviation's own evidence: the container ran and its `echo %username%` printed ContainerAdministrator (the
    # output upstream expects of that runAsUserName, security_context.go:132/:135); another account, an error or
    # nothing is not it.
    account = account_printed(kube, wincon, name) if kind == "started" else None
    with expect_deviation(
        "run-as-non-root-no-root-user",
        accepts=lambda: account is not None and account.strip().lower() == "containeradministrator",
        deviation="the container started and printed ContainerAdministrator",
    ):
        assert kind == "event", (
            f"container of pod {name} started as {user} although runAsNonRoot is true; it printed {account!r}"
        )
    messages = [e.message or "" for e in found]
    assert any(expected in m for m in messages), f"no Warning event contains {expected!r}: {messages}"
