"""LimitRange over Windows pods (operational readiness Core.Scheduling, a case its spec keeps commented out: "Ability
to create and update a LimitRange and ensure that pods adhere to specified LimitRanges"). The LimitRanger
admission plugin's work: it runs for real on any cluster, simulated nodes included. A Windows container without
resources gets the range's defaults; one above the range's maximum is refused; an updated range applies to the
next pod."""

from __future__ import annotations

import pytest

from wincon.checks.api_rules import submit_pod
from wincon.checks.pods import eventually, windows_pod
from wincon.cluster.client import call

pytestmark = [pytest.mark.scheduling]


def limit_range(default_cpu: str, max_cpu: str) -> dict:
    return {
        "metadata": {"name": "windows-limits"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": default_cpu, "memory": "256Mi"},
                    "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                    "max": {"cpu": max_cpu},
                }
            ]
        },
    }


def stored_resources(created: dict) -> dict:
    return created["spec"]["containers"][0].get("resources") or {}


@pytest.mark.test_id("6ab71c3d-6264-4c84-b26e-b2b2cad35593")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.documents("kep-windows-node-support", "What works today")
# Not made ahead (waves.ahead): its pods must be created after the LimitRange it creates first, and none is waited
# for (the check reads what admission stored).
def test_limit_range_defaults_and_maximum_apply_to_windows_pods(kube, wincon, namespace, build):
    """ "Resource limits" are supported for Windows pods (002_8a7e76f95009f44f.txt, Pods; 003_414b2f1c5dd978a2.txt, What works today): a namespace's LimitRange gives a Windows container without resources its defaults, refuses one above its maximum, and an updated range applies to the next pod."""
    call(kube.core.create_namespaced_limit_range, namespace, limit_range("500m", "1"))
    created, rejection = submit_pod(kube.api_client, namespace, windows_pod(wincon, "defaulted", build), dry_run=False)
    assert rejection is None, f"a Windows pod without resources was refused: {rejection.describe()}"
    resources = stored_resources(created)
    assert resources.get("limits") == {"cpu": "500m", "memory": "256Mi"}, resources
    assert resources.get("requests") == {"cpu": "100m", "memory": "128Mi"}, resources

    too_big = windows_pod(wincon, "too-big", build)
    too_big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}
    _, rejection = submit_pod(kube.api_client, namespace, too_big, dry_run=False)
    assert rejection is not None, "a Windows container above the LimitRange's 1 CPU maximum was admitted"
    assert rejection.status == 403 and "maximum cpu usage per Container is 1" in rejection.message, rejection.describe()

    call(kube.core.patch_namespaced_limit_range, "windows-limits", namespace, limit_range("750m", "1"))

    # LimitRanger reads ranges from an informer: the update reaches admission a moment after it is stored.
    def defaulted_after_update() -> str | None:
        created, rejection = submit_pod(kube.api_client, namespace, windows_pod(wincon, "after-update", build))
        assert rejection is None, (
            f"a Windows pod without resources was refused after the update: {rejection.describe()}"
        )
        cpu = stored_resources(created).get("limits", {}).get("cpu")
        seen.append(cpu)
        return cpu if cpu == "750m" else None

    seen: list[str | None] = []
    cpu = eventually(
        defaulted_after_update,
        30,
        "the updated LimitRange's default (750m) applied to the next Windows pod",
        behaviour=True,
        seen=lambda: f"default CPU limits {seen[-3:]}",
    )
    assert cpu == "750m"
