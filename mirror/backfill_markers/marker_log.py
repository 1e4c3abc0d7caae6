"""Reading and writing the backfill marker topic (see :mod:`mirror.backfill_markers.markers` for the format).

Used by the backfill command (driver), the Spark executors (progress), the progress display and the
source connector/task. Every read starts at the next unread offset and stops at the fetch response's
end of partition (``enable.partition.eof``), which is exact on Kafka and on Tansu (ListOffsets "latest" is
not on Tansu). The topic is tiny, so a read costs a connection, not a scan: a short-lived consumer per read
by default, and one consumer kept between reads for a reader that reads every few seconds for as long as
it runs (the source connector, ``keep_reader``), whose new client per read would otherwise open its threads
and connections, and its TLS or SASL handshakes, every few seconds.

A source task records its lifecycle here (:class:`BackfillEvents`): ``started`` (its partitions) when it
starts and ``stopped`` (with its consumer's closing positions) once it is done, so a backfill knows when
streaming let go of a partition. None of this touches the per-record path.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer

from connect_runtime.clients.factory import close_producer, new_consumer, new_producer
from connect_runtime.clients.log_reader import raise_error, read_to_end
from mirror.backfill_markers.markers import (
    STARTED,
    STOPPED,
    MarkerState,
    PartitionMarker,
    TaskEvent,
    TopicPartitionT,
    partition_marker_key,
    task_marker_key,
)

logger = logging.getLogger(__name__)

#: How long one metadata request of :meth:`MarkerLog.exists` may wait before the lookup checks whether
#: librdkafka found every broker down.
_LOOKUP_STEP_S = 0.25

#: A source task's lookup and read of the marker topic at its start: it is small (one record per key and
#: progress marker).
_TASK_READ_TIMEOUT_S = 10.0


class MarkerLog:
    """The folded state of one marker topic plus a producer to append to it.

    ``consumer_config`` / ``producer_config`` are librdkafka configs of the target cluster. ``keep_reader``:
    one consumer serves every :meth:`read_to_end` until :meth:`close`, instead of one consumer per read.
    """

    def __init__(self, topic: str, consumer_config: Mapping[str, Any],
                 producer_config: Mapping[str, Any] | None = None, *, keep_reader: bool = False) -> None:
        self.topic = topic
        self._keep_reader = keep_reader
        self._reader: Consumer | None = None
        #: held by a read and by :meth:`close`: a close from another thread waits for a running read
        self._reader_lock = threading.Lock()
        self.state = MarkerState()
        # An explicit 0 (with auto.offset.reset=earliest for a compacted-away start) instead of
        # OFFSET_BEGINNING: that costs a ListOffsets round that some brokers answer slowly (0.5 s on Tansu).
        self._next = 0
        self._consumer_config = {
            **consumer_config, "group.id": str(consumer_config.get("group.id", f"mm2-backfill-{uuid.uuid4()}")),
            "enable.auto.commit": False, "enable.partition.eof": True, "allow.auto.create.topics": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
            # at the end of the topic the broker holds a fetch this long: reads here stop at the end
            "fetch.wait.max.ms": 10}
        # Asynchronous progress markers must land in the order they were written: one request in flight
        # (a retried marker may be written twice, which is harmless; an idempotent producer would be
        # exact too but takes up to a second to get its producer id, per chunk).
        self._producer_config = None if producer_config is None else {
            **producer_config, "allow.auto.create.topics": False, "linger.ms": 0, "enable.idempotence": False,
            "max.in.flight.requests.per.connection": 1}
        self._producer: Producer | None = None
        self._errors: list[KafkaError] = []

    def exists(self, timeout_s: float = 10.0) -> bool:
        """Whether the topic exists, from the cluster's metadata; KafkaException if the cluster cannot say.

        A reachable cluster answers in a round trip. One that cannot be reached would hold the caller for
        all of ``timeout_s`` (librdkafka waits for a broker until then), and a source task asks as it
        starts, for a topic that is optional: so the metadata is asked for in short steps, and the lookup
        fails as soon as librdkafka reports every broker down (a name that does not resolve, a connection
        refused, a failed handshake), which it does after the first attempt at each.
        """
        down: list[KafkaError] = []

        def on_error(error: KafkaError) -> None:
            if error.code() == KafkaError._ALL_BROKERS_DOWN:
                down.append(error)

        consumer = new_consumer({**self._consumer_config, "error_cb": on_error})
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                remaining = deadline - time.monotonic()
                try:
                    metadata = consumer.list_topics(self.topic, timeout=max(min(_LOOKUP_STEP_S, remaining), 0.01))
                    break
                except KafkaException:
                    consumer.poll(0)  # serves the error callback: where librdkafka says every broker is down
                    if down or remaining <= _LOOKUP_STEP_S:
                        raise
            topic = metadata.topics.get(self.topic)
            return topic is not None and topic.error is None and bool(topic.partitions)
        finally:
            consumer.close()

    def read_to_end(self, timeout_s: float = 30.0) -> MarkerState:
        """Fold in every record written so far; TimeoutError if the end is not reached in time."""

        def fold(records: list[Message]) -> None:
            for msg in records:
                self.state.apply(msg.key(), msg.value())
            self._next = (records[-1].offset() or 0) + 1

        with self._reader_lock:
            consumer, self._reader = self._reader or new_consumer(self._consumer_config), None
            try:
                reached = read_to_end(consumer, {(self.topic, 0): self._next}, fold, timeout_s,
                                      on_error=raise_error)
                if self._keep_reader:
                    consumer.unassign()
                    self._reader = consumer
            finally:
                if self._reader is not consumer:  # not kept: a read failed, or one consumer per read
                    consumer.close()
        if not reached.complete:
            raise TimeoutError(f"could not read {self.topic} to its end within {timeout_s}s")
        return self.state

    # -- writing ----------------------------------------------------------------------------------

    def _producer_or_fail(self) -> Producer:
        if self._producer is None:
            if self._producer_config is None:
                raise ValueError("this MarkerLog was opened read-only")
            self._producer = new_producer(self._producer_config)
        return self._producer

    def _send(self, key: bytes, value: bytes) -> None:
        def delivered(error: KafkaError | None, _msg: Any) -> None:
            if error is not None:
                self._errors.append(error)

        self._producer_or_fail().produce(self.topic, key=key, value=value, partition=0, on_delivery=delivered)

    def write_partition(self, topic: str, partition: int, marker: PartitionMarker) -> None:
        self._send(partition_marker_key(topic, partition), marker.value())
        self.state.partitions[(topic, partition)] = marker

    def write_task(self, instance: str, event: TaskEvent) -> None:
        self._send(task_marker_key(instance), event.value())
        self.state.tasks[instance] = event

    def poll(self) -> None:
        """Serve delivery reports of asynchronous writes; raise if one failed."""
        if self._producer is not None:
            self._producer.poll(0)
        if self._errors:
            errors, self._errors = self._errors, []
            raise KafkaException(errors[0])

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for every write; raise if one failed (a marker that is not durable must not be trusted)."""
        if self._producer is None:
            return
        remaining = self._producer.flush(timeout_s)
        errors, self._errors = self._errors, []
        if remaining or errors:
            raise KafkaException(errors[0] if errors else KafkaError(KafkaError._TIMED_OUT,
                                                                     f"{remaining} marker writes pending"))

    def close(self, timeout_s: float = 10.0) -> None:
        """Close the producer (its writes flushed for up to ``timeout_s``) and a kept reader (after a running
        read, waited for up to ``timeout_s``). Reads after this use a consumer per read."""
        producer, self._producer = self._producer, None
        if producer is not None:
            remaining = close_producer(producer, timeout_s)
            if remaining:
                logger.warning("%d writes to %s not delivered before close", remaining, self.topic)
        self._keep_reader = False
        if not self._reader_lock.acquire(timeout=timeout_s):
            logger.warning("a read of %s still ran after %.0fs: its consumer closes when the read ends",
                           self.topic, timeout_s)
            return
        try:
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()
        finally:
            self._reader_lock.release()


