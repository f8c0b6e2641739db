"""A real node pulls from the authenticated registry through `--image-pull-secret`, and only through it (issue 42
item 4).

Debian's docker-registry with htpasswd authentication (as tests/integration/test_registry_auth.py) listens on the
local cluster's bridge gateway, which its real Linux nodes reach (no packet leaves the machine); each real node's
containerd is told to speak plain HTTP to it by a hosts.toml in its ``certs.d`` (containerd reads that directory at
each pull: the config the local cluster writes names it, wincon/localcluster/dataplane.py), removed afterwards. An
image made here (Debian's static busybox, the local cluster's own test-image shell) is pushed with the password
under a fresh tag, and a pod of it with ``imagePullPolicy: Always`` is created twice, by the suite's own paths:

- through a client with wincon.workloads.pullsecret installed (what ``--image-pull-secret NS/NAME`` does), in a namespace
  created through it: the secret is copied there, the pod names it, and the kubelet's pull succeeds (Running);
- through a plain client in another namespace: the pod names no secret and the pull is refused (ErrImagePull or
  ImagePullBackOff, the registry's 401 in the message).

Skipped unless the cluster under test is wincon's local cluster with its real Linux data plane.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import platform
import secrets
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from kubernetes import client

from tests.integration.test_image_verify_registry import push_blob, push_manifest, serve_registry
from wincon.cluster.namespaces import NamespaceRegistry
from wincon.localcluster import cluster, dataplane
from wincon.workloads import pullsecret

USER, PASSWORD = "wincon", "pull-me-3e9a"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def busybox_layer() -> bytes:
    busybox = Path(shutil.which("busybox") or "/bin/busybox")
    if not busybox.is_file():
        pytest.fail("no busybox: install Debian's busybox-static (`make setup` does)")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("bin/busybox")
        data = busybox.read_bytes()
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def push_sleeper(address: str, repository: str, tag: str, auth: str) -> None:
    """An image whose entrypoint sleeps: one layer (the static busybox), its config and manifest."""
    layer = busybox_layer()
    config = {
        "architecture": ARCH,
        "os": "linux",
        "config": {"Entrypoint": ["/bin/busybox", "sleep", "3600"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    layer_blob = push_blob(address, repository, layer, auth)
    config_blob = push_blob(address, repository, json.dumps(config).encode(), auth)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer_blob}],
    }
    push_manifest(address, repository, tag, manifest, OCI_MANIFEST, auth)


@pytest.fixture(scope="module")
def node_registry(local_cluster_name, linux_api, tmp_path_factory) -> Iterator[str]:
    """The authenticated registry on the cluster's bridge gateway, the real nodes' containerd told to reach it
    over plain HTTP; yields the reference of the image pushed there."""
    if local_cluster_name is None:
        pytest.skip("needs wincon's local cluster: its real nodes' containerd is configured by this test")
    record = cluster._read_record(local_cluster_name) or {}
    plan = dataplane.Plan.from_dict(record["dataplane"])
    root = tmp_path_factory.mktemp("node-registry")
    htpasswd = root / "htpasswd"
    htpasswd.write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=6)).decode()}\n")
    auth = f"auth: {{htpasswd: {{realm: wincon-test, path: {htpasswd}}}}}\n"
    with serve_registry(root, auth, host=plan.gateway) as address:
        tag = f"t{secrets.token_hex(4)}"
        push_sleeper(address, "wincon/sleeper", tag, basic(USER, PASSWORD))
        hosts = [
            dataplane.node_dir(local_cluster_name, n.name) / "containerd" / "certs.d" / address for n in plan.nodes
        ]
        try:
            for directory in hosts:
                directory.mkdir(parents=True, exist_ok=True)
                (directory / "hosts.toml").write_text(
                    f'server = "http://{address}"\n\n[host."http://{address}"]\n  capabilities = ["pull", "resolve"]\n'
                )
            yield f"{address}/wincon/sleeper:{tag}"
        finally:
            for directory in hosts:
                shutil.rmtree(directory, ignore_errors=True)


def sleeper_pod(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pulls-with-credentials"},
        "spec": {
            "os": {"name": "linux"},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "sleeper", "image": image, "imagePullPolicy": "Always"}],
        },
    }


def wait_for(core: Any, namespace: str, want: str, timeout: float = 150) -> Any:
    """The pod once it runs (``want`` "running") or once its pull is refused ("refused"); fails with its state."""
    deadline = time.monotonic() + timeout
    pod = None
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod("pulls-with-credentials", namespace)
        for status in (pod.status.container_statuses or []) if pod.status else []:
            if want == "running" and status.state and status.state.running:
                return pod
            waiting = status.state.waiting if status.state else None
            if want == "refused" and waiting and waiting.reason in ("ErrImagePull", "ImagePullBackOff"):
                return pod
        time.sleep(2)
    pytest.fail(f"the pod in {namespace} is not {want} after {timeout:.0f} s: {pod.status if pod else None}")


def test_a_real_node_pulls_with_the_copied_secret_and_is_refused_without_it(linux_api, kubeconfig, node_registry):
    image = node_registry
    registry = image.split("/", 1)[0]
    run_id = f"pullsecret{secrets.token_hex(3)}"
    plain = NamespaceRegistry(linux_api, run_id, "w0")
    suite_client = cluster._api_client(kubeconfig)  # the suite's own client of the run
    with_secret = NamespaceRegistry(suite_client, run_id, "w1")
    core = client.CoreV1Api(linux_api)
    try:
        home = plain.create("secret-home")  # where the user keeps the secret
        document = {"auths": {registry: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}}
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "regcred"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(json.dumps(document).encode()).decode()},
        }
        core.create_namespaced_secret(home, secret)
        pullsecret.install(suite_client, f"{home}/regcred")

        without = plain.create("pull-without")
        core.create_namespaced_pod(without, sleeper_pod(image))
        refused = wait_for(core, without, "refused")
        assert not refused.spec.image_pull_secrets
        (status,) = refused.status.container_statuses
        events = core.list_namespaced_event(without, field_selector="involvedObject.name=pulls-with-credentials")
        messages = " ".join([status.state.waiting.message or ""] + [e.message or "" for e in events.items])
        assert "401" in messages or "nauthorized" in messages, messages

        within = with_secret.create("pull-with")
        copied = core.read_namespaced_secret("regcred", within)
        assert copied.type == "kubernetes.io/dockerconfigjson" and copied.data == secret["data"]
        client.CoreV1Api(suite_client).create_namespaced_pod(within, sleeper_pod(image))
        running = wait_for(core, within, "running")
        assert [s.name for s in running.spec.image_pull_secrets] == ["regcred"]
        (status,) = running.status.container_statuses
        assert status.image_id and status.ready is not None
    finally:
        with_secret.delete_all()
        plain.delete_all()
        suite_client.close()
