"""Projected certificate volumes (``clusterTrustBundle`` and ``podCertificate`` sources, GA in Kubernetes 1.37):
the certificates a check makes, the bundle and credential files a pod reads back, and the in-process signer that
issues the check's own PodCertificateRequests.

Upstream (k8s.io/kubernetes v1.37.2): test/e2e/auth/projected_clustertrustbundle.go makes self-signed ed25519 CA
certificates (mustMakeCAPEM, :648) for its ClusterTrustBundles and reads the projected file with agnhost
mounttest (podForCTBProjection, :509); test/e2e/auth/projected_podcertificate.go runs an in-process signer
(test/utils/hermeticpodcertificatesigner, started at :58-76) that signs the PodCertificateRequests of a signer name
of its own with a CA it generates. The kubelet writes a projected bundle as the matching objects' certificates,
deduplicated and shuffled (pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go:304-335), and a pod
certificate as a PKCS#8 "PRIVATE KEY" block and the issued chain (pkg/volume/projected/projected.go:395-431,
pkg/kubelet/podcertificate/podcertificatemanager.go:933-956).
"""

from __future__ import annotations

import base64
import datetime
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)

# What the hermetic signer gives a certificate at most (hermeticpodcertificatesigner.go:244), and how long before
# its end the kubelet is to refresh it (:263).
DEFAULT_LIFETIME = datetime.timedelta(hours=24)
REFRESH_BEFORE_END = datetime.timedelta(minutes=30)
BACKDATE = datetime.timedelta(minutes=2)  # hermeticpodcertificatesigner.go:261


def pem_blocks(text: str) -> tuple[list[tuple[str, bytes]], str]:
    """The PEM blocks of ``text`` as (type, DER), and whatever else it holds besides blocks and whitespace."""
    blocks: list[tuple[str, bytes]] = []
    for match in PEM_BLOCK.finditer(text):
        body = "".join(match.group(2).split())
        try:
            blocks.append((match.group(1), base64.b64decode(body, validate=True)))
        except ValueError:
            blocks.append((match.group(1), b""))
    rest = PEM_BLOCK.sub("", text).strip()
    return blocks, rest


def certificates_of(text: str) -> list[bytes]:
    """The DER of each CERTIFICATE block of ``text`` (a bundle or chain as the API holds it), in order."""
    return [der for kind, der in pem_blocks(text)[0] if kind == "CERTIFICATE"]


def make_ca(common_name: str) -> tuple[ed25519.Ed25519PrivateKey, str]:
    """A self-signed ed25519 CA certificate (as upstream's mustMakeCAPEM and GenerateCAHierarchy make theirs) and
    its key: (key, certificate PEM)."""
    key = ed25519.Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, None)
    )
    return key, cert.public_bytes(serialization.Encoding.PEM).decode()


def bundle_problem(file_text: str | None, expected_pems: list[str], path: str) -> str | None:
    """What is wrong with a projected trust bundle file read back as ``file_text`` (None: no content was read),
    against the trust bundles of the ClusterTrustBundle objects it must hold: None when the file holds exactly
    their certificates (each once, in any order, as the kubelet deduplicates and shuffles them) and nothing else."""
    if file_text is None:
        return f"{path}: the container printed no content of the file"
    blocks, rest = pem_blocks(file_text)
    if rest:
        return f"{path}: text outside PEM blocks: {rest[:200]!r}"
    others = sorted({kind for kind, _ in blocks if kind != "CERTIFICATE"})
    if others:
        return f"{path}: blocks other than CERTIFICATE: {', '.join(others)}"
    read = [der for _, der in blocks]
    expected = {der for pem in expected_pems for der in certificates_of(pem)}
    if not read:
        return f"{path}: no certificate in the file (expected {len(expected)})"
    if len(read) != len(set(read)):
        return f"{path}: a certificate appears more than once ({len(read)} blocks, {len(set(read))} distinct)"
    missing, extra = expected - set(read), set(read) - expected
    if missing or extra:
        return (
            f"{path}: {len(read)} certificate(s) read, {len(expected)} expected from the ClusterTrustBundles: "
            f"{len(missing)} missing, {len(extra)} not from them"
        )
    return None


