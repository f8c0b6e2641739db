"""The API server's rules for Windows pods, as data the api suite checks one by one.

Source: kubernetes/kubernetes pkg/apis/core/validation/validation.go (v1.34): ``validateWindows`` (the
securityContext and host-namespace fields a pod with ``spec.os.name: windows`` may not set),
``validateLinux`` (windowsOptions on a Linux pod), ``validateWindowsSecurityContextOptions`` (the
runAsUserName format) and ``validateWindowsHostProcessPod`` (hostProcess needs hostNetwork and every
container hostProcess). The seeds list the same fields as not working on Windows
(000_4130a90def37a825.txt, 002_8a7e76f95009f44f.txt, 003_414b2f1c5dd978a2.txt: "V1.Container",
"V1.Pod", "V1.PodSecurityContext").

The module builds pod bodies with exactly one rule exercised and reads the API server's answer
(a ``Status`` with ``details.causes``), so each check names the field path and the message it expects.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from wincon.cluster import waves
from wincon.cluster.client import call

FORBIDDEN_FOR_WINDOWS = "cannot be set for a windows pod"
WINDOWS_OPTIONS_ON_LINUX = "windows options cannot be set for a linux pod"

# Where a field lives in a v1 Pod, by scope.


@dataclass(frozen=True)
class ForbiddenField:
    """One field the API server forbids for ``spec.os.name: windows``.

    ``value`` is what a Linux workload would typically set. ``feature_gate`` names the gate under
    which the API server silently drops the field when the gate is off (then nothing is validated).
    """

    scope: str
    name: str
    value: Any
    documented: str
    feature_gate: str = ""

    @property
    def id(self) -> str:
        return f"{self.scope}.{self.name}"

    @property
    def path(self) -> str:
        """The field path the API server reports in its cause."""
        return {
            "podSecurityContext": f"spec.securityContext.{self.name}",
            "podSpec": f"spec.{self.name}",
            "container": f"spec.containers[0].securityContext.{self.name}",
            "initContainer": f"spec.initContainers[0].securityContext.{self.name}",
        }[self.scope]

    def apply(self, pod: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``pod`` with this field set (an init container is added for that scope)."""
        body = copy.deepcopy(pod)
        spec = body["spec"]
        if self.scope == "podSecurityContext":
            spec.setdefault("securityContext", {})[self.name] = copy.deepcopy(self.value)
        elif self.scope == "podSpec":
            spec[self.name] = copy.deepcopy(self.value)
        else:
            if self.scope == "initContainer" and not spec.get("initContainers"):
                first = spec["containers"][0]
                spec["initContainers"] = [{"name": "init", "image": first["image"], **_command_of(first)}]
            target = spec["containers" if self.scope == "container" else "initContainers"][0]
            target.setdefault("securityContext", {})[self.name] = copy.deepcopy(self.value)
        return body

    def present_in(self, pod: dict[str, Any]) -> bool:
        """Whether an object the API server returned still carries the field (gated fields may be dropped)."""
        spec = pod.get("spec") or {}
        if self.scope == "podSecurityContext":
            return (spec.get("securityContext") or {}).get(self.name) is not None
        if self.scope == "podSpec":
            return spec.get(self.name) is not None
        containers = spec.get("containers" if self.scope == "container" else "initContainers") or []
        return bool(containers) and (containers[0].get("securityContext") or {}).get(self.name) is not None


def _command_of(container: dict[str, Any]) -> dict[str, Any]:
    return {k: container[k] for k in ("command", "args") if k in container}


_SELINUX = {"level": "s0:c123,c456"}
_SECCOMP = {"type": "RuntimeDefault"}
_APPARMOR = {"type": "RuntimeDefault"}

