"""TickExecutor: requests run on the one tick thread, inline when already on it, fail when stopping."""

from __future__ import annotations

import threading

import pytest

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.distributed.tick_executor import TickExecutor


def serve(executor: TickExecutor, done: threading.Event) -> None:
    """A minimal owner loop: run requests, idle, until stopped."""
    while not executor.stopping:
        executor.run_pending()
        executor.idle(5.0)
    executor.fail_pending(ConnectError("The herder is shutting down"))
    done.set()


@pytest.fixture
def running() -> TickExecutor:
    submitted: list[bool] = []
    executor = TickExecutor("tick-test", request_timeout_s=5.0, on_submit=lambda: submitted.append(True))
    done = threading.Event()
    executor.start(lambda: serve(executor, done))
    yield executor
    executor.request_stop()
    assert executor.join(5.0) and done.is_set()


def test_submitted_actions_run_on_the_tick_thread_and_return_their_result(running: TickExecutor) -> None:
    assert running.submit(lambda: threading.current_thread().name) == "tick-test"
    assert running.submit(running.on_tick_thread) is True
    assert not running.on_tick_thread()


def test_a_submit_from_the_tick_thread_runs_inline(running: TickExecutor) -> None:
    assert running.submit(lambda: running.submit(lambda: 41) + 1) == 42


def test_exceptions_reach_the_caller(running: TickExecutor) -> None:
    def fail() -> None:
        raise ConnectError("boom")

    with pytest.raises(ConnectError, match="boom"):
        running.submit(fail)
    assert running.submit(lambda: "still serving") == "still serving"


def test_a_request_not_served_in_time_times_out_and_is_cancelled() -> None:
    executor = TickExecutor("never-served", request_timeout_s=0.05)  # no thread serves it
    ran: list[str] = []
    with pytest.raises(ConnectError, match="Request timed out"):
        executor.submit(lambda: ran.append("late"))
    executor.run_pending()  # the cancelled request does not run late
    assert ran == []


def test_stopping_fails_pending_requests_and_refuses_new_ones() -> None:
    queued = threading.Event()
    executor = TickExecutor("stopping", request_timeout_s=5.0, on_submit=queued.set)
    errors: list[BaseException] = []

    def client() -> None:
        try:
            executor.submit(lambda: "late")
        except ConnectError as exc:
            errors.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    assert queued.wait(5.0)
    executor.request_stop()
    executor.fail_pending(ConnectError("The herder is shutting down"))
    thread.join(5.0)
    assert [str(e) for e in errors] == ["The herder is shutting down"]
    with pytest.raises(ConnectError, match="not running"):
        executor.submit(lambda: "after stop")


def test_idle_returns_at_once_after_a_wake() -> None:
    executor = TickExecutor("idle", request_timeout_s=1.0)
    executor.wake()
    finished = threading.Event()
    waiter = threading.Thread(target=lambda: (executor.idle(60.0), finished.set()))
    waiter.start()
    waiter.join(5.0)
    assert finished.is_set(), "a wake before idle must not be lost"
