"""The herder's one tick thread and its request queue (Java's ``DistributedHerder`` request handling).

A single *tick thread* owns every state change of a herder, so the cluster view it acts on is always
one consistent snapshot. Other threads never change that state: a mutating REST call is a closure
queued here; the caller blocks on a Future for up to ``rest.request.timeout.ms`` ("Request timed out"
after that, the closure is cancelled if it has not started). A closure submitted from the tick thread
itself (a request handler calling another herder method) runs inline, or it would wait for itself.

Between ticks the thread idles: until woken (a request, a config record, a group event), until stop,
or for at most the time the herder gives (the next scheduled task reconfiguration, else 1 s).

What the thread is doing is kept as a *stage* (Java's ``TickThreadStage``): the herder names each
step that may block (reading a topic, joining the group, starting tasks), so ``GET /health`` can say
where a stuck thread is stuck (KIP-1017), in Java's words.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from connect_runtime.api.errors import ConnectError, ServiceUnavailableError

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _instant(epoch_s: float) -> str:
    """Java's ``Instant.toString()`` (ISO-8601 in UTC, millisecond precision)."""
    stamp = datetime.fromtimestamp(epoch_s, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


class Stage:
    """One step of the tick thread: what it is and when it began (and ended, once it has)."""

    __slots__ = ("completed", "description", "started")

    def __init__(self, description: str) -> None:
        self.description = description
        self.started = time.time()
        self.completed: float | None = None

    def summarize(self) -> str:
        """Java's ``Stage.summarize()``: the sentence ``/health`` appends to its message."""
        if self.completed is not None:
            return (f"The last operation the worker completed was {self.description}, which began at "
                    f"{_instant(self.started)} and completed at {_instant(self.completed)}.")
        return f"The worker is currently {self.description}, which began at {_instant(self.started)}."


class RequestTimedOut(ConnectError):
    """A request was not run by the tick thread in time (REST: 500 "Request timed out")."""


class TickExecutor:
    """A request queue served by one thread that also runs the owner's loop."""

    def __init__(self, name: str, request_timeout_s: float,
                 on_submit: Callable[[], None] = lambda: None) -> None:
        #: Called after a request is queued, outside the lock: e.g. wake a membership poll the tick
        #: thread may be blocked in.
        self._on_submit = on_submit
        self._name = name
        self._request_timeout_s = request_timeout_s
        self._wake = threading.Condition()
        self._requests: list[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = []
        self._woken = False
        self._stopping = False
        self._failed = False
        self._thread: threading.Thread | None = None
        #: What the tick thread does now, or did last (see :meth:`stage`); read by any thread.
        self.current_stage: Stage | None = None

    # -- the thread ----------------------------------------------------------------------------------
    def start(self, loop: Callable[[], None]) -> None:
        """Run ``loop`` on the tick thread; returns at once."""
        self._thread = threading.Thread(target=loop, name=self._name, daemon=True)
        self._thread.start()

    def on_tick_thread(self) -> bool:
        return threading.current_thread() is self._thread

    @property
    def started(self) -> bool:
        return self._thread is not None

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def mark_failed(self) -> None:
        """The loop died: later submissions fail at once instead of timing out."""
        self._failed = True

    def request_stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()

    def join(self, timeout_s: float) -> bool:
        """Wait for the tick thread to end; False if it is still alive after ``timeout_s``."""
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @contextlib.contextmanager
    def stage(self, description: str) -> Iterator[None]:
        """Name a step of the tick thread that may block, for ``/health`` (e.g. "reading to the end of
        internal topics"); a step in a step is a step of its own, the outer one is resumed after it."""
        outer = self.current_stage
        current = Stage(description)
        self.current_stage = current
        try:
            yield
        finally:
            current.completed = time.time()
            if outer is not None and outer.completed is None:
                self.current_stage = outer

    # -- wake-ups and idling -------------------------------------------------------------------------
    def wake(self) -> None:
        """Make the tick thread run a tick now (thread-safe; never blocks for long)."""
        with self._wake:
            self._woken = True
            self._wake.notify_all()

    def idle(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` unless woken since the last idle, stopping, or a request is queued."""
        with self._wake:
            woken, self._woken = self._woken, False
            if woken or self._stopping or self._requests:
                return
            self._wake.wait(timeout_s)

    # -- requests ------------------------------------------------------------------------------------
    def submit(self, action: Callable[[], T], timeout_s: float | None = None) -> T:
        """Run ``action`` on the tick thread and wait for its result (inline if already on it), for at
        most ``timeout_s`` (default: the request timeout); ``TimeoutError`` (a ConnectError) after that."""
        if self.on_tick_thread():
            return action()
        if self._failed or self._stopping:
            # a 503 through REST: the caller retries elsewhere or later (never a 500 with a traceback)
            raise ServiceUnavailableError("The herder is not running")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._wake:
            self._requests.append((action, future))
            self._wake.notify_all()
        self._on_submit()
        try:
            return future.result(self._request_timeout_s if timeout_s is None else timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RequestTimedOut("Request timed out") from None

    def run_pending(self) -> None:
        """Run the queued requests, one at a time, in order (on the tick thread)."""
        with self._wake:
            requests, self._requests = self._requests, []
        if not requests:
            return
        with self.stage("handling REST requests"):
            for action, future in requests:
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(action())
                except BaseException as exc:
                    future.set_exception(exc)

    def fail_pending(self, error: Exception) -> None:
        """Fail every queued request (the herder is stopping)."""
        with self._wake:
            requests, self._requests = self._requests, []
        for _action, future in requests:
            if future.set_running_or_notify_cancel():
                future.set_exception(error)
