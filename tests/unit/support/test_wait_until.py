"""wait_until: a raising predicate fails at once unless its exception is named as expected."""

from __future__ import annotations

import time

import pytest

from tests.support.kafka import wait_until


def test_returns_the_first_truthy_result() -> None:
    answers = iter([None, 0, [], ["ready"]])
    assert wait_until(lambda: next(answers), 5, "ready", interval_s=0) == ["ready"]


def test_a_raising_predicate_fails_at_once_with_its_own_message() -> None:
    calls = 0

    def broken() -> bool:
        nonlocal calls
        calls += 1
        raise KeyError("no such connector")

    began = time.monotonic()
    with pytest.raises(KeyError, match="no such connector") as raised:
        wait_until(broken, 30, "the connector")
    assert calls == 1 and time.monotonic() - began < 5
    assert raised.value.__notes__ == ["raised by the predicate while waiting for the connector"]


def test_exceptions_named_in_retry_on_are_retried_and_reported_on_timeout() -> None:
    answers: list[BaseException | str] = [ConnectionError("starting"), ConnectionError("still starting"), "up"]

    def server() -> str:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    assert wait_until(server, 5, "the server", interval_s=0, retry_on=(ConnectionError,)) == "up"

    def never() -> bool:
        raise ConnectionError("refused")

    with pytest.raises(AssertionError, match=r"timed out after 0.2s waiting for the server \(last error: "
                                             r"ConnectionError\('refused'\)\)"):
        wait_until(never, 0.2, "the server", interval_s=0.05, retry_on=(OSError,))


def test_an_exception_outside_retry_on_still_fails_at_once() -> None:
    def broken() -> bool:
        raise ValueError("bad answer")

    with pytest.raises(ValueError, match="bad answer"):
        wait_until(broken, 30, "x", retry_on=(ConnectionError,))


def test_timeout_names_what_was_awaited() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0.1s waiting for nothing"):
        wait_until(lambda: False, 0.1, "nothing", interval_s=0.02)
