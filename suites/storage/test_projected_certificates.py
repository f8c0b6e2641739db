"""Projected certificate volumes, GA in Kubernetes 1.37 with Conformance tests that run in Windows pods:
``clusterTrustBundle`` sources (upstream k8s.io/kubernetes v1.37.2 test/e2e/auth/projected_clustertrustbundle.go)
and ``podCertificate`` sources (test/e2e/auth/projected_podcertificate.go). Each check makes its own
certificates, objects and (for pod certificates) its own signer, projects them into a pod, reads the files back
from inside the container with agnhost mounttest (as upstream's podForCTBProjection does, :509-549, on both
operating systems: its getFileModeRegex, :685-701, accepts the Windows form) and compares what it read with what
the API objects hold."""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks import certificates as certs
from wincon.checks.pods import os_pod, run_os_pod
from wincon.checks.scheduling import AVOIDS, PROJECTION_GATES, placement_nodes, read_kubelet_gate
from wincon.cluster.client import call
from wincon.commandline.errors import InfrastructureError
from wincon.windows import connectivity as conn

pytestmark = [pytest.mark.storage]

MANAGED = {"app.kubernetes.io/managed-by": "wincon"}


def path(target_os: str, *parts: str) -> str:
    """A path in the container: C:\\a\\b on Windows, /a/b on Linux."""
    return "C:\\" + "\\".join(parts) if target_os == "windows" else "/" + "/".join(parts)


def read(file: str) -> list[str]:
    """agnhost mounttest prints ``content of file "PATH": CONTENT`` (test/images/agnhost/mounttest/mt.go)."""
    return ["/agnhost", "mounttest", f"--file_content={file}"]


def read_back(kube: Any, pod: Any, file: str) -> tuple[str | None, str]:
    """The content mounttest printed for ``file`` (None where it printed none) and what the exec printed."""
    result = kube.exec(pod.metadata.name, read(file))
    text = conn.mounttest_content(result.stdout or "", file) if result.ok else None
    return text, f"{result.stdout!r} {result.stderr!r}"


def require_served(kube: Any, capability: str) -> None:
    """Skip with the cluster's reason where the API server does not serve the certificates.k8s.io/v1 resources of
    ``capability`` (its capability's live read marks the same skip at collection, so the plan says it)."""
    reason = certs.skip_reason(certs.served_resources(kube.api_client), capability)
    if reason:
        pytest.skip(reason)


def projecting_node(kube: Any, profile: Any, target_os: str, build: int | None, rule: str) -> str | None:
    """The node the check's pod must run on, decided before anything is created by the rule `wincon plan` applies
    too (its ``avoids`` rule, wincon.checks.scheduling.AVOIDS[rule]: gate_on_placement of PROJECTION_GATES[rule],
    on the nodes placement_nodes gives). The volume is projected by the kubelet of the pod's node: where the kubelet
    of every real node of the OS (and build) runs the rule's feature gate off, the check skips naming them; where
    some do, the pod is pinned to the first that runs it on. A gate the profile lacks (its /configz unread in
    discovery, a profile file older than the gate) is read now, node by node until one runs it on."""
    nodes = {n.name: n for n in placement_nodes(profile, target_os, build)}
    gate, _ = PROJECTION_GATES[rule]

    def read_gate(name: str) -> bool:
        return read_kubelet_gate(kube.api_client, nodes[name], gate)

    return AVOIDS[rule](list(nodes.values()), read_gate).pin()


def trust_bundle(kube: Any, name: str, pem: str, signer: str = "", labels: dict[str, str] | None = None) -> str:
    """Create a ClusterTrustBundle (cluster-scoped: deleted when the check ends) and return its name."""
    spec: dict[str, Any] = {"trustBundle": pem}
    if signer:
        spec["signerName"] = signer
    body = {
        "apiVersion": certs.GROUP_VERSION,
        "kind": "ClusterTrustBundle",
        "metadata": {"name": name, "labels": {**MANAGED, **(labels or {})}},
        "spec": spec,
    }
    call(kube.certificates.create_cluster_trust_bundle, body)
    kube.cleanup(call, kube.certificates.delete_cluster_trust_bundle, name, what=f"delete ClusterTrustBundle {name}")
    return name


