"""HostProcess containers in practice (upstream test/e2e/windows/host_process.go; operational readiness
Extend.HostProcess): init containers that configure the node, volume mounts of each kind under
%CONTAINER_SANDBOX_MOUNT_POINT%, the API server reached with the pod's service account, a local group as the
run-as account, the container command resolved from host and sandbox paths, and the container's stats reported.

Every pod passes the real API server's HostProcess rules and is scheduled for real; what runs on the host is
checked after the ``data_plane`` gate. Where the cluster forbids HostProcess pods (``--allow-privileged=false``,
a policy) or drops the field, the check skips with that reason.
"""

from __future__ import annotations

import secrets

import pytest

from wincon.checks import hostprocess
from wincon.checks.api_rules import HOST_PROCESS_DISALLOWED, submit_pod
from wincon.checks.node import (
    api_query_command,
    group_membership_command,
    host_process_counts,
    kubelet_get,
    kubelet_json,
    parse_metrics,
    pod_stats_problems,
    powershell,
    summary_pods,
)
from wincon.checks.pods import eventually, schedulable_windows_nodes, windows_nodes_of_build
from wincon.cluster.waits import pod_failure, pod_running_ready, pod_scheduled
from wincon.windows import forms
from wincon.workloads.deploy import container

pytestmark = [
    pytest.mark.api,
    pytest.mark.requires("host-process"),
]

SYSTEM = hostprocess.SYSTEM
LOCAL_SERVICE = "NT AUTHORITY\\Local service"
LOCAL_GROUP = "wincon-hpc"


def host_process_pod(wincon, name: str, build, command: list[str], user: str = SYSTEM, **spec) -> dict:
    """A HostProcess pod as ``user`` (never restarted unless ``spec`` names a restartPolicy)."""
    return hostprocess.host_process_pod(wincon, name, build, command, user=user, **spec)


def create_host_process(kube, body: dict) -> None:
    """Create the pod for real; skip with the cluster's reason where HostProcess pods are not allowed."""
    created, rejection = submit_pod(kube.api_client, kube.namespace, body, dry_run=False)
    if rejection is not None and HOST_PROCESS_DISALLOWED in rejection.describe():
        pytest.skip(f"the API server runs with --allow-privileged=false: {HOST_PROCESS_DISALLOWED}")
    assert rejection is None, f"a valid HostProcess pod was refused: {rejection.describe()}"
    options = ((created.get("spec") or {}).get("securityContext") or {}).get("windowsOptions") or {}
    if not options.get("hostProcess"):
        pytest.skip(
            "HostProcess pods are not enabled on this cluster (the API server dropped windowsOptions.hostProcess)"
        )
    kube.wait_pod(body["metadata"]["name"], done=pod_scheduled, failure=None, timeout=60)


def finished(pod) -> bool:
    return bool(pod.status and pod.status.phase in ("Succeeded", "Failed"))


def start_failure(pod) -> str | None:
    """Reasons the pod will never run (image pull, unschedulable); a Failed phase is the check's to judge."""
    return None if pod.status and pod.status.phase == "Failed" else pod_failure(pod)


def run_to_completion(kube, body: dict, check: str) -> tuple[object, str]:
    """Create, gate, wait until the pod finished; (pod, logs of its last container)."""
    name = body["metadata"]["name"]
    create_host_process(kube, body)
    kube.gate(check, where=f"HostProcess pod {name}")
    pod = kube.wait_pod(name, done=finished, failure=start_failure)
    logs = kube.logs(pod, container=body["spec"]["containers"][-1]["name"])
    return pod, logs


