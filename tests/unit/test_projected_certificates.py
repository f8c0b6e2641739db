"""suites/storage/test_projected_certificates.py on constructed API answers: a stand-in API server holds the
check's ClusterTrustBundles and PodCertificateRequests, and a stand-in kubelet writes the projected files the
way k8s.io/kubernetes v1.37.2 does (the matching bundles' certificates deduplicated and shuffled,
pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go:304-335; a PKCS#8 key and the issued chain,
pkg/volume/projected/projected.go:395-431) and answers agnhost mounttest's ``content of file "PATH": ...``.
Each check passes on those files and fails when a file holds other certificates or is missing."""

from __future__ import annotations

import base64
import json
import random
import time
from types import SimpleNamespace as NS
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.support import suites
from tests.unit import fakes
from wincon.checks import certificates as certs
from wincon.clusterinfo import capabilities
from wincon.clusterinfo.profile import ClusterProfile

SUITE = suites.load("suites/storage/test_projected_certificates.py")
CHECKS = {
    "test_cluster_trust_bundles_are_projected_into_the_pod": "cluster-trust-bundles",
    "test_pod_certificate_is_issued_and_projected_into_the_pod": "pod-certificates",
}
ALL_SERVED = {"clustertrustbundles", "podcertificaterequests", "podcertificaterequests/status"}


class FakeCertificatesApi:
    """certificates.k8s.io/v1 as the checks call it: ClusterTrustBundles and the namespace's PodCertificateRequests."""

    def __init__(self) -> None:
        self.bundles: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, NS] = {}
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def create_cluster_trust_bundle(self, body: dict[str, Any]) -> None:
        self.bundles[body["metadata"]["name"]] = body

    def delete_cluster_trust_bundle(self, name: str) -> None:
        del self.bundles[name]

    def list_cluster_trust_bundle(self, label_selector: str = "") -> NS:
        return NS(
            items=[
                NS(metadata=NS(name=name), spec=NS(trust_bundle=b["spec"]["trustBundle"]))
                for name, b in self.bundles.items()
            ]
        )

    def list_namespaced_pod_certificate_request(self, namespace: str, field_selector: str = "") -> NS:
        signer = field_selector.removeprefix("spec.signerName=")
        return NS(items=[r for r in list(self.requests.values()) if r.spec.signer_name == signer])

    def patch_namespaced_pod_certificate_request_status(self, name: str, namespace: str, body: dict) -> None:
        self.patches.append((name, body))
        status = body["status"]
        self.requests[name].status = NS(certificate_chain=status["certificateChain"], conditions=status["conditions"])


class FakeKube:
    """The kube fixture: the certificates API, cleanups, and exec answered by the stand-in kubelet's files."""

    def __init__(self, files: dict[str, str | None] | None = None) -> None:
        self.certificates = FakeCertificatesApi()
        self.api_client = None
        self.cleanups: list[Any] = []
        self.files: dict[str, str | None] = files if files is not None else {}
        self.commands: list[list[str]] = []

    def cleanup(self, fn, *args, what: str = "", **kwargs) -> None:
        self.cleanups.append((fn, args, kwargs))

    def close(self) -> None:
        while self.cleanups:
            fn, args, kwargs = self.cleanups.pop()
            fn(*args, **kwargs)

    def exec(self, pod: str, command: list[str]) -> NS:
        self.commands.append(command)
        file = command[-1].removeprefix("--file_content=")
        text = self.files.get(file)
        if text is None:  # mt.go: error reading file content for %q: %v
            return NS(ok=False, stdout=f"error reading file content for {json.dumps(file)}: no such file\n", stderr="")
        return NS(ok=True, stdout=f"content of file {json.dumps(file)}: {text}\n", stderr="")


def pem_set(pems: list[str]) -> str:
    """The kubelet's projection of bundles: each certificate once, in a shuffled order."""
    ders = list(dict.fromkeys(der for pem in pems for der in certs.certificates_of(pem)))
    random.shuffle(ders)
    return "".join(x509.load_der_x509_certificate(d).public_bytes(serialization.Encoding.PEM).decode() for d in ders)


