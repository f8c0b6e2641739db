"""Volume types Windows pods are documented to support: emptyDir, hostPath, configMap, secret,
projected, downwardAPI, persistentVolumeClaim, and volumes shared or mounted read-only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from wincon.checks.pods import nodes_for, os_pod, run_os_pod, run_os_pods, run_unless_mount_refused
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.cluster.kube import ApiException, Kube
from wincon.clusterinfo.nodes import target_os as os_of
from wincon.commandline.errors import expect_deviation
from wincon.session.fixtures import build_of, make_namespace
from wincon.windows import connectivity as conn
from wincon.windows import forms
from wincon.workloads.deploy import container
from wincon.workloads.sharedpods import SharedPods, parts_to_run

pytestmark = [pytest.mark.storage]

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
# The Linux controls' hostPath: one fixed directory, files named after the test's namespace and removed after.
LINUX_HOST_DIR = "/tmp/wincon-tests"


def mounted_pod(wincon, name, target_os, build, mounts, volumes, node=None, env=None, **spec):
    extra = {"volumeMounts": mounts}
    if env:
        extra["env"] = env
    return os_pod(wincon, name, target_os, build, node=node, container_extra=extra, volumes=volumes, **spec)


def path(target_os: str, *parts: str) -> str:
    """A path in the container: C:\\a\\b on Windows, /a/b on Linux."""
    return "C:\\" + "\\".join(parts) if target_os == "windows" else "/" + "/".join(parts)


# agnhost mounttest on both operating systems (as upstream's volume tests use it): a new file is written with a
# fixed content and read back; a file's content is printed as: content of file "PATH": CONTENT
NEW_FILE = "mount-tester new file"


def write_and_read(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--new-file-0644={file}", f"--file-content={file}"]


def read(file: str) -> list[str]:
    return ["/agnhost", "mounttest", f"--file-content={file}"]


def content(result, file: str) -> str | None:
    """The content mounttest printed for ``file``, stripped; None when it printed none."""
    return conn.mounttest_content(result.stdout or "", file) if result.ok else None


def answered(*pairs) -> bool:
    """mounttest spoke of each (result, file): the documented deviation's own evidence (see expect_deviation)."""
    return all(conn.mounttest_answered(result.stdout or "", file) for result, file in pairs)


def echo_env(target_os: str, variable: str) -> list[str]:
    """busybox's sh on both OSes (busybox-w32 in the Windows images: upstream's conformance tests run ``sh -c``
    in Windows pods with Linux's command lines, test/e2e/common/node/expansion.go:62)."""
    return ["sh", "-c", f"echo ${variable}"]


def empty_dir_pod(wincon, target_os: str, build: int | None, mount_path: str) -> dict:
    """The emptyDir check's pod: an emptyDir at ``mount_path`` (the Linux control's at /cache)."""
    name = "emptydir-bs" if "\\" in mount_path else "emptydir-fs"
    if target_os == "linux":
        mount_path = "/cache"
    return mounted_pod(
        wincon,
        name,
        target_os,
        build,
        [{"name": "cache", "mountPath": mount_path}],
        [{"name": "cache", "emptyDir": {}}],
    )


@pytest.mark.test_id("2c0a8f0f-5078-4881-a22b-15eeceaf31ac")
@pytest.mark.dataplane
@pytest.mark.parametrize("mount_path", ["C:\\cache", "C:/scratch"], ids=["backslash", "forward-slash"])
@pytest.mark.documents("k8s-handbook-windows", "Volume Support")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(empty_dir_pod)
def test_empty_dir_on_disk_is_writable_and_readable(wincon, namespace, build, kube, mount_path, target_os):
    r"""The format for the Volume's path "needs to be mountPath: "C:\\etc\\foo" or mountPath: "C:/etc/foo"" (001_feb1108140134f87.txt, Volume Support): an emptyDir on disk is writable either way.

    Linux control: the same emptyDir written and read at /cache (the spelling is Windows'; the volume is not)."""
    pod = run_os_pod(wincon, namespace, empty_dir_pod(wincon, target_os, build, mount_path))
    if target_os == "linux":
        mount_path = "/cache"
    target = mount_path.replace("/", "\\") + "\\wincon.txt" if target_os == "windows" else "/cache/wincon.txt"
    result = kube.exec(pod.metadata.name, write_and_read(target))
    assert content(result, target) == NEW_FILE, f"{result.stdout} {result.stderr}"