@pytest.mark.test_id("0fd9b3ed-7ebc-4051-9d8e-89d28dd8e923")
@pytest.mark.dataplane
@pytest.mark.windows_only("HostProcess init containers run on the Windows host itself (windowsOptions.hostProcess)")
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
@pytest.mark.windows_form(forms.HOSTPROCESS_SET_CONTENT)
def test_host_process_init_container_configures_the_node_for_the_main_container(wincon, kube, build):
    """ "Ability to launch hostProcess containers which can run other privileged Windows system API" (windows-operational-readiness Extend.HostProcess; upstream host_process.go "should support init containers"): a file an init container writes on the host is there for the main container."""
    path = f"C:\\wincon-hpc-{secrets.token_hex(4)}.txt"
    body = host_process_pod(wincon, "hp-init", build, powershell(f"Get-Content -Path '{path}'; Remove-Item '{path}'"))
    image = body["spec"]["containers"][0]["image"]
    body["spec"]["initContainers"] = [
        container("configure-node", image, command=powershell(f"Set-Content -Path '{path}' -Value 'configured'"))
    ]
    pod, logs = run_to_completion(kube, body, f"init: Set-Content {path}; main: Get-Content {path}")
    assert pod.status.phase == "Succeeded", f"pod ended {pod.status.phase}: {logs}"
    assert logs.strip() == "configured", f"the main container read {logs!r}"


VALIDATE_MOUNTS = r"""
$root = $env:CONTAINER_SANDBOX_MOUNT_POINT
$checks = @{
  "configmap" = (Get-Content "$root\etc\configmap\text" -Raw).Trim() -eq 'Lorem ipsum dolor sit amet';
  "secret" = (Get-Content "$root\etc\secret\foo" -Raw).Trim() -eq 'bar';
  "emptydir" = Test-Path "$root\etc\emptydir";
  "hostpath" = Test-Path "$root\etc\hostpath";
  "downwardapi" = (Get-Content "$root\etc\downwardapi\podname" -Raw).Trim() -eq 'hp-volumes';
  "nodename" = $env:NODE_NAME_TEST -ieq "$(hostname)"
}
$bad = @($checks.GetEnumerator() | Where-Object { -not $_.Value } | ForEach-Object { $_.Key })
if ($bad.Count -gt 0) { Write-Output ("FAILED: " + ($bad -join ',')); exit 1 }
Write-Output 'SUCCESS'
"""


@pytest.mark.test_id("ab07739e-a057-4fed-9f94-74681cf404bc")
@pytest.mark.dataplane
@pytest.mark.windows_only("volumes under %CONTAINER_SANDBOX_MOUNT_POINT% exist only for Windows HostProcess containers")
@pytest.mark.documents("k8s-windows-guide", "API")
@pytest.mark.windows_form(forms.HOSTPROCESS_VALIDATION_SCRIPT)
def test_host_process_container_sees_each_kind_of_volume_under_its_sandbox_mount_point(wincon, kube, build):
    """ "V1.Pod.volumes - EmptyDir, Secret, ConfigMap, HostPath - all work" (002_8a7e76f95009f44f.txt, API), for HostProcess containers under %CONTAINER_SANDBOX_MOUNT_POINT% (upstream host_process.go "should support various volume mount types")."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hp-data"},
            "data": {"text": "Lorem ipsum dolor sit amet"},
        }
    )
    kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hp-secret"}, "stringData": {"foo": "bar"}})
    mounts = [
        {"name": "configmap", "mountPath": "/etc/configmap"},
        {"name": "secret", "mountPath": "/etc/secret"},
        {"name": "emptydir", "mountPath": "/etc/emptydir"},
        {"name": "hostpath", "mountPath": "/etc/hostpath"},
        {"name": "downwardapi", "mountPath": "/etc/downwardapi"},
    ]
    volumes = [
        {"name": "configmap", "configMap": {"name": "hp-data"}},
        {"name": "secret", "secret": {"secretName": "hp-secret"}},
        {"name": "emptydir", "emptyDir": {}},
        {"name": "hostpath", "hostPath": {"path": "C:\\wincon\\hp-hostpath", "type": "DirectoryOrCreate"}},
        {
            "name": "downwardapi",
            "downwardAPI": {"items": [{"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}}]},
        },
    ]
    env = [{"name": "NODE_NAME_TEST", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    body = host_process_pod(
        wincon,
        "hp-volumes",
        build,
        powershell(VALIDATE_MOUNTS),
        volumes=volumes,
        container_extra={"volumeMounts": mounts, "env": env},
    )
    pod, logs = run_to_completion(kube, body, "validate configMap, secret, emptyDir, hostPath, downwardAPI mounts")
    assert pod.status.phase == "Succeeded" and "SUCCESS" in logs, f"pod ended {pod.status.phase}: {logs}"


@pytest.mark.test_id("b5e4ed91-fb0b-4ef3-950b-b47f25f86914")
@pytest.mark.dataplane
@pytest.mark.windows_only("the token is read under a HostProcess container's sandbox mount point (Windows only)")
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
@pytest.mark.windows_form(forms.POWERSHELL_HOSTPROCESS, forms.SANDBOX_MOUNT_POINT)
def test_host_process_container_queries_the_api_server_with_its_service_account(wincon, kube, build):
    """ "Ability to access the APIServer using pod mounted service accounts from a hostProcess pod" (windows-operational-readiness Extend.HostProcess; upstream host_process.go "should support querying api-server using in-cluster config"): the container reads its own pod through the API with its token."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "read-pods"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": kube.namespace}],
    }
    kube.create(role)
    kube.create(binding)
    command = api_query_command("windows", f"/api/v1/namespaces/{kube.namespace}/pods/hp-api", sandbox=True)
    pod, logs = run_to_completion(kube, host_process_pod(wincon, "hp-api", build, command), " ".join(command))
    assert pod.status.phase == "Succeeded", f"pod ended {pod.status.phase}: {logs[-600:]}"
    assert '"name":"hp-api"' in logs.replace(" ", ""), f"the API answer is not the pod itself: {logs[:600]}"


