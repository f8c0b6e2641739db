"""Waiting, in the integration and fault tests, for something the cluster does by itself (tenacity's polling)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest
import tenacity

T = TypeVar("T")


def eventually(
    what: str,
    probe: Callable[[], T | None],
    timeout: float,
    *,
    interval: float = 0.5,
    errors: tuple[type[Exception], ...] = (),
) -> T:
    """``probe``'s first true value, polled every ``interval`` s for ``timeout`` s. An exception of ``errors``
    counts as not yet (any other propagates). On timeout the test fails naming ``what`` and the last answer."""
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout),
        wait=tenacity.wait_fixed(interval),
        retry=tenacity.retry_if_exception_type(errors) | tenacity.retry_if_result(lambda value: not value),
    )
    try:
        value = retrying(probe)
    except tenacity.RetryError as exc:
        last = exc.last_attempt
        answer = last.exception() if last.failed else last.result()
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {answer!r})")
    assert value  # the retry condition returns only a true value
    return value
