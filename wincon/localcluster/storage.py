"""The default StorageClass of the local cluster, by kind's own provisioner (rancher/local-path-provisioner).

Built from its Go module (``addons.toml``) and run as a process of the data plane in the first real node's
namespace, as its Deployment's pod would run on a real cluster: it reads the API server through the nodes'
kubeconfig, watches claims of the StorageClass ``standard`` (provisioner ``rancher.io/local-path``, marked as
the cluster's default, ``volumeBindingMode: WaitForFirstConsumer``) and, once the scheduler has chosen a node
for a claim's first pod, creates a helper pod on that node which makes the volume's directory under the node's
own path, then a ``hostPath`` PersistentVolume with node affinity to that node. Deleting the claim makes a
second helper pod remove the directory.

Each real node's path is a directory of the cluster's own under its state directory (``local-path/<node>``),
removed by ``down`` with everything in it; the simulated nodes have none, and the class's allowed topology is
the real nodes, so a pod of a claim is never placed where no volume can be made (a Windows pod on the simulated
nodes is Unschedulable, with the scheduler's reason). The helper pods run the local busybox image (``images.reference``,
``imagePullPolicy: IfNotPresent``), its scripts ``setup``/``teardown`` given by the ConfigMap the provisioner
names. The provisioner neither expands nor offers raw block volumes: the class has no ``allowVolumeExpansion``.

The suite detects it the way it would on any cluster: by the default StorageClass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TextIO

from wincon.commandline.errors import LocalClusterError
from wincon.localcluster import addons, dataplane, images, netns, paths

NAME = "local-path-provisioner"  # its addons.toml entry, process name and log (dataplane root)
PROVISIONER = "rancher.io/local-path"  # its default --provisioner-name, which its claims' StorageClass names
NAMESPACE = "local-path-storage"  # where its helper pods run
CONFIG_MAP = "local-path-config"
SERVICE_ACCOUNT = "local-path-provisioner-service-account"
STORAGE_CLASS = "standard"  # kind's name for its default class
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
HOSTNAME_LABEL = "kubernetes.io/hostname"  # the key of the node affinity the provisioner gives its volumes
DIRNAME = "local-path"  # under the cluster's state directory: one directory per real node
HELPER_CONTAINER = "helper-pod"  # the container name the provisioner reads helper logs from
CMD_TIMEOUT_SECONDS = 60  # how long it waits for a helper pod to succeed
WAITS_FOR = f"{NAME} (the default StorageClass {STORAGE_CLASS})"  # what `up` says it waits for

# The helper pod's scripts (the provisioner mounts them at /script and runs ``/bin/sh /script/<action>``, with
# the volume's directory as seen in the helper pod in $VOL_DIR).
SETUP = 'set -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
TEARDOWN = 'set -eu\nrm -rf "$VOL_DIR"\n'


def binary() -> Path | None:
    """The built local-path-provisioner, or None (``wincon cluster build`` builds it)."""
    return addons.binary(NAME)


def base_dir(cluster: str) -> Path:
    """The cluster's volume directories: one per real node under it."""
    return paths.state_dir(cluster) / DIRNAME


def node_path(cluster: str, node: str) -> Path:
    return base_dir(cluster) / node


def config_dir(cluster: str) -> Path:
    return dataplane.root(cluster) / NAME


def config(plan: dataplane.Plan) -> dict[str, Any]:
    """The provisioner's configuration (its ``config.json`` format): one path per real node, nothing else."""
    return {
        "nodePathMap": [{"node": node.name, "paths": [str(node_path(plan.cluster, node.name))]} for node in plan.nodes],
        "cmdTimeoutSeconds": CMD_TIMEOUT_SECONDS,
    }


def helper_pod() -> dict[str, Any]:
    """The helper pod's template: the provisioner adds the node, volumes, command, environment and arguments."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "helper-pod"},
        "spec": {
            "containers": [
                {"name": HELPER_CONTAINER, "image": images.reference("busybox"), "imagePullPolicy": "IfNotPresent"}
            ]
        },
    }


def storage_class(plan: dataplane.Plan) -> dict[str, Any]:
    """The default class. Its allowed topology is the real nodes (those with a path in ``config``): the
    scheduler then places a claim's first pod on one of them, or reports the pod Unschedulable at once (a
    Windows pod on the simulated nodes), instead of leaving it Pending on a node no volume can be made on."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS, "annotations": {DEFAULT_CLASS: "true"}},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [
            {"matchLabelExpressions": [{"key": HOSTNAME_LABEL, "values": [node.name for node in plan.nodes]}]}
        ],
    }


def objects(plan: dataplane.Plan) -> list[dict[str, Any]]:
    """Its namespace, the helper pods' service account and the ConfigMap of their scripts (the StorageClass,
    which ``up``'s object creation does not know, is created by ``start``)."""
    labels = {"app.kubernetes.io/name": NAME}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": labels},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE, "labels": labels},
            "data": {"setup": SETUP, "teardown": TEARDOWN},
        },
    ]