def bundle_kubelet(kube: FakeKube, target_os: str, tamper: Any = None) -> Any:
    """A stand-in run_os_pod: writes each clusterTrustBundle source of the pod's volume as the kubelet does."""

    def run_os_pod(wincon, namespace, body):
        for volume in body["volumes"]:
            for source in volume["projected"]["sources"]:
                ctb = source["clusterTrustBundle"]
                bundles = kube.certificates.bundles
                if "name" in ctb:
                    pems = [bundles[ctb["name"]]["spec"]["trustBundle"]]
                else:
                    want = ctb["labelSelector"]["matchLabels"]
                    pems = [
                        b["spec"]["trustBundle"]
                        for b in bundles.values()
                        if b["spec"].get("signerName") == ctb["signerName"]
                        and all(b["metadata"]["labels"].get(k) == v for k, v in want.items())
                    ]
                file = SUITE.path(target_os, "ctb", ctb["path"])
                kube.files[file] = pem_set(pems)
        if tamper:
            tamper(kube)
        return NS(metadata=NS(name=body["name"]))

    return run_os_pod


def fake_pod(wincon, name, target_os, build, container_extra=None, volumes=None, node=None, **spec):
    return {"name": name, "volumes": volumes, "container": container_extra, "node": node}


# Nodes whose kubelets run both projection gates on (their /configz read in discovery): the checks' pods unpinned.
GATES_ON = {"ClusterTrustBundleProjection": True, "PodCertificateRequest": True}
PROFILE = ClusterProfile.from_dict(
    {
        "server_version": "v1.37.2",
        "nodes": [
            fakes.profile_windows_node("win-0", 17763, kubelet_version="v1.37.2", kubelet_feature_gates=GATES_ON),
            fakes.profile_linux_node("l1") | {"kubelet_version": "v1.37.2", "kubelet_feature_gates": GATES_ON},
        ],
    }
)
WINCON = NS(profile=PROFILE)


@pytest.fixture(autouse=True)
def served(monkeypatch):
    monkeypatch.setattr(certs, "served_resources", lambda api_client: set(ALL_SERVED))
    monkeypatch.setattr(SUITE, "os_pod", fake_pod)


def run_bundles(monkeypatch, target_os: str, tamper: Any = None) -> FakeKube:
    kube = FakeKube()
    monkeypatch.setattr(SUITE, "run_os_pod", bundle_kubelet(kube, target_os, tamper))
    try:
        SUITE.test_cluster_trust_bundles_are_projected_into_the_pod(WINCON, "wincon-ns", None, kube, target_os)
    finally:
        assert len(kube.certificates.bundles) == 4
        kube.close()
        assert kube.certificates.bundles == {}, "a ClusterTrustBundle was left behind"
    return kube


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_bundles_read_back_as_the_kubelet_writes_them_pass(monkeypatch, os_name):
    kube = run_bundles(monkeypatch, os_name)
    files = [c[-1].removeprefix("--file_content=") for c in kube.commands]
    assert files == [SUITE.path(os_name, "ctb", "by-name.pem"), SUITE.path(os_name, "ctb", "by-signer.pem")]
    assert all(c[:2] == ["/agnhost", "mounttest"] for c in kube.commands)


def test_a_bundle_the_selector_leaves_out_in_the_file_fails(monkeypatch):
    def add_the_other(kube):
        other = kube.certificates.bundles["wincon.test:wincon-ns:other"]["spec"]["trustBundle"]
        kube.files["/ctb/by-signer.pem"] += other

    with pytest.raises(AssertionError, match=r"by-signer.pem: 4 certificate\(s\) read, 3 expected.*1 not from them"):
        run_bundles(monkeypatch, "linux", add_the_other)


def test_a_missing_certificate_fails(monkeypatch):
    def drop_one(kube):
        text = kube.files["C:\\ctb\\by-signer.pem"]
        kube.files["C:\\ctb\\by-signer.pem"] = text[: text.index("-----END CERTIFICATE-----") + 26]

    with pytest.raises(AssertionError, match=r"1 certificate\(s\) read, 3 expected.*2 missing"):
        run_bundles(monkeypatch, "windows", drop_one)


def test_another_bundles_certificate_by_name_fails(monkeypatch):
    def swap(kube):
        kube.files["/ctb/by-name.pem"] = certs.make_ca("not the bundle")[1]

    with pytest.raises(AssertionError, match=r"by-name.pem: 1 certificate\(s\) read, 1 expected.*1 missing, 1 not"):
        run_bundles(monkeypatch, "linux", swap)


def test_a_missing_file_fails(monkeypatch):
    def remove(kube):
        kube.files["/ctb/by-name.pem"] = None

    with pytest.raises(AssertionError, match="by-name.pem: the container printed no content"):
        run_bundles(monkeypatch, "linux", remove)


