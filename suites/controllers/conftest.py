"""Fixtures of the controllers suite: the Windows build to pin to, and pinned manifests from templates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks import controllers


@pytest.fixture
def pinned(build) -> Callable[..., list[dict[str, Any]]]:
    """``pinned(template, **params)``: the documents of manifests/controllers/<template>.yaml, pod templates
    pinned to Windows and the target build (Services and other kinds unchanged); ``target_os="linux"``: a Linux
    control's manifests (pod templates pinned to Linux instead). See wincon.checks.controllers.pinned."""

    def factory(
        template: str, pin_build: bool = True, target_os: str = "windows", **params: Any
    ) -> list[dict[str, Any]]:
        return controllers.pinned(template, build, pin_build=pin_build, target_os=target_os, **params)

    return factory
