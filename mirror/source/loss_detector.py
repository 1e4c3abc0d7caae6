"""Records lost before replication: found, logged once with a count, counted, then warn or fail.

Apache MM2 goes on silently when its consumer is reset (auto.offset.reset) past records it never copied,
or when a source topic was re-created below the offset it resumes from: the records are gone from the
target too and nobody is told. Here the task keeps, per source partition, the next upstream offset it
expects (from its stored Connect offset at start, then from every consumed run) and the next downstream
offset its remote partition should give, and compares them with what the clients report:

* **source-truncated**: the source log start passed the expected offset (retention, DeleteRecords):
  records ``[expected, log start)`` were never replicated. Seen as a consumed run starting past the
  expected offset while the log start (the consumer's cached low watermark) is past it too; a jump
  with the log start not past it is a transaction marker or compaction, not a loss.
* **source-recreated**: the source partition's end (cached high watermark) fell below the expected
  offset, or consumed offsets went backwards: the topic was deleted and re-created (or truncated by an
  unclean leader election). What the old topic held past the expected offset is lost; the count is
  known only when the task saw the old end (0 is reported otherwise, the event is still counted).
  The task rewinds to the new log start, so the new topic's records are all replicated.
* **target-truncated**: the target gave a run a downstream offset below the end of the previous run of
  the same remote partition: the remote partition was truncated, or deleted and re-created, and the
  records replicated before are gone from the target (counted: previous end - new first offset).

Checks cost one comparison per consumed run and per acknowledged run; the watermark check runs at most
every :data:`CHECK_INTERVAL_MS` and reads only the consumer's cached watermarks (no request), of at most
:data:`CHECK_SLICE` partitions a time, taken round-robin: each read is a C call that holds the GIL while
it waits for librdkafka's partition locks, and reading thousands of partitions every second in each task
starves every other thread of the node, its group membership's heartbeats first. A loss that no consumed
record shows is found within ``ceil(partitions / CHECK_SLICE)`` intervals: within one up to 256
partitions a task, 8 s at 2,000 and 32 s at 8,000 (a loss on a partition that consumes records is found
by the run that shows it).
Policy (``replication.loss.policy``): ``warn`` logs and counts, then goes on; ``fail`` raises
:class:`ReplicationLossError`, which fails the task with the loss in its trace before anything after the
loss is produced or committed.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connect_runtime.api.errors import ConnectError
from mirror.client.models import TopicPartition
from mirror.errors import MirrorError
from mirror.metrics import PARTITION, LossCounter, series_key

logger = logging.getLogger(__name__)

SOURCE_TRUNCATED = "source-truncated"
SOURCE_RECREATED = "source-recreated"
TARGET_TRUNCATED = "target-truncated"

#: How often the cached watermarks are compared with the expected offsets.
CHECK_INTERVAL_MS = 1000
#: How many partitions one check reads, so that its cost does not grow with the assignment.
CHECK_SLICE = 256

#: librdkafka's "no watermark cached yet". A failed fetch caches -1 (the error response's watermarks):
#: every negative watermark means "unknown", never "the partition ends there".
_INVALID = -1001
#: The broker query when a consumed jump finds no cached log start (rare: once per jump).
_QUERY_TIMEOUT_S = 5.0


class ReplicationLossError(MirrorError, ConnectError):
    """Records were lost before replication and ``replication.loss.policy=fail``."""


class Tracked(Protocol):
    """What the detector reads and updates of a source partition's state
    (:class:`~mirror.source.task.SourcePartition`)."""

    tp: TopicPartition
    remote: str
    partition: int
    next_offset: int
    seen_end: int
    downstream_next: int


class LossDetector:
    """One task's loss checks; all calls come from the task thread."""

    def __init__(self, label: str, source: str, target: str, fail: bool,
                 counters: tuple[LossCounter, LossCounter] | None, clock_ms: Callable[[], int], *,
                 detail: str = PARTITION) -> None:
        self._label = label
        #: ``metrics.partition.series``: the loss counters are labelled as finely as the other source metrics
        self._detail = detail
        self._source = source
        self._target = target
        self._fail = fail
        self._counters = counters
        self._clock_ms = clock_ms
        self._next_check_ms = 0
        #: where the round-robin watermark check goes on (``None``: the next check starts a pass)
        self._cursor: Iterator[Tracked] | None = None
        self._pending: ReplicationLossError | None = None
        #: the label sets :meth:`zero_series` created
        self._zeroed: list[tuple[str, str, str, str, str]] = []

    def zero_series(self, states: Iterable[Tracked]) -> None:
        """Create both counters at 0 for each partition and reason. ``increase()`` sees a loss only as a
        change of a series that existed before it, so a series born at the first loss would never fire the
        alert on it (MirrorRecordsLost in etc/prometheus/alerts.yml)."""
        if self._counters is None:
            return
        keys = dict.fromkeys(series_key(self._detail, state.remote, state.partition) for state in states)
        for topic, partition in keys:
            for reason in (SOURCE_TRUNCATED, SOURCE_RECREATED, TARGET_TRUNCATED):
                labels = (self._source, self._target, topic, partition, reason)
                self._counters[0].labels(*labels)
                self._counters[1].labels(*labels)
                self._zeroed.append(labels)

    def release_zero_series(self) -> None:
        """Remove the series :meth:`zero_series` created that are still at 0, so that a stopped task
        leaves none behind; a series that counted a loss stays, and the loss stays visible after it."""
        zeroed, self._zeroed = self._zeroed, []
        if self._counters is None or not zeroed:
            return
        # The label sets that counted a loss are kept beside the counters (by every task of the registry:
        # tasks share label sets at topic and none detail), not found by collecting the counters: that
        # built every sample of every task's series, seconds of the GIL at thousands of partitions.
        with _counted_lock:
            counted = _counted.get(self._counters[0], set())
            for labels in zeroed:
                if labels not in counted:
                    for counter in self._counters:
                        try:
                            counter.remove(*labels)
                        except KeyError:  # another task of this registry removed it already
                            pass

    def raise_pending(self) -> None:
        """Raise the loss that must fail the task (found where raising would be swallowed: acknowledgements)."""
        if self._pending is not None:
            raise self._pending

    def consumed_jump(self, state: Tracked, first: int, consumer: Consumer | None) -> None:
        """A consumed run of ``state`` starts at ``first``, not at ``state.next_offset``."""
        expected = state.next_offset
        if expected < 0:
            return
        if first < expected:
            self._lost(state, SOURCE_RECREATED, max(0, state.seen_end - expected),
                       f"source offsets went back from {expected} to {first}: the source topic was re-created "
                       f"or truncated")
            state.seen_end = -1
            self.raise_pending()
            return
        low = _INVALID
        if consumer is not None:
            low = _watermarks(consumer, state.tp)[0]
            if low < 0:  # not cached (e.g. the OFFSET_OUT_OF_RANGE fetch that caused the jump cached -1): ask
                low = _watermarks(consumer, state.tp, cached=False)[0]
        if low > expected:
            lost = min(low, first) - expected
            self._lost(state, SOURCE_TRUNCATED, lost,
                       f"source records {expected}..{expected + lost - 1} were deleted (retention or "
                       f"DeleteRecords) before they were replicated; the log now starts at {low}")
            self.raise_pending()

    def check_watermarks(self, consumer: Consumer, states: Iterable[Tracked]) -> None:
        """At most every :data:`CHECK_INTERVAL_MS`: compare cached watermarks with the expected offsets.

        Catches what no consumed record shows: a partition that stays idle after its consumer was reset
        past lost records, or a re-created topic whose new end is still below the old position (the
        consumer then waits silently for offsets the new topic may never reach).
        """
        now = self._clock_ms()
        if now < self._next_check_ms:
            return
        self._next_check_ms = now + CHECK_INTERVAL_MS
        for state in self._slice(states):
            expected = state.next_offset
            if expected < 0:
                continue
            low, high = _watermarks(consumer, state.tp)
            if high < 0:  # unknown: none cached yet, or -1 from a fetch that failed (OFFSET_OUT_OF_RANGE)
                continue
            if high < expected:
                lost = max(0, state.seen_end - expected)
                self._lost(state, SOURCE_RECREATED, lost,
                           f"the source partition ends at {high}, below the next offset to replicate {expected}: "
                           f"the source topic was re-created or truncated; replicating it again from {max(low, 0)}")
                self.raise_pending()
                self._seek(consumer, state, max(low, 0))
            elif low > expected:
                self._lost(state, SOURCE_TRUNCATED, low - expected,
                           f"source records {expected}..{low - 1} were deleted (retention or DeleteRecords) "
                           f"before they were replicated; the log now starts at {low}")
                self.raise_pending()
                state.next_offset = low
            elif high > state.seen_end:
                state.seen_end = high

    def _slice(self, states: Iterable[Tracked]) -> list[Tracked]:
        """The next :data:`CHECK_SLICE` partitions of the round-robin pass over ``states``. A pass that
        ends leaves the rest of the slice empty (the next check starts the next pass); a pass whose
        partitions changed under it (one met for the first time while copying) starts again."""
        cursor = self._cursor if self._cursor is not None else iter(states)
        try:
            taken = list(islice(cursor, CHECK_SLICE))
        except RuntimeError:  # "changed size during iteration": a new pass, from the first partition
            cursor = iter(states)
            taken = list(islice(cursor, CHECK_SLICE))
        self._cursor = cursor if len(taken) == CHECK_SLICE else None
        return taken

    def produced_regressed(self, state: Tracked, first_downstream: int) -> None:
        """An acknowledged run of ``state`` landed at ``first_downstream``, below ``state.downstream_next``."""
        lost = state.downstream_next - first_downstream
        self._lost(state, TARGET_TRUNCATED, lost,
                   f"the remote partition {state.remote}-{state.partition} took offset {first_downstream} after "
                   f"{state.downstream_next - 1}: it was truncated or deleted and re-created on the target, and "
                   f"{lost} records replicated before are gone there")

    def _lost(self, state: Tracked, reason: str, count: int, what: str) -> None:
        if self._counters is not None:
            labels = (self._source, self._target, *series_key(self._detail, state.remote, state.partition), reason)
            with _counted_lock:  # a closing task of the registry must not remove the series meanwhile
                self._counters[0].labels(*labels).inc(count)
                self._counters[1].labels(*labels).inc()
                _counted.setdefault(self._counters[0], set()).add(labels)
        message = (f"{self._label} lost records on {state.tp} ({reason}, {count} counted): {what}")
        if self._fail:
            logger.error("%s; failing the task (replication.loss.policy=fail)", message)
            if self._pending is None:
                self._pending = ReplicationLossError(
                    f"{message}. The task stops here (replication.loss.policy=fail); to go on, restart it with "
                    f"replication.loss.policy=warn or move its offsets past the loss.")
            return
        logger.warning("%s; going on (replication.loss.policy=warn)", message)

    @staticmethod
    def _seek(consumer: Consumer, state: Tracked, offset: int) -> None:
        try:
            consumer.seek(KafkaTopicPartition(state.tp.topic, state.tp.partition, offset))
        except KafkaException as exc:
            logger.warning("could not rewind %s to %d after a loss: %s", state.tp, offset, exc)
        state.next_offset = offset
        state.seen_end = -1


#: Per registry (keyed by its records-lost counter): the label sets that counted a loss, which
#: :meth:`LossDetector.release_zero_series` keeps; guarded by ``_counted_lock`` with the counting itself.
_counted: weakref.WeakKeyDictionary[LossCounter, set[tuple[str, str, str, str, str]]] = weakref.WeakKeyDictionary()
_counted_lock = threading.Lock()


def _watermarks(consumer: Any, tp: TopicPartition, cached: bool = True) -> tuple[int, int]:
    try:
        kwargs: dict[str, Any] = {"cached": True} if cached else {"cached": False, "timeout": _QUERY_TIMEOUT_S}
        low, high = consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), **kwargs)
    except (KafkaException, RuntimeError):
        return _INVALID, _INVALID
    return int(low), int(high)
