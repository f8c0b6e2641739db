"""Group Managed Service Accounts for Windows pods (upstream test/e2e/windows/gmsa_full.go and gmsa_kubelet.go;
operational readiness Extend.ActiveDirectory).

The credential-spec path through the API is checked wherever the GMSA pieces are installed: the
GMSACredentialSpec CRD (``gmsacredentialspecs.windows.k8s.io``) and the GMSA admission webhook. A pod naming a
spec its service account may ``use`` is admitted and gets the spec's JSON; a pod naming one it may not use is
refused. Without the CRD or the webhook the checks skip and say which is missing.

End to end needs a domain: set ``WINCON_GMSA_CREDSPEC`` (an existing GMSACredentialSpec of a gMSA the Windows
nodes may retrieve) and ``WINCON_GMSA_SMB_SHARE`` (``\\\\server\\share`` the gMSA may write). The container must
then reach the domain and the share as the gMSA identity; without them the check skips with that reason.
"""

from __future__ import annotations

import json
import os
import secrets

import pytest

from wincon.checks.api_rules import submit_pod
from wincon.checks.node import powershell
from wincon.checks.pods import Rejected, eventually, windows_pod
from wincon.cluster import waves
from wincon.cluster.client import call
from wincon.windows import forms, nltest

pytestmark = [pytest.mark.api]

GROUP = "windows.k8s.io"
PLURAL = "gmsacredentialspecs"
SPEC_ENV, SHARE_ENV = "WINCON_GMSA_CREDSPEC", "WINCON_GMSA_SMB_SHARE"
NLTEST_QUERY = ["nltest", "/QUERY"]  # upstream gmsa_full.go:147


def query_succeeded(output: str) -> bool:
    """Stricter than upstream's isValidOutput (gmsa_full.go:223, the closing sentence and two error names): every
    status nltest reports is 0 NERR_Success and it closed with "The command completed successfully"
    (wincon.windows.nltest; a broken trust still closes with that sentence, nltest-sc-verify-no-trust-sam-account.txt).
    Text nltest's forms do not explain is UnreadableOutput, a suite error."""
    return nltest.query_succeeded(output)


def spec_domain(pod) -> str:
    """The DNS name of the domain the pod's credential spec (as the webhook filled it in) joins."""
    options = pod.spec.security_context.windows_options if pod.spec.security_context else None
    spec = json.loads(options.gmsa_credential_spec) if options and options.gmsa_credential_spec else {}
    return str((spec.get("DomainJoinConfig") or {}).get("DnsName") or "")


def credspec(domain: str, account: str) -> dict:
    """A well-formed credential spec for ``account`` in ``domain`` (what New-CredentialSpec writes)."""
    short = domain.split(".")[0].upper()
    return {
        "CmsPlugins": ["ActiveDirectory"],
        "DomainJoinConfig": {
            "Sid": "S-1-5-21-2126729477-2524175714-3194792973",
            "MachineAccountName": account,
            "Guid": "244818ae-87ca-4fcd-92ec-e79e5252348a",
            "DnsTreeName": domain,
            "DnsName": domain,
            "NetBiosName": short,
        },
        "ActiveDirectoryConfig": {
            "GroupManagedServiceAccounts": [{"Name": account, "Scope": domain}, {"Name": account, "Scope": short}]
        },
    }


def make_spec(kube, version: str, account: str) -> tuple[str, dict]:
    name = f"wincon-{secrets.token_hex(4)}"
    content = credspec("wincon.example", account)
    body = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "GMSACredentialSpec",
        "metadata": {"name": name},
        "credspec": content,
    }
    call(kube.custom.create_cluster_custom_object, GROUP, version, PLURAL, body)
    kube.cleanup(call, kube.custom.delete_cluster_custom_object, GROUP, version, PLURAL, name, what=f"delete {name}")
    return name, content


def allow_use(kube, spec: str, service_account: str = "default") -> None:
    """A Role letting ``service_account`` of the namespace ``use`` the spec, and its binding."""
    role = {
        "metadata": {"name": f"use-{spec}"},
        "rules": [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["use"], "resourceNames": [spec]}],
    }
    call(kube.rbac.create_namespaced_role, kube.namespace, role)
    binding = {
        "metadata": {"name": f"use-{spec}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"use-{spec}"},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": kube.namespace}],
    }
    call(kube.rbac.create_namespaced_role_binding, kube.namespace, binding)


def naming_spec(wincon, name: str, build, spec: str) -> dict:
    body = windows_pod(wincon, name, build)
    body["spec"]["securityContext"] = {"windowsOptions": {"gmsaCredentialSpecName": spec}}
    return body