def test_bundle_problem_reads_strictly():
    _, one = certs.make_ca("one")
    _, two = certs.make_ca("two")
    assert certs.bundle_problem(two + one, [one + two], "f") is None
    assert "more than once" in (certs.bundle_problem(one + one, [one], "f") or "")
    assert "outside PEM" in (certs.bundle_problem(one + "garbage\n", [one], "f") or "")
    key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    assert "other than CERTIFICATE" in (certs.bundle_problem(one + key, [one], "f") or "")
    assert "no certificate" in (certs.bundle_problem("", [one], "f") or "")


# ----------------------------------------------------------------------------- pod certificates


def cert_kubelet(kube: FakeKube, target_os: str, tamper: Any = None) -> Any:
    """A stand-in run_os_pod: the kubelet makes an ECDSA P-256 key, asks for a certificate with a stub PKCS#10
    request, waits for the signer's status, and writes the key and the issued chain."""

    def run_os_pod(wincon, namespace, body):
        source = body["volumes"][0]["projected"]["sources"][0]["podCertificate"]
        key = ec.generate_private_key(ec.SECP256R1())
        csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(key, hashes.SHA256())
        stub = base64.b64encode(csr.public_bytes(serialization.Encoding.DER)).decode()
        name = f"{body['name']}-req"
        spec = NS(
            signer_name=source["signerName"],
            pod_name=body["name"],
            service_account_name="default",
            max_expiration_seconds=86400,
            stub_pkcs10_request=stub,
        )
        kube.certificates.requests[name] = NS(metadata=NS(name=name, namespace=namespace), spec=spec, status=None)
        deadline = time.monotonic() + 10
        while kube.certificates.requests[name].status is None:
            assert time.monotonic() < deadline, "the signer issued nothing"
            time.sleep(0.05)
        pem_key = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        kube.files[SUITE.path(target_os, "tls", source["keyPath"])] = pem_key
        kube.files[SUITE.path(target_os, "tls", source["certificateChainPath"])] = kube.certificates.requests[
            name
        ].status.certificate_chain
        if tamper:
            tamper(kube)
        return NS(metadata=NS(name=body["name"]))

    return run_os_pod


def run_cert(monkeypatch, target_os: str, tamper: Any = None) -> FakeKube:
    kube = FakeKube()
    monkeypatch.setattr(SUITE, "run_os_pod", cert_kubelet(kube, target_os, tamper))
    try:
        SUITE.test_pod_certificate_is_issued_and_projected_into_the_pod(WINCON, "wincon-ns", None, kube, target_os)
    finally:
        kube.close()  # stops the signer
    return kube


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_issued_credential_read_back_passes(monkeypatch, os_name):
    kube = run_cert(monkeypatch, os_name)
    [(name, patch)] = kube.certificates.patches
    status = patch["status"]
    assert [c["type"] for c in status["conditions"]] == ["Issued"]
    leaf = x509.load_pem_x509_certificate(status["certificateChain"].encode())
    assert (leaf.not_valid_after_utc - leaf.not_valid_before_utc).total_seconds() == 86400
    assert status["notBefore"] == leaf.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    uris = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [u.value for u in uris] == ["spiffe://cluster.local/ns/wincon-ns/sa/default"]


def test_another_key_in_the_key_file_fails(monkeypatch):
    def other_key(kube):
        key = ec.generate_private_key(ec.SECP256R1())
        kube.files["/tls/tls.key"] = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    with pytest.raises(AssertionError, match="private key is not the one whose public key"):
        run_cert(monkeypatch, "linux", other_key)


def test_another_chain_in_the_chain_file_fails(monkeypatch):
    def other_chain(kube):
        kube.files["C:\\tls\\tls.crt"] = certs.make_ca("not issued")[1]

    with pytest.raises(AssertionError, match=r"chain file's 1 certificate\(s\) are not the 1 the signer issued"):
        run_cert(monkeypatch, "windows", other_chain)


def test_a_missing_chain_file_fails(monkeypatch):
    def remove(kube):
        kube.files["/tls/tls.crt"] = None

    with pytest.raises(AssertionError, match="printed no content of the chain file"):
        run_cert(monkeypatch, "linux", remove)


