"""Benchmark of a whole `wincon run` with and without the Windows pod-latency model (issue 22, item 2).

For each mode (the model off, then on) the local cluster ``--cluster-name`` is started with that topology, ``wincon run``
runs the selection (both phases: the parallel one with ``-n``, then the serial one), and the cluster goes down.
Printed per mode:

* the run's wall time (both phases, from ``wincon run``'s start to its end, cluster start excluded);
* the pods created, counted by the API server (a watch on every pod of the run's namespaces: what a Deployment
  or a Job creates counts too), per OS of the node they were scheduled on, and per area (the suite);
* from the suite's own pod-wait ledger (artifacts/pod-waits.jsonl, wincon.results.podwaits): the pods waited for,
  the time during which some pod was awaited and its share of the wall time, and the critical path: the
  longest chain of waits one after another (per xdist worker, the union of its waits; the largest);
* the outcome counts, so that a ratio of runs that did not run the same checks is seen as such;
* the run's floor under the model and the ratio wall / floor (issue 44). The floor is
  ``S + W`` (wincon.results.podwaits.floor): ``S``, the serial phase's own unavoidable waits, is the sum over the
  serial phase's tests (the waits no xdist worker ran) of each test's longest single pod wait, since those tests
  run one at a time and each, had it created all its pods at once, still waits for its slowest; ``W``, one wave of
  pod starts for the parallel phase, is that phase's longest single pod wait, since had every pod of the phase been
  created at its start the phase would still wait for its slowest. Only pod waits count (the checks' own work and
  pod deletions are not in the ledger), each as long as this run drew it: no run of the same checks with the same
  draws is shorter, and the ratio says how far the run is from overlapping all its waits;
* the ten longest chains of waits (wincon.results.podwaits.chains): per xdist worker and test module, the union of
  the waits that worker made for the module's tests one after another, with the tests on it and each test's own
  waited seconds: the waits a module's wave of pod starts could overlap;
* per phase, its tests' own time in all (JUnit: set-up, call and teardown), for the parallel phase also over its
  workers (the shortest the phase could be with every worker busy to its end), and the ten costliest modules by
  that time: where the checks' own work, not a chain of waits, makes the phase long.

Then the ratios on/off in the same invocation, and the floor with this machine's own work (``own_work_floor_lines``:
the run without the model plus what the model adds to the floor) with the ratio wall / that floor. On the local cluster the Windows nodes are simulated: with the
model their pods take as long as the model draws to become Ready (and to be deleted), then the Windows checks
skip at the data-plane gate (after their pods ran: fixtures.data_plane_gate), so the model adds what a real
cluster's Windows pods would cost in pod start, not the checks' own traffic.

    python bench/bench_run.py [--cluster-name wincon-bench] [--latency p50=30s,p90=54s] [-n 4]
        [--modes off,on] [-- PYTEST_ARGS...]

Without pytest arguments the selection is a representative subset (DEFAULT_SELECTION: the networking pods and
services, the node density checks, the volume types, node selection), named in the output. Exits 0 whatever the figures
(the reader judges), 10 when the cluster cannot start.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.results import podwaits  # noqa: E402

DEFAULT_SELECTION = [
    "suites/networking/test_pod_to_pod.py",
    "suites/networking/test_services.py",
    "suites/node/test_density.py",
    "suites/storage/test_volume_types.py",
    "suites/scheduling/test_node_selection.py",
]


def _existing(selection: list[str]) -> list[str]:
    return [s for s in selection if (REPO / s.split("::")[0]).exists()]


class PodCounter:
    """Every pod the API server saw created while the run went, with the OS of the node it was scheduled on.

    A brief outage of the API server (a restart, a dropped connection) is waited out: every read, and the watch
    after it broke, goes through the suite's retry policy (wincon.cluster.client.retrying: transient errors only,
    at most RETRY_ATTEMPTS tries within RETRY_SECONDS). The client itself keeps urllib3's retries at 1 (the
    suite's policy: tenacity owns retries). A watch resumes from the last version it saw, so pods created during
    the outage are counted; where that version expired (410 Gone), every pod that exists is listed and counted
    (``relisted``: a pod created and deleted in between is missed, and the figures say so). An outage beyond the
    bound ends the watch and ``lost`` says why: the count is incomplete and the figures say that too.
    """

    SYSTEM = ("kube-system", "kube-public", "kube-node-lease", "default")

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client

        from wincon.cluster.client import call, load_api_client

        # load_api_client leaves none of the kubeconfig's embedded credentials in /tmp, however the run ends
        self.api = client.CoreV1Api(load_api_client(kubeconfig))
        self.node_os = {
            n.metadata.name: n.metadata.labels.get("kubernetes.io/os", "") for n in call(self.api.list_node).items
        }
        self.pods: dict[str, tuple[str, str]] = {}  # uid -> (namespace, node)
        self.relisted = 0  # times the watch's version expired and every pod was listed again
        self.lost = ""  # why the watch ended before the run did ("" while it runs or ended with the run)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        listed = call(self.api.list_pod_for_all_namespaces)
        self._before = {pod.metadata.uid for pod in listed.items}  # not created during the run (an add-on's)
        self._version = listed.metadata.resource_version

    def _saw(self, pod: Any) -> None:
        self._version = pod.metadata.resource_version or self._version
        if pod.metadata.namespace in self.SYSTEM or pod.metadata.uid in self._before:
            return
        node = pod.spec.node_name or self.pods.get(pod.metadata.uid, ("", ""))[1]
        self.pods[pod.metadata.uid] = (pod.metadata.namespace, node)

    def _watch_once(self) -> None:
        """Watch from the last version seen for a few seconds; an expired version lists every pod again."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        stream = watch.Watch()
        try:
            for event in stream.stream(
                self.api.list_pod_for_all_namespaces, resource_version=self._version, timeout_seconds=5
            ):
                self._saw(event["object"])
                if self._stop.is_set():
                    break
        except ApiException as exc:
            if exc.status != 410:
                raise
            listed = self.api.list_pod_for_all_namespaces()
            for pod in listed.items:
                self._saw(pod)
            self._version = listed.metadata.resource_version
            self.relisted += 1
        finally:
            stream.stop()

    def _watch(self) -> None:
        from tenacity import stop_any, stop_when_event_set
        from tenacity.stop import stop_base

        from wincon.cluster.client import retrying

        while not self._stop.is_set():
            policy = retrying()
            bound = cast(stop_base, policy.stop)  # the suite's: attempts | delay
            policy = policy.copy(stop=stop_any(bound, stop_when_event_set(self._stop)))
            try:
                policy(self._watch_once)  # each call that ends well starts the next with a fresh bound
            except Exception as exc:  # noqa: BLE001 - beyond the bound, or not transient: the count stops here
                if not self._stop.is_set():
                    self.lost = f"the pod watch ended during the run: {type(exc).__name__}: {exc}"[:300]
                return

    def __enter__(self) -> PodCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def by_os(self) -> Counter[str]:
        return Counter(self.node_os.get(node, "unscheduled") for _, node in self.pods.values())

    def caveat(self) -> str:
        """What the figures miss, if anything: an outage beyond the bound, or versions that expired."""
        notes = [self.lost] if self.lost else []
        if self.relisted:
            notes.append(
                f"the watch's version expired {self.relisted} time(s): pods created and deleted then are missed"
            )
        return "; ".join(notes)