@pytest.mark.test_id("9ce57db0-2665-4d6d-bec6-6e9b131526b8")
@pytest.mark.dataplane
@pytest.mark.windows_only("a Windows local group as runAsUserName of a HostProcess container")
@pytest.mark.documents("k8s-windows-intro", "Compute")
@pytest.mark.windows_form(forms.CMD_LOCALGROUP, forms.CMD_WHOAMI)
def test_host_process_container_runs_as_a_local_group_account(wincon, kube, build):
    """ "Containers cannot assume an identity from the host" for ordinary containers (000_4130a90def37a825.txt, Compute); a HostProcess container may run as a local group, through a temporary account of that group (upstream host_process.go "should run as localgroup accounts")."""
    create_group = powershell(
        f"if (-not (Get-LocalGroup -Name '{LOCAL_GROUP}' -ErrorAction SilentlyContinue)) {{ New-LocalGroup -Name '{LOCAL_GROUP}' | Out-Null }}; 'ready'"
    )
    setup, setup_logs = run_to_completion(
        kube, host_process_pod(wincon, "hp-group-setup", build, create_group), "New-LocalGroup"
    )
    assert setup.status.phase == "Succeeded", f"creating local group {LOCAL_GROUP} failed: {setup_logs}"
    body = host_process_pod(wincon, "hp-group", build, group_membership_command("windows"), user=LOCAL_GROUP)
    pod, logs = run_to_completion(kube, body, " ".join(group_membership_command("windows")))
    assert pod.status.phase == "Succeeded", f"pod ended {pod.status.phase}: {logs}"
    assert LOCAL_GROUP.lower() in logs.lower(), f"the process is not in group {LOCAL_GROUP}: {logs[:800]}"


COMMAND_CASES = [
    {"command": ["cmd.exe", "/c", "ver"]},
    {"command": ["System32\\cmd.exe", "/c", "ver"], "workingDir": "c:\\Windows"},
    {"command": ["System32\\cmd.exe", "/c", "ver"], "workingDir": "c:\\Windows\\"},
    {"command": ["powershell", "c:/Windows/System32/cmd.exe", "/c", "ver"]},
    {"command": ["powershell", "c:\\Windows\\System32/cmd.exe", "/c", "ver"]},
    {"command": ["cmd.exe"], "args": ["/c", "dir", "%CONTAINER_SANDBOX_MOUNT_POINT%"]},
    {"command": ["powershell"], "args": ["Get-ChildItem", "-Path", "$env:CONTAINER_SANDBOX_MOUNT_POINT"]},
]