# Not made ahead (waves.ahead): the node is chosen at run time (kubelet gates, read live where the profile lacks
# them), the bundles' certificates are made afresh by the check (random keys) before the pod that projects them,
# and the check skips first where the API does not serve them.
@pytest.mark.test_id("42e4653f-85fd-4869-b8d5-4e9a348d7d62")
@pytest.mark.dataplane
@pytest.mark.requires("cluster-trust-bundles")
@pytest.mark.avoids("ctb-projection")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
def test_cluster_trust_bundles_are_projected_into_the_pod(wincon, namespace, build, kube, target_os):
    """ "ConfigMap, Secrets: as environment variables or volumes" (002_8a7e76f95009f44f.txt, Pods), and their GA
    successor for trust anchors: a projected volume holds, from a ClusterTrustBundle named in it, exactly that
    bundle's certificate, and from the bundles a signer name and label selector match, exactly their certificates,
    each once (upstream projected_clustertrustbundle.go:114 and :160; the kubelet deduplicates and shuffles them)."""
    require_served(kube, "cluster-trust-bundles")
    node = projecting_node(kube, wincon.profile, target_os, build, "ctb-projection")
    signer = f"wincon.test/{namespace}"
    prefix = signer.replace("/", ":")
    pems = [certs.make_ca(f"wincon {namespace} root {i}")[1] for i in range(5)]
    by_name = trust_bundle(kube, f"{namespace}-by-name", pems[0])
    # Two matching bundles sharing one certificate, and a third of the same signer the selector leaves out.
    matching = [pems[1] + pems[2], pems[2] + pems[3]]
    for i, bundle in enumerate(matching):
        trust_bundle(kube, f"{prefix}:match-{i}", bundle, signer, {"wincon.test/selected": "yes"})
    trust_bundle(kube, f"{prefix}:other", pems[4], signer, {"wincon.test/selected": "no"})
    sources = [
        {"clusterTrustBundle": {"name": by_name, "path": "by-name.pem"}},
        {
            "clusterTrustBundle": {
                "signerName": signer,
                "labelSelector": {"matchLabels": {"wincon.test/selected": "yes"}},
                "path": "by-signer.pem",
            }
        },
    ]
    mount = path(target_os, "ctb")
    body = os_pod(
        wincon,
        "trust-bundles",
        target_os,
        build,
        node=node,
        container_extra={"volumeMounts": [{"name": "ctb", "mountPath": mount}]},
        volumes=[{"name": "ctb", "projected": {"sources": sources}}],
    )
    pod = run_os_pod(wincon, namespace, body)
    # What the API holds now, read back (not the text the check sent).
    held = {
        item.metadata.name: item.spec.trust_bundle
        for item in call(
            kube.certificates.list_cluster_trust_bundle, label_selector="app.kubernetes.io/managed-by"
        ).items
        if item.metadata.name == by_name or item.metadata.name.startswith(prefix + ":")
    }
    expected = {
        path(target_os, "ctb", "by-name.pem"): [held[by_name]],
        path(target_os, "ctb", "by-signer.pem"): [held[f"{prefix}:match-{i}"] for i in range(len(matching))],
    }
    for file, bundles in expected.items():
        text, printed = read_back(kube, pod, file)
        problem = certs.bundle_problem(text, bundles, file)
        assert problem is None, f"{problem} (mounttest printed {printed})"


# Not made ahead: the check's own signer must run before the kubelet asks for the pod's certificate (it counts the
# requests for the pod), and the node is chosen at run time as above.
@pytest.mark.test_id("393d4f99-7baf-4028-a6c8-ab738e9f1893")
@pytest.mark.dataplane
@pytest.mark.requires("pod-certificates")
@pytest.mark.avoids("pod-certificate-projection")
@pytest.mark.documents("k8s-windows-guide", "Pods")
@pytest.mark.windows_form(same_as_control=True)
def test_pod_certificate_is_issued_and_projected_into_the_pod(wincon, namespace, build, kube, target_os):
    """ "ConfigMap, Secrets: as environment variables or volumes" (002_8a7e76f95009f44f.txt, Pods), and their GA
    successor for a pod's own credential: the kubelet asks for a certificate (a PodCertificateRequest of the
    projection's signer), the check's own signer issues it (as upstream's in-process hermetic signer does,
    projected_podcertificate.go:58-76), and the pod's volume then holds the issued chain and the private key of
    the requested public key (upstream's Conformance tests of the projection, projected_podcertificate.go:85-267)."""
    require_served(kube, "pod-certificates")
    node = projecting_node(kube, wincon.profile, target_os, build, "pod-certificate-projection")
    signer_name = f"wincon.test/{namespace}"
    api = kube.certificates

    def list_requests() -> list[Any]:
        field = f"spec.signerName={signer_name}"
        return call(api.list_namespaced_pod_certificate_request, namespace, field_selector=field).items

    def update_status(name: str, patch: dict[str, Any]) -> Any:
        return api.patch_namespaced_pod_certificate_request_status(name, namespace, patch)

    signer = certs.PodCertificateSigner(signer_name, namespace, list_requests, update_status)
    signer.start()
    kube.cleanup(signer.stop, what=f"stop the signer {signer_name}")
    mount = path(target_os, "tls")
    projection = {
        "podCertificate": {
            "signerName": signer_name,
            "keyType": "ECDSAP256",
            "keyPath": "tls.key",
            "certificateChainPath": "tls.crt",
        }
    }
    body = os_pod(
        wincon,
        "pod-certificate",
        target_os,
        build,
        node=node,
        container_extra={"volumeMounts": [{"name": "tls", "mountPath": mount}]},
        volumes=[{"name": "tls", "projected": {"sources": [projection]}}],
    )
    try:
        pod = run_os_pod(wincon, namespace, body)
    except Exception as exc:
        if signer.errors:  # the runner may not sign for its own signer name (RBAC "sign" on signers)
            raise InfrastructureError(f"the API server refused the check's signer: {signer.errors}") from exc
        raise
    requests = [r for r in list_requests() if r.spec.pod_name == pod.metadata.name]
    assert len(requests) == 1, f"{len(requests)} PodCertificateRequests of {signer_name} for the pod, not 1"
    request = requests[0]
    assert request.status is not None and request.status.certificate_chain, "the request holds no issued chain"
    key_text, key_printed = read_back(kube, pod, path(target_os, "tls", "tls.key"))
    chain_text, chain_printed = read_back(kube, pod, path(target_os, "tls", "tls.crt"))
    problem = certs.credential_problem(
        key_text,
        chain_text,
        request.status.certificate_chain,
        certs.requested_public_key(request),
        signer.ca_pem,
    )
    assert problem is None, f"{problem} (mounttest printed {key_printed} and {chain_printed})"
