"""Windows conventions at the API boundary: environment variable names and path separators."""

from __future__ import annotations

from typing import Any

import pytest

from wincon.checks.api_rules import submit_pod
from wincon.checks.pods import run_windows_pod, windows_pod
from wincon.cluster import waves
from wincon.commandline.errors import expect_deviation
from wincon.windows import forms

pytestmark = [pytest.mark.api]


ENV_NAME_FIELD = "spec.containers[0].env[0].name"


def refusal_is_the_deviation(rejection: Any) -> None:
    """Below API server 1.32 the documented deviation is the API server's refusal of the name (its validation of
    env names, KEP 4369): a 422 Invalid at that very field is the observation; any other refusal is not."""
    if rejection is None:
        return
    cause = rejection.cause(ENV_NAME_FIELD) or {}
    with expect_deviation(
        "env-var-name-colon",
        accepts=lambda: rejection.status == 422 and "Invalid value" in cause.get("message", ""),
        deviation=f"the API server's 422 Invalid at {ENV_NAME_FIELD}",
    ):
        raise AssertionError(f"the API server refused the name: {rejection.describe()}")


@pytest.mark.test_id("b0bde107-40a7-4677-a65f-980f5f426a42")
@pytest.mark.limitation("env-var-name-colon")
@pytest.mark.documents("k8s-handbook-windows", "Other Known Issues")
def test_environment_variable_name_with_a_colon_is_admitted_for_a_windows_pod(wincon, namespace, make_pod):
    """ "For .NET containers that need to use `:` as an environment variable, you can replace `:` ... with `__`" (001_feb1108140134f87.txt, Other Known Issues): the API server admits a Windows pod whose env name has ':' and stores the name as given; below API server 1.32 its 422 refusal is the documented deviation (decided by the API server's version, not a kubelet's)."""
    body = make_pod("env-colon-api", container_extra={"env": [{"name": "Logging:LogLevel", "value": "Debug"}]})
    created, rejection = submit_pod(wincon.api_client, namespace, body, dry_run=True)
    refusal_is_the_deviation(rejection)
    assert created is not None
    names = [env["name"] for env in created["spec"]["containers"][0].get("env", [])]
    assert names == ["Logging:LogLevel"], f"the API server stored the env names {names}"


def env_colon_pod(wincon, build: int | None) -> dict[str, Any]:
    """The data-plane check's pod: env name Logging:LogLevel (made ahead: ``waves.ahead``)."""
    return windows_pod(
        wincon, "env-colon", build, container_extra={"env": [{"name": "Logging:LogLevel", "value": "Debug"}]}
    )


@pytest.mark.test_id("769516df-c829-4e82-8f4c-9d9fafa81618")
@pytest.mark.dataplane
@pytest.mark.limitation("env-var-name-colon")
@pytest.mark.documents("k8s-handbook-windows", "Other Known Issues")
@pytest.mark.windows_form(forms.BUSYBOX_SH_ENV)
@waves.ahead(env_colon_pod)
def test_environment_variable_name_with_a_colon_is_accepted_and_set(kube, wincon, namespace, build):
    """ "For .NET containers that need to use `:` as an environment variable, you can replace `:` ... with `__`" (001_feb1108140134f87.txt, Other Known Issues): a name with ':' should be accepted and visible."""
    body = env_colon_pod(wincon, build)
    refusal_is_the_deviation(submit_pod(wincon.api_client, namespace, body, dry_run=True)[1])
    pod = run_windows_pod(wincon, namespace, body)
    assert pod.spec.containers[0].env[0].name == "Logging:LogLevel", "the API server must store the name as given"
    # busybox's env in the image (C:\bin of the Windows agnhost image), as upstream's conformance env test runs it
    # in Windows pods and reads NAME=value lines (expansion.go:62); the variable every pod gets shows it works.
    result = kube.exec(pod, ["sh", "-c", "env"])
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert result.ok and any(line.startswith("KUBERNETES_SERVICE_HOST=") for line in lines), (
        f"env printed no KUBERNETES_SERVICE_HOST line, so it cannot show the name: {result.stdout!r} {result.stderr}"
    )
    with expect_deviation(
        "env-var-name-colon",
        accepts=lambda: not any(line.split("=", 1)[0] == "Logging:LogLevel" for line in lines),
        deviation="the variable is absent from env's output",
    ):
        assert "Logging:LogLevel=Debug" in lines, f"no Logging:LogLevel=Debug line in env's output: {result.stdout!r}"


# What cmd's type says of an unquoted path with '/' separators, as recorded on Windows: `type d:/bat/so/second.bat`
# printed "The syntax of the command is incorrect." (https://superuser.com/a/1060315, answering "How does pushd
# exactly behave regarding path with slashes?"; tests/data/windows-outputs/cmd-type-unquoted-forward-slash-path.txt);
# the same path quoted gave "The system cannot find the file specified." and is not this check's command.
SYNTAX_INCORRECT = "The syntax of the command is incorrect."


def slash_path_refused(result: Any) -> bool:
    """The documented deviation's own evidence: cmd refused the '/' path as a syntax error and printed no content
    (its exit code is not asked: the recording does not show it). Any other failure (another error, another file's
    content, nothing) is not it."""
    return SYNTAX_INCORRECT in result.stdout + result.stderr and "slash-ok" not in result.stdout


def slash_paths_pod(wincon, build: int | None) -> dict[str, Any]:
    """The path check's pod: an emptyDir at C:\\data (made ahead: ``waves.ahead``)."""
    return windows_pod(
        wincon,
        "slash-paths",
        build,
        container_extra={"volumeMounts": [{"name": "data", "mountPath": "C:\\data"}]},
        volumes=[{"name": "data", "emptyDir": {}}],
    )


@pytest.mark.test_id("cab6c720-3f1c-4273-bf5f-fae10fae6034")
@pytest.mark.dataplane
@pytest.mark.limitation("backslash-paths-in-commands")
@pytest.mark.documents("k8s-windows-intro", "API File paths")
@pytest.mark.windows_form(
    forms.CMD_ECHO_TO_FILE, forms.CMD_TYPE, "tests/data/windows-outputs/cmd-type-unquoted-forward-slash-path.txt"
)
@waves.ahead(slash_paths_pod)
def test_forward_slash_path_works_in_a_container_command(kube, wincon, namespace, build):
    """ "The Go IO libraries typically accept both ... but when you're setting a path or command line that's interpreted inside a container, \\ may be needed in windows" (000_4130a90def37a825.txt, API File paths)."""
    body = slash_paths_pod(wincon, build)
    pod = run_windows_pod(wincon, namespace, body)
    write = ["cmd", "/c", "echo slash-ok> C:\\data\\file.txt"]
    assert kube.exec(pod, write).ok
    result = kube.exec(pod, ["cmd", "/c", "type C:/data/file.txt"])
    with expect_deviation(
        "backslash-paths-in-commands",
        accepts=lambda: slash_path_refused(result),
        deviation=f"cmd's {SYNTAX_INCORRECT!r}",
    ):
        assert result.ok and "slash-ok" in result.stdout, (
            f"`type C:/data/file.txt` gave {result.stdout!r} {result.stderr!r}"
        )