POD_SECURITY_CONTEXT_FIELDS: tuple[ForbiddenField, ...] = (
    ForbiddenField(
        "podSecurityContext", "seLinuxOptions", _SELINUX, "SELinuxOptions - SELinux is not available on Windows"
    ),
    ForbiddenField("podSecurityContext", "seccompProfile", _SECCOMP, "Seccomp ... not supported"),
    ForbiddenField("podSecurityContext", "appArmorProfile", _APPARMOR, "AppArmor ... not supported"),
    ForbiddenField("podSecurityContext", "fsGroup", 2000, "Volume user-masks and permissions are not available"),
    ForbiddenField(
        "podSecurityContext",
        "fsGroupChangePolicy",
        "OnRootMismatch",
        "Volume user-masks and permissions are not available",
    ),
    ForbiddenField(
        "podSecurityContext",
        "sysctls",
        [{"name": "kernel.shm_rmid_forced", "value": "0"}],
        "Sysctls - these are part of the Linux sysctl interface. There's no equivalent on Windows.",
    ),
    ForbiddenField("podSecurityContext", "runAsUser", 1000, "RunAsUser - provides a UID, not available on Windows"),
    ForbiddenField("podSecurityContext", "runAsGroup", 3000, "RunAsGroup - provides a GID, not available on Windows"),
    ForbiddenField(
        "podSecurityContext",
        "supplementalGroups",
        [4000],
        "SupplementalGroups - provides GID, not available on Windows",
    ),
    ForbiddenField(
        "podSecurityContext",
        "supplementalGroupsPolicy",
        "Strict",
        "SupplementalGroups - provides GID, not available on Windows",
        feature_gate="SupplementalGroupsPolicy",
    ),
    ForbiddenField(
        "podSecurityContext",
        "seLinuxChangePolicy",
        "Recursive",
        "SELinuxOptions - SELinux is not available on Windows",
        feature_gate="SELinuxChangePolicy",
    ),
)

POD_SPEC_FIELDS: tuple[ForbiddenField, ...] = (
    ForbiddenField("podSpec", "hostPID", True, "hostIPC, hostpid - host namespace sharing is not possible on Windows"),
    ForbiddenField("podSpec", "hostIPC", True, "hostIPC, hostpid - host namespace sharing is not possible on Windows"),
    ForbiddenField(
        "podSpec",
        "shareProcessNamespace",
        True,
        "shareProcessNamespace - ... depends on Linux namespaces which are not implemented on Windows",
    ),
    ForbiddenField(
        "podSpec",
        "hostUsers",
        False,
        "Identity - Linux uses userID (UID) and groupID (GID)",
        feature_gate="UserNamespacesSupport",
    ),
)

_CONTAINER_FIELDS: tuple[tuple[str, Any, str, str], ...] = (
    ("seLinuxOptions", _SELINUX, "seLinuxOptions - not possible on Windows, no SELinux", ""),
    ("seccompProfile", _SECCOMP, "Seccomp ... not supported", ""),
    ("appArmorProfile", _APPARMOR, "AppArmor ... not supported", ""),
    ("capabilities", {"add": ["NET_ADMIN"]}, "Capabilities - POSIX capabilities are not implemented on Windows", ""),
    (
        "readOnlyRootFilesystem",
        True,
        "readOnlyRootFilesystem - not possible on Windows, write access is required for registry & system processes",
        "",
    ),
    ("privileged", True, "privileged - Windows doesn't support privileged containers", ""),
    (
        "allowPrivilegeEscalation",
        True,
        "allowPrivilegeEscalation - not possible on Windows, none of the capabilities are hooked up",
        "",
    ),
    ("procMount", "Default", "procMount - Windows doesn't have a /proc filesystem", "ProcMountType"),
    ("runAsUser", 1000, "runAsUser - not possible on Windows, no UID support as int", ""),
    ("runAsGroup", 3000, "runAsGroup - not possible on Windows, no GID support", ""),
)

CONTAINER_FIELDS: tuple[ForbiddenField, ...] = tuple(
    ForbiddenField(scope, name, value, doc, gate)
    for scope in ("container", "initContainer")
    for name, value, doc, gate in _CONTAINER_FIELDS
)


def forbidden_fields() -> tuple[ForbiddenField, ...]:
    """Every field ``validateWindows`` forbids, at every place it can be set."""
    return POD_SECURITY_CONTEXT_FIELDS + POD_SPEC_FIELDS + CONTAINER_FIELDS


