"""Volume types Windows pods are documented to support: emptyDir, hostPath, configMap, secret,
projected, downwardAPI, persistentVolumeClaim, and volumes shared or mounted read-only."""

from __future__ import annotations

import pytest

from wincon.checks.pods import run_windows_pod, windows_nodes_of_build, windows_pod
from wincon.cluster.client import call
from wincon.errors import expect_deviation
from wincon.kube import ApiException
from wincon.workloads.deploy import container

pytestmark = [pytest.mark.storage]

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def mounted_pod(wincon, name, build, mounts, volumes, node=None, env=None, **spec):
    extra = {"volumeMounts": mounts}
    if env:
        extra["env"] = env
    return windows_pod(wincon, name, build, node=node, container_extra=extra, volumes=volumes, **spec)


def write_and_read(path: str, text: str) -> list[str]:
    return ["cmd", "/c", f"echo {text}> {path} && type {path}"]


@pytest.mark.test_id("2c0a8f0f-5078-4881-a22b-15eeceaf31ac")
@pytest.mark.dataplane
@pytest.mark.parametrize("mount_path", ["C:\\cache", "C:/scratch"], ids=["backslash", "forward-slash"])
@pytest.mark.documents("k8s-handbook-windows", "Volume Support")
def test_empty_dir_on_disk_is_writable_and_readable(wincon, namespace, build, kube, mount_path):
    r"""The format for the Volume's path "needs to be mountPath: "C:\\etc\\foo" or mountPath: "C:/etc/foo"" (001_feb1108140134f87.txt, Volume Support): an emptyDir on disk is writable either way."""
    name = "emptydir-bs" if "\\" in mount_path else "emptydir-fs"
    pod = run_windows_pod(
        wincon,
        namespace,
        mounted_pod(
            wincon, name, build, [{"name": "cache", "mountPath": mount_path}], [{"name": "cache", "emptyDir": {}}]
        ),
    )
    target = mount_path.replace("/", "\\") + "\\wincon.txt"
    result = kube.exec(pod.metadata.name, write_and_read(target, "wincon-emptydir"))
    assert result.ok and "wincon-emptydir" in result.stdout, f"{result.stdout} {result.stderr}"


@pytest.mark.test_id("b3a63dac-b08c-41e4-bbcc-427c24ee6916")
@pytest.mark.dataplane
@pytest.mark.parametrize(
    "host_path", ["C:\\wincon-tests\\{ns}-bs", "C:/wincon-tests/{ns}-fs"], ids=["backslash", "forward-slash"]
)
@pytest.mark.documents("k8s-windows-guide", "V1.Pod.volumes")
@pytest.mark.documents("k8s-handbook-windows", "Volume Support")
def test_host_path_directory_or_create_is_shared_by_pods_on_the_node(wincon, namespace, build, kube, host_path):
    """ "HostPath" volumes work (002_8a7e76f95009f44f.txt, V1.Pod.volumes) with either path spelling (001_feb1108140134f87.txt, Volume Support): a file one pod writes, another pod on the node reads."""
    nodes = windows_nodes_of_build(wincon.profile, build)
    if not nodes:
        pytest.skip("no Ready Windows node")
    node = nodes[0].name
    path = host_path.format(ns=namespace)
    tag = "bs" if "\\" in host_path else "fs"
    volumes = [{"name": "host", "hostPath": {"path": path, "type": "DirectoryOrCreate"}}]
    mounts = [{"name": "host", "mountPath": "C:\\host"}]
    writer = run_windows_pod(
        wincon, namespace, mounted_pod(wincon, f"hp-writer-{tag}", build, mounts, volumes, node=node)
    )
    reader = run_windows_pod(
        wincon, namespace, mounted_pod(wincon, f"hp-reader-{tag}", build, mounts, volumes, node=node)
    )
    assert writer.spec.node_name == reader.spec.node_name == node
    wrote = kube.exec(writer.metadata.name, ["cmd", "/c", "echo from-writer> C:\\host\\shared.txt"])
    assert wrote.ok, wrote.stderr
    read = kube.exec(reader.metadata.name, ["cmd", "/c", "type C:\\host\\shared.txt"])
    assert read.ok and "from-writer" in read.stdout, f"{read.stdout} {read.stderr}"


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
def test_config_map_and_secret_as_environment_and_volume(wincon, namespace, build, kube, kind):
    """ "ConfigMap, Secrets: as environment variables or volumes" (002_8a7e76f95009f44f.txt, Pods): the value is in the environment and in a file."""
    config_objects(kube)
    name, key, value, ref, source = SOURCES[kind]
    env = [{"name": "WINCON_VALUE", "valueFrom": {ref: {"name": name, "key": key}}}]
    pod = run_windows_pod(
        wincon,
        namespace,
        mounted_pod(
            wincon,
            f"{kind.lower()}-consumer",
            build,
            [{"name": "src", "mountPath": "C:\\src"}],
            [{"name": "src", **source}],
            env=env,
        ),
    )
    from_env = kube.exec(pod.metadata.name, ["cmd", "/c", "echo %WINCON_VALUE%"])
    from_file = kube.exec(pod.metadata.name, ["cmd", "/c", f"type C:\\src\\{key}"])
    with expect_deviation("configmap-secret-volumes-pre-1803"):
        assert from_env.ok and from_env.stdout.strip() == value, f"environment: {from_env.stdout!r} {from_env.stderr}"
        assert from_file.ok and from_file.stdout.strip() == value, f"volume: {from_file.stdout!r} {from_file.stderr}"


