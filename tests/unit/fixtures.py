"""API objects as real clusters show them, for profile detection tests."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    os_name: str = "windows",
    build: str | None = "10.0.20348",
    kernel: str = "10.0.20348.2655",
    provider: str = "azure:///subscriptions/x/vm/0",
    runtime: str = "containerd://1.7.20+azure",
    ready: bool = True,
    simulated: bool = False,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    labels = {"kubernetes.io/os": os_name, "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name}
    if os_name == "windows" and build:
        labels["node.kubernetes.io/windows-build"] = build
    annotations = {"kwok.x-k8s.io/node": "fake"} if simulated else {}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"providerID": provider, "taints": taints or []},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.240.0.4"}],
            "nodeInfo": {
                "operatingSystem": os_name,
                "kernelVersion": kernel if os_name == "windows" else "6.8.0-1021-azure",
                "containerRuntimeVersion": runtime,
                "kubeletVersion": "v1.34.4",
                "osImage": "Windows Server 2022 Datacenter" if os_name == "windows" else "Ubuntu 22.04.5 LTS",
                "architecture": "amd64",
            },
        },
    }
