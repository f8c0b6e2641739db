"""A Windows image built for another Windows Server version than the node's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wincon.checks import scheduling
from wincon.checks.pods import assert_all_ran_on, windows_nodes_of_build, windows_pod
from wincon.checks.scheduling import CPU_LIMIT_MILLICORES, LIMIT_COUNT, hyperv_cpu_placement, live_runtime_classes
from wincon.cluster.client import call
from wincon.cluster.waits import WaitTimeout, WorkloadFailed, pod_failure, pod_running, pod_scheduled, wait_for_pod
from wincon.clusterinfo import capabilities
from wincon.commandline.errors import DeviationObserved, InfrastructureError, expect_deviation
from wincon.windows import forms
from wincon.workloads.catalog import Catalog, build_compatible

pytestmark = [pytest.mark.scheduling]


def incompatible_version(catalog: Catalog, host_build: int) -> tuple[str, int] | None:
    """A Windows version of the catalog whose images cannot run on ``host_build`` (the older one first)."""
    for name, build in sorted(catalog.windows_builds.items(), key=lambda item: item[1]):
        if not build_compatible(host_build, build):
            return name, build
    return None


# What the node says when an image's Windows version cannot run on it (HCS 0xc0370101, containerd's
# platform matcher), and when it has no Hyper-V runtime handler: the observed deviations, by their own words.
OS_MISMATCH = (
    "does not match the host operating system",
    "0xc0370101",
    "no matching manifest",
    "not compatible with the host",
)
NO_HYPERV = ("no runtime for", "runtime handler", "hyperv", "hyper-v", "isolation")
LINUX_ON_WINDOWS = ("no matching manifest", "operating system", "exec format", "not supported")


def incompatible_pairing(wincon, profile) -> tuple[int, str] | None:
    """(host build, catalog version name) of an image version that cannot run on a Ready node of that build."""
    for host in reversed(profile.windows_builds):
        other = incompatible_version(wincon.catalog, host)
        if other and windows_nodes_of_build(profile, host):
            return host, other[0]
    return None


def nanoserver(wincon, version: str) -> str:
    return f"{wincon.catalog.registries['microsoftRegistry'].rstrip('/')}/windows/nanoserver:{version}"


# None of these checks' pods is made ahead (waves.ahead): a pod that cannot start is judged by the failure message
# its wait reads, which changes as the kubelet retries (an image pull error becomes a back-off), so the pod starts
# in the check; the Hyper-V ones also read RuntimeClasses or a node's CPUs live before creating.
def start_and_wait(kube, profile, data_plane, body, host, what, limitation, deviation):
    """Create the pod, check it was placed on a node of ``host``, then (data plane) wait until it runs.

    A start failure whose message carries one of the ``deviation`` phrases is the documented deviation,
    observed; any other (a registry that cannot be reached, a crash) stays what it is. The phrases are looked for
    in the message with the pod's own name and namespace taken out: the wait names them ("pod <ns>/hyperv-two: ..."),
    so does the kubelet's back-off message ("pod=hyperv-two_<ns>(<uid>)"), and the namespace is named after the test
    (wincon-test-hyperv-isolated-...): "hyperv" would match any failure of these checks.
    """
    kube.create(body)
    name = body["metadata"]["name"]
    pod = wait_for_pod(
        kube.api_client, kube.namespace, name, done=pod_scheduled, timeout=kube.pod_start_timeout, failure=None
    )
    assert_all_ran_on([pod], profile, "windows", host)
    data_plane(f"wait for pod {name} ({what}) to run", where=pod.spec.node_name)
    try:
        return wait_for_pod(
            kube.api_client, kube.namespace, name, done=pod_running, timeout=kube.pod_start_timeout, failure=pod_failure
        )
    except (InfrastructureError, WorkloadFailed) as exc:
        said = str(exc).lower().replace(str(kube.namespace).lower(), "<ns>").replace(name.lower(), "<pod>")
        if isinstance(exc, WaitTimeout) or not any(phrase in said for phrase in deviation):
            raise
        raise DeviationObserved(f"{limitation}: {exc}") from exc


STARTING = frozenset({"ContainerCreating", "PodInitializing"})


def not_running(pod) -> list[str]:
    """The containers of ``pod`` that do not run: ended, or waiting with a reason other than their creation."""
    held = []
    for status in (pod.status.container_statuses if pod.status else None) or []:
        state = status.state
        if state and state.terminated:
            held.append(f"{status.name}: terminated {state.terminated.reason}")
        elif state and state.waiting and state.waiting.reason not in STARTING:
            held.append(f"{status.name}: waiting {state.waiting.reason}")
    return held


def containers_settled(pod) -> bool:
    """Every container of ``pod`` has a status and is ready, ended, or waiting with a reason other than its creation."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    if len(statuses) < len(pod.spec.containers):
        return False
    return len(not_running(pod)) + sum(1 for s in statuses if s.ready) >= len(statuses)


