"""Framework benchmarks against the local cluster; prints figures, asserts nothing.

1. Overhead per test: wall time of a test that runs one pinned Windows pod, minus that pod's own
   create-to-Ready latency measured in the same run (target: at most 10 % of the latency).
2. `-n 4` against `-n 1` on 40 independent API-level tests (target: at least 3x).
3. Profile discovery on a cluster of 1000 simulated nodes (target: under 2 s).
4. Peak memory (max RSS) of the runner processes.

Usage: python bench/bench_framework.py [--kubeconfig PATH] [--nodes 1000]
(without --kubeconfig the local cluster `wincon-bench` is started and stopped).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

POD_TEST = """
import time, json, pytest
from wincon.workloads.deploy import container, pod_manifest, run_pod

@pytest.mark.scheduling
@pytest.mark.test_id("{tid}")
def test_pod_{i}(wincon, fresh_namespace, profile):
    node = profile.windows_nodes[0]
    t0 = time.perf_counter()
    run_pod(wincon, fresh_namespace, pod_manifest("p", [container("c", wincon.catalog.image("pause", "windows", node.windows_build))], build=node.windows_build))
    with open("{out}", "a") as f:
        f.write(json.dumps({{"latency": time.perf_counter() - t0}}) + "\\n")
"""

API_TEST = """
import pytest
from wincon.workloads.deploy import container, pod_manifest, run_pod

@pytest.mark.api
@pytest.mark.test_id("{tid}")
def test_api_{i}(wincon, namespace, profile):
    node = profile.windows_nodes[{i} % len(profile.windows_nodes)]
    run_pod(wincon, namespace, pod_manifest("p{i}", [container("c", wincon.catalog.image("pause", "windows", node.windows_build))], build=node.windows_build))
"""


def uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def run_pytest(suites: Path, kubeconfig: str, *extra: str) -> tuple[float, dict]:
    report = suites.parent / f"report-{time.monotonic_ns()}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(suites),
        "--kubeconfig",
        kubeconfig,
        "-q",
        "-p",
        "no:cacheprovider",
        "--results-dir",
        str(suites.parent / "results" / str(time.monotonic_ns())),
        "--durations=0",
        "--junitxml",
        str(report.with_suffix(".xml")),
        *extra,
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-2000:])
        raise SystemExit(f"benchmark run failed with exit {proc.returncode}")
    return elapsed, {"xml": report.with_suffix(".xml")}


def overhead(kubeconfig: str, tmp: Path, count: int = 8) -> None:
    suites = tmp / "overhead" / "suites"
    suites.mkdir(parents=True)
    out = tmp / "latency.jsonl"
    for i in range(count):
        (suites / f"test_o{i}.py").write_text(textwrap.dedent(POD_TEST.format(tid=uid(100 + i), i=i, out=out)))
    _, files = run_pytest(suites, kubeconfig)
    import xml.etree.ElementTree as ET

    cases = ET.parse(files["xml"]).getroot().iter("testcase")
    # The junit time of a test is setup + call + teardown: namespace create, pod, namespace delete.
    test_times = [float(c.get("time", 0)) for c in cases]
    latencies = [json.loads(line)["latency"] for line in out.read_text().splitlines()]
    mean_test = sum(test_times) / len(test_times)
    mean_latency = sum(latencies) / len(latencies)
    over = mean_test - mean_latency
    print(
        f"overhead: {count} tests, mean test {mean_test:.3f}s, mean pod create-to-Ready {mean_latency:.3f}s, "
        f"framework overhead {over:.3f}s = {100 * over / mean_latency:.1f}% of pod latency (target <= 10%)"
    )


def parallel(kubeconfig: str, tmp: Path, count: int = 40) -> None:
    suites = tmp / "parallel" / "suites"
    suites.mkdir(parents=True)
    for i in range(count):
        (suites / f"test_a{i}.py").write_text(textwrap.dedent(API_TEST.format(tid=uid(200 + i), i=i)))
    one, _ = run_pytest(suites, kubeconfig, "-n", "1")
    four, _ = run_pytest(suites, kubeconfig, "-n", "4")
    print(
        f"parallel: {count} API-level tests: -n 1 {one:.1f}s, -n 4 {four:.1f}s, speed-up {one / four:.2f}x (target >= 3x)"
    )


def discovery(kubeconfig: str, nodes: int) -> None:
    from kubernetes import client

    from wincon.cluster.client import load_api_client
    from wincon.clusterinfo.profile import discover

    api = load_api_client(kubeconfig)
    core = client.CoreV1Api(api)
    names = [f"bench-win-{i:04d}" for i in range(nodes)]
    t0 = time.perf_counter()
    for name in names:
        core.create_node(
            {
                "metadata": {
                    "name": name,
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                    "labels": {
                        "kubernetes.io/os": "windows",
                        "node.kubernetes.io/windows-build": "10.0.20348",
                        "type": "kwok",
                    },
                },
                "spec": {"taints": [{"key": "bench", "value": "only", "effect": "NoSchedule"}]},
            }
        )
    created = time.perf_counter() - t0
    try:
        timings = []
        for _ in range(3):
            t1 = time.perf_counter()
            profile = discover(api)
            timings.append(time.perf_counter() - t1)
        print(
            f"discovery: {len(profile.nodes)} nodes ({nodes} added in {created:.1f}s): "
            f"best {min(timings):.2f}s, worst {max(timings):.2f}s of 3 (target < 2 s)"
        )
    finally:
        for name in names:
            try:
                core.delete_node(name)
            except Exception:
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args()
    started = False
    kubeconfig = args.kubeconfig
    if not kubeconfig:
        from wincon.localcluster.cluster import up

        kubeconfig = str(up("wincon-bench"))
        started = True
    try:
        with tempfile.TemporaryDirectory() as tmp:
            overhead(kubeconfig, Path(tmp))
            parallel(kubeconfig, Path(tmp))
            discovery(kubeconfig, args.nodes)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"memory: peak RSS of a runner process {peak:.0f} MiB")
    finally:
        if started:
            from wincon.localcluster.cluster import down

            down("wincon-bench")


if __name__ == "__main__":
    main()
