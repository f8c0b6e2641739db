"""Exit codes and the errors that carry them.

Every error a user can cause or meet names the problem and the fix, and maps to one
documented exit code, so CI can tell a broken node from a broken cluster or a typo.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager


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


# ----------------------------------------------------------------------------- what a check observed


class DeviationObserved(AssertionError):
    """The check itself saw the documented deviation: the error text, the exit code, the value it names.

    The only exception an expected failure (a limitation that applies) accepts. Where no limitation
    applies it is an ordinary failure. Raise it only where the deviation was observed, never for a pod
    that did not run, a refusal the check did not ask about, or a timeout: see ``expect_deviation``.
    """


class FrameworkFailure(Exception):
    """Something went wrong around a check, not in the behaviour it checks (a container crashed, a pod ran on
    the wrong node, the API server refused an object the check needed, a rollout could not be undone).

    The test fails with it, and no limitation ever accepts it: deliberately not an AssertionError.
    """


@contextmanager
def expect_deviation(limitation: str) -> Iterator[None]:
    """Around the one check that can observe ``limitation``'s deviation: its failed assert becomes
    ``DeviationObserved``. Framework errors and infrastructure errors pass through unchanged, so a
    crash, a refusal or a timeout inside the block never reads as the documented deviation."""
    try:
        yield
    except DeviationObserved:
        raise
    except AssertionError as exc:
        raise DeviationObserved(f"{limitation}: {exc}") from exc