@pytest.mark.test_id("2b95f641-6c73-4b60-a99c-bab671b321fd")
@pytest.mark.dataplane
@pytest.mark.windows_only("HostProcess command resolution from the Windows host's and the sandbox's paths")
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
@pytest.mark.windows_form(forms.HOST_BINARY_BY_PATH, forms.SANDBOX_MOUNT_POINT)
def test_host_process_command_is_resolved_from_host_and_sandbox_paths(wincon, kube, build):
    """ "Ability to launch hostProcess containers which can run other privileged Windows system API" (windows-operational-readiness Extend.HostProcess): commands named by bare name, by a path relative to the working directory, with mixed slashes and under %CONTAINER_SANDBOX_MOUNT_POINT% all start (upstream host_process.go "container command path validation")."""
    body = host_process_pod(wincon, "hp-commands", build, ["cmd.exe", "/c", "ver"], user=LOCAL_SERVICE)
    image = body["spec"]["containers"][0]["image"]
    body["spec"]["containers"] = [container(f"case-{i}", image, **case) for i, case in enumerate(COMMAND_CASES)]
    pod, _ = run_to_completion(kube, body, "; ".join(" ".join(c["command"] + c.get("args", [])) for c in COMMAND_CASES))
    failed = [
        f"case-{i} {COMMAND_CASES[i]}: {s.state.terminated.reason if s.state and s.state.terminated else s.state}"
        for i, s in enumerate(sorted(pod.status.container_statuses or [], key=lambda s: int(s.name.split("-")[1])))
        if not (s.state and s.state.terminated and s.state.terminated.exit_code == 0)
    ]
    assert pod.status.phase == "Succeeded" and not failed, f"commands that did not run: {failed}"


@pytest.mark.test_id("a206704b-e7f0-4f6a-be3f-daaaf3feac6f")
@pytest.mark.dataplane
@pytest.mark.windows_only("stats of a HostProcess container (a Windows job object on the host)")
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(forms.HOSTPROCESS_IDLE)
def test_host_process_container_stats_are_reported(wincon, kube, build):
    """ "Pod and container metrics" are supported (002_8a7e76f95009f44f.txt, Supported Functionality), HostProcess containers included: /stats/summary of the node lists the pod with CPU and working set above zero, for the pod and each container, and the container's log usage above zero, within 3 min (upstream host_process.go:623, its container writing 'Hello')."""
    body = host_process_pod(wincon, "hp-stats", build, HELLO, restartPolicy="Always")
    create_host_process(kube, body)
    pod = kube.read_pod("hp-stats")
    kube.gate(
        f"GET /api/v1/nodes/{pod.spec.node_name}/proxy/stats/summary", where=f"pod hp-stats on {pod.spec.node_name}"
    )
    pod = kube.wait_pod("hp-stats", done=pod_running_ready)
    seen: list[str] = []

    def problems() -> list[str]:
        summary, _ = kubelet_json(kube.api_client, pod.spec.node_name, "stats/summary")
        stats = [p for p in summary_pods(summary, kube.namespace) if p["podRef"]["name"] == "hp-stats"]
        if not stats:
            return [f"/stats/summary of {pod.spec.node_name} does not list pod hp-stats"]
        found = pod_stats_problems(stats[0])
        for ctr in stats[0].get("containers") or []:
            cpu = (ctr.get("cpu") or {}).get("usageCoreNanoSeconds") or 0
            memory = (ctr.get("memory") or {}).get("workingSetBytes") or 0
            used = (ctr.get("logs") or {}).get("usedBytes") or 0
            if cpu <= 0 or memory <= 0 or used <= 0:
                found.append(f"container {ctr.get('name')}: cpu {cpu}, working set {memory}, logs.usedBytes {used}")
        return found

    def clean() -> bool:
        seen[:] = problems()
        return not seen

    # upstream polls every 2 s for up to 3 minutes (host_process.go:666)
    eventually(clean, 180, "hp-stats with live pod, container and log stats", 2, True, lambda: "; ".join(seen))
    assert not problems()


def host_process_counters(kube, node: str) -> dict[str, float]:
    """Upstream's four HostProcess counters of the node's kubelet (/metrics), by container_type."""
    answer = kubelet_get(kube.api_client, node, "metrics")
    assert answer.status == 200, f"/metrics of {node} answered {answer.status}: {answer.body[:200]}"
    return host_process_counts(parse_metrics(answer.body))


HELLO = ["powershell.exe", "-Command", "Write-Host 'Hello'; sleep -Seconds 600"]  # upstream host_process.go:648
BAD_USER = "bad-user-name"  # upstream host_process.go:531
MISSING_PROGRAM = ["foobar.exe"]  # upstream host_process.go:555 and :596
EXIT_ZERO = ["cmd.exe", "/c", "exit", "/b", "0"]  # upstream host_process.go:562


