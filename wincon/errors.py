"""Exit codes and the errors that carry them.

Every error a user can cause or meet names the problem and the fix, and maps to one
documented exit code, so CI can tell a broken node from a broken cluster or a typo.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Documented exit codes of `wincon` and of pytest runs with the wincon plugin."""

    OK = 0  # every check passed (expected failures and skips with reasons included)
    TESTS_FAILED = 1  # a documented behaviour does not hold, or a limitation appears lifted
    INTERRUPTED = 2  # Ctrl-C or SIGTERM; namespaces were still cleaned
    INFRASTRUCTURE = 3  # the cluster could not run the checks: unreachable, no Windows nodes, pods never ran
    USAGE = 4  # bad command line, unknown marker or limitation id
    NO_TESTS = 5  # nothing was collected: a selection that matches nothing is an error, not a pass
    KUBECONFIG = 6  # the kubeconfig or context is missing or malformed
    LIMITATIONS = 7  # limitations.yaml is malformed or inconsistent with the suite
    RESULTS = 8  # a results directory is missing, half-written or not wincon's
    PUBLISH = 9  # an upload failed; re-running the same publish finishes it
    LOCAL_CLUSTER = 10  # the local simulated cluster could not be built, started or stopped
    GATE = 11  # the release gate said no: a required test failed, errored or is missing


class WinconError(Exception):
    """An error with a message, the fix, and the exit code it maps to."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, fix: str = "", exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        if exit_code is not None:
            self.exit_code = exit_code

    def render(self) -> str:
        text = f"wincon: error: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class UsageError(WinconError):
    exit_code = ExitCode.USAGE


class InfrastructureError(WinconError):
    """The cluster or the suite could not run a check. Reported as an error, never as the node failing."""

    exit_code = ExitCode.INFRASTRUCTURE


class KubeconfigError(WinconError):
    exit_code = ExitCode.KUBECONFIG


class LimitationsError(WinconError):
    exit_code = ExitCode.LIMITATIONS


class ResultsError(WinconError):
    exit_code = ExitCode.RESULTS


class PublishError(WinconError):
    exit_code = ExitCode.PUBLISH


class LocalClusterError(WinconError):
    exit_code = ExitCode.LOCAL_CLUSTER
