"""Fixtures of the controllers suite: the Windows build to pin to, and pinned manifests from templates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wincon.checks.controllers import metrics_api_available, metrics_api_installed
from wincon.checks.pods import pin_template, pin_template_linux
from wincon.context import get_context
from wincon.kube import Kube
from wincon.nodes import is_control
from wincon.workloads.render import render

# Checks that need the resource metrics API (metrics-server): where the cluster does not register it, they (and
# their Linux controls) are marked skipped at collection with the reason the test gives, so wincon plan agrees
# with the run; where it is registered but not Available, they run and end in an error naming its condition.
NEEDS_METRICS = {"test_hpa_scales_a_windows_deployment_under_cpu_load"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Against a live cluster (not a profile file, not lint): the metrics API looked up once. A failed look-up
    leaves the decision to the test."""
    context = get_context(config)
    if context is None or config.getoption("wincon_profile_file", None):
        return
    needing = [item for item in items if getattr(item, "originalname", item.name) in NEEDS_METRICS]
    if not needing:
        return
    # The Linux controls deploy upstream's resource-consumer image: where the Linux nodes carry no such image
    # (the local cluster's pull nothing), the test skips when it asks the catalog; say so at collection too.
    no_consumer = context.catalog.linux_missing("resource-consumer")
    if no_consumer:
        for item in filter(is_control, needing):
            item.add_marker(pytest.mark.skip(reason=no_consumer))
    try:
        kube = Kube(context, "default")
        missing = metrics_api_available(kube)  # a cluster-scoped read; no gate, no exec
        # Registered but not Available: the cluster failing, which the test reports as an error with the
        # APIService's own condition; only a cluster without the API at all skips.
        if missing and metrics_api_installed(kube):
            return
    except Exception:
        return
    if missing:
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=f"HPA scaling needs the resource metrics API: {missing}"))


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