def windows_answers(kube, name) -> None:
    """Positive evidence the container runs: a command inside it answers with the Windows version banner."""
    result = kube.exec(name, ["cmd", "/c", "ver"])
    assert result.ok and "Microsoft Windows" in result.stdout, f"`ver` in {name}: {result.stdout!r} {result.stderr!r}"


@pytest.mark.test_id("27170933-0bd8-4fb8-b35e-b3ce6a37af9b")
@pytest.mark.dataplane
@pytest.mark.limitation("image-os-version-match")
@pytest.mark.windows_only("a Windows image's OS version against the Windows host's (process isolation)")
@pytest.mark.documents("k8s-windows-intro", "OS version match")
@pytest.mark.windows_form(forms.HOST_BINARY_BY_PATH)
def test_container_from_another_windows_version_starts(kube, wincon, profile, data_plane):
    """ "Windows containers with process isolation have strict compatibility rules, where the host OS version must match the container base image OS version" (000_4130a90def37a825.txt): an ltsc2019 image on an ltsc2022 host should start."""
    pairing = incompatible_pairing(wincon, profile)
    if pairing is None:
        pytest.skip("every Windows version of the catalog runs on this cluster's Windows builds")
    host, version = pairing
    image = nanoserver(wincon, version)
    body = windows_pod(wincon, "mismatch", host, command=["cmd", "/c", "ping -t 127.0.0.1"])
    body["spec"]["containers"][0]["image"] = image
    start_and_wait(
        kube,
        profile,
        data_plane,
        body,
        host,
        f"{image} on build {host}",
        "image-os-version-match",
        OS_MISMATCH,
    )
    windows_answers(kube, "mismatch")


LEGACY_ISOLATION = "experimental.windows.kubernetes.io/isolation-type"


def hyperv_runtime_class(kube, profile) -> str | None:
    """The name of a RuntimeClass whose handler runs Hyper-V isolated containers, if the cluster has one: the
    profile's RuntimeClasses (read in discovery), else the cluster's read now, by the rule the plan applies
    (wincon.checks.scheduling.hyperv_runtime_class)."""
    classes = profile.runtime_classes
    return scheduling.hyperv_runtime_class(classes if classes is not None else live_runtime_classes(kube))


@pytest.mark.test_id("86146be2-7a71-43cd-aa1b-93a73f1f05ce")
@pytest.mark.dataplane
@pytest.mark.limitation("hyperv-isolation-unsupported")
@pytest.mark.windows_only("Hyper-V isolation is a Windows runtime feature")
@pytest.mark.isolation("hyperv")
@pytest.mark.documents("k8s-windows-guide", "Operating System Restrictions")
@pytest.mark.windows_form(forms.HOST_BINARY_BY_PATH)
def test_hyperv_isolated_container_runs_an_older_windows_image(kube, wincon, profile, data_plane):
    """ "Hyper-V isolation of containers, enabling backward compatibility of Windows container image versions, is planned for a future release" (002_8a7e76f95009f44f.txt, Operating System Restrictions)."""
    pairing = incompatible_pairing(wincon, profile)
    if pairing is None:
        pytest.skip("no catalog Windows version is incompatible with a node: nothing for Hyper-V to bridge")
    host, version = pairing
    body = windows_pod(wincon, "hyperv-older", host, command=["cmd", "/c", "ping -t 127.0.0.1"])
    body["spec"]["containers"][0]["image"] = nanoserver(wincon, version)
    runtime_class = hyperv_runtime_class(kube, profile)
    if runtime_class:
        body["spec"]["runtimeClassName"] = runtime_class
    else:
        body["metadata"]["annotations"] = {LEGACY_ISOLATION: "hyperv"}
    how = f"RuntimeClass {runtime_class}" if runtime_class else f"annotation {LEGACY_ISOLATION}=hyperv"
    what = f"{version} image under Hyper-V via {how}"
    start_and_wait(
        kube,
        profile,
        data_plane,
        body,
        host,
        what,
        "hyperv-isolation-unsupported",
        OS_MISMATCH + NO_HYPERV,
    )
    windows_answers(kube, "hyperv-older")