class BackfillEvents:
    """Writes one task instance's STARTED and STOPPED events; a failed write is only logged."""

    def __init__(self, log: MarkerLog, label: str, partitions: tuple[tuple[str, int], ...]) -> None:
        self._log = log
        self._label = label
        self._partitions = partitions
        self._instance = uuid.uuid4().hex
        self._closing_positions: dict[tuple[str, int], int] = {}
        self._done_ends: dict[TopicPartitionT, int] = {}

    def started(self) -> tuple[TopicPartitionT, ...]:
        """Record STARTED, then leave out the partitions a backfill has claimed: returns those to copy.

        The task's config may predate a claim (the connector computed it before the backfill wrote
        ``backfilling``). Both sides write first and read second on this one-partition log: the
        backfill writes its claim, then waits while a task's latest event is STARTED with a claimed
        partition; the task writes STARTED, then reads the log to its end. Whichever record comes
        first, one side sees the other: either the backfill waits for this task's STOPPED, or this
        task sees the claim and never copies those partitions (STARTED is written again without them,
        so a backfill still waiting is released). Reading failed: every partition is kept (logged);
        the backfill waits for STOPPED if it saw STARTED.
        """
        self._report(TaskEvent(STARTED, self._label, self._partitions))
        try:
            state = self._log.read_to_end(_TASK_READ_TIMEOUT_S)
        except Exception as exc:  # keep copying: a backfill that saw STARTED waits for STOPPED
            logger.warning("%s could not read %s for backfill claims: %s", self._label, self._log.topic, exc)
            return self._partitions
        claimed = state.backfilling()
        self._done_ends = state.done_ends()
        mine = [tp for tp in self._partitions if tp in claimed]
        if mine:
            self._partitions = tuple(tp for tp in self._partitions if tp not in claimed)
            logger.info("%s leaves %d partitions to a backfill that claimed them after this task's config "
                        "was written: %s", self._label, len(mine), ", ".join(f"{t}-{p}" for t, p in mine[:8]))
            self._report(TaskEvent(STARTED, self._label, self._partitions))
        return self._partitions

    def done_ends(self) -> dict[TopicPartitionT, int]:
        """After :meth:`started`: the partitions a backfill handed back, with the first offset streaming copies."""
        return dict(self._done_ends)

    def note_positions(self, consumer: Consumer) -> None:
        """Remember where the consumer stopped (before it closes): the STOPPED event carries it."""
        self._closing_positions = {(tp.topic, tp.partition): tp.offset
                                   for tp in consumer.position(consumer.assignment())}

    def stopped(self) -> None:
        """Record STOPPED with the closing positions, then release the marker log."""
        positions = tuple(sorted(self._closing_positions.items()))
        self._report(TaskEvent(STOPPED, self._label, self._partitions, positions))
        self._log.close()

    def _report(self, event: TaskEvent) -> None:
        """Record a lifecycle event (bounded; a failure is only logged)."""
        try:
            self._log.write_task(self._instance, event)
            self._log.flush(10.0)
        except Exception as exc:  # a backfill then waits for this task until its timeout
            logger.warning("%s could not record %s in %s: %s", self._label, event.state, self._log.topic, exc)


def open_marker_log(topic: str, consumer_config: Mapping[str, Any],
                    producer_config: Mapping[str, Any]) -> MarkerLog | None:
    """The flow's marker topic if it exists (a source connector of ours creates it), else None: a flow only Java
    ran has none, and a task must not create it (a producer would, with the broker's defaults). A topic that
    cannot be looked up counts as missing (logged): the task copies every partition it was given."""
    log = MarkerLog(topic, consumer_config, producer_config)
    try:
        if log.exists(_TASK_READ_TIMEOUT_S):
            return log
    except Exception as exc:
        logger.warning("Could not look up the backfill marker topic %s: %s", topic, exc)
    return None