def der_bytes(value: bytes | str) -> bytes:
    """A bytes field of an API object as the client hands it: base64 text (JSON's form of []byte) or bytes."""
    if isinstance(value, str):
        return base64.b64decode(value)
    if value[:1] == b"\x30":  # DER starts with an ASN.1 SEQUENCE tag; base64 of one starts with "M"
        try:
            x509.load_der_x509_csr(value)
            return value
        except ValueError:
            pass
    return base64.b64decode(value)


def requested_public_key(request: Any) -> bytes:
    """The public key a PodCertificateRequest asks a certificate for: its stub PKCS#10 request's subject public key
    (spec.stubPKCS10Request, the only key field of certificates.k8s.io/v1), as SubjectPublicKeyInfo DER."""
    return _der_spki(_request_key(request))


def _request_key(request: Any) -> Any:
    """The public key object of a PodCertificateRequest's stub PKCS#10 request."""
    return x509.load_der_x509_csr(der_bytes(request.spec.stub_pkcs10_request)).public_key()


def _der_spki(public_key: Any) -> bytes:
    return bytes(public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


def credential_problem(
    key_text: str | None, chain_text: str | None, issued_chain: str, requested_key: bytes, ca_pem: str
) -> str | None:
    """What is wrong with a pod's projected credential, read back as its key file and its certificate chain file,
    against its PodCertificateRequest (``issued_chain``: status.certificateChain, ``requested_key``:
    the stub PKCS#10 request's public key, DER) and the signer's CA: None when the chain file holds exactly the issued chain, its
    leaf is signed by the CA, and the key file holds one private key whose public key is the requested one."""
    if key_text is None or chain_text is None:
        return "the container printed no content of the " + ("key file" if key_text is None else "chain file")
    chain = certificates_of(issued_chain)
    if not chain:
        return "the PodCertificateRequest holds no issued certificate"
    blocks, rest = pem_blocks(chain_text)
    if rest or any(kind != "CERTIFICATE" for kind, _ in blocks):
        return f"the chain file holds more than CERTIFICATE blocks: {chain_text[:200]!r}"
    read = [der for _, der in blocks]
    if read != chain:
        return f"the chain file's {len(read)} certificate(s) are not the {len(chain)} the signer issued"
    leaf = x509.load_der_x509_certificate(chain[0])
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError) as exc:
        return f"the issued leaf certificate is not signed by the signer's CA: {exc}"
    except Exception as exc:  # cryptography's InvalidSignature
        return f"the issued leaf certificate's signature does not verify with the signer's CA: {exc!r}"
    keys, key_rest = pem_blocks(key_text)
    if key_rest or [kind for kind, _ in keys] != ["PRIVATE KEY"]:
        return f"the key file does not hold exactly one PRIVATE KEY block: {[kind for kind, _ in keys]}"
    try:
        private = serialization.load_der_private_key(keys[0][1], password=None)
    except (ValueError, TypeError) as exc:
        return f"the key file's PRIVATE KEY does not parse: {exc}"
    public = _der_spki(private.public_key())
    if public != requested_key:
        return "the key file's private key is not the one whose public key the PodCertificateRequest carries"
    if _der_spki(leaf.public_key()) != public:
        return "the issued leaf certificate is not for the key file's private key"
    return None