@pytest.mark.test_id("796aa85b-1398-4bfb-89bc-f094c4b5426c")
@pytest.mark.dataplane
@pytest.mark.limitation("hyperv-single-container-per-pod")
@pytest.mark.requires("docker-runtime")
@pytest.mark.windows_only("Hyper-V isolation is a Windows runtime feature")
@pytest.mark.isolation("hyperv")
@pytest.mark.documents("kep-windows-node-support", "Roadmap")
@pytest.mark.windows_form(forms.HYPERV_HELLO)
def test_hyperv_isolated_pod_runs_two_containers(kube, wincon, profile, build, data_plane):
    """ "Hyper-V isolation (Currently this is limited to 1 container per Pod and is an alpha feature)" (003_414b2f1c5dd978a2.txt, Roadmap)."""
    capabilities.require(profile, "docker-runtime", lambda p: p)  # the plan's rule (requires), the profile's fact
    body = windows_pod(wincon, "hyperv-two", build)
    body["metadata"]["annotations"] = {LEGACY_ISOLATION: "hyperv"}
    body["spec"]["containers"].append(dict(body["spec"]["containers"][0], name="second"))
    pod = start_and_wait(
        kube,
        profile,
        data_plane,
        body,
        build,
        "two containers under Hyper-V",
        "hyperv-single-container-per-pod",
        NO_HYPERV,
    )
    # Running needs one container only: wait (setup) until none of them is still being created, so a second
    # container still starting is not read as one that could not run.
    pod = kube.wait_pod(
        "hyperv-two", done=containers_settled, failure=None, describe="every container ready or no longer starting"
    )
    # The deviation: one container runs and another could not (it ended, or is held back with a reason); a pod where
    # no container runs is not it (and one that runs but never gets ready ends the wait above: the cluster's error).
    with expect_deviation(
        "hyperv-single-container-per-pod",
        accepts=lambda: bool(not_running(pod)) and len(not_running(pod)) < len(pod.status.container_statuses),
        deviation="a container of the Hyper-V pod could not run beside the first",
    ):
        assert all(s.ready for s in pod.status.container_statuses), pod.status.container_statuses


def telling_node(kube, profile, build) -> str | None:
    """The node the Hyper-V CPU-count pod must run on, decided before anything is created by the rule `wincon plan`
    applies too (wincon.checks.scheduling.hyperv_cpu_placement: skips where every Windows node of the build has 2
    CPUs, else pins away from them); a node's capacity the profile lacks is read from the Node now."""
    return hyperv_cpu_placement(
        windows_nodes_of_build(profile, build),
        read_cpu=lambda name: str(call(kube.core.read_node, name).status.capacity["cpu"]),
    ).pin()


@pytest.mark.test_id("33b67d77-243d-40b1-b4d2-b97ac752391d")
@pytest.mark.dataplane
@pytest.mark.limitation("hyperv-cpu-count-limit")
@pytest.mark.avoids("hyperv-cpu-count")
@pytest.mark.requires("hyperv-runtime-class")
@pytest.mark.windows_only("Hyper-V isolation is a Windows runtime feature")
@pytest.mark.isolation("hyperv")
@pytest.mark.documents("kep-windows-node-support", "V1.Container")
@pytest.mark.windows_form(forms.CMD_ECHO_USERNAME)
def test_hyperv_isolated_container_sees_the_nodes_processors(kube, wincon, profile, build, data_plane):
    """ "When using Hyper-V isolation (alpha), the hypervisor also needs a number of CPUs assigned ... The CPU count is a hard limit" (003_414b2f1c5dd978a2.txt, V1.Container)."""
    # The rule `wincon plan` applies to the profile (requires: capabilities.skip_missing); the RuntimeClasses
    # the profile lacks are read now.
    known = capabilities.require(
        profile, "hyperv-runtime-class", lambda p: replace(p, runtime_classes=live_runtime_classes(kube))
    )
    runtime_class = hyperv_runtime_class(kube, known)
    node_name = telling_node(kube, profile, build)
    body = windows_pod(wincon, "hyperv-cpus", build, node=node_name, runtimeClassName=runtime_class)
    body["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": f"{CPU_LIMIT_MILLICORES}m"},
        "requests": {"cpu": "100m"},
    }
    pod = start_and_wait(
        kube,
        profile,
        data_plane,
        body,
        build,
        f"Hyper-V via {runtime_class}",
        "hyperv-cpu-count-limit",
        (),
    )
    node = call(kube.core.read_node, pod.spec.node_name)
    result = kube.exec("hyperv-cpus", ["cmd", "/c", "echo %NUMBER_OF_PROCESSORS%"])
    assert result.ok and result.stdout.strip().isdigit(), f"%NUMBER_OF_PROCESSORS%: {result.stdout!r} {result.stderr!r}"
    # The deviation as documented: "the millicores used in the limit is divided by 1000 to get the number of cores
    # required" (003_414b2f1c5dd978a2.txt), so the container sees the limit's count; another count is not it.
    with expect_deviation(
        "hyperv-cpu-count-limit",
        accepts=lambda: result.stdout.strip() == str(LIMIT_COUNT),
        deviation=f"the container sees {LIMIT_COUNT} processors, its CPU limit's count",
    ):
        assert result.stdout.strip() == str(node.status.capacity["cpu"]), (
            f"the container sees {result.stdout.strip()} processors, the node has {node.status.capacity['cpu']}"
        )


