"""The API-rule table: every field lands where its reported path says, and the answers are parsed right."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from wincon.checks import api_rules
from wincon.checks.api_rules import (
    HOST_PROCESS_CASES,
    RUN_AS_USER_NAMES,
    ForbiddenField,
    forbidden_fields,
    host_process_pod,
    is_account_name,
    rejection_of,
    submit_pod,
    with_run_as_user_name,
)

BASE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"os": {"name": "windows"}, "containers": [{"name": "c", "image": "img", "args": ["pause"]}]},
}

# The list in /work/shared/REFERENCE.md section 4 and k/k validateWindows (v1.34).
EXPECTED_POD_LEVEL = {
    "seLinuxOptions",
    "seccompProfile",
    "appArmorProfile",
    "fsGroup",
    "fsGroupChangePolicy",
    "sysctls",
    "runAsUser",
    "runAsGroup",
    "supplementalGroups",
    "supplementalGroupsPolicy",
    "seLinuxChangePolicy",
    "hostUsers",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
}
EXPECTED_CONTAINER_LEVEL = {
    "seLinuxOptions",
    "seccompProfile",
    "appArmorProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
}


def lookup(obj, path):
    """Follow 'spec.containers[0].securityContext.x' through dicts and lists."""
    for part in path.split("."):
        match = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", part)
        obj = obj[match.group(1)]
        if match.group(2) is not None:
            obj = obj[int(match.group(2))]
    return obj


def test_table_covers_every_field_validate_windows_forbids():
    fields = forbidden_fields()
    pod_level = {f.name for f in fields if f.scope in ("podSecurityContext", "podSpec")}
    assert pod_level == EXPECTED_POD_LEVEL
    for scope in ("container", "initContainer"):
        assert {f.name for f in fields if f.scope == scope} == EXPECTED_CONTAINER_LEVEL
    assert len({f.id for f in fields}) == len(fields), "ids must be unique"


@pytest.mark.parametrize("rule", forbidden_fields(), ids=lambda f: f.id)
def test_each_rule_sets_its_field_at_the_reported_path(rule: ForbiddenField):
    body = rule.apply(BASE)
    assert lookup(body, rule.path) == rule.value
    assert rule.present_in(body)
    assert not rule.present_in(BASE)
    assert BASE["spec"].get("initContainers") is None, "apply must not modify its input"


def test_init_container_rule_adds_an_init_container_running_the_same_image():
    rule = next(f for f in forbidden_fields() if f.scope == "initContainer" and f.name == "privileged")
    body = rule.apply(BASE)
    init = body["spec"]["initContainers"][0]
    assert init["image"] == "img" and init["args"] == ["pause"]
    assert "securityContext" not in body["spec"]["containers"][0]


def test_present_in_sees_a_dropped_field_as_absent():
    rule = next(f for f in forbidden_fields() if f.name == "procMount" and f.scope == "container")
    body = rule.apply(BASE)
    del body["spec"]["containers"][0]["securityContext"]["procMount"]
    assert not rule.present_in(body)


DNS_SUBDOMAIN = re.compile(
    r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"
)


@pytest.mark.parametrize("length", [1, 62, 63, 64, 65, 127, 128, 255, 256])
def test_long_domain_has_exact_length_and_dns_format(length):
    domain = api_rules._long_domain(length)
    assert len(domain) == length
    assert DNS_SUBDOMAIN.match(domain)


def test_user_name_boundaries_sit_on_both_sides_of_the_limits():
    by_label = {c.label: c for c in RUN_AS_USER_NAMES}
    assert len(by_label["user-104-chars"].value) == 104 and by_label["user-104-chars"].valid
    assert len(by_label["user-105-chars"].value) == 105 and not by_label["user-105-chars"].valid
    assert len(by_label["domain-255-chars"].value.split("\\")[0]) == 255 and by_label["domain-255-chars"].valid
    assert len(by_label["domain-256-chars"].value.split("\\")[0]) == 256 and not by_label["domain-256-chars"].valid
    assert len(by_label) == len(RUN_AS_USER_NAMES), "labels must be unique"


def test_run_as_user_name_is_set_at_pod_or_container_level():
    pod_level = with_run_as_user_name(BASE, "ContainerUser")
    assert pod_level["spec"]["securityContext"]["windowsOptions"]["runAsUserName"] == "ContainerUser"
    container_level = with_run_as_user_name(BASE, "ContainerUser", scope="container")
    assert container_level["spec"]["containers"][0]["securityContext"]["windowsOptions"]["runAsUserName"] == (
        "ContainerUser"
    )
    assert "securityContext" not in BASE["spec"]


@pytest.mark.parametrize("case", HOST_PROCESS_CASES, ids=lambda c: c.label)
def test_host_process_layouts(case):
    body = host_process_pod(BASE, case)
    containers = body["spec"]["containers"]
    assert len(containers) == len(case.container_host_process)
    for container, wanted in zip(containers, case.container_host_process, strict=True):
        got = (container.get("securityContext") or {}).get("windowsOptions", {}).get("hostProcess")
        assert got == wanted
    assert bool(body["spec"].get("hostNetwork")) == case.host_network
    pod_value = (body["spec"].get("securityContext") or {}).get("windowsOptions", {}).get("hostProcess")
    assert pod_value == case.pod_host_process
    if case.path.startswith("spec.containers["):
        lookup(body, case.path)  # the reported path exists in the body


def status_exception(status, body):
    exc = ApiException(status=status, reason="Unprocessable Entity")
    exc.body = json.dumps(body) if isinstance(body, dict) else body
    return exc


def test_rejection_parses_status_causes():
    exc = status_exception(
        422,
        {
            "kind": "Status",
            "reason": "Invalid",
            "message": 'Pod "p" is invalid: spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod',
            "details": {
                "causes": [
                    {
                        "reason": "FieldValueForbidden",
                        "message": "Forbidden: cannot be set for a windows pod",
                        "field": "spec.securityContext.runAsUser",
                    }
                ]
            },
        },
    )
    rejection = rejection_of(exc)
    assert rejection.status == 422 and rejection.reason == "Invalid"
    assert rejection.cause("spec.securityContext.runAsUser")["reason"] == "FieldValueForbidden"
    assert rejection.cause("spec.securityContext.fsGroup") is None
    assert "Forbidden" in rejection.describe()


def test_rejection_keeps_a_body_that_is_not_json():
    rejection = rejection_of(status_exception(403, "<html>denied</html>"))
    assert rejection.status == 403 and "denied" in rejection.message and rejection.causes == ()


class FakeCore:
    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def create_namespaced_pod(self, namespace, body, **kwargs):
        self.calls.append(kwargs)
        if isinstance(self.answer, Exception):
            raise self.answer
        return SimpleNamespace(data=json.dumps(self.answer))


def test_submit_pod_dry_runs_by_default_and_returns_the_object(monkeypatch):
    fake = FakeCore({"metadata": {"name": "p"}})
    monkeypatch.setattr(api_rules.client, "CoreV1Api", lambda api_client: fake)
    created, rejection = submit_pod(None, "ns", BASE)
    assert rejection is None and created["metadata"]["name"] == "p"
    assert fake.calls[0]["dry_run"] == "All"
    submit_pod(None, "ns", BASE, dry_run=False)
    assert "dry_run" not in fake.calls[1]


def test_submit_pod_returns_a_rejection_for_422_and_raises_other_errors(monkeypatch):
    fake = FakeCore(status_exception(422, {"reason": "Invalid", "message": "bad"}))
    monkeypatch.setattr(api_rules.client, "CoreV1Api", lambda api_client: fake)
    created, rejection = submit_pod(None, "ns", BASE)
    assert created is None and rejection.status == 422
    fake.answer = status_exception(401, {"reason": "Unauthorized"})
    with pytest.raises(ApiException):
        submit_pod(None, "ns", BASE)


@pytest.mark.parametrize(
    ("output", "is_name"),
    [
        ("ContainerUser\r\n", True),
        ("ContainerAdministrator", True),  # 22 characters: a built-in account, longer than a SAM logon name
        ("%username%\r\n", False),  # cmd leaves an undefined variable unexpanded
        ("", False),
        ("The system cannot find the file specified.", False),
        ("ContainerUser\r\nsecond line", False),
        ("user:name", False),
    ],
)
def test_an_account_name_is_one_word_windows_allows_in_a_user_name(output: str, is_name: bool):
    """The run-as-user deviation is another account printed; an error, nothing, or `%username%` is not it."""
    assert is_account_name(output) is is_name
