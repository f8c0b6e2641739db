"""Benchmark of the local cluster's real Linux data plane (binaries cached); prints figures, asserts nothing.

1. `up` of the default topology to every node Ready and CoreDNS available (target: under 60 s), and `down`
   (target: under 10 s).
2. A pod's create -> Ready on a real node: median of 20 agnhost pods with a real readiness probe.
3. The framework's overhead per test, as a ratio of the pod latency (target: at most 10 %): a pytest suite
   run (``--wincon``) of N tests that each start one Linux pod through the framework (namespace, pinning,
   wait, cleanup); each test's pytest time (setup + call + teardown) minus its pod's create -> Ready measured
   inside it; and per run, with the run's fixed cost (interpreter, imports, discovery) spread over its tests,
   broken down into the start (process start to the first test), the tests and the end (last test to exit),
   against the floor: an empty pytest run with the plugin loaded and the kubernetes client's CoreV1Api imported.
4. Memory of the whole cluster at rest: the RSS of every control-plane, data-plane and container process,
   summed (highest of 5 samples), after `up` and again after the pods above.

With ``--windows-pod-latency p50=30s,p90=54s`` the cluster runs the Windows pod-latency model (issue 22, item 1)
and the framework's tests, and the bare client's pods they are compared with, start one Windows pod each on the
simulated Windows nodes instead of a Linux pod: the framework's overhead where pods take as long as on real Windows
nodes.

Usage: python bench/bench_dataplane.py [--cluster-name dp-bench] [--pods 20] [--tests 10] [--repo CHECKOUT]
           [--windows-pod-latency SPEC]
Exits 0 whatever the figures (the reader judges), 10 when the cluster cannot be started.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from wincon.commandline.errors import WinconError
from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.localcluster import cluster, dataplane, hints
from wincon.localcluster.topology import Topology
from wincon.workloads.catalog import Catalog
from wincon.workloads.pinning import pin_linux, pin_windows

REPO = Path(__file__).resolve().parents[1]
UP_TARGET, DOWN_TARGET, OVERHEAD_TARGET = 60.0, 10.0, 0.10

POD_TEST = """
import json, time, pytest
from wincon.workloads.deploy import container, pod_manifest, run_pod

@pytest.mark.scheduling
@pytest.mark.test_id("{tid}")
def test_pod_{i}(wincon, fresh_namespace, profile):
    t0 = time.perf_counter()
    image = wincon.catalog.image("agnhost", "{os}")
    spec = container("c", image, args=["pause"])
    spec["imagePullPolicy"] = "IfNotPresent"
    run_pod(wincon, fresh_namespace, pod_manifest("p", [spec], os_name="{os}"))
    with open("{out}", "a") as f:
        f.write(json.dumps({{"test": "test_pod_{i}", "latency": time.perf_counter() - t0}}) + "\\n")
"""


# The bench's own conftest: when the first test starts and the last one ends (wall clock, as the bench's own).
MARKS_CONFTEST = """
import json, time
_marks = {{}}
def pytest_runtest_logstart(nodeid, location):
    _marks.setdefault("first", time.time())
def pytest_runtest_logfinish(nodeid, location):
    _marks["last"] = time.time()
def pytest_unconfigure(config):
    with open("{out}", "w") as f:
        json.dump(_marks, f)
"""
# The floor of any run: the interpreter, pytest with wincon's plugins (inert: not a suite run) and the client,
# frozen as a suite run freezes what its start loaded (so the interpreter's exit costs what a suite run's does).
FLOOR_CONFTEST = """
import gc
import kubernetes.config
from kubernetes import client
client.CoreV1Api
gc.freeze()
"""


def child_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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


def at_rest(name: str, when: str, samples: int = 5) -> None:
    """The whole cluster's RSS (control plane, data plane, containers), sampled once a second: the highest."""
    highest, count = 0.0, 0
    for _ in range(samples):
        time.sleep(1)
        pids = cluster.cluster_pids(name) + dataplane.pids(name)
        if rss_mib(pids) > highest:
            highest, count = rss_mib(pids), len(pids)
    print(f"cluster at rest {when}: RSS {highest:.0f} MiB in total ({count} processes; highest of {samples})")


