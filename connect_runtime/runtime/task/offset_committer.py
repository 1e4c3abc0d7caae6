"""A source task's offset commits, written off the task thread (Java's ``SourceTaskOffsetCommitter``).

Why: ``OffsetStore.put`` waits until the target acknowledged the offsets *and* the store read them back
(read-your-writes), a round trip or two to the Kafka cluster; on the task thread that stalled copying
every ``offset.flush.interval.ms``. Here the task thread only takes the committable offsets (the
longest acknowledged prefixes, :mod:`~connect_runtime.runtime.task.submitted_records`) and hands them to
one writer thread; it checks the result at its next loop turn and only then runs ``task.commit()``, on
the task thread as the API promises. One write is in flight at a time; a failed write puts its offsets
back unless newer ones became committable meanwhile, and is retried at the next interval. The final
commit of a stopping task waits for the write in flight and writes what is left, within its budget.

Before taking the offsets the task thread asks the task for a durability barrier
(``SourceTask.before_offset_commit``): what the task wrote on the side about the records those offsets
cover (MM2's exact offset map). The writer waits for it before ``OffsetStore.put``; a barrier that fails
or times out fails the commit like a failed write, so the offsets go back and are retried next interval,
and a crash never leaves offsets stored for records whose side writes were lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap
from connect_runtime.api.task import DurabilityBarrier
from connect_runtime.metrics import TaskMetrics
from connect_runtime.storage.offset_store import OffsetStore

logger = logging.getLogger(__name__)

Offsets = list[tuple[SourceMap, Mapping[str, Any]]]


class _Tracking(Protocol):
    def take_committable(self) -> Offsets: ...

    def restore(self, offsets: Offsets) -> None: ...


class _Broken:
    """The barrier of a ``before_offset_commit`` that raised: the commit fails with its error."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    def wait(self, timeout_s: float) -> bool:
        raise ConnectError(f"before_offset_commit failed: {self._error}") from self._error


class OffsetCommitter:
    """Offset commits of one task; every method but the writer's job runs on the task thread."""

    def __init__(self, name: str, connector: str, store: OffsetStore, timeout_s: float, metrics: TaskMetrics,
                 task_commit: Callable[[], None],
                 before_commit: Callable[[], DurabilityBarrier | None] = lambda: None) -> None:
        self._name = name
        self._connector = connector
        self._store = store
        self._timeout_s = timeout_s
        self._metrics = metrics
        self._task_commit = task_commit
        self._before_commit = before_commit
        self._executor: ThreadPoolExecutor | None = None
        self._in_flight: tuple[Future[float], Offsets, _Tracking] | None = None
        #: Finished commit attempts (successful or not), for callers awaiting a commit.
        self.cycles = 0
        #: Why the last finished attempt failed; None once one succeeded (or before any finished).
        self.last_error: str | None = None

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    def start(self, tracking: _Tracking) -> None:
        """Begin a commit now unless one is in flight (then the caller tries again next interval)."""
        if self._in_flight is not None:
            return
        offsets = tracking.take_committable()
        if not offsets:
            self._committed()
            return
        barrier = self._barrier()  # same thread, nothing acknowledged in between
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"offsets-{self._name}")
        future = self._executor.submit(self._write, offsets, self._timeout_s, barrier)
        self._in_flight = (future, offsets, tracking)

    def poll(self) -> None:
        """Finish the commit in flight if its write is done (cheap when it is not)."""
        in_flight = self._in_flight
        if in_flight is not None and in_flight[0].done():
            self._finish()

    def commit_now(self, tracking: _Tracking, budget_s: float) -> None:
        """The final commit: wait for the write in flight, then write what is left, within ``budget_s``."""
        deadline = time.monotonic() + budget_s
        if self._in_flight is not None:
            self._finish(max(0.0, deadline - time.monotonic()))
        offsets = tracking.take_committable()
        if offsets:
            barrier = self._barrier()
            try:
                self._metrics.offset_commit_seconds.observe(
                    self._write(offsets, max(0.1, deadline - time.monotonic()), barrier))
            except Exception as exc:
                self._failed(offsets, tracking, exc)
                return
        self._committed()

    def close(self) -> None:
        """End the writer's thread, after the write in flight if any: it may be waiting on the task's
        barrier (flushing one of the task's producers), which the task closes next. A write is bounded
        by its timeouts (barrier, then store), so this is too."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _barrier(self) -> DurabilityBarrier | None:
        """The task's barrier for the offsets about to be taken; if the task raised, one that fails."""
        try:
            return self._before_commit()
        except Exception as exc:
            return _Broken(exc)

    def _write(self, offsets: Offsets, timeout_s: float, barrier: DurabilityBarrier | None = None) -> float:
        """Wait for the barrier, then write the offsets, each within ``timeout_s`` (the writer's thread)."""
        began = time.monotonic()
        if barrier is not None and not barrier.wait(timeout_s):
            raise ConnectError(f"what the task wrote for these records was not acknowledged within {timeout_s:.1f}s")
        self._store.put(self._connector, offsets, timeout_s=timeout_s)
        return time.monotonic() - began

    def _finish(self, timeout_s: float | None = None) -> None:
        assert self._in_flight is not None
        future, offsets, tracking = self._in_flight
        try:
            took = future.result(timeout=timeout_s)
        except Exception as exc:  # a timeout here too: the write may still land, a later one supersedes it
            self._in_flight = None
            self._failed(offsets, tracking, exc)
            return
        self._in_flight = None
        self._metrics.offset_commit_seconds.observe(took)
        logger.debug("%s committed offsets of %d source partitions", self._name, len(offsets))
        self._committed()

    def _failed(self, offsets: Offsets, tracking: _Tracking, exc: BaseException) -> None:
        tracking.restore(offsets)
        self._metrics.offset_commit_failures.inc()
        logger.error("%s failed to commit offsets of %d source partitions, will retry: %s",
                     self._name, len(offsets), exc)
        self.last_error = str(exc) or type(exc).__name__
        self.cycles += 1

    def _committed(self) -> None:
        self.last_error = None
        try:
            self._task_commit()
        except Exception:  # Java logs and carries on
            logger.exception("%s task.commit() failed", self._name)
        self.cycles += 1
