"""runAsUserName: the Windows way to name the user a container runs as, and its format rules."""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks.api_rules import (
    RUN_AS_USER_NAMES,
    is_account_name,
    run_as_user_name_path,
    with_run_as_user_name,
)
from wincon.checks.pods import admitted_and_scheduled, run_windows_pod, windows_pod
from wincon.cluster import waves
from wincon.commandline.errors import expect_deviation
from wincon.windows import forms

pytestmark = [pytest.mark.api]


@pytest.mark.test_id("2e6229a2-5330-4acf-9468-748ceee6f04a")
@pytest.mark.parametrize("scope", ["podSecurityContext", "container"])
@pytest.mark.parametrize("case", RUN_AS_USER_NAMES, ids=lambda case: case.label)
@pytest.mark.documents("k8s-windows-intro", "Security")
def test_run_as_user_name_format_rules_are_enforced(kube, make_pod, case, scope):
    """ "The workaround is to create local accounts before packaging the container. The RunAsUsername capability is planned" (000_4130a90def37a825.txt, Security): the API server validates the name's format."""
    body = with_run_as_user_name(
        make_pod(f"user-{case.label}-{'pod' if scope.startswith('pod') else 'ctr'}"), case.value, scope
    )
    # The pod-level control-character case goes through a real create; the rest are server-side dry runs.
    real = scope == "podSecurityContext" and case.label == "control-character"
    created, rejection = kube.submit(body, dry_run=not real)
    path = run_as_user_name_path(scope)
    if case.valid:
        assert rejection is None, f"runAsUserName {case.value!r} was refused: {rejection.describe()}"
        context = (
            created["spec"]["securityContext"]
            if scope == "podSecurityContext"
            else created["spec"]["containers"][0]["securityContext"]
        )
        assert context["windowsOptions"]["runAsUserName"] == case.value, "the name must be stored as given"
        return
    assert rejection is not None, f"runAsUserName {case.value!r} was accepted; expected: {case.message}"
    assert rejection.status == 422, rejection.describe()
    cause = rejection.cause(path)
    assert cause is not None, f"no cause at {path}: {rejection.describe()}"
    assert "Invalid value" in cause.get("message", "") and case.message in cause.get("message", ""), (
        rejection.describe()
    )


def containeruser_pod(wincon, build: int | None) -> dict[str, Any]:
    """The admission check's pod, naming ContainerUser (made ahead: ``waves.ahead``)."""
    return with_run_as_user_name(windows_pod(wincon, "run-as-containeruser", build), "ContainerUser")


def whoami_pod(wincon, build: int | None) -> dict[str, Any]:
    """The runtime check's pod, naming ContainerUser (made ahead: ``waves.ahead``)."""
    return with_run_as_user_name(windows_pod(wincon, "whoami-containeruser", build), "ContainerUser")


@pytest.mark.test_id("9b74f825-4c77-4ba9-9880-cb82dd5ec941")
@pytest.mark.documents("k8s-windows-guide", "Security")
@waves.ahead(containeruser_pod)
def test_pod_with_run_as_user_name_is_created_and_scheduled_on_windows(wincon, namespace, build):
    """RunAsUserName (002_8a7e76f95009f44f.txt, Security): a pod naming ContainerUser is admitted, stored with the name and placed on a Windows node (API and scheduler; the runtime effect: test_container_runs_as_the_user_named_by_run_as_user_name)."""
    body = containeruser_pod(wincon, build)
    pod = admitted_and_scheduled(wincon, namespace, body)
    assert pod.spec.security_context.windows_options.run_as_user_name == "ContainerUser"


@pytest.mark.test_id("ac1188e6-15a5-402d-b0cb-035e21f44509")
@pytest.mark.dataplane
@pytest.mark.limitation("run-as-username-unavailable")
@pytest.mark.documents("k8s-windows-intro", "Security")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
@waves.ahead(whoami_pod)
def test_container_runs_as_the_user_named_by_run_as_user_name(kube, wincon, namespace, build):
    """ "The workaround is to create local accounts ... The RunAsUsername capability is planned for future release" (000_4130a90def37a825.txt, Security): the container's process runs as ContainerUser."""
    body = whoami_pod(wincon, build)
    pod = run_windows_pod(wincon, namespace, body)
    command = ["cmd", "/S", "/C", "echo %username%"]
    result = kube.exec(pod, command)
    assert result.ok, f"`{' '.join(command)}` failed: {result.stdout!r} {result.stderr!r}"
    with expect_deviation(
        "run-as-username-unavailable",
        accepts=lambda: is_account_name(result.stdout),
        deviation="the process runs as another account",
    ):
        assert result.stdout.strip().lower() == "containeruser", f"the process runs as {result.stdout.strip()!r}"