def pod_latencies(api: object, count: int, image: str, node: str | None, os_name: str = "linux") -> list[float]:
    """Create -> Ready of ``count`` agnhost pods, one after the other, polled every 50 ms.

    With ``node``: netexec pods bound to that node with a real readiness probe. Without: the very pod the
    framework benchmark starts (agnhost pause, no probe, placed by the scheduler on a node of ``os_name``), so
    that the framework's overhead is measured against the same pod started without the framework.
    """
    core = client.CoreV1Api(api)
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        latencies = []
        for i in range(count):
            box: dict = {"name": "c", "image": image, "imagePullPolicy": "IfNotPresent", "args": ["pause"]}
            spec: dict = {"terminationGracePeriodSeconds": 0, "containers": [box]}
            if node:
                spec["nodeName"] = node
                box["args"] = ["netexec", "--http-port=8080"]
                box["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1}
            else:
                spec = pin_windows(spec) if os_name == "windows" else pin_linux(spec)
            pod = {"metadata": {"name": f"p{i}"}, "spec": spec}
            start = time.monotonic()
            core.create_namespaced_pod(ns, pod)
            while True:
                got = core.read_namespaced_pod(f"p{i}", ns)
                if any(c.type == "Ready" and c.status == "True" for c in got.status.conditions or []):
                    break
                if time.monotonic() - start > 180:
                    raise RuntimeError(f"pod p{i} not Ready after 180 s")
                time.sleep(0.05)
            latencies.append(time.monotonic() - start)
            core.delete_namespaced_pod(f"p{i}", ns, grace_period_seconds=0)
        return latencies
    finally:
        core.delete_namespace(ns)


@dataclass
class Overhead:
    """A pytest run of one-pod tests: per test (pytest's setup + call + teardown) and per run (wall / tests)."""

    tests: int
    wall: float  # the whole pytest process: interpreter, imports, discovery, every test
    per_test: list[float]  # each test's setup + call + teardown (junit time)
    latency: list[float]  # each test's pod create -> Ready, measured inside the test
    start: float = 0.0  # process start -> the first test starts (interpreter, imports, plugins, discovery)
    end: float = 0.0  # the last test ends -> the process has exited (session finish, results, interpreter exit)
    cpu: float = 0.0  # CPU seconds of the whole pytest process


def framework_overhead(kubeconfig: Path, tests: int, repo: Path = REPO, os_name: str = "linux") -> Overhead:
    """A pytest run (a suite run: ``--wincon``) of ``tests`` one-pod tests (a pod of ``os_name`` each); each records
    its pod's latency."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "latency.jsonl"
        junit = Path(tmp) / "junit.xml"
        marks = Path(tmp) / "marks.json"
        body = "\n".join(POD_TEST.format(tid=uuid.uuid4(), i=i, out=out, os=os_name) for i in range(tests))
        (Path(tmp) / "test_bench.py").write_text(textwrap.dedent(body))
        (Path(tmp) / "conftest.py").write_text(MARKS_CONFTEST.format(out=marks))
        cmd = [
            sys.executable, "-m", "pytest", tmp, "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--wincon",
            "--kubeconfig", str(kubeconfig), "--rootdir", tmp, "--results-dir", str(Path(tmp) / "results"),
            "--junitxml", str(junit),
        ]  # fmt: skip
        cpu, launched, start = child_cpu(), time.time(), time.monotonic()
        result = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
        wall, exited, cpu = time.monotonic() - start, time.time(), child_cpu() - cpu
        times = json.loads(marks.read_text()) if marks.exists() else {}
        latency = {}
        for line in out.read_text().splitlines() if out.exists() else []:
            record = json.loads(line)
            latency[record["test"]] = record["latency"]
        cases = {c.get("name"): float(c.get("time", 0)) for c in ET.parse(junit).getroot().iter("testcase")}
        if result.returncode != 0 or len(latency) != tests or set(latency) != set(cases):
            raise RuntimeError(
                f"the framework run did not pass all {tests} tests (exit {result.returncode}, {len(latency)} "
                f"latencies):\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
            )
    names = sorted(latency)
    return Overhead(
        tests,
        wall,
        [cases[n] for n in names],
        [latency[n] for n in names],
        start=times["first"] - launched,
        end=exited - times["last"],
        cpu=cpu,
    )


def floor_run(repo: Path = REPO) -> tuple[float, float]:
    """Wall and CPU seconds of an empty pytest run (no test) with wincon's plugins and CoreV1Api imported."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "conftest.py").write_text(FLOOR_CONFTEST)
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            tmp,
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            tmp,
        ]
        cpu, start = child_cpu(), time.monotonic()
        result = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
        wall, cpu = time.monotonic() - start, child_cpu() - cpu
    if result.returncode != 5:  # pytest's "no tests collected": anything else is not the empty run measured
        raise RuntimeError(f"the empty run exited {result.returncode}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(parser, "--cluster-name", deprecated=("--name",), dest="name", default="dp-bench")
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument(
        "--repo", type=Path, default=REPO, help="the checkout whose wincon the framework runs use (before/after)"
    )
    parser.add_argument(
        "--windows-pod-latency",
        metavar="SPEC",
        help="run the Windows pod-latency model (as `wincon cluster up --windows-pod-latency`) and measure the "
        "framework with Windows pods",
    )
    args = parser.parse_args(argv)
    os_name = "windows" if args.windows_pod_latency else "linux"
    stopped = False
    try:
        cluster.down(args.name)
        start = time.monotonic()
        kubeconfig = cluster.up(args.name, Topology(windows_pod_latency=args.windows_pod_latency))
        up = time.monotonic() - start
        print(f"up to every node Ready and CoreDNS available: {up:.1f} s (target {UP_TARGET:.0f} s)", flush=True)
        at_rest(args.name, "after up")
        api = cluster._api_client(kubeconfig)
        image = hints.images(hints.read(api))["agnhost"]
        latencies = pod_latencies(api, args.pods, image, "worker-0")
        print(
            f"pod create -> Ready on a real node (readiness probe, {args.pods} pods): median "
            f"{statistics.median(latencies):.2f} s (min {min(latencies):.2f}, max {max(latencies):.2f})",
            flush=True,
        )
        if os_name == "windows":
            image = Catalog.load().image("agnhost", "windows")  # the suite's own reference (no pull on kwok nodes)
            print(f"framework figures below: Windows pods under the model {args.windows_pod_latency}", flush=True)
        bare_latencies = pod_latencies(api, args.tests, image, None, os_name)
        bare = statistics.median(bare_latencies)
        run = framework_overhead(kubeconfig, args.tests, args.repo, os_name)
        # Per test: pytest's own time of the test (namespace, fixtures, pinning, wait, cleanup) beyond its pod's
        # create -> Ready. Per run: the same with the run's fixed cost (interpreter, imports, cluster discovery)
        # spread over its tests, as any run spreads it.
        over = [t - lat for t, lat in zip(run.per_test, run.latency, strict=True)]
        ratios = [o / lat for o, lat in zip(over, run.latency, strict=True)]
        latency = statistics.median(run.latency)
        print(
            f"framework, per test ({run.tests} one-pod tests): median {statistics.median(run.per_test):.2f} s per test "
            f"against its pod's {latency:.2f} s create -> Ready: overhead median {statistics.median(over):.2f} s = "
            f"{statistics.median(ratios) * 100:.0f} % of the latency (max {max(ratios) * 100:.0f} %; target "
            f"{OVERHEAD_TARGET * 100:.0f} %)",
            flush=True,
        )
        # The pod's latency inside a test is measured around the framework's own create-and-wait: against the
        # same pod without the framework, that wait's share shows too.
        whole = statistics.median(run.per_test) - bare
        print(
            f"framework, per test against the same pod without it ({args.tests} pods, create -> Ready median "
            f"{bare:.2f} s): overhead {whole:.2f} s = {whole / bare * 100:.0f} % (the framework's create-and-wait "
            f"{latency - bare:.2f} s, the rest of the test {statistics.median(over):.2f} s)"
            + (": below zero, so within this machine's noise" if whole < 0 else ""),
            flush=True,
        )
        if os_name == "windows":
            # Under the model each pod's latency is a random draw (sd about 17 s for p50=30s,p90=54s), so two
            # samples of 10 differ by several seconds by chance: compare their means against that sampling noise.
            noise = (
                2
                * (
                    statistics.variance(run.latency) / len(run.latency)
                    + statistics.variance(bare_latencies) / len(bare_latencies)
                )
                ** 0.5
            )
            gap = statistics.mean(run.latency) - statistics.mean(bare_latencies)
            print(
                f"framework, under the model: mean create -> Ready {statistics.mean(run.latency):.2f} s through the "
                f"framework against {statistics.mean(bare_latencies):.2f} s without it: {gap:+.2f} s, "
                + (
                    f"within the two samples' noise (2 standard errors: {noise:.2f} s)"
                    if abs(gap) <= noise
                    else f"beyond the two samples' noise (2 standard errors: {noise:.2f} s)"
                ),
                flush=True,
            )
        per_run = run.wall / run.tests - statistics.mean(run.latency)
        print(
            f"framework, per run: {run.wall:.1f} s for {run.tests} tests = {run.wall / run.tests:.2f} s per test: "
            f"{per_run:.2f} s = {per_run / statistics.mean(run.latency) * 100:.0f} % of the mean latency, the "
            "pytest start and discovery included",
            flush=True,
        )
        tests_wall = run.wall - run.start - run.end
        print(
            f"framework, per run, where the {run.wall:.1f} s went: the start (process start to the first test) "
            f"{run.start:.2f} s, the {run.tests} tests {tests_wall:.2f} s, the end (last test to exit) {run.end:.2f} s; "
            f"the process's CPU {run.cpu:.2f} s",
            flush=True,
        )
        floors = [floor_run(args.repo) for _ in range(3)]
        floor_wall, floor_cpu = statistics.median(w for w, _ in floors), statistics.median(c for _, c in floors)
        budget = OVERHEAD_TARGET * run.tests * statistics.mean(run.latency)
        print(
            f"floor of any run (median of 3): an empty pytest run with wincon's plugins and CoreV1Api imported "
            f"{floor_wall:.2f} s ({floor_cpu:.2f} s CPU), against the {budget:.2f} s a {run.tests}-test run may spend "
            f"beyond its pods at the {OVERHEAD_TARGET * 100:.0f} % target",
            flush=True,
        )
        api.close()
        at_rest(args.name, "after the pods above (their deletion requested)")
        start = time.monotonic()
        cluster.down(args.name)
        stopped = True
        print(f"down: {time.monotonic() - start:.2f} s (target {DOWN_TARGET:.0f} s)", flush=True)
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    finally:
        if not stopped:
            cluster.down(args.name)  # also after any other failure: no cluster left running
    return 0


if __name__ == "__main__":
    sys.exit(main())