@pytest.mark.test_id("0a6579e5-3092-4a45-9457-368cb3523bf5")
@pytest.mark.dataplane
@pytest.mark.limitation("configmap-secret-volumes-pre-1803")
@pytest.mark.documents("k8s-handbook-windows", "Note 2")
def test_service_account_token_is_mounted(wincon, namespace, build, kube):
    """ "Windows Server 1803 ... fixes issues with Windows container symlinks, allowing ServiceAccount and ConfigMap to function normally" (001_feb1108140134f87.txt, Note 2)."""
    pod = run_windows_pod(wincon, namespace, windows_pod(wincon, "sa-token", build))
    directory = "C:\\var\\run\\secrets\\kubernetes.io\\serviceaccount"
    result = kube.exec(pod.metadata.name, ["cmd", "/c", f"type {directory}\\namespace"])
    token = kube.exec(pod.metadata.name, ["cmd", "/c", f"type {directory}\\token"])
    with expect_deviation("configmap-secret-volumes-pre-1803"):
        assert result.ok and result.stdout.strip() == namespace, f"{result.stdout!r} {result.stderr}"
        assert token.ok and token.stdout.count(".") == 2, "the token must be a JWT"


@pytest.mark.test_id("4d86285e-c00f-4801-82f3-598b10e9d206")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-types-limited")
@pytest.mark.documents("k8s-windows-guide", "ConfigMap, Secrets: as volumes")
def test_projected_volume_combines_config_map_secret_downward_api_and_token(wincon, namespace, build, kube):
    """Projected volumes of ConfigMap, Secret, downward API and token sources (002_8a7e76f95009f44f.txt, ConfigMap, Secrets: as volumes): every source shows in one directory."""
    config_objects(kube)
    projected = {
        "sources": [
            {"configMap": {"name": "special-config", "items": [{"key": "special.how", "path": "how"}]}},
            {"secret": {"name": "creds", "items": [{"key": "username", "path": "user"}]}},
            {"downwardAPI": {"items": [{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
        ]
    }
    pod = run_windows_pod(
        wincon,
        namespace,
        mounted_pod(
            wincon,
            "projected",
            build,
            [{"name": "all", "mountPath": "C:\\all"}],
            [{"name": "all", "projected": projected}],
        ),
    )
    results = {
        file: (kube.exec(pod.metadata.name, ["cmd", "/c", f"type C:\\all\\{file}"]), expected)
        for file, expected in (("how", "very"), ("user", "wincon-user"), ("podname", "projected"))
    }
    token = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\all\\token"])
    with expect_deviation("volume-types-limited"):
        for file, (result, expected) in results.items():
            assert result.ok and result.stdout.strip() == expected, f"{file}: {result.stdout!r} {result.stderr}"
        assert token.ok and token.stdout.count(".") == 2, "the projected token must be a JWT"


@pytest.mark.test_id("e7a25a77-1752-4fe1-a971-590e6773baf0")
@pytest.mark.dataplane
@pytest.mark.limitation("volume-types-limited")
@pytest.mark.documents("k8s-windows-guide", "Pods")
def test_downward_api_volume_exposes_labels_and_name(wincon, namespace, build, kube):
    """ "Pod status fields" and metadata reach Windows containers (002_8a7e76f95009f44f.txt, Pods): a downwardAPI volume holds the pod's name and labels."""
    items = [
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
    ]
    body = mounted_pod(
        wincon,
        "downward",
        build,
        [{"name": "info", "mountPath": "C:\\info"}],
        [{"name": "info", "downwardAPI": {"items": items}}],
    )
    body["metadata"]["labels"]["tier"] = "wincon"
    pod = run_windows_pod(wincon, namespace, body)
    name = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\info\\name"])
    labels = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\info\\labels"])
    with expect_deviation("volume-types-limited"):
        assert name.ok and name.stdout.strip() == "downward", f"{name.stdout!r} {name.stderr}"
        assert labels.ok and 'tier="wincon"' in labels.stdout, f"{labels.stdout!r} {labels.stderr}"


@pytest.mark.test_id("f5b22662-2694-489f-bd34-a20d2014d913")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Pods")
def test_volume_is_shared_by_two_containers_of_a_pod(wincon, namespace, build, kube):
    """ "Single or multiple containers per Pod with process isolation and volume sharing" (002_8a7e76f95009f44f.txt, Pods): what one container writes, the other reads."""
    body = mounted_pod(
        wincon,
        "two-containers",
        build,
        [{"name": "shared", "mountPath": "C:\\shared"}],
        [{"name": "shared", "emptyDir": {}}],
    )
    first = body["spec"]["containers"][0]
    body["spec"]["containers"].append(
        container("second", first["image"], args=["pause"], volumeMounts=[{"name": "shared", "mountPath": "C:\\other"}])
    )
    pod = run_windows_pod(wincon, namespace, body)
    wrote = kube.exec(pod.metadata.name, ["cmd", "/c", "echo from-main> C:\\shared\\note.txt"], container="main")
    assert wrote.ok, wrote.stderr
    read = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\other\\note.txt"], container="second")
    assert read.ok and "from-main" in read.stdout, f"{read.stdout!r} {read.stderr}"


@pytest.mark.test_id("1d2251b4-cd79-48a1-8aea-2e20c0afba8a")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Storage")
def test_read_only_volume_mount_refuses_writes(wincon, namespace, build, kube):
    """ "Read-only filesystems are not supported ... However, read-only volumes are supported" (002_8a7e76f95009f44f.txt, Storage): a write to a readOnly mount fails."""
    body = mounted_pod(
        wincon,
        "read-only",
        build,
        [{"name": "data", "mountPath": "C:\\rw"}, {"name": "data", "mountPath": "C:\\ro", "readOnly": True}],
        [{"name": "data", "emptyDir": {}}],
    )
    pod = run_windows_pod(wincon, namespace, body)
    writable = kube.exec(pod.metadata.name, ["cmd", "/c", "echo ok> C:\\rw\\allowed.txt"])
    assert writable.ok, f"the writable mount of the same volume refused a write: {writable.stderr}"
    refused = kube.exec(pod.metadata.name, ["cmd", "/c", "echo x> C:\\ro\\denied.txt"])
    assert not refused.ok, "a write through the readOnly mount succeeded"
    assert "Access is denied" in refused.stdout + refused.stderr, f"{refused.stdout!r} {refused.stderr!r}"


def default_storage_class(kube):
    classes = call(kube.storage.list_storage_class).items
    return next((c for c in classes if (c.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"), None)


@pytest.mark.test_id("f75f284e-9493-4750-b9d6-a2f8899d7e27")
@pytest.mark.dataplane
@pytest.mark.limitation("csi-plugins-need-privileged")
@pytest.mark.documents("sig-windows-intro", "persistentVolumeClaim")
@pytest.mark.documents("k8s-windows-guide", "Storage")
def test_persistent_volume_claim_of_the_default_storage_class(wincon, namespace, build, kube):
    """ "PersistentVolumeClaim" volumes (004_7d0b0aa3086f85ad.txt, persistentVolumeClaim; 002_8a7e76f95009f44f.txt, Storage): a claim of the default StorageClass is written and read back."""
    storage_class = default_storage_class(kube)
    if storage_class is None:
        pytest.skip("the cluster has no default StorageClass: a claim without storageClassName cannot be provisioned")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    kube.create(claim)
    pod = run_windows_pod(
        wincon,
        namespace,
        mounted_pod(
            wincon,
            "pvc-user",
            build,
            [{"name": "data", "mountPath": "C:\\data"}],
            [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        ),
    )
    result = kube.exec(pod.metadata.name, write_and_read("C:\\data\\pvc.txt", f"class-{storage_class.metadata.name}"))
    with expect_deviation("csi-plugins-need-privileged"):
        assert result.ok and f"class-{storage_class.metadata.name}" in result.stdout, (
            f"{result.stdout!r} {result.stderr}"
        )


@pytest.mark.test_id("93519d2c-3ab8-43a9-bc9c-b7d2252f048a")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-intro", "V1.Pod")
def test_pod_with_every_documented_volume_type_is_admitted_and_scheduled_on_windows(wincon, namespace, build, kube):
    """ "V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work and have tests in TestGrid" (000_4130a90def37a825.txt, V1.Pod): a Windows pod using them all (plus projected and downwardAPI) is admitted and placed."""
    config_objects(kube)
    volumes = [
        {"name": "empty", "emptyDir": {}},
        {"name": "host", "hostPath": {"path": f"C:\\wincon-tests\\{namespace}-all", "type": "DirectoryOrCreate"}},
        {"name": "cm", "configMap": {"name": "special-config"}},
        {"name": "secret", "secret": {"secretName": "creds"}},
        {"name": "info", "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
    ]
    mounts = [{"name": v["name"], "mountPath": f"C:\\vol\\{v['name']}"} for v in volumes]
    mounts[1]["mountPath"] = "C:/vol/host"  # the forward-slash spelling the handbook also allows
    pod = run_windows_pod(wincon, namespace, mounted_pod(wincon, "all-volumes", build, mounts, volumes))
    # "All work": each volume answers from inside the container with what only it can hold (not the stored
    # spec, not a Ready flag, which a simulated node reports too).
    expected = {
        "C:\\vol\\empty": (write_and_read("C:\\vol\\empty\\f.txt", "in-emptydir"), "in-emptydir"),
        "C:/vol/host": (write_and_read("C:\\vol\\host\\f.txt", "in-hostpath"), "in-hostpath"),
        "C:\\vol\\cm": (["cmd", "/c", "type C:\\vol\\cm\\special.how"], "very"),
        "C:\\vol\\secret": (["cmd", "/c", "type C:\\vol\\secret\\username"], "wincon-user"),
        "C:\\vol\\info": (["cmd", "/c", "type C:\\vol\\info\\name"], "all-volumes"),
    }
    for where, (command, text) in expected.items():
        result = kube.exec(pod.metadata.name, command)
        assert result.ok and text in result.stdout, f"{where}: {result.stdout!r} {result.stderr!r}"
    token = kube.exec(pod.metadata.name, ["cmd", "/c", "type C:\\vol\\proj\\token"])
    assert token.ok and token.stdout.strip().count(".") == 2, f"C:\\vol\\proj: no JWT: {token.stderr!r}"
