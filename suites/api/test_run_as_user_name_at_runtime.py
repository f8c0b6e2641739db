"""runAsUserName where the runtime decides: an unknown user name passes API validation but the container never
starts (the sandbox or the container is refused), at pod and at container level; a container's runAsUserName
overrides the pod's, and a container without one runs as the pod's. Upstream: test/e2e/windows/
security_context.go. The pods are created and scheduled for real everywhere; what the runtime does with the
name is checked after the ``data_plane`` gate."""

from __future__ import annotations

import pytest

from wincon.checks.api_rules import is_account_name, with_run_as_user_name
from wincon.checks.node import user_name_command
from wincon.checks.pods import events_for, eventually, windows_pod
from wincon.cluster.client import call
from wincon.cluster.waits import pod_failure, pod_scheduled, pod_succeeded
from wincon.commandline.errors import expect_deviation
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.api]

UNKNOWN_USER = "FooLish"  # a valid name no Windows image has
# The sandbox refusal of an unknown pod-level runAsUserName, by Windows Server release, as upstream matches it
# (k8s.io/kubernetes v1.38.0-beta.0 test/e2e/windows/security_context.go:71-80; v1.37.2 :71 knew the first only):
# ltsc2022 ERROR_LOGON_FAILURE (1326), ltsc2025 ERROR_NO_SUCH_DOMAIN (1355), the local lookup falling through to a
# domain the container does not have.
WRONG_USER = "The user name or password is incorrect."
NO_SUCH_DOMAIN = "The specified domain either does not exist or could not be contacted."
UNKNOWN_USER_REFUSALS = (WRONG_USER, NO_SUCH_DOMAIN)
START_FAILURES = ("ContainerCannotRun", "StartError", "CreateContainerError", "RunContainerError")


def user_pod(wincon, name: str, build, pod_user: str | None, container_user: str | None = None) -> dict:
    body = windows_pod(wincon, name, build, image_key="nonroot", command=user_name_command("windows"))
    body["spec"]["restartPolicy"] = "Never"
    if pod_user:
        body = with_run_as_user_name(body, pod_user, scope="podSecurityContext")
    if container_user:
        body = with_run_as_user_name(body, container_user, scope="container")
    return body


def start_outcome(kube, name: str) -> str | None:
    """'refused: ...' once the runtime refused the user, 'ran: ...' if the container ran, None while pending."""
    core = kube.core
    for event in events_for(kube.api_client, kube.namespace, name, "FailedCreatePodSandBox"):
        if any(refusal.lower() in (event.message or "").lower() for refusal in UNKNOWN_USER_REFUSALS):
            return f"refused: sandbox {event.message}"
    pod = call(core.read_namespaced_pod, name, kube.namespace)
    for status in (pod.status.container_statuses or []) if pod.status else []:
        terminated = status.state.terminated if status.state else None
        waiting = status.state.waiting if status.state else None
        if terminated and terminated.reason in START_FAILURES:
            return f"refused: {terminated.reason} {terminated.message or ''}"
        if waiting and waiting.reason in START_FAILURES:
            return f"refused: {waiting.reason} {waiting.message or ''}"
        if terminated and terminated.exit_code == 0:
            return f"ran: exited 0 as {terminated.message or 'the user'}"
    return None


@pytest.mark.test_id("cfab7840-baea-4c20-a1c2-e6dee382835b")
@pytest.mark.dataplane
@pytest.mark.windows_only("windowsOptions.runAsUserName names a Windows account in the image (Linux: runAsUser)")
@pytest.mark.limitation("run-as-username-unavailable")
@pytest.mark.parametrize("scope", ["pod", "container"])
@pytest.mark.documents("k8s-windows-intro", "Security")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
def test_unknown_run_as_user_name_is_refused_when_the_container_starts(kube, wincon, build, scope, data_plane):
    """ "The workaround is to create local accounts before packaging the container. The RunAsUsername capability is planned" (000_4130a90def37a825.txt, Security): with runAsUserName the account must exist in the image; an unknown one is refused by the runtime at start (upstream security_context.go:61 and :119 at v1.38.0-beta.0): at pod level a FailedCreatePodSandBox event saying "The user name or password is incorrect." (ltsc2022) or "The specified domain either does not exist or could not be contacted." (ltsc2025), as upstream accepts both from v1.38.0-beta.0 (:71-80); at container level the container fails to start (upstream :130 accepts ContainerCannotRun or StartError)."""
    pod_user, container_user = (UNKNOWN_USER, None) if scope == "pod" else ("ContainerUser", UNKNOWN_USER)
    name = f"unknown-user-{scope}"
    kube.create(user_pod(wincon, name, build, pod_user, container_user))
    kube.wait_pod(name, done=pod_scheduled, timeout=60, failure=None)
    data_plane(f"watch pod {name} for FailedCreatePodSandBox or a StartError", where="the pod's Windows node")
    outcome = eventually(
        lambda: start_outcome(kube, name),
        wincon.pod_start_timeout,
        f"the runtime refusing runAsUserName {UNKNOWN_USER} ({scope} level)",
        interval=2,
        behaviour=True,
    )
    with expect_deviation(
        "run-as-username-unavailable",
        accepts=lambda: outcome.startswith("ran:"),
        deviation="the container ran although its user does not exist",
    ):
        assert outcome.startswith("refused"), f"the container with unknown user {UNKNOWN_USER} {outcome}"