# Not made ahead (waves.ahead): the pod names a credential spec made in the check under a random name, after its
# Role; its admission is the verdict.
@pytest.mark.test_id("1338dfc6-6fdc-461d-ac00-1ccd76e52976")
@pytest.mark.documents("k8s-windows-guide", "Configure an Active Directory Identity")
@pytest.mark.requires("gmsa")
def test_pod_naming_a_credential_spec_it_may_use_gets_its_json(wincon, kube, build, gmsa_version):
    """ "Windows container workloads can be configured to use Group Managed Service Accounts (GMSA)" (002_8a7e76f95009f44f.txt, Configure an Active Directory Identity): a pod naming a GMSACredentialSpec its service account may use is admitted and the webhook fills in the spec's JSON (the path upstream gmsa_full.go sets up with its webhook)."""
    spec, content = make_spec(kube, gmsa_version, "WebApplication1")
    allow_use(kube, spec)
    created, rejection = submit_pod(
        kube.api_client, kube.namespace, naming_spec(wincon, "gmsa-allowed", build, spec), dry_run=False
    )
    assert rejection is None, f"a pod naming GMSA spec {spec} it may use was refused: {rejection.describe()}"
    options = created["spec"]["securityContext"]["windowsOptions"]
    assert options.get("gmsaCredentialSpecName") == spec, options
    assert options.get("gmsaCredentialSpec"), f"the webhook did not fill in gmsaCredentialSpec: {options}"
    assert json.loads(options["gmsaCredentialSpec"]) == content, "the pod got another JSON than the spec's"


# Not made ahead: as above, the specs are made by the check under random names, the Role before the pods.
@pytest.mark.test_id("631806d5-f68a-4d6d-98de-f502df3a880a")
@pytest.mark.documents("k8s-windows-guide", "Managing Workload Identity with Group Managed Service Accounts")
@pytest.mark.requires("gmsa")
def test_pod_naming_a_credential_spec_it_may_not_use_is_refused(wincon, kube, build, gmsa_version):
    """ "Containers configured with a GMSA can access external Active Directory Domain resources while carrying the identity configured with the GMSA" (002_8a7e76f95009f44f.txt): only service accounts granted `use` of a spec may carry it; a pod naming a spec its account may not use is refused, while the same pod naming an allowed one is admitted."""
    allowed, _ = make_spec(kube, gmsa_version, "WebApplication2")
    allow_use(kube, allowed)
    control, rejection = submit_pod(
        kube.api_client, kube.namespace, naming_spec(wincon, "gmsa-control", build, allowed)
    )
    assert rejection is None, f"the control pod naming allowed spec {allowed} was refused: {rejection.describe()}"
    forbidden, _ = make_spec(kube, gmsa_version, "WebApplication3")
    _, rejection = submit_pod(kube.api_client, kube.namespace, naming_spec(wincon, "gmsa-forbidden", build, forbidden))
    assert rejection is not None, f"a pod naming GMSA spec {forbidden} without `use` on it was admitted"
    assert forbidden in rejection.message and "use" in rejection.message, rejection.describe()


# Not made ahead: it skips without a domain before creating, and its pod (kube.run_pod) follows the Role granting
# use of the spec.
@pytest.mark.test_id("6a32bb2f-b4d4-4b2c-90cf-5fb6bb16063b")
@pytest.mark.dataplane
@pytest.mark.windows_only("a gMSA identity of an Active Directory domain (windowsOptions.gmsaCredentialSpec)")
@pytest.mark.slow
@pytest.mark.documents("k8s-windows-guide", "GMSA")
@pytest.mark.windows_form(forms.NLTEST_QUERY, forms.NLTEST_SC_RESET)
@pytest.mark.requires("gmsa")
@pytest.mark.decided_at_run_time(f"the run skips where {SPEC_ENV} or {SHARE_ENV} (the domain to test against) is unset")
def test_container_reaches_the_domain_and_an_smb_share_as_the_gmsa(wincon, kube, build, gmsa_version):
    """ "Containers configured with a GMSA can access external Active Directory Domain resources while carrying the identity configured with the GMSA" (002_8a7e76f95009f44f.txt, GMSA): the container reaches its domain controller (`nltest /QUERY` succeeds without ERROR_NO_LOGON_SERVERS or RPC_S_SERVER_UNAVAILABLE within 1 min, `nltest /sc_reset` between tries) and writes and reads back a file on an SMB share (upstream gmsa_full.go:99 works end to end, :163 can read and write file to remote SMB folder)."""
    spec, share = os.environ.get(SPEC_ENV), os.environ.get(SHARE_ENV)
    if not spec or not share:
        pytest.skip(
            f"no domain to test against: set {SPEC_ENV} (a GMSACredentialSpec) and {SHARE_ENV} (\\\\server\\share)"
        )
    allow_use(kube, spec)
    pod = kube.run_pod(naming_spec(wincon, "gmsa-e2e", build, spec))
    # nltest /QUERY answers only with a gMSA identity that reached and authenticated with a domain controller
    # (upstream gmsa_full.go:143-158); /PARENTDOMAIN would answer with bogus credentials too.
    last: list[str] = []

    def queried() -> bool:
        result = kube.exec(pod, NLTEST_QUERY)
        last[:] = [f"exit {result.exit_code}: {result.stdout} {result.stderr}".strip()]
        if result.ok and query_succeeded(result.stdout):
            return True
        reset = kube.exec(pod, ["nltest", f"/sc_reset:{spec_domain(pod)}"])  # upstream's repair, then retry
        last.append(f"nltest /sc_reset: {reset.stdout} {reset.stderr}".strip())
        return False

    eventually(
        queried, 60, "nltest /QUERY reaching the domain as the gMSA", behaviour=True, seen=lambda: " / ".join(last)
    )
    path = f"{share.rstrip(chr(92))}\\wincon-{secrets.token_hex(4)}.txt"
    script = f"Set-Content -Path '{path}' -Value 'wincon-gmsa'; Get-Content -Path '{path}'; Remove-Item -Path '{path}'"
    result = kube.exec(pod, powershell(script))
    assert result.ok and result.stdout.strip() == "wincon-gmsa", (
        f"{path} as the gMSA: {result.stdout!r} {result.stderr!r}"
    )


