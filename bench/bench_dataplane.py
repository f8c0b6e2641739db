"""Benchmark of the local cluster's real Linux data plane (binaries cached); prints figures, asserts nothing.

1. `up` of the default topology to every node Ready and CoreDNS available (target: under 60 s), and `down`
   (target: under 10 s).
2. A pod's create -> Ready on a real node: median of 20 agnhost pods with a real readiness probe.
3. The framework's overhead per test, as a ratio of that latency (target: at most 10 %): a pytest run of N
   suite-style tests that each start one pod through the framework (namespace, pinning, wait, cleanup),
   minus the pods' own create -> Ready latency measured inside the same tests.
4. Peak memory of the whole cluster at rest: the RSS of every control-plane and data-plane process, summed.

Usage: python bench/bench_dataplane.py [--name dp-bench] [--pods 20]
Exits 0 whatever the figures (the reader judges), 10 when the cluster cannot be started.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

from kubernetes import client

from wincon.errors import WinconError
from wincon.localcluster import cluster, dataplane, hints

REPO = Path(__file__).resolve().parents[1]
UP_TARGET, DOWN_TARGET, OVERHEAD_TARGET = 60.0, 10.0, 0.10

POD_TEST = """
import json, time, pytest
from wincon.workloads.deploy import container, pod_manifest, run_pod

@pytest.mark.scheduling
@pytest.mark.test_id("{tid}")
def test_pod_{i}(wincon, fresh_namespace, profile):
    t0 = time.perf_counter()
    image = wincon.catalog.image("agnhost", "linux")
    spec = container("c", image, args=["pause"])
    spec["imagePullPolicy"] = "IfNotPresent"
    run_pod(wincon, fresh_namespace, pod_manifest("p", [spec], os_name="linux"))
    with open("{out}", "a") as f:
        f.write(json.dumps({{"latency": time.perf_counter() - t0}}) + "\\n")
"""


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def pod_latencies(api: object, count: int, image: str, node: str) -> list[float]:
    core = client.CoreV1Api(api)
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        latencies = []
        for i in range(count):
            pod = {
                "metadata": {"name": f"p{i}"},
                "spec": {
                    "nodeName": node,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "c",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "args": ["netexec", "--http-port=8080"],
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1},
                        }
                    ],
                },
            }
            start = time.monotonic()
            core.create_namespaced_pod(ns, pod)
            while True:
                got = core.read_namespaced_pod(f"p{i}", ns)
                if any(c.type == "Ready" and c.status == "True" for c in got.status.conditions or []):
                    break
                if time.monotonic() - start > 120:
                    raise RuntimeError(f"pod p{i} not Ready after 120 s")
                time.sleep(0.05)
            latencies.append(time.monotonic() - start)
            core.delete_namespaced_pod(f"p{i}", ns, grace_period_seconds=0)
        return latencies
    finally:
        core.delete_namespace(ns)


def framework_overhead(kubeconfig: Path, tests: int) -> tuple[float, float]:
    """(wall time per test, pod latency per test) of a pytest run of ``tests`` one-pod tests."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "latency.jsonl"
        body = "\n".join(POD_TEST.format(tid=uuid.uuid4(), i=i, out=out) for i in range(tests))
        (Path(tmp) / "test_bench.py").write_text(textwrap.dedent(body))
        (Path(tmp) / "conftest.py").write_text("")
        start = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                tmp,
                "-q",
                "-p",
                "no:randomly",
                "--kubeconfig",
                str(kubeconfig),
                "-p",
                "no:cacheprovider",
                "--rootdir",
                tmp,
            ],  # fmt: skip
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - start
        if result.returncode != 0:
            raise RuntimeError(f"the framework run failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
        latencies = [json.loads(line)["latency"] for line in out.read_text().splitlines()]
    return wall / tests, statistics.mean(latencies)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", default="dp-bench")
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--tests", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        cluster.down(args.name)
        start = time.monotonic()
        kubeconfig = cluster.up(args.name)
        up = time.monotonic() - start
        print(f"up to every node Ready and CoreDNS available: {up:.1f} s (target {UP_TARGET:.0f} s)", flush=True)
        time.sleep(5)  # at rest
        pids = cluster.cluster_pids(args.name) + dataplane.pids(args.name)
        print(f"cluster at rest: {len(pids)} processes, RSS {rss_mib(pids):.0f} MiB in total", flush=True)
        api = cluster._api_client(kubeconfig)
        image = hints.images(hints.read(api))["agnhost"]
        latencies = pod_latencies(api, args.pods, image, "worker-0")
        print(
            f"pod create -> Ready on a real node (readiness probe, {args.pods} pods): median "
            f"{statistics.median(latencies):.2f} s (min {min(latencies):.2f}, max {max(latencies):.2f})",
            flush=True,
        )
        per_test, latency = framework_overhead(kubeconfig, args.tests)
        # The run's fixed cost (interpreter, plugin, discovery) is spread over the tests like any run's.
        overhead = (per_test - latency) / latency
        print(
            f"framework: {per_test:.2f} s per one-pod test against a pod latency of {latency:.2f} s: overhead "
            f"{overhead * 100:.0f} % of the latency (target {OVERHEAD_TARGET * 100:.0f} %)",
            flush=True,
        )
        api.close()
        start = time.monotonic()
        cluster.down(args.name)
        print(f"down: {time.monotonic() - start:.2f} s (target {DOWN_TARGET:.0f} s)", flush=True)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        cluster.down(args.name)
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
