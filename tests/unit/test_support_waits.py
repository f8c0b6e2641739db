"""tests/support/waits.py: the integration tests' one polling helper."""

from __future__ import annotations

import itertools

import pytest

from tests.support.waits import eventually


def test_the_first_true_answer_is_returned_and_listed_errors_count_as_not_yet():
    answers = iter([None, KeyError("not yet"), [], "ready", "later"])

    def probe() -> str | None:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert eventually("ready", probe, 5, interval=0.01, errors=(KeyError,)) == "ready"
    assert next(answers) == "later"  # polled no further


def test_an_error_not_listed_propagates_at_once():
    calls = itertools.count()

    def probe() -> None:
        next(calls)
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        eventually("x", probe, 5, interval=0.01, errors=(KeyError,))
    assert next(calls) == 1


def test_a_timeout_fails_naming_what_was_awaited_and_the_last_answer():
    with pytest.raises(pytest.fail.Exception) as failed:
        eventually("the pod to run", lambda: 0, 0.1, interval=0.02)
    assert str(failed.value) == "timed out after 0 s waiting for the pod to run (last: 0)"
    with pytest.raises(pytest.fail.Exception) as failed:
        eventually("the API", lambda: {}["missing"], 0.1, interval=0.02, errors=(KeyError,))
    assert "waiting for the API (last: KeyError('missing'))" in str(failed.value)