def _area_of_namespace(namespace: str, ledger: list[podwaits.Wait]) -> str:
    areas = {w.area for w in ledger if w.namespace == namespace}
    return sorted(areas)[0] if len(areas) == 1 else ("several" if areas else "(no wait recorded)")


def run_mode(name: str, latency: str | None, workers: int, pytest_args: list[str], timeout: float) -> dict[str, Any]:
    from wincon.localcluster import cluster
    from wincon.localcluster.topology import Topology

    cluster.down(name)
    started = time.monotonic()
    kubeconfig = str(cluster.up(name, Topology(windows_pod_latency=latency), timeout=timeout))
    up_seconds = time.monotonic() - started
    results = Path(tempfile.mkdtemp(prefix=f"bench-run-{'on' if latency else 'off'}-")) / "run"
    command = [sys.executable, "-m", "wincon", "run", "--results-dir", str(results), "-n", str(workers),
               "--no-report", "--kubeconfig", kubeconfig, "--", *pytest_args]  # fmt: skip
    try:
        with PodCounter(kubeconfig) as counter:
            start = time.monotonic()
            proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
            wall = time.monotonic() - start
            time.sleep(1)  # the watch catches up with the last events
        by_os = counter.by_os()
        pod_namespaces = [ns for ns, _ in counter.pods.values()]
    finally:
        cluster.down(name)
    ledger = podwaits.load(results / "artifacts" / podwaits.LEDGER_NAME)
    figures = podwaits.summary(ledger, wall)
    floor = podwaits.floor(ledger)
    per_area: dict[str, Counter[str]] = defaultdict(Counter)
    for namespace, node in counter.pods.values():
        per_area[_area_of_namespace(namespace, ledger)][counter.node_os.get(node, "unscheduled")] += 1
    try:
        finished = json.loads((results / "finished.json").read_text())
    except (OSError, ValueError):
        finished = {}
    return {
        "mode": f"model {latency}" if latency else "no model",
        "up": up_seconds,
        "wall": wall,
        "exit": proc.returncode,
        "created": dict(by_os),
        "created_total": len(pod_namespaces),
        "created_per_area": {k: dict(v) for k, v in sorted(per_area.items())},
        "created_caveat": counter.caveat(),
        "figures": figures,
        "floor": floor,
        "chains": podwaits.chains(ledger, top=10),
        "modules": module_times(results / "artifacts"),
        "workers": workers,
        "verdicts": (finished.get("metadata") or {}).get("verdicts", {}),
        "summary": next((line for line in proc.stdout.splitlines() if line.startswith("wincon run:")), ""),
        "stderr_tail": proc.stderr.strip().splitlines()[-3:],
        "results": str(results),
    }


