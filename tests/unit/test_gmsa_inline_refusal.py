"""The gMSA kubelet check skips only where the GMSA admission webhook refuses its inline credential specs
(suites/gmsa/test_gmsa.py, ``webhook_refuses_inline_specs``): the webhook's own words (kubernetes-sigs/windows-gmsa,
admission-webhook/webhook.go) as the API server relays a webhook's denial. Before, any 400/403/422 skipped it,
blaming a GMSA webhook: the API server's own validation, another policy's webhook or a quota hid there too."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tests.support import suites
from wincon.checks.api_rules import Rejection
from wincon.checks.pods import Rejected

GMSA = suites.load("suites/gmsa/test_gmsa.py")
WEBHOOK = (
    'admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: pod "gmsa-inline" has a '
    "GMSA cred spec set, but does not define the name of the corresponding resource"
)


def run_check(monkeypatch: pytest.MonkeyPatch, rejection: Rejection) -> list[str]:
    """The check against a cluster that refuses its pod with ``rejection``; what it awaited after (nothing)."""
    awaited: list[str] = []
    monkeypatch.setattr(GMSA, "inline_specs_pod", lambda wincon, build: {"metadata": {"name": "gmsa-inline"}})
    monkeypatch.setattr(GMSA, "submit_pod", lambda api_client, namespace, body, dry_run: (None, rejection))
    kube = NS(api_client=None, namespace="ns", await_pod=lambda body: awaited.append(body["metadata"]["name"]))
    GMSA.test_kubelet_passes_the_credential_spec_down_to_each_container(NS(), kube, 26100)
    return awaited


def test_the_gmsa_webhooks_refusal_of_inline_specs_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.skip.Exception, match="its GMSA webhook requires a spec name"):
        run_check(monkeypatch, Rejection(422, "Invalid", WEBHOOK))


@pytest.mark.parametrize(
    "rejection",
    [
        # the API server's own validation of the pod
        Rejection(422, "Invalid", 'Pod "gmsa-inline" is invalid: spec.containers[0].image: Required value'),
        # another policy's webhook
        Rejection(403, "Forbidden", 'admission webhook "validation.gatekeeper.sh" denied the request: [no-gmsa] x'),
        # a quota
        Rejection(403, "Forbidden", 'pods "gmsa-inline" is forbidden: exceeded quota: pods, requested: pods=1'),
        # the webhook's words without a webhook's denial (a message that merely quotes them)
        Rejection(
            422, "Invalid", "has a GMSA cred spec set, but does not define the name of the corresponding resource"
        ),
    ],
)
def test_any_other_refusal_is_rejected_never_a_skip(monkeypatch: pytest.MonkeyPatch, rejection: Rejection) -> None:
    with pytest.raises(Rejected, match="not as the GMSA admission webhook refuses a spec without its name"):
        run_check(monkeypatch, rejection)
