"""wincon.workloads.imageuse on the real suite files: the catalog images a check's code and fixtures name, as `wincon plan` and
the run read them to apply the image preflight's refusals to a check (docs/verdicts.md, "Images before any pod")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.unit import fakes

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
import os

import pytest

from wincon.workloads.imageuse import images_of
from wincon.workloads.catalog import Catalog

KEYS = [k for k, spec in Catalog.load().images.items() if "windows" in spec.os]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    rows = {item.nodeid: sorted(images_of(item, KEYS) or []) for item in items}
    with open(os.environ["IMAGE_USE_OUT"], "w") as out:
        json.dump(rows, out)
"""

FILES = {
    "cpu": "suites/scheduling/test_cpu_limits.py",
    "density": "suites/node/test_density.py",
    "pod_to_pod": "suites/networking/test_pod_to_pod.py",
    "log_query": "suites/node/test_node_log_query.py",
}


def test_the_images_each_check_names_are_read_from_its_code_and_fixtures(tmp_path):
    (tmp_path / "image_use_probe.py").write_text(PROBE)
    profile = {
        "server_version": "v1.35.4",
        "cni": "azure-cni",
        "nodes": [
            fakes.profile_windows_node("w1", 26100, runtime_version="2.0.4+azure"),
            fakes.profile_linux_node("l1"),
        ],
    }
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    out = tmp_path / "rows.json"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "IMAGE_USE_OUT": str(out)}
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += [*FILES.values(), "-p", "image_use_probe", "--profile-file", str(tmp_path / "profile.json")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = json.loads(out.read_text())

    def of(file: str, name: str) -> list[str]:
        return rows[f"{FILES[file]}::{name}"]

    # windows_pod(..., image_key="busybox"); the Linux branch's os_pod default is agnhost. os_pod's own
    # args=["pause"] (agnhost's subcommand, built into a list) is not the pause image.
    assert of("cpu", "test_cpu_limit_in_either_spelling_holds_a_busy_pod_under_it[windows]") == ["agnhost", "busybox"]
    # os_pod(..., image_key="pause"): pause, and os_pod's default agnhost (every branch counts).
    assert of("density", "test_ten_pods_on_one_windows_node_start_within_the_latency_limits[windows]") == [
        "agnhost",
        "pause",
    ]
    # The client fixture asks request.getfixturevalue("windows_client"), whose module_pods builds the client pod of
    # agnhost plus the nettools container (wincon.network.pods.windows_client_manifest).
    assert of("pod_to_pod", "test_pod_reaches_pod_on_the_same_node_by_ip[windows-http]") == ["agnhost", "nettools"]
    # The node log query reads the kubelet through the API server's node proxy: no pod, no catalog image; its options
    # check runs Get-WinEvent in a windows_pod (the default agnhost) beside it.
    queries = {n.split("::")[1].split("[")[0]: images for n, images in rows.items() if n.startswith(FILES["log_query"])}
    assert queries["test_node_log_query_returns_the_nodes_service_log"] == []
    assert queries["test_node_log_query_options_match_get_winevent_on_the_node"] == ["agnhost"]