def show(result: dict[str, Any]) -> None:
    f = result["figures"]
    print(f"\n== {result['mode']} (cluster up {result['up']:.0f} s; results {result['results']})")
    print(f"  wall time of wincon run (both phases): {result['wall']:.1f} s (exit {result['exit']})")
    print(f"  verdicts: {result['verdicts']}  {result['summary']}")
    created = ", ".join(f"{n} {os_name or 'no OS label'}" for os_name, n in sorted(result["created"].items()))
    print(f"  pods created (API server): {result['created_total']} ({created or 'none'})")
    if result.get("created_caveat"):
        print(f"    INCOMPLETE: {result['created_caveat']}")
    for area, counts in result["created_per_area"].items():
        print(f"    {area:<28} " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    print(
        f"  pods waited for (ledger): {f['pods']} ({f['windows_pods']} Windows, {f['linux_pods']} Linux, "
        f"{f['other_pods']} no OS asked) in {f['waits']} waits"
    )
    print(
        f"  some pod awaited during {f['wait_seconds']:.1f} s = {f.get('share', 0):.0%} of the wall time; "
        f"critical path (longest chain of waits one after another) {f['critical_path_seconds']:.1f} s"
    )
    for line in floor_lines(result["wall"], result["floor"], result["chains"]):
        print(line)
    for line in module_lines(result.get("modules", {}), result.get("workers", 1)):
        print(line)


def module_times(artifacts: Path) -> dict[str, dict[str, tuple[float, int]]]:
    """Per phase (the JUnit file's suffix: ``01`` the parallel phase, ``02`` the serial one), per test module, the
    seconds its tests took (pytest's own durations: set-up, call and teardown) and how many there were."""
    import xml.etree.ElementTree as ET

    phases: dict[str, dict[str, tuple[float, int]]] = {}
    for path in sorted(artifacts.glob("junit_*.xml")):
        phase = "serial" if path.stem.endswith("_02") else "parallel"
        modules = phases.setdefault(phase, {})
        for case in ET.parse(path).getroot().iter("testcase"):
            module = (case.get("name") or "?").split("::", 1)[0]  # the name is the test's node id
            seconds, count = modules.get(module, (0.0, 0))
            modules[module] = (seconds + float(case.get("time") or 0), count + 1)
    return phases


def module_lines(phases: dict[str, dict[str, tuple[float, int]]], workers: int, top: int = 10) -> list[str]:
    """Each phase's test time in all (the parallel phase's over its workers too: the shortest it could be with
    every worker busy to its end) and its ``top`` modules by test time."""
    lines = []
    for phase, modules in sorted(phases.items()):
        total = sum(seconds for seconds, _ in modules.values())
        over = f", {total / max(workers, 1):.1f} s per worker over {workers}" if phase == "parallel" else ""
        lines.append(f"  {phase} phase: its tests took {total:.1f} s in all (JUnit){over}; the costliest modules:")
        for module, (seconds, count) in sorted(modules.items(), key=lambda kv: -kv[1][0])[:top]:
            lines.append(f"    {seconds:7.1f} s  {module} ({count} tests)")
    return lines


def floor_lines(wall: float, floor: podwaits.Floor, chains: list[podwaits.Chain]) -> list[str]:
    """The floor, wall / floor and the longest chains of waits, as printed (see the module's docstring)."""
    ratio = f"{wall / floor.seconds:.2f}" if floor.seconds else "n/a (no pod waited for)"
    wave = floor.wave_wait
    lines = [
        f"  floor under the model: {floor.seconds:.1f} s = serial phase {floor.serial_seconds:.1f} s (the longest "
        f"wait of each of its {floor.serial_tests} tests that waited, summed) + one wave of the parallel phase "
        f"{floor.wave_seconds:.1f} s" + (f" ({podwaits.check_of(wave)}: pod {wave.pod})" if wave else ""),
        f"  wall / floor: {ratio}",
        f"  the {len(chains)} longest chains of waits (per worker and module, waits one after another):",
    ]
    for chain in chains:
        lines.append(
            f"    {chain.seconds:7.1f} s  {chain.worker:<5} {chain.module}: {chain.waits} waits, {len(chain.tests)} tests"
        )
        for test, seconds in chain.tests:
            lines.append(f"             {seconds:6.1f} s  {test.split('::', 1)[-1]}")
    return lines


def own_work_floor_lines(on_wall: float, off_wall: float, on_floor: float, off_floor: float) -> list[str]:
    """The floor with this machine's own work, as printed after the ratios on / off: the run without the model
    (its checks' own work, and pods started as fast as this machine starts them) plus what the model adds to the
    floor (``on_floor - off_floor``, never below 0): no run of these checks on this machine under these draws is
    shorter, had it overlapped every wait the model adds. The waits-only floor leaves the checks' own work out, which
    on 2 cores is already several times that floor; this one says how far the run is from overlapping what the
    model adds."""
    floor = off_wall + max(on_floor - off_floor, 0.0)
    ratio = f"{on_wall / floor:.2f}" if floor > 0 else "n/a"
    return [
        f"  floor with this machine's own work: {floor:.1f} s = the run without the model {off_wall:.1f} s + what the "
        f"model adds to the floor {max(on_floor - off_floor, 0.0):.1f} s",
        f"  wall / that floor: {ratio}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(parser, "--cluster-name", deprecated=("--name",), dest="name", default="wincon-bench")
    parser.add_argument("--latency", default="p50=30s,p90=54s")
    parser.add_argument("-n", "--workers", type=int, default=4)
    parser.add_argument("--modes", default="off,on", help="off, on, or off,on (default)")
    parser.add_argument("--timeout", type=float, default=300.0, help="cluster up timeout (s)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures appear as they come
    pytest_args = [a for a in args.pytest_args if a != "--"] or _existing(DEFAULT_SELECTION)
    print(f"selection: {' '.join(pytest_args)}; -n {args.workers}; model: {args.latency}")
    from wincon.commandline.errors import WinconError

    results = []
    for mode in args.modes.split(","):
        try:
            results.append(run_mode(args.name, args.latency if mode == "on" else None, args.workers, pytest_args,
                                    args.timeout))  # fmt: skip
        except WinconError as exc:
            print(exc.render(), file=sys.stderr)
            return 10
        show(results[-1])
    if len(results) == 2:
        off, on = results
        print("\n== ratios, model on / off")
        print(f"  wall time: {on['wall']:.1f} / {off['wall']:.1f} s = {on['wall'] / max(off['wall'], 1e-9):.2f}x")
        for key, label in (("wait_seconds", "time waiting for pods"), ("critical_path_seconds", "critical path")):
            a, b = on["figures"][key], off["figures"][key]
            print(f"  {label}: {a:.1f} / {b:.1f} s = {a / b:.2f}x" if b else f"  {label}: {a:.1f} / {b:.1f} s")
        print(f"  pods created: {on['created_total']} / {off['created_total']}")
        print(f"  floor: {on['floor'].seconds:.1f} / {off['floor'].seconds:.1f} s")
        for line in own_work_floor_lines(on["wall"], off["wall"], on["floor"].seconds, off["floor"].seconds):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