def forbidden_paths_in(pod: dict[str, Any]) -> list[str]:
    """The field paths (as the API server names them in its causes) of every field ``validateWindows`` forbids
    that ``pod`` sets, in every container and init container: what a refusal of this very pod may name."""
    spec = pod.get("spec") or {}
    paths: list[str] = []
    context = spec.get("securityContext") or {}
    paths += [f.path for f in POD_SECURITY_CONTEXT_FIELDS if context.get(f.name) is not None]
    paths += [f.path for f in POD_SPEC_FIELDS if spec.get(f.name) is not None]
    for kind in ("containers", "initContainers"):
        for index, each in enumerate(spec.get(kind) or []):
            set_here = each.get("securityContext") or {}
            paths += [
                f"spec.{kind}[{index}].securityContext.{name}"
                for name, *_ in _CONTAINER_FIELDS
                if set_here.get(name) is not None
            ]
    return paths


# --------------------------------------------------------------------------- runAsUserName format


@dataclass(frozen=True)
class UserNameCase:
    """A runAsUserName value and what the API server says of it (``message`` empty: accepted)."""

    label: str
    value: str
    message: str = ""

    @property
    def valid(self) -> bool:
        return not self.message


def _long_domain(length: int) -> str:
    """A DNS-format domain of exactly ``length`` characters: labels of at most 63, joined by dots."""
    labels: list[str] = []
    remaining = length
    while remaining > 0:
        size = min(63, remaining)
        if remaining - size == 1:  # a lone dot cannot end the name: shorten this label by one
            size -= 1
        labels.append("a" * size)
        remaining -= size + 1  # the label and the dot before the next one
    return ".".join(labels)


RUN_AS_USER_NAMES: tuple[UserNameCase, ...] = (
    UserNameCase("container-user", "ContainerUser"),
    UserNameCase("container-administrator", "ContainerAdministrator"),
    UserNameCase("netbios-domain", "NT AUTHORITY\\NETWORK SERVICE"),
    UserNameCase("dns-domain", "contoso.example.com\\svc-web"),
    UserNameCase("user-104-chars", "u" * 104),
    UserNameCase("domain-255-chars", _long_domain(255) + "\\user"),
    UserNameCase("empty", "", "runAsUserName cannot be an empty string"),
    UserNameCase("control-character", "user\x07name", "runAsUserName cannot contain control characters"),
    UserNameCase("two-backslashes", "a\\b\\c", "runAsUserName cannot contain more than one backslash"),
    UserNameCase(
        "domain-256-chars", _long_domain(256) + "\\user", "runAsUserName's Domain length must be under 256 characters"
    ),
    UserNameCase(
        "domain-bad-format", ".contoso\\user", "runAsUserName's Domain doesn't match the NetBios nor the DNS format"
    ),
    UserNameCase("empty-user", "contoso\\", "runAsUserName's User cannot be empty"),
    UserNameCase("user-105-chars", "u" * 105, "runAsUserName's User length must not be longer than 104 characters"),
    UserNameCase("only-dots-and-spaces", ". .", "runAsUserName's User cannot contain only periods or spaces"),
    UserNameCase("forbidden-character", "user@contoso", "runAsUserName's User cannot contain the following characters"),
)


def with_run_as_user_name(pod: dict[str, Any], value: str, scope: str = "podSecurityContext") -> dict[str, Any]:
    body = copy.deepcopy(pod)
    if scope == "podSecurityContext":
        context = body["spec"].setdefault("securityContext", {})
    else:
        context = body["spec"]["containers"][0].setdefault("securityContext", {})
    context.setdefault("windowsOptions", {})["runAsUserName"] = value
    return body


# An account name as `echo %username%` prints it: one word of at most 64 characters, none of " / \\ [ ] : ; | = , + * ?
# < > @ % (characters Windows refuses in a user name; % also catches an unexpanded "%username%"). ContainerUser and
# ContainerAdministrator (22 characters, a built-in account) match; a sentence, an error or two lines do not.
_ACCOUNT_NAME = re.compile(r'[^"/\\\[\]:;|=,+*?<>@%\s]{1,64}')


def is_account_name(output: str) -> bool:
    """Whether ``output`` is one account name and nothing else: positive evidence that the process ran as *some*
    account, so that a different name is the run-as-user deviation while an error, an empty output or an
    unexpanded ``%username%`` is not."""
    return bool(_ACCOUNT_NAME.fullmatch(output.strip()))


