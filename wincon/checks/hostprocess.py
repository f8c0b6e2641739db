"""The one HostProcess pod builder of the suites: a Windows pod whose containers run as processes on the node
(``securityContext.windowsOptions.hostProcess``), on the host's network, as a node account (SYSTEM by default).
Kubernetes requires both for a HostProcess pod (k8s.io/kubernetes pkg/apis/core/validation: hostNetwork must be
true, and every container is HostProcess once the pod is)."""

from __future__ import annotations

from typing import Any

from wincon.checks.pods import windows_pod

SYSTEM = "NT AUTHORITY\\SYSTEM"


def as_host_process(body: dict[str, Any], user: str = SYSTEM, restart_policy: str | None = None) -> dict[str, Any]:
    """``body`` (a Windows pod manifest) made a HostProcess pod, in place, and returned: hostNetwork, the pod's
    ``securityContext.windowsOptions`` replaced by hostProcess run as ``user`` (the rest of the pod's security
    context kept), and ``restart_policy`` where the body names none."""
    spec = body["spec"]
    spec["hostNetwork"] = True
    if restart_policy is not None:
        spec.setdefault("restartPolicy", restart_policy)
    spec.setdefault("securityContext", {})["windowsOptions"] = {"hostProcess": True, "runAsUserName": user}
    return body


def host_process_pod(
    wincon: Any,
    name: str,
    build: int | None,
    command: list[str] | None = None,
    *,
    user: str = SYSTEM,
    restart_policy: str | None = "Never",
    image_key: str = "agnhost",
    node: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A HostProcess pod of ``image_key`` running ``command`` (pinned to ``build`` and ``node`` where given), not
    restarted unless ``restart_policy`` or the spec says otherwise: ``windows_pod`` made so by ``as_host_process``."""
    body = windows_pod(wincon, name, build, image_key=image_key, command=command, node=node, **spec)
    return as_host_process(body, user=user, restart_policy=restart_policy)