def args(plan: dataplane.Plan, exe: Path) -> list[str]:
    node = plan.nodes[0]
    kubeconfig = dataplane.node_dir(plan.cluster, node.name) / "kubeconfig"
    cdir = config_dir(plan.cluster)
    return [
        str(exe),
        "start",
        f"--config={cdir / 'config.json'}",  # it reads a file only when the name ends in .json
        f"--helper-pod-file={cdir / 'helperPod.yaml'}",
        f"--kubeconfig={kubeconfig}",
        f"--provisioner-name={PROVISIONER}",
        f"--namespace={NAMESPACE}",
        f"--configmap-name={CONFIG_MAP}",
        f"--service-account-name={SERVICE_ACCOUNT}",
        f"--helper-image={images.reference('busybox')}",  # unused by v0.0.30 (the template names it), required
    ]


def write_config(plan: dataplane.Plan) -> Path:
    """Write its config.json and helper pod template, and make each real node's directory; return their dir."""
    cdir = config_dir(plan.cluster)
    cdir.mkdir(parents=True, exist_ok=True)
    (cdir / "config.json").write_text(json.dumps(config(plan), indent=1) + "\n")
    (cdir / "helperPod.yaml").write_text(json.dumps(helper_pod(), indent=1) + "\n")  # JSON is YAML
    for node in plan.nodes:
        node_path(plan.cluster, node.name).mkdir(parents=True, exist_ok=True)
    return cdir


def _admin_kubeconfig(cluster: str) -> Path:
    return paths.state_dir(cluster) / "kubeconfig"  # cluster.KUBECONFIG_FILE, written before the data plane


def create_storage_class(plan: dataplane.Plan) -> None:
    """Create the default StorageClass (unless it exists) through the cluster's admin kubeconfig."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from wincon.cluster.client import load_kubeconfig

    configuration = client.Configuration()
    load_kubeconfig(str(_admin_kubeconfig(plan.cluster)), None, configuration)  # nothing left in /tmp
    with client.ApiClient(configuration) as api:
        storage = client.StorageV1Api(api)
        try:
            storage.create_storage_class(storage_class(plan), _request_timeout=10)
        except ApiException as exc:
            if exc.status != 409:
                raise


def start(plan: dataplane.Plan, out: TextIO) -> bool:
    """Create the StorageClass and start the provisioner in the first real node's namespace; False (and why)
    where it is not built or there is no real node."""
    exe = binary()
    if exe is None or not plan.nodes:
        why = "no real node" if exe else f"not built ({addons.bin_dir(NAME)}; `wincon cluster build` builds it)"
        print(f"{NAME}: {why}; no default StorageClass", file=out, flush=True)
        return False
    from kubernetes.client.rest import ApiException

    try:
        write_config(plan)
        create_storage_class(plan)
    except (OSError, ValueError, ApiException) as exc:
        print(f"{NAME}: could not be configured ({exc}); no default StorageClass", file=out, flush=True)
        return False
    link = dataplane.link_binary(plan.cluster, NAME, exe)
    node = plan.nodes[0]
    print(
        f"starting {NAME} in {node.name}'s namespace (default StorageClass {STORAGE_CLASS}, volumes under "
        f"{base_dir(plan.cluster)})",
        file=out,
        flush=True,
    )
    ns = netns.netns_name(plan.cluster, node.name)
    # Up once its provision controller logs that it started (after its informers synced and its workers run:
    # sig-storage-lib-external-provisioner v10 controller.Run); it serves no health endpoint.
    ready = {"log": "Started provisioner controller"}
    dataplane._spawn(plan.cluster, ns, NAME, args(plan, link), dataplane.root(plan.cluster) / f"{NAME}.log", ready)
    return True


def default_classes(classes: list[Any]) -> list[Any]:
    """The StorageClasses (client objects) annotated as the cluster's default."""
    return [c for c in classes if (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"]


def available(api: Any) -> bool | None:
    """True once the cluster shows a default StorageClass of this provisioner and the helper pods' ConfigMap
    (what a real cluster shows of it; a claim's round trip is the integration test's)."""
    from kubernetes import client

    classes = client.StorageV1Api(api).list_storage_class(_request_timeout=5).items
    ours = [c for c in default_classes(classes) if c.provisioner == PROVISIONER]
    if not ours:
        return None
    client.CoreV1Api(api).read_namespaced_config_map(CONFIG_MAP, NAMESPACE, _request_timeout=5)
    return True


def status(plan: dataplane.Plan, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """``cluster status --json``'s ``addons["local-path-provisioner"]``."""
    exe = binary()
    started = bool(exe and plan.nodes)
    return {
        "binary": str(exe) if exe else None,  # None: not built (`wincon cluster build`), not started
        "storage_class": STORAGE_CLASS if started else None,
        "provisioner": PROVISIONER if started else None,
        "paths": {n.name: str(node_path(plan.cluster, n.name)) for n in plan.nodes} if started else {},
        "process": next((p for p in processes if p["name"] == NAME), None),
    }


def teardown(cluster: str) -> None:
    """Remove the cluster's volume directories (what helper pods made in them included); raise if any is left.
    Its process is killed with the data plane's, its helper pods and volumes go with the cluster's API."""
    base = base_dir(cluster)
    if not base.exists() and not base.is_symlink():
        return
    if base.is_symlink():
        base.unlink()
    else:
        shutil.rmtree(base, ignore_errors=True)
    if base.exists():
        left = sorted(str(p) for p in base.rglob("*"))[:5]
        raise LocalClusterError(
            f"cluster {cluster}: could not remove {base} ({', '.join(left) or 'the directory itself'})",
            f"check `fuser -m {base}` and `findmnt -R {base}`, then run down again",
        )
