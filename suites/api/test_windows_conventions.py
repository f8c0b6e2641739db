"""Windows conventions at the API boundary: environment variable names and path separators."""

from __future__ import annotations

import pytest

from wincon import forms
from wincon.checks.pods import run_windows_pod
from wincon.errors import expect_deviation

pytestmark = [pytest.mark.api]


@pytest.mark.test_id("769516df-c829-4e82-8f4c-9d9fafa81618")
@pytest.mark.dataplane
@pytest.mark.limitation("env-var-name-colon")
@pytest.mark.documents("k8s-handbook-windows", "Other Known Issues")
@pytest.mark.windows_form(unavailable="cmd's `set <prefix>` output has no evidence in a Windows pod")
def test_environment_variable_name_with_a_colon_is_accepted_and_set(kube, wincon, namespace, make_pod):
    """ "For .NET containers that need to use `:` as an environment variable, you can replace `:` ... with `__`" (001_feb1108140134f87.txt, Other Known Issues): a name with ':' should be accepted and visible."""
    body = make_pod("env-colon", container_extra={"env": [{"name": "Logging:LogLevel", "value": "Debug"}]})
    pod = run_windows_pod(wincon, namespace, body)
    assert pod.spec.containers[0].env[0].name == "Logging:LogLevel", "the API server must store the name as given"
    command = ["cmd", "/c", "set Logging"]
    result = kube.exec(pod, command)
    with expect_deviation("env-var-name-colon"):
        assert result.ok and "Logging:LogLevel=Debug" in result.stdout, f"{result.stdout!r} {result.stderr}"


@pytest.mark.test_id("cab6c720-3f1c-4273-bf5f-fae10fae6034")
@pytest.mark.dataplane
@pytest.mark.limitation("backslash-paths-in-commands")
@pytest.mark.documents("k8s-windows-intro", "API File paths")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE, forms.CMD_TYPE)
def test_forward_slash_path_works_in_a_container_command(kube, wincon, namespace, make_pod):
    """ "The Go IO libraries typically accept both ... but when you're setting a path or command line that's interpreted inside a container, \\ may be needed in windows" (000_4130a90def37a825.txt, API File paths)."""
    body = make_pod(
        "slash-paths",
        container_extra={"volumeMounts": [{"name": "data", "mountPath": "C:\\data"}]},
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    pod = run_windows_pod(wincon, namespace, body)
    write = ["cmd", "/c", "echo slash-ok> C:\\data\\file.txt"]
    assert kube.exec(pod, write).ok
    result = kube.exec(pod, ["cmd", "/c", "type C:/data/file.txt"])
    with expect_deviation("backslash-paths-in-commands"):
        assert result.ok and "slash-ok" in result.stdout, (
            f"`type C:/data/file.txt` gave {result.stdout!r} {result.stderr!r}"
        )
