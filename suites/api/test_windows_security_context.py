"""The API server's securityContext rules for pods with ``spec.os.name: windows`` (k/k validateWindows).

These tests assert the Windows rule itself, which holds on every cluster of v1.25 or later, so they
carry no limitation marker; the limitation each field documents is checked (as the behaviour Linux
gives) in test_linux_security_fields_on_windows.py.
"""

from __future__ import annotations

import pytest

from wincon.checks.api_rules import (
    FORBIDDEN_FOR_WINDOWS,
    WINDOWS_OPTIONS_ON_LINUX,
    forbidden_fields,
)
from wincon.checks.pods import slug
from wincon.cluster.client import call
from wincon.cluster.kube import ApiException
from wincon.workloads.deploy import container, pod_manifest

pytestmark = [pytest.mark.api]


def assert_forbidden(rejection, path: str, message: str = FORBIDDEN_FOR_WINDOWS) -> None:
    """422 Invalid with a Forbidden cause at ``path`` carrying ``message``, and no cause elsewhere."""
    assert rejection is not None, f"the API server accepted the pod although {path} is set"
    assert rejection.status == 422, rejection.describe()
    cause = rejection.cause(path)
    assert cause is not None, f"no cause at {path}: {rejection.describe()}"
    assert "Forbidden" in cause.get("message", "") and message in cause.get("message", ""), rejection.describe()
    assert f"{path}: Forbidden" in rejection.message, rejection.describe()
    others = [c for c in rejection.causes if c.get("field") != path]
    assert not others, (
        f"the pod was also refused for other reasons, so the check proves nothing: {rejection.describe()}"
    )


@pytest.mark.test_id("b3fcc918-53e6-4a73-bf63-ee77f9eb085a")
@pytest.mark.requires("gated-security-fields")  # a gated field's rule: the API server keeping it (a dry run)
@pytest.mark.parametrize("rule", forbidden_fields(), ids=lambda rule: rule.id)
@pytest.mark.documents("k8s-windows-intro", "Security/API")
def test_api_server_forbids_linux_only_security_field_on_windows_pod(kube, make_pod, rule):
    """ "None of the PodSecurityContext fields work on Windows" and SELinux, AppArmor, Seccomp, Capabilities "are not supported" (000_4130a90def37a825.txt, Security/API): the API server forbids each one."""
    body = rule.apply(make_pod(f"forbid-{slug(rule.id)}"))
    created, rejection = kube.submit(body)
    if rejection is None and rule.feature_gate and not rule.present_in(created):
        pytest.skip(
            f"the API server dropped {rule.path} (feature gate {rule.feature_gate} is off), so there is nothing to validate"
        )
    assert_forbidden(rejection, rule.path)


REAL_CREATE = [
    rule for rule in forbidden_fields() if rule.id in ("podSecurityContext.runAsUser", "container.privileged")
]


@pytest.mark.test_id("4ec33506-d32e-4f1b-bd35-9e28c21eb3fe")
@pytest.mark.parametrize("rule", REAL_CREATE, ids=lambda rule: rule.id)
@pytest.mark.documents("k8s-windows-guide", "Security")
def test_real_create_with_forbidden_field_is_refused_and_stores_no_pod(kube, namespace, make_pod, rule):
    """ "RunAsUser is not currently supported on Windows" and "privileged containers are not supported" (002_8a7e76f95009f44f.txt, Security): a real create is refused, not only a dry run."""
    name = f"real-{slug(rule.id)}"
    created, rejection = kube.submit(rule.apply(make_pod(name)), dry_run=False)
    assert_forbidden(rejection, rule.path)
    core = kube.core
    with pytest.raises(ApiException) as missing:
        call(core.read_namespaced_pod, name, namespace)
    assert missing.value.status == 404, f"a refused pod must not be stored: {missing.value.status}"


@pytest.mark.test_id("1fa20d8a-73c5-4fba-8d03-a968898a76d7")
@pytest.mark.documents("k8s-windows-intro", "API")
def test_same_linux_security_fields_are_accepted_for_a_linux_pod(kube, wincon):
    """Linux-only fields are refused because of "spec.os.name: windows", not as such (000_4130a90def37a825.txt, API): a Linux pod may set them all."""
    image = wincon.catalog.image("agnhost", "linux")
    pod = pod_manifest(
        "linux-fields",
        [
            container(
                "main",
                image,
                args=["pause"],
                securityContext={
                    "runAsUser": 1000,
                    "runAsGroup": 3000,
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            )
        ],
        os_name="linux",
        securityContext={
            "runAsUser": 1000,
            "runAsGroup": 3000,
            "fsGroup": 2000,
            "supplementalGroups": [4000],
            "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}],
        },
    )
    created, rejection = kube.submit(pod)
    assert rejection is None, f"a Linux pod with Linux security fields was refused: {rejection.describe()}"
    assert created["spec"]["securityContext"]["runAsUser"] == 1000


LINUX_WINDOWS_OPTIONS = {
    "pod": "spec.securityContext.windowsOptions",
    "container": "spec.containers[0].securityContext.windowsOptions",
    "initContainer": "spec.initContainers[0].securityContext.windowsOptions",
}


@pytest.mark.test_id("46c4365f-c6b0-4d74-936c-5bc484139ecb")
@pytest.mark.parametrize("scope", list(LINUX_WINDOWS_OPTIONS))
@pytest.mark.documents("k8s-windows-intro", 'API "Identity"')
def test_linux_pod_may_not_set_windows_options(kube, wincon, scope):
    """Windows identity is a name in the SAM, not a UID (000_4130a90def37a825.txt, API "Identity"): a Linux pod with windowsOptions is refused."""
    image = wincon.catalog.image("agnhost", "linux")
    options = {"windowsOptions": {"runAsUserName": "ContainerUser"}}
    main = container("main", image, args=["pause"])
    extra = {}
    if scope == "pod":
        extra["securityContext"] = options
    elif scope == "container":
        main["securityContext"] = options
    else:
        extra["initContainers"] = [container("init", image, args=["pause"], securityContext=options)]
    pod = pod_manifest(f"linux-winopts-{scope.lower()}", [main], os_name="linux", **extra)
    # The pod-level case goes through a real create; the others are server-side dry runs (same validation).
    created, rejection = kube.submit(pod, dry_run=scope != "pod")
    assert_forbidden(rejection, LINUX_WINDOWS_OPTIONS[scope], WINDOWS_OPTIONS_ON_LINUX)


@pytest.mark.test_id("9eb9cd36-bbf7-4901-ae91-135e3fec1b25")
@pytest.mark.documents("k8s-windows-guide", "Networking")
def test_api_server_admits_ordinary_windows_pod_with_host_network(kube, make_pod):
    """ "Host networking mode is not available for Windows pods" (002_8a7e76f95009f44f.txt, Networking) is a node-side limitation: the API server itself does not refuse hostNetwork (see hostnetwork-unsupported)."""
    created, rejection = kube.submit(make_pod("hostnet", hostNetwork=True))
    assert rejection is None, f"the API server refused hostNetwork for a Windows pod: {rejection.describe()}"
    assert created["spec"]["hostNetwork"] is True
    assert created["spec"]["os"]["name"] == "windows"