@pytest.mark.test_id("91b499e1-f938-447b-97d8-aa0bddde8122")
@pytest.mark.dataplane
@pytest.mark.windows_only("windowsOptions.runAsUserName names a Windows account in the image (Linux: runAsUser)")
@pytest.mark.limitation("run-as-username-unavailable")
@pytest.mark.documents("k8s-windows-intro", "Security")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
def test_container_run_as_user_name_overrides_the_pods(kube, wincon, namespace, build, data_plane):
    """ "The workaround is to create local accounts ... The RunAsUsername capability is planned" (000_4130a90def37a825.txt, Security): a container's runAsUserName (ContainerUser) overrides the pod's (ContainerAdministrator); a container without one runs as the pod's (upstream security_context.go)."""
    body = user_pod(wincon, "override", build, "ContainerAdministrator", "ContainerUser")
    image = body["spec"]["containers"][0]["image"]
    body["spec"]["containers"].append(container("inherits", image, command=user_name_command("windows")))
    kube.create(body)
    kube.wait_pod("override", done=pod_scheduled, timeout=60, failure=None)
    data_plane(user_name_command("windows"), where="containers main and inherits of pod override")
    kube.wait_pod(
        "override",
        done=pod_succeeded,
        timeout=wincon.pod_start_timeout,
        failure=pod_failure,
    )
    core = kube.core
    users = {
        name: call(core.read_namespaced_pod_log, "override", namespace, container=name).strip().lower()
        for name in ("main", "inherits")
    }
    with expect_deviation(
        "run-as-username-unavailable",
        accepts=lambda: all(is_account_name(user) for user in users.values()),
        deviation="a container runs as another account",
    ):
        assert users["main"] == "containeruser", (
            f"container main (runAsUserName ContainerUser) ran as {users['main']!r}"
        )
        assert users["inherits"] == "containeradministrator", (
            f"container inherits (pod's ContainerAdministrator) ran as {users['inherits']!r}"
        )


@pytest.mark.test_id("3651b1b3-13dd-4fb6-9b2b-da3634848bdf")
@pytest.mark.dataplane
@pytest.mark.windows_only("windowsOptions.runAsUserName names a Windows account in the image (Linux: runAsUser)")
@pytest.mark.limitation("run-as-username-unavailable")
@pytest.mark.parametrize(("user", "expected"), [(None, "ContainerUser"), ("ContainerAdministrator", None)])
@pytest.mark.documents("k8s-windows-intro", "Security")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
def test_container_runs_as_the_default_user_or_the_one_named(
    kube, wincon, namespace, build, user, expected, data_plane
):
    """ "The workaround is to create local accounts ... The RunAsUsername capability is planned" (000_4130a90def37a825.txt, Security): the nonroot image's container prints ContainerUser by default, and ContainerAdministrator when the pod and the container name it (upstream security_context.go:52, the same two pods, `cmd /S /C "echo %username%"`)."""
    expected = expected or user
    name = f"username-{(user or 'default').lower()}"
    kube.create(user_pod(wincon, name, build, user, user))
    kube.wait_pod(name, done=pod_scheduled, timeout=60, failure=None)
    data_plane(user_name_command("windows"), where=f"container main of pod {name}")
    kube.wait_pod(name, done=pod_succeeded, timeout=wincon.pod_start_timeout, failure=pod_failure)
    output = call(kube.core.read_namespaced_pod_log, name, namespace, container="main")
    with expect_deviation(
        "run-as-username-unavailable",
        accepts=lambda: is_account_name(output),
        deviation="the container runs as another account",
    ):
        assert output.strip().lower() == expected.lower(), f"pod {name} printed {output.strip()!r}, not {expected}"