def test_a_leaf_not_signed_by_the_signer_fails():
    signer = certs.PodCertificateSigner("wincon.test/x", "x", lambda: [], lambda n, p: None)
    impostor = certs.PodCertificateSigner("wincon.test/x", "x", lambda: [], lambda n, p: None)
    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(key, hashes.SHA256())
    request = NS(
        metadata=NS(name="r", namespace="x"),
        spec=NS(
            signer_name="wincon.test/x",
            service_account_name="default",
            max_expiration_seconds=3600,
            stub_pkcs10_request=base64.b64encode(csr.public_bytes(serialization.Encoding.DER)).decode(),
        ),
    )
    chain = impostor.status_for(request)["certificateChain"]
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    problem = certs.credential_problem(pem_key, chain, chain, certs.requested_public_key(request), signer.ca_pem)
    assert problem is not None and "signature does not verify" in problem
    lifetime = x509.load_pem_x509_certificate(chain.encode())
    assert (lifetime.not_valid_after_utc - lifetime.not_valid_before_utc).total_seconds() == 3600


def test_a_refused_status_update_is_kept_for_the_check():
    def refuse(name, patch):
        raise Exception("Forbidden: User cannot sign")

    request = NS(metadata=NS(name="r", namespace="x"), spec=NS(signer_name="wincon.test/x"), status=None)
    signer = certs.PodCertificateSigner("wincon.test/x", "x", lambda: [request], refuse)
    signer.status_for = lambda request: {"certificateChain": ""}  # type: ignore[method-assign]
    signer.sign_pending()
    assert signer.errors and "Forbidden" in signer.errors[0]


# ----------------------------------------------------------------------------- the API served, plan and run


@pytest.mark.parametrize(
    ("served", "capability", "missing"),
    [
        ({"certificatesigningrequests"}, "cluster-trust-bundles", "clustertrustbundles"),
        ({"clustertrustbundles"}, "pod-certificates", "podcertificaterequests, podcertificaterequests/status"),
    ],
)
def test_an_unserved_api_skips_at_run_and_at_collection_alike(monkeypatch, served, capability, missing):
    monkeypatch.setattr(certs, "served_resources", lambda api_client: set(served))
    reason = certs.skip_reason(served, capability)
    assert reason is not None and f"certificates.k8s.io/v1 {missing}" in reason
    with pytest.raises(pytest.skip.Exception, match="does not serve"):
        SUITE.require_served(FakeKube(), capability)
    # collection: the capability's live read (the same discovery read), as wincon plan applies it
    item = NS(
        config=NS(stash=pytest.Stash(), getoption=lambda name, default=None: default),
        stash=pytest.Stash(),
        markers=[],
    )
    item.add_marker = lambda mark: item.markers.append(mark.mark)
    monkeypatch.setattr("wincon.session.context.get_context", lambda config: NS(api_client=None))
    assert capabilities.LIVE[capability].read(NS(api_client=None)) == set(served)
    assert capabilities._skip_live(item, capability)
    assert [m.kwargs["reason"] for m in item.markers] == [reason]


def test_each_checks_requires_marker_names_a_capability_with_its_live_read():
    """Each projected certificate check requires its capability, which the profile (the release) and the live
    discovery read (wincon.clusterinfo.capabilities.LIVE) both decide."""
    for name, capability in CHECKS.items():
        marks = [m.args for m in getattr(SUITE, name).pytestmark if m.name == "requires"]
        assert marks == [(capability,)], name
        assert capability in capabilities.CAPABILITIES and capability in capabilities.LIVE


def test_a_served_api_marks_nothing():
    assert certs.skip_reason(set(ALL_SERVED), "cluster-trust-bundles") is None
    assert certs.skip_reason(set(ALL_SERVED), "pod-certificates") is None


def test_discovery_404_is_not_served_and_a_refusal_raises(monkeypatch):
    """Only the API server's 404 for the group version says nothing is served; a 403 (a runner without discovery
    rights, or an unauthenticated client) says nothing of it and must not read as 'not served'."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    monkeypatch.undo()  # the real served_resources
    answers: list[Any] = []

    def get_api_resources(self):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(client.CertificatesV1Api, "get_api_resources", get_api_resources)
    answers.append(NS(resources=[NS(name="clustertrustbundles"), NS(name="certificatesigningrequests")]))
    assert certs.served_resources(None) == {"clustertrustbundles", "certificatesigningrequests"}
    answers.append(ApiException(status=404))
    assert certs.served_resources(None) == set()
    answers.append(ApiException(status=403))
    with pytest.raises(ApiException):
        certs.served_resources(None)