def inline_specs_pod(wincon, build) -> dict:
    """The kubelet check's pod: an inline credential spec of acme.com for the pod, its container main's, and one of
    contoso.org for its second container (the same image)."""
    body = windows_pod(wincon, "gmsa-kubelet", build)
    second = dict(body["spec"]["containers"][0], name="second")
    second["securityContext"] = {
        "windowsOptions": {"gmsaCredentialSpec": json.dumps(credspec("contoso.org", "WebApp"))}
    }
    body["spec"]["containers"].append(second)
    body["spec"]["securityContext"] = {
        "windowsOptions": {"gmsaCredentialSpec": json.dumps(credspec("acme.com", "WebApp"))}
    }
    return body


# The GMSA admission webhook's refusal of a credential spec set inline without the name of its GMSACredentialSpec
# (kubernetes-sigs/windows-gmsa, admission-webhook/webhook.go, validateCreateRequest: a 422 "<kind> <name> has a GMSA
# cred spec set, but does not define the name of the corresponding resource"), as the API server relays a webhook's
# denial ("admission webhook %q denied the request: ...", k8s.io/apiserver's webhook/errors/statuserror.go, v0.37.2).
WEBHOOK_DENIED = "denied the request"
INLINE_SPEC_REFUSED = "has a GMSA cred spec set, but does not define the name of the corresponding resource"


def webhook_refuses_inline_specs(message: str) -> bool:
    """The refusal's message is an admission webhook's denial in the GMSA webhook's words for inline specs; any
    other refusal (the API server's own validation, another policy's webhook, a quota) is not."""
    return WEBHOOK_DENIED in message and INLINE_SPEC_REFUSED in message


@pytest.mark.test_id("f7a30cba-0f69-4e6f-bbf7-b4697a05cfc0")
@pytest.mark.dataplane
@pytest.mark.windows_only("the kubelet hands gMSA credential specs to Windows containers only")
@pytest.mark.documents("k8s-windows-guide", "Managing Workload Identity with Group Managed Service Accounts")
@pytest.mark.windows_form(forms.NLTEST_PARENTDOMAIN)
@pytest.mark.decided_at_run_time(
    "the run skips where the GMSA admission webhook refuses the pod's inline credential specs"
)
# Safe ahead: the admission's answer made ahead is the one the check's own create returns (a refusal included, then
# the skip), and nltest runs after the pod does; nothing is timed from its start.
@waves.ahead(inline_specs_pod)
def test_kubelet_passes_the_credential_spec_down_to_each_container(wincon, kube, build):
    """ "Windows container workloads can be configured to use Group Managed Service Accounts (GMSA)" (002_8a7e76f95009f44f.txt): the kubelet hands each container its credential spec, pod-level or its own, and `nltest /PARENTDOMAIN` in it names that spec's domain even without a reachable domain (upstream gmsa_kubelet.go)."""
    body = inline_specs_pod(wincon, build)
    created, rejection = submit_pod(kube.api_client, kube.namespace, body, dry_run=False)
    if rejection is not None:
        if not webhook_refuses_inline_specs(rejection.message):
            raise Rejected(
                "the API server refused the pod with inline credential specs, not as the GMSA admission webhook "
                f"refuses a spec without its name: {rejection.describe()}"
            )
        pytest.skip(
            f"the cluster refuses inline credential specs (its GMSA webhook requires a spec name): {rejection.describe()}"
        )
    pod = kube.await_pod(body)
    for container_name, domain in (("main", "acme.com"), ("second", "contoso.org")):
        result = kube.exec(pod, ["nltest", "/PARENTDOMAIN"], container=container_name)
        assert result.ok, f"nltest in {container_name}: {result.stdout} {result.stderr}"
        named = nltest.parent_domain(result.stdout)  # "acme.com. (1)" + "The command completed successfully"
        assert named == domain, f"{container_name} names domain {named!r} ({result.stdout.strip()!r}), not {domain}"
