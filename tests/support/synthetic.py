"""Synthetic run histories, for the dashboard's benchmark, its browser tests and a look at the page.

``python -m tests.support.synthetic OUT --runs 100 --tests 300`` writes that many results directories
under OUT (each through :func:`wincon.results.artifacts.write_run`, the same layout as a real run), with
clusters that differ by CNI, Windows build and Kubernetes version, so every view has something to show.
"""

from __future__ import annotations

import argparse
import random
import uuid
from pathlib import Path
from typing import Any

from wincon.results.artifacts import write_run
from wincon.results.model import CaseResult, Verdict
from wincon.session.controls import CLUSTER_WIDE
from wincon.session.verdicts import CONTROL, CONTROL_OUTCOME, INFRASTRUCTURE_PREFIX, NODE, TARGET_OS

AREAS = ("networking", "dns", "storage", "probes", "lifecycle", "controllers", "scheduling", "api")
CLUSTERS = (
    {"cni": "flannel", "cni_backend": "vxlan", "build": 17763, "k8s": "v1.33.5"},
    {"cni": "flannel", "cni_backend": "host-gw", "build": 20348, "k8s": "v1.34.4"},
    {"cni": "azure-cni", "cni_backend": None, "build": 20348, "k8s": "v1.34.4"},
    {"cni": "calico", "cni_backend": "vxlan", "build": 26100, "k8s": "v1.35.0"},
)
OS_VERSIONS = {17763: "ltsc2019", 20348: "ltsc2022", 26100: "ltsc2025"}


def profile(
    k8s: str = "v1.34.4", build: int = 20348, cni: str = "flannel", cni_backend: str | None = "vxlan"
) -> dict[str, Any]:
    """A profile shaped like ``ClusterProfile.to_dict()``: one Linux and two Windows nodes."""
    windows = {
        "os": "windows",
        "arch": "amd64",
        "ready": True,
        "simulated": False,
        "kubelet_version": k8s,
        "kube_proxy_version": k8s,  # nodeInfo.kubeProxyVersion, as kubelets of that era reported it
        "runtime": "containerd",
        "runtime_version": "1.7.20",
        "windows_build": build,
        "os_version": OS_VERSIONS.get(build),
    }
    return {
        "server_version": k8s,
        "k8s_version": k8s.lstrip("v").rsplit(".", 1)[0],
        "windows_builds": [f"10.0.{build}"],
        "windows_os_versions": [OS_VERSIONS.get(build, "")],
        "cni": cni,
        "cni_backend": cni_backend,
        "cni_source": "detected",
        "runtime": "containerd",
        "runtime_version": "1.7.20",
        "kube_proxy_mode": "kernelspace",
        "cloud": "azure" if cni == "azure-cni" else "other",
        "data_plane": True,
        "simulated": False,
        "nodes": [
            {"name": "linux-0", "os": "linux", "arch": "amd64", "ready": True, "simulated": False},
            {"name": "win-0", **windows},
            {"name": "win-1", **windows},
        ],
    }


def case(
    name: str,
    verdict: Verdict,
    *,
    test_id: str | None = None,
    area: str = "networking",
    limitation: str | None = None,
    limitation_title: str = "",
    message: str = "",
    markers: tuple[str, ...] = (),
    doc: str = "000_4130a90def37a825.txt",
    target_os: str | None = None,
    control: str | None = None,
    control_outcome: str | None = None,
    node: str | None = None,
) -> CaseResult:
    """One case as the plugin would record it (properties in the core plugin's names). ``target_os``,
    ``control`` and ``control_outcome`` are the Linux-control properties (see :func:`twins`). ``node``: the node
    its pods ran on; a Windows case that reached a verdict of its own ran on :func:`profile`'s ``win-0`` unless
    told otherwise ("" for none), as the placement check records it on a real run."""
    reached = (Verdict.PASSED, Verdict.FAILED, Verdict.XFAILED, Verdict.XPASSED)
    if node is None:
        node = "win-0" if target_os != "linux" and verdict in reached else ""
    properties = [("test_id", test_id or str(uuid.uuid5(uuid.NAMESPACE_URL, name))), ("area", area), ("doc", doc)]
    if limitation:
        properties += [("limitation", limitation), ("limitation_title", limitation_title or limitation)]
    if target_os == "linux":
        markers = (*markers, "control")
    properties.append(("markers", ",".join(sorted({area, *markers}))))
    if target_os:
        properties.append((TARGET_OS, target_os))
    if node:
        properties.append((NODE, node))
    if control:
        properties.append((CONTROL, control))
    if control_outcome:
        properties.append((CONTROL_OUTCOME, control_outcome))
    if not message:
        message = {
            Verdict.FAILED: "AssertionError: the documented behaviour did not hold",
            Verdict.XPASSED: f"limitation {limitation} appears lifted on this cluster",
            Verdict.XFAILED: f"expected failure: limitation {limitation}: {limitation_title or limitation}",
            Verdict.SKIPPED: "skipped: needs a Ready Linux worker node",
            Verdict.ERROR: "infrastructure error (not a node failure): pod never scheduled",
        }.get(verdict, "")
    return CaseResult(name=name, verdict=verdict, message=message, classname=area, duration=1.5, properties=properties)


