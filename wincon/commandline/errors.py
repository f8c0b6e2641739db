"""Exit codes and the errors that carry them.

Every error a user can cause or meet names the problem and the fix, and maps to one
documented exit code, so CI can tell a broken node from a broken cluster or a typo.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Callable, Iterator
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
    REGISTRY_AUTH = 12  # a registry wants credentials none were given for, or refused those given


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
    """The cluster could not run a check. Reported as an error, never as the node failing."""

    exit_code = ExitCode.INFRASTRUCTURE


class SuiteError(WinconError):
    """A gap of the suite itself, not of the node nor of the cluster: a tool missing from the suite's own test
    image, a script of the suite that errs, a parser that cannot read a tool's output.

    Reported as an error whose message starts with ``SUITE_ERROR_PREFIX`` and names the image, the tool and
    what it printed; it gives exit 1 (the suite must be fixed), never 3 (the cluster is not to blame), and no
    limitation ever accepts it (it is not an AssertionError).
    """

    exit_code = ExitCode.TESTS_FAILED

    def __init__(self, message: str, fix: str = "", image: str = "", tool: str = "", output: str = "") -> None:
        named = ", ".join(part for part in (f"image {image}" if image else "", f"tool {tool}" if tool else "") if part)
        text = f"{message} [{named}]" if named else message
        if output:
            text += f"; it printed: {output.strip()[:400]!r}"
        super().__init__(text, fix or "fix the suite: its image, command or parser (this is not the node's fault)")
        self.summary, self.image, self.tool, self.output = message, image, tool, output


class UnreadableOutput(SuiteError, ValueError):
    """A parser of the suite could not read a tool's output: the suite's gap (its parser or its command), never
    the behaviour failing. A ValueError too, so callers that catch a parser's ValueError keep working."""


SUITE_ERROR_PREFIX = "suite error (neither the node nor the cluster)"


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


class NotTheDeviation(AssertionError):
    """An assertion failed inside ``expect_deviation`` but what was seen is not the deviation the block accepts
    (the tool failed otherwise, a timeout instead of NXDOMAIN): an ordinary failure, never an expected one."""


Accepts = Callable[[], bool] | type[AssertionError] | tuple[type[AssertionError], ...]

# Set while a Linux control runs (plugin.py): no Windows limitation speaks for a Linux pod, so an assertion inside
# ``expect_deviation`` fails there as itself, never as a Windows deviation's name.
_LINUX_CONTROL: contextvars.ContextVar[bool] = contextvars.ContextVar("wincon_linux_control", default=False)


@contextmanager
def linux_control() -> Iterator[None]:
    """While a Linux control runs: ``expect_deviation`` leaves its assertions alone."""
    token = _LINUX_CONTROL.set(True)
    try:
        yield
    finally:
        _LINUX_CONTROL.reset(token)


@contextmanager
def expect_deviation(limitation: str, accepts: Accepts | None = None, deviation: str = "") -> Iterator[None]:
    """Around the one assertion that observes ``limitation``'s deviation: its failure becomes ``DeviationObserved``.

    ``accepts`` says what that deviation looks like, so that an assertion failing for another reason (the tool
    failed, printed an error, timed out) is not taken for it:

    - a predicate with no arguments, asked once the assertion failed: True only where the output in hand is
      positive evidence of the documented deviation (``lambda: lookup.error == "NXDOMAIN"``);
    - an AssertionError subclass (or a tuple of them): only an assertion of that type is the deviation
      (``BehaviourNotObserved`` where a behaviour wait running out is the documented deviation).

    An assertion ``accepts`` refuses is raised as ``NotTheDeviation`` (a failure naming ``deviation``, the
    deviation expected). Without ``accepts`` any failed assert in the block is the deviation: keep such a block
    to that one assertion, after the tool has been shown to work. Framework, infrastructure and suite errors
    are not AssertionErrors and pass through unchanged, so a crash, a refusal, a missing tool or a timeout
    never reads as the documented deviation. In a Linux control (``linux_control``, set by the plugin) the block
    does nothing: its assertion fails as itself, never under a Windows limitation's name.
    """
    try:
        yield
    except DeviationObserved:
        raise
    except AssertionError as exc:
        if _LINUX_CONTROL.get():
            raise  # a Linux control's failure is its own: no Windows limitation is named for it
        if accepts is None:
            accepted = True
        elif isinstance(accepts, type) or isinstance(accepts, tuple):
            accepted = isinstance(exc, accepts)
        else:
            accepted = bool(accepts())
        if not accepted:
            expected = f" ({deviation})" if deviation else ""
            raise NotTheDeviation(
                f"{limitation}: the assertion failed, but not with the documented deviation{expected}: {exc}"
            ) from exc
        raise DeviationObserved(f"{limitation}: {exc}") from exc