def run_as_user_name_path(scope: str = "podSecurityContext") -> str:
    base = "spec.securityContext" if scope == "podSecurityContext" else "spec.containers[0].securityContext"
    return f"{base}.windowsOptions.runAsUserName"


# --------------------------------------------------------------------------- hostProcess

# The API server's refusal of a HostProcess pod where it runs with --allow-privileged=false, as the checks that
# need such a pod admitted look for it (the plan says it from the host-process capability's live dry run,
# wincon.clusterinfo.capabilities.LIVE).
HOST_PROCESS_DISALLOWED = "hostProcess containers are disallowed by cluster policy"


@dataclass(frozen=True)
class HostProcessCase:
    """A hostProcess layout and the cause the API server reports for it (``path`` empty: accepted)."""

    label: str
    pod_host_process: bool | None
    container_host_process: tuple[bool | None, ...]
    host_network: bool
    path: str = ""
    message: str = ""


HOST_PROCESS_CASES: tuple[HostProcessCase, ...] = (
    HostProcessCase(
        "pod-level-without-hostnetwork",
        True,
        (None,),
        False,
        "spec.hostNetwork",
        "hostNetwork must be true if pod contains any hostProcess containers",
    ),
    HostProcessCase(
        "container-level-without-hostnetwork",
        None,
        (True,),
        False,
        "spec.hostNetwork",
        "hostNetwork must be true if pod contains any hostProcess containers",
    ),
    HostProcessCase(
        "one-of-two-containers",
        None,
        (True, None),
        True,
        "spec",
        "If pod contains any hostProcess containers then all containers must be HostProcess containers",
    ),
    HostProcessCase(
        "container-contradicts-pod",
        True,
        (None, False),
        True,
        "spec.containers[1].securityContext.windowsOptions.hostProcess",
        "pod hostProcess value must be identical if both are specified",
    ),
)


def host_process_pod(pod: dict[str, Any], case: HostProcessCase) -> dict[str, Any]:
    """``pod`` laid out as ``case`` says: one container per entry of ``container_host_process``."""
    body = copy.deepcopy(pod)
    spec = body["spec"]
    first = spec["containers"][0]
    spec["containers"] = []
    for index, value in enumerate(case.container_host_process):
        container = copy.deepcopy(first)
        container["name"] = f"c{index}"
        if value is not None:
            container.setdefault("securityContext", {}).setdefault("windowsOptions", {})["hostProcess"] = value
        spec["containers"].append(container)
    if case.pod_host_process is not None:
        spec.setdefault("securityContext", {}).setdefault("windowsOptions", {})["hostProcess"] = case.pod_host_process
    if case.host_network:
        spec["hostNetwork"] = True
    return body


# --------------------------------------------------------------------------- the API server's answer


@dataclass(frozen=True)
class Rejection:
    """The API server's refusal: HTTP status, Status reason and message, and the field causes."""

    status: int
    reason: str
    message: str
    causes: tuple[dict[str, str], ...] = field(default_factory=tuple)

    def cause(self, path: str) -> dict[str, str] | None:
        return next((c for c in self.causes if c.get("field") == path), None)

    def windows_rule_for(self, *paths: str) -> dict[str, str] | None:
        """The API server's own Windows rule refusing one of ``paths``: a 422 Invalid whose cause at that field
        is Forbidden with "cannot be set for a windows pod" (``validateWindows``). None for anything else: another
        field refused by that rule, a webhook's 403 that merely says the same words, Pod Security, a quota."""
        if self.status != 422 or self.reason != "Invalid":
            return None
        for path in paths:
            found = self.cause(path)
            message = (found or {}).get("message", "")
            if found is not None and "Forbidden" in message and FORBIDDEN_FOR_WINDOWS in message:
                return found
        return None

    def describe(self) -> str:
        causes = "; ".join(f"{c.get('field')}: {c.get('message')}" for c in self.causes)
        return f"{self.status} {self.reason}: {self.message}" + (f" [causes: {causes}]" if causes else "")