def host_path_pair(wincon, target_os: str, build: int | None, host_path: str, namespace: str) -> list[dict]:
    """The hostPath check's writer and reader, both on the first Ready node of the OS (and build), sharing a
    DirectoryOrCreate hostPath named after the check's namespace (Linux: the fixed LINUX_HOST_DIR); none where no
    such node is Ready (the check skips)."""
    nodes = nodes_for(wincon.profile, target_os, build)
    if not nodes:
        return []
    tag = "bs" if "\\" in host_path else "fs"
    host = host_path.format(ns=namespace) if target_os == "windows" else LINUX_HOST_DIR
    volumes = [{"name": "host", "hostPath": {"path": host, "type": "DirectoryOrCreate"}}]
    mounts = [{"name": "host", "mountPath": path(target_os, "host")}]
    return [
        mounted_pod(wincon, f"hp-{role}-{tag}", target_os, build, mounts, volumes, node=nodes[0].name)
        for role in ("writer", "reader")
    ]


@pytest.mark.test_id("b3a63dac-b08c-41e4-bbcc-427c24ee6916")
@pytest.mark.dataplane
@pytest.mark.parametrize(
    "host_path", ["C:\\wincon-tests\\{ns}-bs", "C:/wincon-tests/{ns}-fs"], ids=["backslash", "forward-slash"]
)
@pytest.mark.documents("k8s-windows-guide", "V1.Pod.volumes")
@pytest.mark.documents("k8s-handbook-windows", "Volume Support")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(host_path_pair)
def test_host_path_directory_or_create_is_shared_by_pods_on_the_node(
    wincon, namespace, build, kube, host_path, target_os
):
    """ "HostPath" volumes work (002_8a7e76f95009f44f.txt, V1.Pod.volumes) with either path spelling (001_feb1108140134f87.txt, Volume Support): a file one pod writes, another pod on the node reads.

    Linux control: the same two pods share the Linux worker's /tmp/wincon-tests, through a file named after the
    namespace, which the reader removes afterwards (the local cluster's workers share this machine's /tmp)."""
    pair = host_path_pair(wincon, target_os, build, host_path, namespace)
    if not pair:
        pytest.skip(f"no Ready {target_os} node")
    node = pair[0]["spec"]["nodeSelector"]["kubernetes.io/hostname"]
    tag = "bs" if "\\" in host_path else "fs"
    # Both pods created before either is waited for: their starts overlap (one pod start's wait, not two).
    writer, reader = run_os_pods(wincon, namespace, pair)
    assert writer.spec.node_name == reader.spec.node_name == node
    shared = path(target_os, "host", "shared.txt" if target_os == "windows" else f"{namespace}-{tag}.txt")
    wrote = kube.exec(writer.metadata.name, write_and_read(shared))
    assert content(wrote, shared) == NEW_FILE, f"{wrote.stdout} {wrote.stderr}"
    seen = kube.exec(reader.metadata.name, read(shared))
    if target_os == "linux":
        kube.exec(reader.metadata.name, ["rm", "-f", shared])
    assert content(seen, shared) == NEW_FILE, f"{seen.stdout} {seen.stderr}"


