"""The herder's one tick thread and its request queue (Java's ``DistributedHerder`` request handling).

A single *tick thread* owns every state change of a herder, so the cluster view it acts on is always
one consistent snapshot. Other threads never change that state: a mutating REST call is a closure
queued here; the caller blocks on a Future for up to ``rest.request.timeout.ms`` ("Request timed out"
after that, the closure is cancelled if it has not started). A closure submitted from the tick thread
itself (a request handler calling another herder method) runs inline, or it would wait for itself.

Between ticks the thread idles: until woken (a request, a config record, a group event), until stop,
or for at most the time the herder gives (the next scheduled task reconfiguration, else 1 s).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from connect_runtime.api.errors import ConnectError

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
    def submit(self, action: Callable[[], T]) -> T:
        """Run ``action`` on the tick thread and wait for its result (inline if already on it)."""
        if self.on_tick_thread():
            return action()
        if self._failed or self._stopping:
            raise ConnectError("The herder is not running")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._wake:
            self._requests.append((action, future))
            self._wake.notify_all()
        self._on_submit()
        try:
            return future.result(self._request_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ConnectError("Request timed out") from None

    def run_pending(self) -> None:
        """Run the queued requests, one at a time, in order (on the tick thread)."""
        with self._wake:
            requests, self._requests = self._requests, []
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