def rejection_of(exc: ApiException) -> Rejection:
    """Parse an ApiException's Status body; a body that is not a Status keeps its text as the message."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {"message": str(exc.body)}
    details = body.get("details") or {}
    return Rejection(
        status=int(exc.status or 0),
        reason=str(body.get("reason", exc.reason or "")),
        message=str(body.get("message", "")),
        causes=tuple(details.get("causes") or ()),
    )


REJECTED_STATUSES = frozenset({400, 403, 422})


def submit_pod(
    api_client: client.ApiClient, namespace: str, body: dict[str, Any], dry_run: bool = True
) -> tuple[dict[str, Any] | None, Rejection | None]:
    """Create the pod (server-side dry run unless ``dry_run=False``).

    Returns (created object as a dict, None) or (None, Rejection) for a 400/403/422 answer; any other
    error propagates (transient ones are retried).
    """
    if not dry_run:
        made = waves.adopt(namespace, body, waves.POD_CREATE)
        if made is not None:  # made ahead while the checks before this one ran (wincon.cluster.waves.ahead)
            return made.result  # type: ignore[no-any-return]
    core = client.CoreV1Api(api_client)
    kwargs = {"dry_run": "All"} if dry_run else {}
    try:
        created = call(core.create_namespaced_pod, namespace, body, _preload_content=False, **kwargs)
    except ApiException as exc:
        if exc.status in REJECTED_STATUSES:
            return None, rejection_of(exc)
        raise
    return json.loads(created.data), None


# --------------------------------------------------------------------------- resources the API refuses for Windows

# pkg/apis/core/validation/validation.go ValidatePodResize (k8s.io/kubernetes v1.35.4 :6229-6231, the release
# InPlacePodVerticalScaling went GA and locked on; the same line at v1.36.3 :6319, v1.37.2 :6504,
# v1.38.0-beta.0 :6559, and already at v1.34.4 :6067): a resize of a pod whose spec.os.name is windows is one
# Forbidden error at the root path, returned instead of every other resize error. The root path
# field.NewPath("") prints as "[]" (k8s.io/apimachinery v0.36.1 pkg/util/validation/field/path.go:106-114: a
# root without a name prints its empty index), as kubectl shows such refusals: 'The Pod "x" is invalid: []:
# Forbidden: ...'.
WINDOWS_RESIZE_REFUSED = "windows pods cannot be resized"
WINDOWS_RESIZE_PATH = "[]"
# validatePodResources (v1.34.4 :4623, where kubernetes#133046 added it; v1.35.4 :4745, v1.36.3 :4751,
# v1.37.2 :4906, v1.38.0-beta.0 :4904): spec.resources of a pod whose spec.os.name is windows is one Forbidden
# error at spec.resources, returned instead of the field's other errors.
POD_RESOURCES_REFUSED = "may not be set for a windows pod"
POD_RESOURCES_PATH = "spec.resources"


def resize_pod(
    api_client: client.ApiClient, namespace: str, name: str, patch: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, Rejection | None]:
    """Patch the pod's ``resize`` subresource (a JSON patch, as ``kubectl patch --subresource resize`` sends one):
    (the pod as stored, None), or (None, Rejection) for a 400/403/422 answer; any other error propagates."""
    core = client.CoreV1Api(api_client)
    try:
        patched = call(core.patch_namespaced_pod_resize, name, namespace, patch, _preload_content=False)
    except ApiException as exc:
        if exc.status in REJECTED_STATUSES:
            return None, rejection_of(exc)
        raise
    return json.loads(patched.data), None


def only_refusal(rejection: Rejection | None, path: str, message: str) -> str:
    """What is wrong with ``rejection`` as the API server's one Windows refusal: a 422 Invalid whose only cause is
    Forbidden at ``path`` with ``message``; '' where it is exactly that. The check asserts it, so any other answer (accepted, another status, another field or message,
    a second cause) is named in its failure."""
    if rejection is None:
        return "the API server accepted it"
    if rejection.status != 422 or rejection.reason != "Invalid":
        return f"the API server refused it otherwise: {rejection.describe()}"
    wanted = f"Forbidden: {message}"
    matching = [c for c in rejection.causes if c.get("field") == path and c.get("message") == wanted]
    others = [c for c in rejection.causes if c not in matching]
    if not matching:
        return f"no cause {wanted!r} at {path}: {rejection.describe()}"
    if others:
        return f"refused for other reasons too, so the Windows rule alone is not shown: {rejection.describe()}"
    return ""