def config_objects(kube):
    """The 004 example's ConfigMap (special.how=very) and a Secret with a username."""
    core = kube.core
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "special-config"},
        "data": {"special.how": "very"},
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "stringData": {"username": "wincon-user"},
    }
    for body, reader in ((cm, core.read_namespaced_config_map), (secret, core.read_namespaced_secret)):
        try:
            call(reader, body["metadata"]["name"], kube.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            kube.create(body)


SOURCES = {
    "configMap": (
        "special-config",
        "special.how",
        "very",
        "configMapKeyRef",
        {"configMap": {"name": "special-config"}},
    ),
    "secret": ("creds", "username", "wincon-user", "secretKeyRef", {"secret": {"secretName": "creds"}}),
}

# ----------------------------------------------------------------------------- checks that only read
#
# The checks below only READ what a volume of theirs holds, so they share one pod per OS and build
# (wincon.workloads.sharedpods): it mounts the volumes of those of them that run, at the paths a check's own pod
# would use, and each check reads its own file (and its own environment variable) there. If the shared pod cannot
# start, each check falls back to a pod of its own holding only its volume, so its verdict stays its own.

# the part (volume) each reading check reads: configMap and secret by the parameter ``kind``
READERS = {
    "test_service_account_token_is_mounted": "token",
    "test_projected_volume_combines_config_map_secret_downward_api_and_token": "projected",
    "test_downward_api_volume_exposes_labels_and_name": "downward",
}
BY_KIND = "test_config_map_and_secret_as_environment_and_volume"
# a check's own pod (the fallback), by part
OWN_POD = {
    "configMap": "configmap-consumer",
    "secret": "secret-consumer",
    "token": "sa-token",
    "projected": "projected",
    "downward": "downward",
}
# the environment variable each of configMap / secret sets from its key
ENV = {"configMap": "WINCON_CONFIGMAP", "secret": "WINCON_SECRET"}


def reader_part(item: Any) -> str | None:
    """The part a collected item of this module reads, or None where it is not a reading check."""
    name = getattr(item, "originalname", item.name)
    if name == BY_KIND:
        return str(item.callspec.params["kind"])
    return READERS.get(name)


def reader_key(target_os: str, build: int | None) -> tuple[str, int | None]:
    """The shared pod a check uses: one per OS, and per build on Windows (a control's build does not apply)."""
    return (target_os, build if target_os == "windows" else None)


def projected_sources() -> dict[str, Any]:
    return {
        "sources": [
            {"configMap": {"name": "special-config", "items": [{"key": "special.how", "path": "how"}]}},
            {"secret": {"name": "creds", "items": [{"key": "username", "path": "user"}]}},
            {"downwardAPI": {"items": [{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
        ]
    }


DOWNWARD = [
    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
]


def reader_manifest(wincon, name: str, target_os: str, build: int | None, parts: set[str]) -> dict[str, Any]:
    """A pod holding the volumes (and environment) of ``parts``, each at its own path: configMap and secret at
    /configmap and /secret (each with its key's value in its own variable), projected at /all, downwardAPI at
    /info (with the label tier=wincon it shows); the service-account token is mounted in every pod."""
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    env: list[dict[str, Any]] = []
    for part in sorted(parts):
        if part in SOURCES:
            source, key, _, ref, volume = SOURCES[part]
            volumes.append({"name": part.lower(), **volume})
            env.append({"name": ENV[part], "valueFrom": {ref: {"name": source, "key": key}}})
        elif part == "projected":
            volumes.append({"name": "all", "projected": projected_sources()})
        elif part == "downward":
            volumes.append({"name": "info", "downwardAPI": {"items": DOWNWARD}})
        else:
            assert part == "token", f"not a reading check's part: {part}"
    mounts = [{"name": v["name"], "mountPath": path(target_os, v["name"])} for v in volumes]
    body = mounted_pod(wincon, name, target_os, build, mounts, volumes, env=env or None)
    if "downward" in parts:
        body["metadata"]["labels"]["tier"] = "wincon"
    return body


@pytest.fixture(scope="module")
def reader_namespace(request: pytest.FixtureRequest, wincon: Any) -> Iterator[str]:
    """The namespace of the module's shared reading pods (made only when a reading check runs)."""
    yield from make_namespace(request, wincon, "volume-readers")


@pytest.fixture(scope="module")
def reader_pods(request: pytest.FixtureRequest, wincon: Any, reader_namespace: str) -> Iterator[SharedPods]:
    """The shared reading pod of each (OS, build), started when the first reading check of that key asks."""
    setup = Kube(wincon, reader_namespace)  # creates and waits; commands run through each check's own gate

    def key_of(item: Any) -> tuple[str, int | None]:
        return reader_key(os_of(item), build_of(item.nodeid, wincon.profile))

    def start(key: Any, part: str) -> tuple[Any, set[str]]:
        os_name, build = key
        parts = parts_to_run(request.session.items, reader_part, key_of, key) | {part}
        config_objects(setup)
        name = f"readers-{os_name}" + (f"-{build}" if build else "")
        return run_os_pod(wincon, reader_namespace, reader_manifest(wincon, name, os_name, build, parts)), parts

    try:
        yield SharedPods(start)
    finally:
        setup.close()


@pytest.fixture
def reader(
    request: pytest.FixtureRequest,
    wincon: Any,
    namespace: str,
    build: int | None,
    kube: Kube,
    target_os: str,
    data_plane: Callable[..., None],
    reader_pods: SharedPods,
) -> Callable[[str], tuple[Any, Kube]]:
    """``reader(part)`` -> (pod, kube to exec in it through this check's gate): the shared pod of the check's
    OS and build where it started and holds ``part``, else a pod of the check's own holding only ``part``."""

    def get(part: str) -> tuple[Any, Kube]:
        pod = reader_pods.get(reader_key(target_os, build), part)
        if pod is not None:
            shared = Kube(wincon, pod.metadata.namespace, data_plane)
            request.addfinalizer(shared.close)
            return pod, shared
        config_objects(kube)
        return run_os_pod(wincon, namespace, reader_manifest(wincon, OWN_POD[part], target_os, build, {part})), kube

    return get


@pytest.mark.test_id("41e73f68-0cf2-4d75-b894-5b45ed772db9")
@pytest.mark.dataplane
@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("configMap", marks=pytest.mark.limitation("configmap-secret-volumes-pre-1803")),
        pytest.param("secret", marks=pytest.mark.limitation("configmap-secret-volumes-pre-1803")),
    ],
)
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(forms.BUSYBOX_SH_ENV, same_as_control=True)
def test_config_map_and_secret_as_environment_and_volume(reader, target_os, kind):
    """ "ConfigMap, Secrets: as environment variables or volumes" (002_8a7e76f95009f44f.txt, Pods): the value is in the environment and in a file."""
    _, key, value, _, _ = SOURCES[kind]
    pod, kube = reader(kind)
    from_env = kube.exec(pod, echo_env(target_os, ENV[kind]))
    if from_env.ok and not from_env.stdout.strip():
        # A container's environment cannot change: an echo that printed nothing and a second one that prints the
        # value means the first exec's output was lost on its way (seen once in a clean-clone run on a loaded
        # node: exit 0, no stdout, no stderr). Both empty: the variable is empty, and the check fails below.
        from_env = kube.exec(pod, echo_env(target_os, ENV[kind]))
    file = path(target_os, kind.lower(), key)
    from_file = kube.exec(pod, read(file))
    # The value from the environment is not the documented deviation (symlinked volume files are): asserted apart.
    assert from_env.ok and from_env.stdout.strip() == value, f"environment: {from_env.stdout!r} {from_env.stderr}"
    with expect_deviation(
        "configmap-secret-volumes-pre-1803",
        accepts=lambda: answered((from_file, file)),
        deviation="mounttest reports the volume's file missing or different",
    ):
        assert content(from_file, file) == value, f"volume: {from_file.stdout!r} {from_file.stderr}"


@pytest.mark.test_id("0a6579e5-3092-4a45-9457-368cb3523bf5")
@pytest.mark.dataplane
@pytest.mark.limitation("configmap-secret-volumes-pre-1803")
@pytest.mark.documents("k8s-handbook-windows", "Note 2")
@pytest.mark.windows_form(same_as_control=True)
def test_service_account_token_is_mounted(reader, target_os):
    """ "Windows Server 1803 ... fixes issues with Windows container symlinks, allowing ServiceAccount and ConfigMap to function normally" (001_feb1108140134f87.txt, Note 2)."""
    pod, kube = reader("token")
    directory = ("var", "run", "secrets", "kubernetes.io", "serviceaccount")
    ns_file, token_file = path(target_os, *directory, "namespace"), path(target_os, *directory, "token")
    result = kube.exec(pod, read(ns_file))
    token = kube.exec(pod, read(token_file))
    with expect_deviation(
        "configmap-secret-volumes-pre-1803",
        accepts=lambda: answered((result, ns_file), (token, token_file)),
        deviation="mounttest reports the token's files missing or different",
    ):
        assert content(result, ns_file) == pod.metadata.namespace, f"{result.stdout!r} {result.stderr}"
        assert (content(token, token_file) or "").count(".") == 2, f"the token must be a JWT: {token.stderr!r}"


@pytest.mark.test_id("4d86285e-c00f-4801-82f3-598b10e9d206")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-types-limited")
@pytest.mark.documents("k8s-windows-guide", "ConfigMap, Secrets: as volumes")
@pytest.mark.windows_form(same_as_control=True)
def test_projected_volume_combines_config_map_secret_downward_api_and_token(reader, target_os):
    """Projected volumes of ConfigMap, Secret, downward API and token sources (002_8a7e76f95009f44f.txt, ConfigMap, Secrets: as volumes): every source shows in one directory."""
    pod, kube = reader("projected")
    results = {
        file: (kube.exec(pod, read(file)), expected)
        for file, expected in (
            (path(target_os, "all", "how"), "very"),
            (path(target_os, "all", "user"), "wincon-user"),
            (path(target_os, "all", "podname"), pod.metadata.name),
        )
    }
    token_file = path(target_os, "all", "token")
    token = kube.exec(pod, read(token_file))
    with expect_deviation(
        "volume-types-limited",
        accepts=lambda: answered(*((result, file) for file, (result, _) in results.items()), (token, token_file)),
        deviation="mounttest reports a projected file missing or different",
    ):
        for file, (result, expected) in results.items():
            assert content(result, file) == expected, f"{file}: {result.stdout!r} {result.stderr}"
        assert (content(token, token_file) or "").count(".") == 2, "the projected token must be a JWT"


@pytest.mark.test_id("e7a25a77-1752-4fe1-a971-590e6773baf0")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-types-limited")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
def test_downward_api_volume_exposes_labels_and_name(reader, target_os):
    """ "Pod status fields" and metadata reach Windows containers (002_8a7e76f95009f44f.txt, Pods): a downwardAPI volume holds the pod's name and labels."""
    pod, kube = reader("downward")
    name_file, labels_file = path(target_os, "info", "name"), path(target_os, "info", "labels")
    name = kube.exec(pod, read(name_file))
    labels = kube.exec(pod, read(labels_file))
    with expect_deviation(
        "volume-types-limited",
        accepts=lambda: answered((name, name_file), (labels, labels_file)),
        deviation="mounttest reports a downward API file missing or different",
    ):
        assert content(name, name_file) == pod.metadata.name, f"{name.stdout!r} {name.stderr}"
        assert 'tier="wincon"' in (content(labels, labels_file) or ""), f"{labels.stdout!r} {labels.stderr}"


def two_containers_pod(wincon, target_os: str, build: int | None) -> dict:
    """The sharing check's pod: container main mounts an emptyDir at /shared, container second the same at /other."""
    body = mounted_pod(
        wincon,
        "two-containers",
        target_os,
        build,
        [{"name": "shared", "mountPath": path(target_os, "shared")}],
        [{"name": "shared", "emptyDir": {}}],
    )
    first = body["spec"]["containers"][0]
    second = {"name": "shared", "mountPath": path(target_os, "other")}
    pull = {"imagePullPolicy": first["imagePullPolicy"]} if "imagePullPolicy" in first else {}
    body["spec"]["containers"].append(
        container("second", first["image"], args=["pause"], volumeMounts=[second], **pull)
    )
    return body


@pytest.mark.test_id("f5b22662-2694-489f-bd34-a20d2014d913")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
@waves.ahead(two_containers_pod)
def test_volume_is_shared_by_two_containers_of_a_pod(wincon, namespace, build, kube, target_os):
    """ "Single or multiple containers per Pod with process isolation and volume sharing" (002_8a7e76f95009f44f.txt, Pods): what one container writes, the other reads."""
    pod = run_os_pod(wincon, namespace, two_containers_pod(wincon, target_os, build))
    note = path(target_os, "shared", "note.txt")
    wrote = kube.exec(pod.metadata.name, write_and_read(note), container="main")
    assert content(wrote, note) == NEW_FILE, f"{wrote.stdout!r} {wrote.stderr}"
    other = path(target_os, "other", "note.txt")
    seen = kube.exec(pod.metadata.name, read(other), container="second")
    assert content(seen, other) == NEW_FILE, f"{seen.stdout!r} {seen.stderr}"


def read_only_pod(wincon, target_os: str, build: int | None) -> dict:
    """The read-only check's pod: one emptyDir mounted at /rw and, readOnly, at /ro."""
    mounts = [
        {"name": "data", "mountPath": path(target_os, "rw")},
        {"name": "data", "mountPath": path(target_os, "ro"), "readOnly": True},
    ]
    return mounted_pod(wincon, "read-only", target_os, build, mounts, [{"name": "data", "emptyDir": {}}])


@pytest.mark.test_id("1d2251b4-cd79-48a1-8aea-2e20c0afba8a")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(forms.ACCESS_DENIED, same_as_control=True)
@waves.ahead(read_only_pod)
def test_read_only_volume_mount_refuses_writes(wincon, namespace, build, kube, target_os):
    """ "Read-only filesystems are not supported ... However, read-only volumes are supported" (002_8a7e76f95009f44f.txt, Storage): a write to a readOnly mount fails."""
    pod = run_os_pod(wincon, namespace, read_only_pod(wincon, target_os, build))
    allowed = path(target_os, "rw", "allowed.txt")
    writable = kube.exec(pod.metadata.name, write_and_read(allowed))
    assert content(writable, allowed) == NEW_FILE, f"the writable mount of the same volume refused a write: {writable}"
    refused = kube.exec(pod.metadata.name, write_and_read(path(target_os, "ro", "denied.txt")))
    assert not refused.ok, "a write through the readOnly mount succeeded"
    # The OS's own refusal, as Go reports it: ERROR_ACCESS_DENIED on Windows, EROFS on Linux.
    refusal = "Access is denied" if target_os == "windows" else "read-only file system"
    assert refusal in refused.stdout + refused.stderr, f"{refused.stdout!r} {refused.stderr!r}"


def default_storage_class(kube):
    classes = call(kube.storage.list_storage_class).items
    return next((c for c in classes if (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"), None)


def claim_objects(wincon, target_os: str, build: int | None) -> list[dict]:
    """The claim check's PersistentVolumeClaim data (no storageClassName: the default class's), then its pod
    pvc-user mounting it at /data."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    body = mounted_pod(
        wincon,
        "pvc-user",
        target_os,
        build,
        [{"name": "data", "mountPath": path(target_os, "data")}],
        [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    return [claim, body]


@pytest.mark.test_id("f75f284e-9493-4750-b9d6-a2f8899d7e27")
@pytest.mark.dataplane
@pytest.mark.limitation("csi-plugins-need-privileged")
@pytest.mark.documents("sig-windows-intro", "persistentVolumeClaim")
@pytest.mark.documents("k8s-windows-guide", "Storage")
@pytest.mark.windows_form(same_as_control=True)
@pytest.mark.requires("default-storage-class")
@waves.ahead(claim_objects)
def test_persistent_volume_claim_of_the_default_storage_class(wincon, namespace, build, kube, target_os):
    """ "PersistentVolumeClaim" volumes (004_7d0b0aa3086f85ad.txt, persistentVolumeClaim; 002_8a7e76f95009f44f.txt, Storage): a claim of the default StorageClass is written and read back."""
    storage_class = default_storage_class(kube)
    if storage_class is None:
        pytest.skip("the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned")
    claim, body = claim_objects(wincon, target_os, build)
    kube.create(claim)
    if target_os == "windows":
        pod = run_unless_csi_driver_missing(wincon, kube, namespace, body, "data", storage_class.provisioner)
    else:
        pod = run_os_pod(wincon, namespace, body)
    # The pod runs with the claim mounted: a node plugin served the node, so a write that fails now is a failure of
    # its own, never the documented deviation (that is the mount refused above).
    file = path(target_os, "data", f"class-{storage_class.metadata.name}.txt")
    result = kube.exec(pod.metadata.name, write_and_read(file))
    assert content(result, file) == NEW_FILE, f"{result.stdout!r} {result.stderr}"


def run_unless_csi_driver_missing(wincon, kube, namespace: str, body: dict, claim: str, driver: str) -> Any:
    """Create the pod; wait until it runs, or until the kubelet reports that ``driver`` has no node plugin on the
    pod's node: the documented deviation's own evidence (DeviationObserved), once the pod is shown to sit where its
    spec pins it. That is a FailedMount event (events.go:61) about the claim's volume ("MountVolume.SetUp failed" or
    "MountVolume.MountDevice failed" "for volume <its PV>", operation_executor.go:322) carrying the CSI client's
    "driver name <driver> not found in the list of registered CSI drivers" (pkg/volume/csi/csi_client.go:160).
    Any other end (a pod failure, the wait running out) is what ``run_os_pod`` makes of it."""
    missing = f"driver name {driver} not found in the list of registered CSI drivers"
    bound: list[str] = []  # the claim's PV, once bound

    def refusal(message: str) -> bool:
        if not bound:
            volume = call(kube.core.read_namespaced_persistent_volume_claim, claim, namespace).spec.volume_name
            if not volume:
                return False
            bound.append(volume)
        return message.startswith("MountVolume.") and f'for volume "{bound[0]}"' in message and missing in message

    return run_unless_mount_refused(
        wincon, kube, namespace, body, refusal, f"the kubelet found no node plugin of {driver}"
    )


@pytest.mark.test_id("93519d2c-3ab8-43a9-bc9c-b7d2252f048a")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "V1.Pod")
@pytest.mark.windows_form(same_as_control=True)
def test_pod_with_every_documented_volume_type_is_admitted_and_scheduled_on_windows(
    wincon, namespace, build, kube, target_os
):
    """ "V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work and have tests in TestGrid" (000_4130a90def37a825.txt, V1.Pod): a Windows pod using them all (plus projected and downwardAPI) is admitted and placed."""
    config_objects(kube)
    host = f"C:\\wincon-tests\\{namespace}-all" if target_os == "windows" else LINUX_HOST_DIR
    host_file = path(target_os, "vol", "host", "f.txt" if target_os == "windows" else f"{namespace}-all.txt")
    volumes = [
        {"name": "empty", "emptyDir": {}},
        {"name": "host", "hostPath": {"path": host, "type": "DirectoryOrCreate"}},
        {"name": "cm", "configMap": {"name": "special-config"}},
        {"name": "secret", "secret": {"secretName": "creds"}},
        {"name": "info", "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
    ]
    mounts = [{"name": v["name"], "mountPath": path(target_os, "vol", v["name"])} for v in volumes]
    if target_os == "windows":
        mounts[1]["mountPath"] = "C:/vol/host"  # the forward-slash spelling the handbook also allows
    pod = run_os_pod(wincon, namespace, mounted_pod(wincon, "all-volumes", target_os, build, mounts, volumes))
    # "All work": each volume answers from inside the container with what only it can hold (not the stored
    # spec, not a Ready flag, which a simulated node reports too).
    expected = {
        path(target_os, "vol", "empty", "f.txt"): (write_and_read, NEW_FILE),
        host_file: (write_and_read, NEW_FILE),
        path(target_os, "vol", "cm", "special.how"): (read, "very"),
        path(target_os, "vol", "secret", "username"): (read, "wincon-user"),
        path(target_os, "vol", "info", "name"): (read, "all-volumes"),
    }
    for file, (command, text) in expected.items():
        result = kube.exec(pod.metadata.name, command(file))
        assert content(result, file) == text, f"{file}: {result.stdout!r} {result.stderr!r}"
    if target_os == "linux":  # the node's own /tmp: leave no file behind
        kube.exec(pod.metadata.name, ["rm", "-f", host_file])
    token_file = path(target_os, "vol", "proj", "token")
    token = kube.exec(pod.metadata.name, read(token_file))
    assert (content(token, token_file) or "").count(".") == 2, f"{token_file}: no JWT: {token.stderr!r}"