@pytest.mark.test_id("d7a5e889-012b-49d8-9c92-9376d6042ed1")
@pytest.mark.dataplane
@pytest.mark.windows_only("the kubelet's HostProcess container counters exist on Windows nodes only")
# serial: reads the node's kubelet counters before and after its two pods; another test's HostProcess pods on the
# node raise the same counters, so in parallel the rise might not be this test's own evidence.
@pytest.mark.serial
@pytest.mark.documents("k8s-windows-guide", "Supported Functionality")
@pytest.mark.windows_form(forms.POWERSHELL_HOSTPROCESS)
def test_kubelet_counts_started_and_failed_host_process_containers(wincon, kube, build):
    """ "Pod and container metrics" are supported (002_8a7e76f95009f44f.txt, Supported Functionality): the kubelet counts HostProcess containers and init containers it started and those that failed to start, each of the four counters by container_type rising over a pod whose init container fails (a bad user, a missing program) and a pod whose container fails (upstream host_process.go:517)."""
    allowed = set(schedulable_windows_nodes(wincon.profile))
    nodes = [n.name for n in windows_nodes_of_build(wincon.profile, build) if n.name in allowed]
    if not nodes:
        pytest.skip(f"no Ready Windows node of build {build} that Windows pods may be scheduled on")
    node = nodes[0]
    failing_init = host_process_pod(wincon, "hp-failing-init", build, EXIT_ZERO, nodeName=node)
    failing_init["spec"]["initContainers"] = [
        container("failing-init-container", failing_init["spec"]["containers"][0]["image"], command=MISSING_PROGRAM)
    ]
    failing_init["spec"]["initContainers"][0]["securityContext"] = {"windowsOptions": {"runAsUserName": BAD_USER}}
    failing = host_process_pod(wincon, "hp-failing-container", build, MISSING_PROGRAM, nodeName=node)
    failing["spec"]["containers"][0]["securityContext"] = {"windowsOptions": {"runAsUserName": BAD_USER}}
    kube.gate(f"GET /api/v1/nodes/{node}/proxy/metrics", where=f"the kubelet of {node}", pod_node=node)
    before = host_process_counters(kube, node)
    for body in (failing_init, failing):  # created together, then awaited together
        create_host_process(kube, body)
    for body in (failing_init, failing):
        kube.wait_pod(body["metadata"]["name"], done=finished, failure=start_failure, timeout=180)
    after = host_process_counters(kube, node)
    unchanged = [f"{key}: {before[key]:g} -> {after[key]:g}" for key in before if not after[key] > before[key]]
    assert not unchanged, f"HostProcess counters of {node} that did not rise: {'; '.join(unchanged)}"


@pytest.mark.test_id("b82aaf89-eb98-4b58-8e17-39c86bfc949b")
@pytest.mark.dataplane
@pytest.mark.windows_only("HostProcess pods (windowsOptions.hostProcess) exist on Windows only")
@pytest.mark.documents("windows-operational-readiness", "Extend.HostProcess")
@pytest.mark.windows_form(forms.POWERSHELL_HOSTPROCESS)
def test_host_process_pod_shares_the_nodes_ip(wincon, kube, build):
    """ "Ability to launch hostProcess containers which share the IP address of a Windows node" (windows-operational-readiness Extend.HostProcess): the HostProcess pod's IP is its node's, and the node's address is bound in the container."""
    body = host_process_pod(
        wincon, "hp-ip", build, powershell("while ($true) { Start-Sleep -Seconds 5 }"), restartPolicy="Always"
    )
    create_host_process(kube, body)
    command = powershell("(Get-NetIPAddress -AddressFamily IPv4).IPAddress")
    pod = kube.read_pod("hp-ip")
    kube.gate(command, where=f"pod hp-ip on {pod.spec.node_name}")
    pod = kube.wait_pod("hp-ip", done=pod_running_ready)
    assert pod.status.pod_ip == pod.status.host_ip, f"pod IP {pod.status.pod_ip} is not the node's {pod.status.host_ip}"
    result = kube.exec(pod, command)
    assert result.ok and pod.status.host_ip in result.stdout.split(), (
        f"{pod.status.host_ip} not bound: {result.stdout!r}"
    )
