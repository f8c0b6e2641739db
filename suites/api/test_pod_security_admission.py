"""PodSecurity admission, level restricted, and Windows pods (spec.os.name: windows)."""

from __future__ import annotations

import copy

import pytest

from wincon.checks.api_rules import submit_pod
from wincon.checks.hostprocess import as_host_process
from wincon.checks.pods import run_windows_pod
from wincon.workloads.pinning import pin_linux

pytestmark = [pytest.mark.api]

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
VIOLATES = "violates PodSecurity"


@pytest.fixture(scope="module")
def restricted_namespace(wincon):
    """A namespace whose PodSecurity level is enforced as restricted; deleted at teardown."""
    name = wincon.namespaces.create("psa-restricted", labels=RESTRICTED)
    try:
        yield name
    finally:
        wincon.namespaces.delete(name)


def compliant_windows_pod(make_pod, name: str) -> dict:
    """What restricted asks of a Windows pod: runAsNonRoot, a non-administrator user, no host access."""
    body = make_pod(name)
    body["spec"]["securityContext"] = {
        "runAsNonRoot": True,
        "windowsOptions": {"runAsUserName": "ContainerUser"},
    }
    return body


@pytest.mark.test_id("9b0b640b-3ed0-4187-b6f9-1616c408d134")
@pytest.mark.documents("k8s-windows-intro", "Security")
def test_restricted_level_admits_a_compliant_windows_pod(wincon, restricted_namespace, make_pod):
    """ "Linux specific pod security context privileges such as SELinux, AppArmor, Seccomp, Capabilities ... are not supported" (000_4130a90def37a825.txt, Security): restricted exempts Windows pods from them and admits a compliant one."""
    pod = run_windows_pod(wincon, restricted_namespace, compliant_windows_pod(make_pod, "psa-compliant"))
    assert pod.spec.os.name == "windows"
    assert pod.spec.security_context.run_as_non_root is True


@pytest.mark.test_id("2ab5acb5-929d-4b36-836e-2c651b8afa36")
@pytest.mark.documents("k8s-windows-intro", "Security")
def test_restricted_level_refuses_the_same_pod_as_a_linux_pod(wincon, restricted_namespace, make_pod):
    """The exemption is the pod OS field's doing (000_4130a90def37a825.txt, Security): the same pod as Linux lacks seccomp, capability drops and allowPrivilegeEscalation=false and is refused."""
    body = compliant_windows_pod(make_pod, "psa-as-linux")
    spec = copy.deepcopy(body["spec"])
    spec.pop("tolerations", None)
    spec["nodeSelector"] = {}
    spec["securityContext"] = {"runAsNonRoot": True}
    spec["containers"][0]["image"] = wincon.catalog.image("agnhost", "linux")
    body["spec"] = pin_linux(spec)
    created, rejection = submit_pod(wincon.api_client, restricted_namespace, body)
    assert rejection is not None, "restricted admitted a Linux pod without seccomp and capability drops"
    assert rejection.status == 403 and VIOLATES in rejection.message, rejection.describe()
    for control in ("allowPrivilegeEscalation", "capabilities", "seccompProfile"):
        assert control in rejection.message, f"{control} not named: {rejection.message}"


@pytest.mark.test_id("f8c719ca-ffad-477a-b191-20c80a77c37f")
@pytest.mark.parametrize(
    "change, control",
    [
        ("host-process", "hostProcess"),
        ("no-run-as-non-root", "runAsNonRoot"),
    ],
)
@pytest.mark.documents("k8s-windows-intro", "Compute")
def test_restricted_level_refuses_a_non_compliant_windows_pod(wincon, restricted_namespace, make_pod, change, control):
    """ "Privileged containers are not available on Windows" (000_4130a90def37a825.txt, Compute): restricted still refuses HostProcess pods and pods that may run as an administrator."""
    body = compliant_windows_pod(make_pod, f"psa-{change}")
    if change == "host-process":
        as_host_process(body)  # hostNetwork, windowsOptions hostProcess as SYSTEM; runAsNonRoot kept
    else:
        del body["spec"]["securityContext"]["runAsNonRoot"]
    created, rejection = submit_pod(wincon.api_client, restricted_namespace, body)
    assert rejection is not None, f"restricted admitted a Windows pod with {change}"
    assert rejection.status == 403 and VIOLATES in rejection.message, rejection.describe()
    assert control in rejection.message, f"{control} not named: {rejection.message}"