def twins(
    name: str, windows: Verdict | None, linux: Verdict | None, *, area: str = "networking", **kw: Any
) -> list[CaseResult]:
    """A check with a Linux control, as the core plugin records them: ``name[linux]`` (its own test id,
    marker ``control``) and ``name[windows]`` (the function's test id, the control's outcome); ``None``
    leaves that twin out of the run (``-m control`` / ``-m "not control"``)."""
    test_id = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    key = f"/repo/{name}[]"
    out = []
    if linux is not None:
        control_id = str(uuid.uuid5(uuid.NAMESPACE_URL, test_id + ":linux-control"))
        message = "AssertionError: no reply" if linux is Verdict.FAILED else ""
        out.append(
            case(
                f"{name}[linux]", linux, test_id=control_id, area=area, target_os="linux", control=key, message=message
            )
        )
    if windows is not None:
        outcome = linux.value if linux is not None else "none"
        message = kw.pop("message", "")
        if windows is Verdict.ERROR and linux is Verdict.FAILED and not message:
            message = f"{INFRASTRUCTURE_PREFIX}: {CLUSTER_WIDE}"
        out.append(
            case(
                f"{name}[windows]",
                windows,
                test_id=test_id,
                area=area,
                target_os="windows",
                control=key,
                control_outcome=outcome,
                message=message,
                **kw,
            )
        )
    return out


def history(root: Path, runs: int = 100, tests: int = 300, seed: int = 7) -> list[Path]:
    """Write ``runs`` runs of ``tests`` tests under ``root`` (as logs/<job>/<build-id>); oldest first."""
    rng = random.Random(seed)
    catalog = []
    for index in range(tests):
        area = AREAS[index % len(AREAS)]
        limitation = f"{area}-limitation-{(index // 10) % 3}" if index % 10 == 0 else None
        catalog.append(
            (f"suites/{area}/test_{area}_{index // len(AREAS):03d}.py::test_behaviour_{index}", area, limitation)
        )
    start = 1_790_000_000
    paths = []
    for r in range(runs):
        cluster = CLUSTERS[r % len(CLUSTERS)]
        cases = []
        for name, area, limitation in catalog:
            applies = limitation is not None and cluster["cni"] != "calico"
            roll = rng.random()
            if applies:
                lifted = cluster["k8s"] >= "v1.34" and limitation.endswith("-0")
                verdict = Verdict.XPASSED if lifted else Verdict.XFAILED
            elif roll < 0.02:
                verdict = Verdict.FAILED
            elif roll < 0.03:
                verdict = Verdict.ERROR
            elif roll < 0.08:
                verdict = Verdict.SKIPPED
            else:
                verdict = Verdict.PASSED
            cases.append(
                case(
                    name,
                    verdict,
                    area=area,
                    limitation=limitation if applies else None,
                    limitation_title=f"{limitation} as documented" if limitation else "",
                    markers=("hybrid",) if name.endswith(("1", "7")) else (),
                )
            )
        failed = any(c.verdict.blocking for c in cases)
        build = start + r * 3600
        path = write_run(
            root / str(build),
            cases,
            start=build,
            result="FAILURE" if failed else "SUCCESS",
            profile=profile(cluster["k8s"], cluster["build"], cluster["cni"], cluster["cni_backend"]),
            run_id=f"synthetic-{r:03d}",
            build_id=str(build),
        )
        paths.append(path)
    return paths


def main() -> None:  # pragma: no cover - a convenience entry point
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tests", type=int, default=300)
    args = parser.parse_args()
    print(f"{len(history(args.out, args.runs, args.tests))} runs under {args.out}")


if __name__ == "__main__":  # pragma: no cover
    main()


# A limitations file in the core plugin's format, for suite runs of the project's own tests: one entry
# that applies to flannel clusters (the default profile), one that applies to Calico clusters only.
LIMITATIONS_YAML = """\
version: 1
limitations:
  - id: icmp-egress-through-vfp
    title: ICMP to destinations outside the cluster network gets no reply
    area: networking
    statement: Outbound ICMP via win-overlay, win-bridge and Azure-CNI is not supported.
    sources: [{file: 000_4130a90def37a825.txt, section: "Limitations"}]
    applies_when: {cni: [flannel]}
    mode: xfail
    note: still stated by the current documentation of this test fixture
  - id: calico-only
    title: A limitation that applies to Calico clusters only
    area: networking
    statement: Only documented for Calico clusters in this test.
    sources: [{file: 002_8a7e76f95009f44f.txt, section: "Limitations"}]
    applies_when: {cni: [calico]}
    mode: xfail
    note: still stated by the current documentation of this test fixture
"""
# pytest arguments that make a suite run of such a workspace without a cluster.
WORKSPACE_ARGS = ["--profile-file", "profile.json", "--limitations", "limitations.yaml", "-p", "no:cacheprovider"]


def workspace(root: Path, suite: str, module: str = "networking/test_flows.py") -> Path:
    """A directory to run a suite in without a cluster: profile.json (flannel, ltsc2022, v1.34.4),
    limitations.yaml (:data:`LIMITATIONS_YAML`) and ``suites/<module>`` holding ``suite``."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    (root / "profile.json").write_text(json.dumps(profile("v1.34.4", 20348, "flannel", "vxlan")))
    (root / "limitations.yaml").write_text(LIMITATIONS_YAML)
    path = root / "suites" / module
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(suite)
    return root
