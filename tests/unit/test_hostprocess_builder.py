"""The one HostProcess pod builder (wincon/checks/hostprocess.py, issue 43, item 3) renders, for every suite that
built its HostProcess pods by hand, the very pod it built before: each former recipe is written out here and
compared with what the suite's code now renders."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.checks import hostprocess
from wincon.checks.pods import windows_pod

SYSTEM = "NT AUTHORITY\\SYSTEM"
WINCON = NS(catalog=NS(image=lambda key, os_name, build: f"registry.example/{key}:{os_name}-{build}"))
COMMAND = ["powershell", "-Command", "hostname"]


def former(body: dict[str, Any], user: str = SYSTEM, restart: str | None = "Never") -> dict[str, Any]:
    """The recipe the suites wrote by hand: hostNetwork, restartPolicy, the pod's securityContext replaced."""
    body["spec"]["hostNetwork"] = True
    if restart is not None:
        body["spec"]["restartPolicy"] = restart
    body["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": user}}
    return body


def test_node_disruptive_and_node_log_query():
    node = NS(name="win-0", windows_build=26100)
    disruptive = suites.load("suites/node/test_disruptive.py")
    before = former(windows_pod(WINCON, "reboot", 26100, image_key="agnhost", command=COMMAND, node="win-0"))
    assert disruptive.host_process_pod(WINCON, "reboot", node, COMMAND) == before
    # node log query (host_get_win_event): the default image, pinned to the node
    before = former(windows_pod(WINCON, "spp-events-on-node", 26100, command=COMMAND, node="win-0"))
    assert hostprocess.host_process_pod(WINCON, "spp-events-on-node", 26100, COMMAND, node="win-0") == before


def test_hyperv_validation_pod():
    before = former(windows_pod(WINCON, "validation-pod", 20348, image_key="busybox", command=COMMAND, node="win-1"))
    after = hostprocess.host_process_pod(WINCON, "validation-pod", 20348, COMMAND, image_key="busybox", node="win-1")
    assert after == before


@pytest.mark.parametrize(
    ("user", "spec"),
    [(SYSTEM, {}), ("wincon-hpc", {}), (SYSTEM, {"restartPolicy": "Always"}), (SYSTEM, {"nodeName": "win-0"})],
)
def test_host_process_in_practice(user, spec):
    module = suites.load("suites/hostprocess/test_host_process_in_practice.py")
    body = windows_pod(WINCON, "hp", 26100, image_key="agnhost", command=COMMAND, **spec)
    before = former(body, user=user, restart=body["spec"].get("restartPolicy", "Never"))
    assert module.host_process_pod(WINCON, "hp", 26100, COMMAND, user=user, **spec) == before


def test_host_process_in_practice_with_volumes_and_container_extra():
    module = suites.load("suites/hostprocess/test_host_process_in_practice.py")
    extra = {"container_extra": {"env": [{"name": "A", "value": "b"}]}, "volumes": [{"name": "v", "emptyDir": {}}]}
    before = former(windows_pod(WINCON, "hp-volumes", 26100, image_key="agnhost", command=COMMAND, **extra))
    assert module.host_process_pod(WINCON, "hp-volumes", 26100, COMMAND, **extra) == before


def test_api_host_process_body_and_pod_security_admission():
    def make_pod(name: str, **spec: Any) -> dict[str, Any]:
        return windows_pod(WINCON, name, 26100, **spec)

    api = suites.load("suites/api/test_host_process.py")
    before = make_pod("hp-valid", hostNetwork=True)
    before["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": SYSTEM}}
    assert api.host_process_body(make_pod, "hp-valid") == before
    psa = suites.load("suites/api/test_pod_security_admission.py")
    before = psa.compliant_windows_pod(make_pod, "psa-host-process")
    before["spec"]["hostNetwork"] = True
    before["spec"]["securityContext"]["windowsOptions"] = {"hostProcess": True, "runAsUserName": SYSTEM}
    after = hostprocess.as_host_process(psa.compliant_windows_pod(make_pod, "psa-host-process"))
    assert after == before and after["spec"]["securityContext"]["runAsNonRoot"] is True


def test_storage_host_process_pod():
    storage = suites.load("suites/storage/test_volume_limitations.py")
    kube = NS(catalog=WINCON.catalog, submit=lambda body: (body, None))
    before = windows_pod(kube, "host-mounter", 26100, node="win-0", command=COMMAND, hostNetwork=True)
    before["spec"]["securityContext"] = {"windowsOptions": {"hostProcess": True, "runAsUserName": SYSTEM}}
    assert storage.host_process_pod(kube, "host-mounter", 26100, "win-0", COMMAND) == before
    assert "restartPolicy" not in before["spec"]


def test_no_suite_builds_a_host_process_pod_by_hand():
    """Outside the builder, no suite of this change sets windowsOptions.hostProcess itself (api_rules'
    validation layouts, helper-owned CPU and networking/probes files aside)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [
        "suites/node/test_disruptive.py",
        "suites/node/test_node_log_query.py",
        "suites/scheduling/test_hyperv_isolation.py",
        "suites/api/test_pod_security_admission.py",
        "suites/api/test_host_process.py",
        "suites/storage/test_volume_limitations.py",
        "suites/hostprocess/test_host_process_in_practice.py",
    ]
    by_hand = [f for f in files if '"hostProcess": True' in (root / f).read_text()]
    assert by_hand == []
