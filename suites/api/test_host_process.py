"""HostProcess pods: the Windows way to run on the host, and the layout rules the API server enforces."""

from __future__ import annotations

import re

import pytest

from wincon.checks.api_rules import (
    HOST_PROCESS_CASES,
    HOST_PROCESS_DISALLOWED,
    host_process_pod,
)
from wincon.checks.hostprocess import as_host_process
from wincon.checks.pods import Rejected, admitted_and_scheduled, windows_pod
from wincon.cluster import waves
from wincon.commandline.errors import expect_deviation
from wincon.windows import forms
from wincon.workloads.deploy import await_pod

pytestmark = [pytest.mark.api]


# One host name and nothing else: RFC 1123 label characters (and '_', which Windows computer names may carry).
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?")


def is_host_name(output: str) -> bool:
    """Whether ``output`` is one host name alone: positive evidence that hostname read *a* host's name, so that
    another name than the node's is the deviation, while an error text or a warning printed with exit 0 is not."""
    return bool(_HOST_NAME.fullmatch(output.strip()))


def host_process_body(make_pod, name: str) -> dict:
    """A valid HostProcess pod of the check's build (restartPolicy left to the API server's default)."""
    return as_host_process(make_pod(name))


@pytest.mark.test_id("c38c1fac-4423-4c49-b979-f93057a4d29d")
@pytest.mark.parametrize("case", HOST_PROCESS_CASES, ids=lambda case: case.label)
@pytest.mark.documents("k8s-windows-guide", "Compute")
# Not made ahead: every layout is refused at admission (no pod starts), and the refusal is what it observes.
def test_host_process_needs_host_network_and_every_container_host_process(kube, make_pod, case):
    """ "There is no way to run a Windows container without the namespace filtering in place" (002_8a7e76f95009f44f.txt, Compute): HostProcess is all-or-nothing per pod and needs hostNetwork."""
    body = host_process_pod(make_pod(f"hp-{case.label}"), case)
    # The first layout goes through a real create; the others are server-side dry runs (same validation).
    created, rejection = kube.submit(body, dry_run=case != HOST_PROCESS_CASES[0])
    assert rejection is not None, f"the API server accepted the {case.label} layout; expected: {case.message}"
    assert rejection.status == 422, rejection.describe()
    cause = rejection.cause(case.path)
    assert cause is not None, f"no cause at {case.path}: {rejection.describe()}"
    assert case.message in cause.get("message", ""), rejection.describe()


@pytest.mark.test_id("b65f2aee-c4f7-4df7-b1fa-bebd86d5274d")
@pytest.mark.requires("host-process")
@pytest.mark.documents("k8s-windows-intro", "Compute")
# Not made ahead: it waits for the scheduler only (no pod start), after a dry run that would meet a pod made ahead.
def test_valid_host_process_pod_is_admitted_and_scheduled_on_windows(kube, wincon, namespace, make_pod):
    """ "System privileges cannot be asserted on the host" (000_4130a90def37a825.txt, Compute) for ordinary pods; a HostProcess pod with hostNetwork and SYSTEM is admitted and placed on a Windows node."""
    body = host_process_body(make_pod, "hp-valid")
    created, rejection = kube.submit(body)
    if rejection is not None and HOST_PROCESS_DISALLOWED in rejection.describe():
        pytest.skip(f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}")
    assert rejection is None, f"a valid HostProcess pod was refused: {rejection.describe()}"
    # Admitted above; placed by the scheduler on a Windows node, and stored as a HostProcess pod (the runtime
    # effect is test_host_process_container_runs_on_the_host's).
    pod = admitted_and_scheduled(wincon, namespace, body)
    assert pod.spec.host_network is True
    assert pod.spec.security_context.windows_options.host_process is True


def on_host_pod(wincon, build: int | None) -> dict:
    """The runtime check's HostProcess pod hp-on-host (made ahead: ``waves.ahead``)."""
    return as_host_process(windows_pod(wincon, "hp-on-host", build))


@pytest.mark.test_id("8f0c44c5-b48f-4b65-bcc8-c3302d447e16")
@pytest.mark.requires("host-process")
@pytest.mark.dataplane
@pytest.mark.limitation("host-privileges-unavailable")
@pytest.mark.documents("k8s-windows-intro", "Compute")
@pytest.mark.windows_form(forms.HOSTPROCESS_HOSTNAME)
# Safe ahead: the skip is decided by the create's own answer (a refused pod is not made), and what is read, the
# host's name from inside the running pod, does not depend on when it started.
@waves.ahead(on_host_pod)
def test_host_process_container_runs_on_the_host(kube, wincon, namespace, build):
    """ "Containers cannot assume an identity from the host ... System privileges cannot be asserted on the host" (000_4130a90def37a825.txt, Compute): a HostProcess container sees the host's name (its node's)."""
    body = on_host_pod(wincon, build)
    # One real create (no dry run before it: a pod made ahead already exists), judged as run_windows_pod judges it.
    _, rejection = kube.submit(body, dry_run=False)
    if rejection is not None and HOST_PROCESS_DISALLOWED in rejection.describe():
        pytest.skip(f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}")
    if rejection is not None:
        raise Rejected(f"the API server refused pod {body['metadata']['name']}: {rejection.describe()}")
    pod = await_pod(wincon, namespace, body, os_name="windows")
    # The host's name, read as upstream reads it in a HostProcess pod: PowerShell's $(hostname), compared with the
    # node's name without regard to case (host_process.go:108). An ordinary Windows container's hostname is its
    # pod's name, so the node's name is positive evidence the process runs on the host. (sc.exe query kubelet, the
    # former form, was dropped: no upstream e2e runs it and no public recording of its output in a pod was found.)
    command = ["powershell.exe", "-Command", "hostname"]
    result = kube.exec(pod, command, where=f"pod {pod.metadata.name} on {pod.spec.node_name}")
    assert result.ok and result.stdout.strip(), f"hostname printed nothing: {result.stdout!r} {result.stderr}"
    with expect_deviation(
        "host-privileges-unavailable",
        accepts=lambda: is_host_name(result.stdout),
        deviation="hostname printed one host name, another than the node's",
    ):
        assert result.stdout.strip().lower() == pod.spec.node_name.lower(), (
            f"hostname is {result.stdout.strip()!r}, not the node {pod.spec.node_name}"
        )
