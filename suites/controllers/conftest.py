"""Fixtures of the controllers suite: the Windows build to pin to, and pinned manifests from templates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.pods import pin_template, pin_template_linux
from wincon.workloads.render import render


@pytest.fixture
def pinned(build) -> Callable[..., list[dict[str, Any]]]:
    """``pinned(template, **params)``: the documents of manifests/controllers/<template>.yaml, pod templates
    pinned to Windows and the target build (Services and other kinds unchanged)."""

    def factory(
        template: str, pin_build: bool = True, target_os: str = "windows", **params: Any
    ) -> list[dict[str, Any]]:
        """``target_os="linux"``: a Linux control's manifests (pod templates pinned to Linux instead)."""
        docs = render(f"controllers/{template}.yaml", **params)
        kinds = {"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob"}
        if target_os == "linux":
            return [pin_template_linux(d) if d["kind"] in kinds else d for d in docs]
        return [pin_template(d, build if pin_build else None) if d["kind"] in kinds else d for d in docs]

    return factory
