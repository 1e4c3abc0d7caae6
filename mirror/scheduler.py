"""Named periodic jobs for the MM2 connectors and tasks (Kafka ``Scheduler``).

Every admin-side job of a connector (topic refresh, config sync, ACL sync, group refresh, group-offset
sync) runs on ONE worker thread per scheduler, so the jobs of one connector never race each other over
the shared admin clients and the connector's state: that is the same single-threaded executor MM2 uses.

Semantics kept from Java:

* ``schedule_repeating`` runs the job first *immediately*, ``schedule_repeating_delayed`` first after one
  interval; a negative interval means "never" (how a ``*.enabled=false`` flag is expressed).
* ``execute`` submits a job and waits at most ``timeout_s`` (``admin.timeout.ms``) for it. A timeout is
  only logged: the caller moves on, the job keeps running on the worker thread (Python, like Java, cannot
  kill it), and later jobs queue behind it.
* A job that raises is logged with its traceback and does not stop the schedule.
* After ``close`` queued and scheduled jobs are skipped.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from connect_runtime.logging_context import carry_context

logger = logging.getLogger(__name__)

Job = Callable[[], object]


class Scheduler:
    """One worker thread running named jobs, once or periodically, with per-run timeout logging."""

    def __init__(self, name: str, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._timeout_s = timeout_s
        self._clock = clock
        self._cond = threading.Condition()
        # heap of (due time, sequence, description, job, interval or None, future or None)
        self._queue: list[tuple[float, int, str, Job, float | None, Future[None] | None]] = []
        self._seq = itertools.count()
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self._name

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=carry_context(self._loop), name=f"{self._name}-scheduler",
                                            daemon=True)
            self._thread.start()

    def _push(self, due: float, description: str, job: Job, interval: float | None,
              future: Future[None] | None) -> None:
        with self._cond:
            if self._closed:
                if future is not None:
                    future.set_result(None)
                logger.info("%s skipping task due to shutdown: %s", self._name, description)
                return
            heapq.heappush(self._queue, (due, next(self._seq), description, job, interval, future))
            self._ensure_thread()
            self._cond.notify()

    def schedule_repeating(self, job: Job, interval_s: float, description: str) -> None:
        """Run ``job`` now and then every ``interval_s`` seconds; ``interval_s < 0`` means never."""
        if interval_s < 0:
            return
        self._push(self._clock(), description, job, interval_s, None)

    def schedule_repeating_delayed(self, job: Job, interval_s: float, description: str) -> None:
        """Run ``job`` every ``interval_s`` seconds, the first time after one interval."""
        if interval_s < 0:
            return
        self._push(self._clock() + interval_s, description, job, interval_s, None)

    def execute_async(self, job: Job, description: str) -> Future[None]:
        """Queue ``job`` to run once as soon as the worker thread is free."""
        future: Future[None] = Future()
        self._push(self._clock(), description, job, None, future)
        return future

    def execute(self, job: Job, description: str) -> None:
        """Run ``job`` once and wait up to the scheduler timeout; a timeout or error is only logged."""
        future = self.execute_async(job, description)
        try:
            future.result(timeout=self._timeout_s)
        except TimeoutError:
            logger.error("%s timed out running %s (after %.1f s)", self._name, description, self._timeout_s)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._queue or self._queue[0][0] > self._clock()):
                    wait = None if not self._queue else max(0.0, self._queue[0][0] - self._clock())
                    self._cond.wait(wait)
                if self._closed:
                    pending = [entry[5] for entry in self._queue if entry[5] is not None]
                    self._queue.clear()
                    break
                _, _, description, job, interval, future = heapq.heappop(self._queue)
            self._run(job, description)
            if future is not None:
                future.set_result(None)
            if interval is not None:
                self._push(self._clock() + interval, description, job, interval, None)
        for waiting in pending:
            waiting.set_result(None)

    def _run(self, job: Job, description: str) -> None:
        start = self._clock()
        try:
            job()
        except Exception:
            logger.exception("%s caught exception in scheduled task: %s", self._name, description)
            return
        elapsed = self._clock() - start
        logger.debug("%s: %s took %.0f ms", self._name, description, elapsed * 1000)
        if elapsed > self._timeout_s:
            logger.warning("%s took too long (%.0f ms) running task: %s", self._name, elapsed * 1000,
                           description)

    def close(self, timeout_s: float | None = None) -> None:
        """Skip everything not yet started and wait (bounded) for a running job to finish."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._timeout_s if timeout_s is None else timeout_s)
            if thread.is_alive():
                logger.warning("%s: a task was still running at shutdown", self._name)