@dataclass
class PodCertificateSigner:
    """Issues the PodCertificateRequests of ``signer_name`` in ``namespace`` with its own CA, as upstream's
    hermetic signer does (hermeticpodcertificatesigner.go:216-330): polls ``list_requests`` (the namespace's
    requests of that signer name) and writes each unissued one's status through ``update_status``. What it
    could not do (an API refusal of its status update) is kept in ``errors`` for the check to report."""

    signer_name: str
    namespace: str
    list_requests: Callable[[], list[Any]]
    update_status: Callable[[str, dict[str, Any]], Any]
    interval: float = 0.5
    key: ed25519.Ed25519PrivateKey = field(init=False)
    ca_pem: str = field(init=False)
    issued: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.key, self.ca_pem = make_ca(f"wincon pod certificate signer {self.signer_name}")

    def status_for(self, request: Any, now: datetime.datetime | None = None) -> dict[str, Any]:
        """The Issued status of ``request`` (a PodCertificateRequest model): a leaf for its public key with the
        SPIFFE URI of its service account, valid for 24 h or its maxExpirationSeconds if shorter."""
        now = (now or datetime.datetime.now(datetime.UTC)).replace(microsecond=0)
        spec = request.spec
        public = _request_key(request)
        lifetime = min(DEFAULT_LIFETIME, datetime.timedelta(seconds=spec.max_expiration_seconds or 86400))
        not_before = now - BACKDATE
        not_after = not_before + lifetime
        ns = request.metadata.namespace
        ca = x509.load_pem_x509_certificate(self.ca_pem.encode())
        uri = f"spiffe://cluster.local/ns/{ns}/sa/{spec.service_account_name}"
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(ca.subject)
            .public_key(public)  # type: ignore[arg-type]
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]),
                critical=False,
            )
            .sign(self.key, None)
        )

        def stamp(moment: datetime.datetime) -> str:
            return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

        return {
            "conditions": [
                {
                    "type": "Issued",
                    "status": "True",
                    "reason": "Issued",
                    "message": f"issued by the wincon check's signer {self.signer_name}",
                    "lastTransitionTime": stamp(now),
                }
            ],
            "certificateChain": leaf.public_bytes(serialization.Encoding.PEM).decode(),
            "notBefore": stamp(not_before),
            "beginRefreshAt": stamp(not_after - REFRESH_BEFORE_END),
            "notAfter": stamp(not_after),
        }

    def sign_pending(self) -> None:
        """One pass: issue every request of this signer that has no status yet."""
        for request in self.list_requests():
            if request.spec.signer_name != self.signer_name:
                continue
            status = request.status
            if status is not None and (status.certificate_chain or status.conditions):
                continue
            name = request.metadata.name
            body = self.status_for(request)
            try:
                self.update_status(name, {"status": body})
            except Exception as exc:
                message = f"{name}: {getattr(exc, 'status', '')} {getattr(exc, 'body', None) or exc}"
                if message not in self.errors:
                    self.errors.append(message)
                continue
            self.issued[name] = body["certificateChain"]

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sign_pending()
            except Exception as exc:
                if repr(exc) not in self.errors:
                    self.errors.append(repr(exc))
            self._stop.wait(self.interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"signer {self.signer_name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


GROUP_VERSION = "certificates.k8s.io/v1"


def served_resources(api_client: Any) -> set[str]:
    """The resources the API server serves in certificates.k8s.io/v1 (its discovery document, as ``kubectl
    api-resources`` reads it); empty where the group version is not served (404). Any other refusal raises: a
    discovery read the caller may not make says nothing of what is served."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        answer = client.CertificatesV1Api(api_client).get_api_resources()
    except ApiException as exc:
        if exc.status == 404:
            return set()
        raise
    return {resource.name for resource in answer.resources or ()}


def not_served(served: set[str], needed: tuple[str, ...], gate: str) -> str | None:
    """The cluster's reason to skip where the API server does not serve ``needed``; None where it does."""
    missing = [name for name in needed if name not in served]
    if not missing:
        return None
    return (
        f"the API server does not serve {GROUP_VERSION} {', '.join(missing)} (served there: "
        f"{', '.join(sorted(served)) or 'nothing'}): the {gate} feature gate is off or the API is disabled"
    )


# capability (wincon/clusterinfo/capabilities.py) -> the certificates.k8s.io/v1 resources its checks need and the feature gate
# that serves them (pkg/registry/certificates/rest/storage_certificates.go:89, :101 at v1.37.2)
APIS: dict[str, tuple[tuple[str, ...], str]] = {
    "cluster-trust-bundles": (("clustertrustbundles",), "ClusterTrustBundle"),
    "pod-certificates": (("podcertificaterequests", "podcertificaterequests/status"), "PodCertificateRequest"),
}


def skip_reason(served: set[str], capability: str) -> str | None:
    """The skip of a check of ``capability`` on an API server serving ``served``; the same at collection and run."""
    needed, gate = APIS[capability]
    return not_served(served, needed, gate)