@pytest.mark.test_id("0455ce29-06ed-4b65-a2d0-dde127aca5fe")
@pytest.mark.dataplane
@pytest.mark.limitation("linux-containers-on-windows-unsupported")
@pytest.mark.windows_only("a Linux-only image on a Windows node (on a Linux node it is any pod)")
@pytest.mark.documents("k8s-windows-intro", "Supported Functionality")
@pytest.mark.windows_form(
    no_command="a Linux image on a Windows node: the pod's status is read; its Linux command cannot start"
)
def test_linux_only_image_runs_on_a_windows_node(kube, wincon, profile, build, data_plane):
    """ "Windows containers have to be scheduled on Windows nodes, Linux containers on Linux nodes" (000_4130a90def37a825.txt, Supported Functionality): a Linux-only image pinned to a Windows node should run."""
    image = f"{wincon.catalog.registries['dockerLibraryRegistry'].rstrip('/')}/busybox:1.36"
    body = windows_pod(wincon, "linux-image", build, command=["sleep", "3600"])
    body["spec"]["containers"][0]["image"] = image
    body["spec"].pop("os")  # no OS field: nothing in the API stops the pairing
    start_and_wait(
        kube,
        profile,
        data_plane,
        body,
        build,
        f"linux-only {image}",
        "linux-containers-on-windows-unsupported",
        LINUX_ON_WINDOWS,
    )
    result = kube.exec("linux-image", ["uname", "-s"])
    assert result.ok and result.stdout.strip() == "Linux", f"`uname -s`: {result.stdout!r} {result.stderr!r}"


@pytest.mark.test_id("1766ed43-3b3f-49e4-afe7-48d9bfbf4cbe")
@pytest.mark.hybrid
@pytest.mark.limitation("pod-os-unconstrained-scheduling")
@pytest.mark.documents("k8s-windows-guide", "Taints and Tolerations")
def test_windows_pod_is_never_placed_on_a_linux_node(kube, wincon, profile):
    """ "If a Pod specification does not specify a nodeSelector ... it is possible the Pod can be scheduled on any host, Windows or Linux" (002_8a7e76f95009f44f.txt, Taints and Tolerations): spec.os.name windows alone should keep it off Linux."""
    linux = [n.name for n in profile.linux_nodes if n.ready and not n.taints]
    if not linux:
        pytest.skip("no schedulable Linux node to be tempted by")
    body = windows_pod(wincon, "os-field-only", None)
    body["spec"].pop("nodeSelector")
    body["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
                    },
                }
            ]
        }
    }
    kube.create(body)
    pod = kube.wait_pod("os-field-only", done=pod_scheduled, timeout=60, failure=None)
    node = next((n for n in profile.nodes if n.name == pod.spec.node_name), None)
    with expect_deviation(
        "pod-os-unconstrained-scheduling",
        accepts=lambda: node is not None and node.os == "linux",
        deviation="the Windows pod placed on a Linux node",
    ):
        assert node is not None and node.os == "windows", (
            f"the Windows pod was placed on {pod.spec.node_name} ({node and node.os})"
        )
