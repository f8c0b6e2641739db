"""A refusal is the documented deviation only where the API server's Windows rule names the limitation's field
(issue 18, item 3 / finding): a webhook's refusal of seccompProfile is not ``readonly-root-filesystem``."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

import wincon.checks.api_rules as api_rules
from tests.support import suites
from tests.unit.test_os_pods import Catalog
from wincon.checks import pods
from wincon.checks.api_rules import Rejection, forbidden_paths_in
from wincon.commandline.errors import DeviationObserved
from wincon.workloads.deploy import container, pod_manifest

RO_ROOT = "spec.containers[0].securityContext.readOnlyRootFilesystem"
SECCOMP = "spec.containers[0].securityContext.seccompProfile"


def windows_rule(*paths: str) -> Rejection:
    """What the API server's validateWindows answers (the shape of a real 422, see test_api_rules)."""
    return Rejection(
        422,
        "Invalid",
        'Pod "ro-root" is invalid: ' + ", ".join(f"{p}: Forbidden: cannot be set for a windows pod" for p in paths),
        tuple(
            {"reason": "FieldValueForbidden", "message": "Forbidden: cannot be set for a windows pod", "field": p}
            for p in paths
        ),
    )


WEBHOOK = Rejection(
    403,
    "Forbidden",
    'admission webhook "policy.example" denied the request: '
    f"{SECCOMP}: Forbidden: cannot be set for a windows pod (the policy adds RuntimeDefault)",
)


def ro_root_pod() -> dict[str, Any]:
    main = container("main", "agnhost", args=["pause"], securityContext={"readOnlyRootFilesystem": True})
    return pod_manifest("ro-root", [main], os_name="windows")


def refused_with(monkeypatch: pytest.MonkeyPatch, rejection: Rejection) -> None:
    monkeypatch.setattr(api_rules, "submit_pod", lambda *a, **k: (None, rejection))


def test_the_rule_refusing_the_limitations_own_field_is_the_deviation(monkeypatch):
    refused_with(monkeypatch, windows_rule(RO_ROOT))
    with pytest.raises(DeviationObserved, match=r"readonly-root-filesystem: the API server refuses .*readOnlyRoot"):
        pods.run_or_refused(NS(api_client=None), "ns", ro_root_pod(), "readonly-root-filesystem")


def test_a_webhook_refusing_seccomp_is_not_the_readonly_root_deviation(monkeypatch):
    """Before: any refusal containing 'cannot be set for a windows pod' became DeviationObserved."""
    refused_with(monkeypatch, WEBHOOK)
    with pytest.raises(pods.Rejected, match="but not for .*readOnlyRootFilesystem") as raised:
        pods.run_or_refused(NS(api_client=None), "ns", ro_root_pod(), "readonly-root-filesystem")
    assert not isinstance(raised.value, AssertionError)  # a framework failure: no limitation accepts it


def test_the_rule_refusing_another_field_only_is_not_the_deviation(monkeypatch):
    refused_with(monkeypatch, windows_rule(SECCOMP))  # a mutating webhook added seccompProfile
    with pytest.raises(pods.Rejected):
        pods.run_or_refused(NS(api_client=None), "ns", ro_root_pod(), "readonly-root-filesystem")
    refused_with(monkeypatch, windows_rule(SECCOMP, RO_ROOT))  # both refused: the limitation's field is named
    with pytest.raises(DeviationObserved):
        pods.run_or_refused(NS(api_client=None), "ns", ro_root_pod(), "readonly-root-filesystem")


def test_explicit_fields_override_what_the_body_sets(monkeypatch):
    refused_with(monkeypatch, windows_rule(RO_ROOT))
    with pytest.raises(pods.Rejected):
        pods.run_or_refused(NS(api_client=None), "ns", ro_root_pod(), "x", fields=["spec.securityContext.fsGroup"])


def test_windows_rule_for_needs_the_servers_422_forbidden_cause_at_that_field():
    assert windows_rule(RO_ROOT).windows_rule_for(RO_ROOT)["field"] == RO_ROOT
    assert windows_rule(RO_ROOT).windows_rule_for(SECCOMP) is None
    assert WEBHOOK.windows_rule_for(SECCOMP) is None  # no cause, not the API server's Invalid
    other = Rejection(422, "Invalid", "", ({"field": RO_ROOT, "message": "Invalid value: must be a boolean"},))
    assert other.windows_rule_for(RO_ROOT) is None


def test_forbidden_paths_in_names_every_linux_only_field_a_pod_sets_where_the_server_does():
    body = ro_root_pod()
    body["spec"]["hostPID"] = True
    body["spec"]["securityContext"] = {"fsGroup": 2000, "windowsOptions": {"runAsUserName": "ContainerUser"}}
    body["spec"]["initContainers"] = [{"name": "i", "securityContext": {"privileged": True}}]
    assert sorted(forbidden_paths_in(body)) == sorted(
        [RO_ROOT, "spec.hostPID", "spec.securityContext.fsGroup", "spec.initContainers[0].securityContext.privileged"]
    )
    assert forbidden_paths_in(pod_manifest("plain", [container("main", "agnhost")], os_name="windows")) == []


def load_suite_module() -> Any:
    return suites.load("suites/api/test_linux_security_fields_on_windows.py")


def test_every_linux_security_effect_names_exactly_the_field_it_sets():
    """The suite judges a refusal by the field its effect sets: each effect must set exactly one."""
    suite = load_suite_module()
    wincon = NS(catalog=Catalog())
    base = pod_manifest("base", [container("main", "agnhost")], os_name="windows", build=20348)
    fields = {param.values[0].label: suite.effect_fields(param.values[0], base, wincon) for param in suite.EFFECTS}
    assert all(len(paths) == 1 for paths in fields.values()), fields
    assert fields["seccomp"] == [SECCOMP]
    assert fields["run-as-user"] == ["spec.securityContext.runAsUser"]
    assert fields["host-pid"] == ["spec.hostPID"]
