"""The Windows pod-latency model as it behaves (issue 22, item 1); prints figures, asserts nothing.

Starts the all-simulated local cluster ``--cluster-name`` (``--dataplane none``: no real node is needed for this) with
``--windows-pod-latency MODEL``, creates ``--pods`` pods at once on the Windows nodes and as many on the
simulated Linux node, and measures each pod's create -> Ready and delete -> gone (polled every 0.2 s): the
quantiles against the model's, and the Linux pods' (which the model must leave alone). Then ``down``.

    python bench/bench_pod_latency.py [--cluster-name wincon-lat] [--model p50=30s,p90=54s] [--pods 20]

Exits 0 whatever the figures (the reader judges), 10 when the cluster cannot start.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubernetes import client  # noqa: E402

from wincon.commandline.errors import WinconError  # noqa: E402
from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.localcluster import cluster, latency  # noqa: E402
from wincon.localcluster.topology import Topology  # noqa: E402


def _quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return (
        f"min {ordered[0]:.1f}  p50 {statistics.median(ordered):.1f}  p90 {pick(0.9):.1f}  max {ordered[-1]:.1f} s "
        f"(n={len(ordered)})"
    )


def _ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def measure(core: client.CoreV1Api, namespace: str, os_name: str, count: int, timeout: float) -> tuple[list, list]:
    names = [f"{os_name[:3]}-{i}" for i in range(count)]
    created: dict[str, float] = {}
    for name in names:
        body = {
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": {"kubernetes.io/os": os_name},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": "registry.invalid/pause:1"}],
            },
        }
        core.create_namespaced_pod(namespace, body)
        created[name] = time.monotonic()
    ready: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(ready) < len(names) and time.monotonic() < deadline:
        for pod in core.list_namespaced_pod(namespace, label_selector=None).items:
            if pod.metadata.name in created and pod.metadata.name not in ready and _ready(pod):
                ready[pod.metadata.name] = time.monotonic() - created[pod.metadata.name]
        time.sleep(0.2)
    deleted: dict[str, float] = {}
    for name in names:
        core.delete_namespaced_pod(name, namespace)
        deleted[name] = time.monotonic()
    gone: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(gone) < len(names) and time.monotonic() < deadline:
        present = {p.metadata.name for p in core.list_namespaced_pod(namespace).items}
        for name in names:
            if name not in present and name not in gone:
                gone[name] = time.monotonic() - deleted[name]
        time.sleep(0.2)
    return list(ready.values()), list(gone.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(parser, "--cluster-name", deprecated=("--name",), dest="name", default="wincon-lat")
    parser.add_argument("--model", default="p50=30s,p90=54s")
    parser.add_argument("--pods", type=int, default=20)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures appear as they come
    model = latency.LatencyModel.parse(args.model)
    print(
        f"model {args.model}: {model.describe()}; expected p50 {model.quantile(50):.1f} s, p90 {model.quantile(90):.1f} s"
    )
    topology = Topology(dataplane="none", windows_pod_latency=args.model)
    try:
        started = time.monotonic()
        kubeconfig = cluster.up(args.name, topology, timeout=180)
        print(f"up in {time.monotonic() - started:.1f} s")
    except WinconError as exc:
        print(exc.render(), file=sys.stderr)
        return 10
    try:
        api = cluster._api_client(kubeconfig)
        core = client.CoreV1Api(api)
        namespace = f"lat-{uuid.uuid4().hex[:6]}"
        core.create_namespace({"metadata": {"name": namespace}})
        timeout = model.high * 2 + 60
        for os_name in ("windows", "linux"):
            ready, gone = measure(core, namespace, os_name, args.pods, timeout)
            print(f"{os_name} pods created at once: create -> Ready {_quantiles(ready)}")
            print(f"{os_name} pods deleted at once: delete -> gone  {_quantiles(gone)}")
            if len(ready) < args.pods or len(gone) < args.pods:
                print(f"  {args.pods - len(ready)} not Ready, {args.pods - len(gone)} not gone within {timeout:.0f} s")
    finally:
        cluster.down(args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
