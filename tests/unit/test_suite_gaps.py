"""The suite's own gaps are the suite's (issue 18, item 5): an exec whose executable is missing from the suite's
image, or a shell of the suite that finds no such command, is a SuiteError: an error naming image, tool and
output, exit 1, never an infrastructure error (exit 3), never a failure of the node, never the deviation."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_controls import suite  # noqa: F401  (the pytester fixture)
from wincon.cluster import exec as exec_mod
from wincon.commandline.errors import InfrastructureError, SuiteError, UnreadableOutput

# The exec's error channel as containerd's CRI streaming server writes it (a Failure Status, reason InternalError,
# wrapping the runtime's error). The two runc texts were recorded on the local cluster's real Linux node
# (Debian containerd 1.6.20, runc 1.1.5; exec of a missing name and of a missing path in the CoreDNS pod);
# the hcsshim text is the one cited in wincon/cluster/exec.py.
RUNC_NOT_IN_PATH = (
    "Internal error occurred: Internal error occurred: error executing command in container: failed to exec in "
    'container: failed to start exec "87911ddbe807c8c33cab203baada02da257488cb29ccfceb9bb287953c49fc4b": OCI runtime '
    'exec failed: exec failed: unable to start container process: exec: "nosuchtool": executable file not found in '
    "$PATH: unknown"
)
RUNC_NO_SUCH_PATH = (
    "Internal error occurred: Internal error occurred: error executing command in container: failed to exec in "
    'container: failed to start exec "edcb9e347a7728ab441f5df482fd3ef3c9a84392b4b37ca51d68155f7ab36342": OCI runtime '
    'exec failed: exec failed: unable to start container process: exec: "/bin/nosuch": stat /bin/nosuch: no such '
    "file or directory: unknown"
)
HCS_FILE_NOT_FOUND = (
    "Internal error occurred: error executing command in container: failed to exec in container: failed to start "
    'exec "0f3c": hcs::System::CreateProcess 0f3c: The system cannot find the file specified.: unknown'
)


def failure(message: str) -> str:
    return json.dumps({"status": "Failure", "reason": "InternalError", "message": message})


@pytest.mark.parametrize(
    "message", [RUNC_NOT_IN_PATH, RUNC_NO_SUCH_PATH, HCS_FILE_NOT_FOUND], ids=["path", "stat", "hcs"]
)
def test_an_exec_whose_executable_is_missing_is_a_suite_error(message):
    """Before: InfrastructureError, exit 3: a gap in the suite's own image blamed on the cluster."""
    with pytest.raises(SuiteError) as raised:
        exec_mod.exit_code_from_status(failure(message), "exec ['diskpart'] in ns/p")
    assert not isinstance(raised.value, (InfrastructureError, AssertionError))
    assert raised.value.exit_code == 1
    assert message[-60:] in raised.value.output


@pytest.mark.parametrize(
    "message",
    [
        "container c is not running",
        "Internal error occurred: error executing command in container: container is in CONTAINER_EXITED state",
        # not an exec's own executable: a file the running process did not find is the process's output
        "Internal error occurred: open /proc/1/ns/net: no such file or directory",
    ],
)
def test_other_exec_failures_stay_infrastructure_errors(message):
    with pytest.raises(InfrastructureError):
        exec_mod.exit_code_from_status(failure(message))


def test_a_shell_that_finds_no_such_command_is_a_suite_gap_and_other_exits_are_results():
    assert exec_mod.shell_command_not_found(["sh", "-c", "nc -z 10.0.0.1 80"], 127, "sh: nc: not found\n")
    assert exec_mod.shell_command_not_found(["/bin/sh", "-c", "x"], 127, "/bin/sh: x: not found")
    assert not exec_mod.shell_command_not_found(["sh", "-c", "false"], 1, "")
    assert not exec_mod.shell_command_not_found(["sh", "-c", "exit 127"], 127, "")  # no shell message: a result
    assert not exec_mod.shell_command_not_found(["cmd", "/c", "x"], 127, ": not found")  # cmd.exe: no evidence yet


class FakeCore:
    connect_get_namespaced_pod_exec = None  # the fake stream below stands for it

    def read_namespaced_pod(self, name, namespace):
        class C:
            def __init__(self, name, image):
                self.name, self.image = name, image

        class Spec:
            containers = [C("main", "registry.k8s.io/e2e-test-images/agnhost:2.56")]

        class Pod:
            spec = Spec()

        return Pod()


def test_the_suite_error_names_the_image_tool_and_output(monkeypatch):
    class FakeStream:
        def __init__(self):
            self.open = True

        def is_open(self):
            opened, self.open = self.open, False
            return opened

        def update(self, timeout):
            pass

        def peek_stdout(self):
            return False

        def peek_stderr(self):
            return False

        def read_channel(self, channel):
            return failure(HCS_FILE_NOT_FOUND)

        def close(self):
            pass

    monkeypatch.setattr(exec_mod, "stream", lambda *a, **k: FakeStream())
    monkeypatch.setattr(exec_mod.client, "CoreV1Api", lambda api_client: FakeCore())
    with pytest.raises(SuiteError) as raised:
        exec_mod.exec_in_pod(None, "ns", "p", ["diskpart.exe", "/s", "x"], container="main")
    text = raised.value.render()
    assert text.startswith("wincon: error: exec ['diskpart.exe', '/s', 'x'] in ns/p did not run: the executable")
    assert "image registry.k8s.io/e2e-test-images/agnhost:2.56" in text and "tool diskpart.exe" in text
    assert "The system cannot find the file specified" in text


SUITE = """
import json
import pytest
from wincon.cluster.exec import exit_code_from_status
from wincon.commandline.errors import expect_deviation

MISSING = json.dumps({{"status": "Failure", "reason": "InternalError", "message": {message!r}}})

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0401")
@pytest.mark.dataplane
{marks}def test_flow(target_os, data_plane):
    data_plane("diskpart")
    with expect_deviation("icmp-egress"):
        assert exit_code_from_status(MISSING, "exec ['diskpart'] in ns/p") == 0
"""


def test_a_missing_tool_is_an_error_of_the_suite_exit_1_on_both_twins(suite):  # noqa: F811
    result = suite(SUITE.format(message=HCS_FILE_NOT_FOUND, marks=""))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*suite error (neither the node nor the cluster)*cannot find the file specified*"])
    result.stdout.no_fnmatch_line("*cluster-wide*")
    result.stdout.no_fnmatch_line("*infrastructure error*")
    assert result.ret == 1


def test_a_missing_tool_inside_a_deviation_block_is_never_the_deviation(suite):  # noqa: F811
    result = suite(SUITE.format(message=RUNC_NOT_IN_PATH, marks='@pytest.mark.limitation("icmp-egress")\n'))
    result.assert_outcomes(errors=2)
    assert result.ret == 1


PARSER = """
import pytest
from wincon.commandline.errors import UnreadableOutput

def parse(output):
    raise UnreadableOutput("no ping statistics in the output", tool="ping", output=output)

@pytest.mark.test_id("6b1e0d8c-1f51-4a53-9d7e-6c3b0c1a0402")
@pytest.mark.dataplane
def test_flow(target_os, data_plane):
    data_plane("ping 1.2.3.4")
    parse("PING 1.2.3.4: garbled")
"""


def test_a_parser_that_cannot_read_the_output_is_an_error_of_the_suite(suite):  # noqa: F811
    assert issubclass(UnreadableOutput, ValueError)  # callers catching a parser's ValueError keep working
    result = suite(PARSER)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*suite error*no ping statistics*tool ping*garbled*"])
    assert result.ret == 1
