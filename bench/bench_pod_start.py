"""Why a pod starts slower inside a framework run (issue 22, item 4): create -> Ready of the same pod in a
namespace that has been there a while against one created just before it, alternated, on a running cluster.

bench_dataplane measured the framework's whole test 0.42 s slower than a bare create and poll of the same pod
(+43 % at a load of 5), and a later look found the framework's create-and-wait itself as fast as the bare one:
the pod took longer to become Ready inside such a run. Each framework test runs in a namespace of its own
(``fresh_namespace``) created right before its pod; the bare loop reuses one. A namespace's first pod needs what
controllers add to a new namespace (the ``default`` ServiceAccount, the ``kube-root-ca.crt`` ConfigMap its
service-account token volume projects): where the pod comes first, the kubelet retries the volume. Modes, each
``--pods`` times, alternated so that the machine's load falls on all alike:

* ``old``: the pod in a namespace created at the start (what the bare loop does);
* ``fresh``: a new namespace, the pod created at once (what a framework test does);
* ``fresh-ready``: a new namespace, the pod created once its ``kube-root-ca.crt`` and ``default`` ServiceAccount
  exist (what the framework could wait for);
* ``fresh-no-token``: a new namespace, the pod created at once without the token volume
  (``automountServiceAccountToken: false``).

Prints the median, min and max per mode and the machine's load. Asserts nothing.

    python bench/bench_pod_start.py --cluster-name wincon-h6b [--pods 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubernetes import client  # noqa: E402

from wincon.commandline.optionnames import add_option  # noqa: E402
from wincon.localcluster import cluster, hints  # noqa: E402

MODES = ("old", "fresh", "fresh-ready", "fresh-no-token")


def ready(core: Any, ns: str, name: str, start: float) -> float:
    while True:
        pod = core.read_namespaced_pod(name, ns)
        if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
            return time.monotonic() - start
        if time.monotonic() - start > 120:
            raise RuntimeError(f"pod {ns}/{name} not Ready after 120 s")
        time.sleep(0.05)


def namespace_ready(core: Any, ns: str) -> float:
    start = time.monotonic()
    while True:
        try:
            core.read_namespaced_config_map("kube-root-ca.crt", ns)
            core.read_namespaced_service_account("default", ns)
            return time.monotonic() - start
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        time.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_option(
        parser,
        "--cluster-name",
        deprecated=("--name",),
        dest="name",
        default=os.environ.get("WINCON_CLUSTER_NAME", "wincon"),
    )
    parser.add_argument("--pods", type=int, default=10)
    args = parser.parse_args()
    api = cluster._api_client(cluster.kubeconfig_path(args.name))
    core = client.CoreV1Api(api)
    image = hints.images(hints.read(api))["agnhost"]
    run = uuid.uuid4().hex[:6]
    made: list[str] = []

    def new_namespace() -> str:
        ns = f"bench-start-{run}-{len(made)}"
        core.create_namespace({"metadata": {"name": ns, "labels": {"wincon-bench": run}}})
        made.append(ns)
        return ns

    old = new_namespace()
    namespace_ready(core, old)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    waits: list[float] = []
    load_before = "/".join(f"{x:.1f}" for x in os.getloadavg())
    try:
        for i in range(args.pods):
            for mode in MODES:
                ns = old if mode == "old" else new_namespace()
                if mode == "fresh-ready":
                    waits.append(namespace_ready(core, ns))
                spec: dict[str, Any] = {
                    "terminationGracePeriodSeconds": 0,
                    "os": {"name": "linux"},
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [{"name": "c", "image": image, "imagePullPolicy": "IfNotPresent", "args": ["pause"]}],
                }
                if mode == "fresh-no-token":
                    spec["automountServiceAccountToken"] = False
                name = f"p-{mode}-{i}"
                start = time.monotonic()
                core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": spec})
                times[mode].append(ready(core, ns, name, start))
                core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    finally:
        for ns in made:
            core.delete_namespace(ns)
        api.close()
    load_after = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"pod create -> Ready, {args.pods} per mode, alternated (load {load_before} -> {load_after}):")
    base = statistics.median(times["old"])
    for mode in MODES:
        t = times[mode]
        med = statistics.median(t)
        print(
            f"  {mode:<15} median {med:.2f} s (min {min(t):.2f}, max {max(t):.2f}); "
            f"{(med - base) / base * 100:+.0f} % against old"
        )
    if waits:
        print(
            f"  fresh-ready's wait for kube-root-ca.crt and the default ServiceAccount: median {statistics.median(waits):.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
