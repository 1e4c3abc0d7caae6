"""Writes the exact offset map (:mod:`mirror.client.offset_map`) as the source task replicates.

The task hands over what the target acknowledged, once per run of one partition's records (never per
record): :meth:`OffsetMapWriter.record_run` for a run known to be contiguous (first upstream offset,
first downstream offset, count), :meth:`OffsetMapWriter.record_offsets` for two parallel offset lists
(it splits them where either side jumps). Consecutive calls that continue the open run extend it; any
jump upstream or downstream (transaction markers, compaction holes, filtered records) closes it and
opens a new one. A new writer, i.e. a new task lifetime, always starts new runs: records re-sent after
a restart are a run of their own, which translation prefers as the newest copy.

:meth:`flush` sends each run that is new or grew since it was last sent, keyed by its downstream start,
so compaction keeps one record per run. Sends are asynchronous; a failed delivery marks the run unsent
and the next flush sends it again. Nothing here blocks the task except :meth:`close` (bounded).

The map has its own clock: the task calls :meth:`flush_if_due` after each acknowledged batch and at each
poll (which returns within ``consumer.poll.timeout.ms`` on an idle flow), and it flushes once
:data:`MAP_FLUSH_INTERVAL_S` passed since it last sent anything. So a run is on the target within about two
seconds of its records' acknowledgement, whatever ``offset.flush.interval.ms`` says: ``mirror offsets
translate`` and the checkpoints are exact that soon, not at the next source-offset commit (60 s by
default). The clock costs one ``time.monotonic()`` per call, and at most one map record per second per
partition whose run grew; there is no work per record.

Durable before the offsets: the task's ``before_offset_commit`` calls :meth:`barrier`, which flushes and
returns a :class:`MapBarrier` over every map record then in flight; the runtime's offset-commit thread
writes the source offsets only once it reports them all delivered. Without it a kill -9 after an offset
write could lose the runs of records before that offset, which are never re-sent, so they would have no
exact entry. The clock only sends runs earlier, which is the harmless order: records past the stored
offsets are copied again after a crash and mapped again as their newest copy, which translation prefers.

Only acknowledged records are ever mapped, so the map never claims a downstream record that the target
does not have.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from connect_runtime.clients.factory import close_producer, new_producer
from mirror.client.models import TopicPartition
from mirror.client.offset_map import OffsetRun

logger = logging.getLogger(__name__)

#: Seconds between two sends of the map's new or grown runs while records are acknowledged: at most one
#: map record per second per growing partition, for an exact map on the target within seconds. Not a
#: configuration key: it trades nothing an operator needs to tune (see the module docstring's cost).
MAP_FLUSH_INTERVAL_S = 1.0


class _Run:
    """One run: upstream start, downstream start, count, and the count last handed to the producer."""

    __slots__ = ("count", "downstream", "sent", "upstream")

    def __init__(self, upstream: int, downstream: int, count: int) -> None:
        self.upstream = upstream
        self.downstream = downstream
        self.count = count
        self.sent = 0  # 0: never sent (or its delivery failed)


class OffsetMapRuns:
    """The pure run-building half: open runs per partition and closed runs not yet sent. Not thread-safe."""

    def __init__(self) -> None:
        self._open: dict[TopicPartition, _Run] = {}
        self._closed: list[tuple[TopicPartition, _Run]] = []

    def add(self, tp: TopicPartition, upstream: int, downstream: int, count: int) -> None:
        if count <= 0:
            return
        run = self._open.get(tp)
        if run is not None and upstream == run.upstream + run.count and downstream == run.downstream + run.count:
            run.count += count
            return
        if run is not None:
            self._closed.append((tp, run))
        self._open[tp] = _Run(upstream, downstream, count)

    def add_offsets(self, tp: TopicPartition, upstream: Sequence[int], downstream: Sequence[int]) -> None:
        """Parallel lists of acknowledged offsets, in order; split where either side is not contiguous."""
        size = len(upstream)
        if size == 0:
            return
        if upstream[-1] - upstream[0] == size - 1 and downstream[-1] - downstream[0] == size - 1:
            self.add(tp, upstream[0], downstream[0], size)  # the common case: one contiguous run
            return
        start = 0
        for i in range(1, size):
            if upstream[i] - upstream[i - 1] != 1 or downstream[i] - downstream[i - 1] != 1:
                self.add(tp, upstream[start], downstream[start], i - start)
                start = i
        self.add(tp, upstream[start], downstream[start], size - start)

    def due(self) -> list[tuple[TopicPartition, _Run]]:
        """Runs to send now (closed ones leave the writer's memory once sent)."""
        due = [(tp, run) for tp, run in self._closed if run.sent != run.count]
        due += [(tp, run) for tp, run in self._open.items() if run.sent != run.count]
        self._closed = []  # a closed run whose send fails comes back through the writer's retry list
        return due

    def forget(self, tp: TopicPartition) -> None:
        self._open.pop(tp, None)

    def open_run(self, tp: TopicPartition) -> tuple[int, int, int] | None:
        run = self._open.get(tp)
        return None if run is None else (run.upstream, run.downstream, run.count)


class OffsetMapWriter:
    """Builds runs from acknowledged offsets and sends them to the map topic on the target."""

    def __init__(self, topic: str, producer_config: Mapping[str, Any], *,
                 producer_factory: Callable[[Mapping[str, Any]], Producer] = new_producer,
                 flush_interval_s: float = MAP_FLUSH_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.topic = topic
        self._flush_interval_s = flush_interval_s
        self._clock = clock
        self._next_flush = clock() + flush_interval_s
        self._runs = OffsetMapRuns()
        self._producer = producer_factory(producer_config)
        self._lock = threading.Lock()  # delivery callbacks may run on another thread at close
        self._retry: list[tuple[TopicPartition, _Run]] = []
        self._closed = False
        self._sequence = 0
        self._in_flight: set[int] = set()  # sequence numbers of map records not yet reported
        self._barrier: MapBarrier | None = None
        self.records_sent = 0
        self.bytes_sent = 0

    def record_run(self, tp: TopicPartition, upstream: int, downstream: int, count: int) -> None:
        """``count`` acknowledged records of ``tp`` at consecutive upstream and downstream offsets."""
        self._runs.add(tp, upstream, downstream, count)

    def record_offsets(self, tp: TopicPartition, upstream: Sequence[int], downstream: Sequence[int]) -> None:
        """Acknowledged records of ``tp`` as parallel offset lists, in order."""
        self._runs.add_offsets(tp, upstream, downstream)

    def flush_if_due(self) -> int:
        """:meth:`flush` if :data:`MAP_FLUSH_INTERVAL_S` passed since the last send (task thread); else 0."""
        if self._clock() < self._next_flush:
            return 0
        return self.flush()

    def flush(self) -> int:
        """Send every new or grown run (asynchronously); returns how many were sent."""
        if self._closed:
            return 0
        self._producer.poll(0)  # delivery reports first: failed runs come back as unsent
        with self._lock:
            retry, self._retry = self._retry, []
        sent = 0
        for tp, run in self._runs.due() + retry:
            if run.sent != run.count:  # an open run that failed is in both lists: sent once
                self._send(tp, run)
                sent += 1
        if sent:  # the interval runs from the last send: after a quiet spell the next run goes at once
            self._next_flush = self._clock() + self._flush_interval_s
        return sent

    def _send(self, tp: TopicPartition, run: _Run) -> None:
        record = OffsetRun(tp, run.upstream, run.downstream, run.count)
        key, value = record.key_bytes(), record.value_bytes()
        count = run.count
        run.sent = count
        self._sequence += 1
        sequence = self._sequence

        def delivered(error: KafkaError | None, _msg: Message) -> None:
            with self._lock:
                self._in_flight.discard(sequence)
                barrier = self._barrier
                if barrier is not None and sequence in barrier.waiting:
                    barrier.waiting.discard(sequence)
                    barrier.failed = barrier.failed or error is not None
            if error is None:
                return
            logger.warning("Failure sending %s to %s (will resend): %s", record, self.topic, error)
            with self._lock:
                if run.sent == count:
                    run.sent = 0
                    self._retry.append((tp, run))

        try:
            with self._lock:
                self._in_flight.add(sequence)
            self._producer.produce(self.topic, key=key, value=value, partition=0, on_delivery=delivered)
        except (BufferError, Exception) as exc:  # KafkaException too: resent at the next flush
            run.sent = 0
            with self._lock:
                self._in_flight.discard(sequence)
                self._retry.append((tp, run))
            logger.warning("Failure sending %s to %s (will resend): %s", record, self.topic, exc)
            return
        self.records_sent += 1
        self.bytes_sent += len(key) + len(value)

    def barrier(self) -> MapBarrier:
        """Send what is due and return the barrier over every map record now in flight (task thread).

        One barrier at a time (the runtime has one offset commit in flight): a new one replaces the last.
        Runs that could not be handed to the producer fail it at once; they are resent at the next flush.
        """
        self.flush()
        with self._lock:
            barrier = MapBarrier(self._producer, self._lock, set(self._in_flight), failed=bool(self._retry))
            self._barrier = barrier
        return barrier

    def forget(self, tp: TopicPartition) -> None:
        self._runs.forget(tp)

    def open_run(self, tp: TopicPartition) -> tuple[int, int, int] | None:
        """The partition's open run as (upstream, downstream, count), for tests and diagnostics."""
        return self._runs.open_run(tp)

    def close(self, timeout_s: float = 10.0) -> None:
        """Send what is due and deliver it (bounded), then close the producer (what is left is dropped)."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        remaining = close_producer(self._producer, timeout_s)
        if remaining:
            logger.warning("%d offset map records to %s were not delivered before close", remaining, self.topic)


class MapBarrier:
    """The map records sent before an offset commit: durable once every one of them was acknowledged.

    ``waiting`` and ``failed`` are updated by the writer's delivery callbacks under its lock; a record
    whose report is still being served counts as not delivered, so ``wait`` errs on the safe side.
    """

    def __init__(self, producer: Producer, lock: threading.Lock, waiting: set[int], *, failed: bool) -> None:
        self._producer = producer
        self._lock = lock
        self.waiting = waiting
        self.failed = failed

    def wait(self, timeout_s: float) -> bool:
        """On the offset-commit thread: deliver the map producer's queue, up to ``timeout_s``."""
        if not self._done() and not self.failed:
            try:
                self._producer.flush(timeout_s)
            except RuntimeError:  # the writer was closed meanwhile: what is not acknowledged never will be
                return False
        return self._done()

    def _done(self) -> bool:
        with self._lock:
            return not self.waiting and not self.failed
