"""Reading partitions to their end: the one way that is exact on every broker.

"The end" of a partition is the high watermark of a **fetch response**. librdkafka reports it as a
``_PARTITION_EOF`` event (consumer setting ``enable.partition.eof=true``) once a fetch comes back with
nothing past the consumer's position, and caches it after every fetch for
``get_watermark_offsets(cached=True)``. ListOffsets "latest" is never used: Tansu, the test broker,
answers it with the base offset of the last written batch + 1 (docs/architecture.md), so a reader trusting it
stops early or waits for ever whenever the last batch holds several records.

Two calls, for the two things callers need:

* :func:`read_to_end` hands over every record from the given positions until each partition has
  reported its end (KafkaBasedLog start and barriers, the marker and checkpoint topics, health reads);
* :func:`end_offsets` wants only the ends. A partition behind its end is stopped at its first record
  (the fetch that brought it also brought the high watermark) and paused, so it costs one fetch, not a
  scan of its backlog (health lag, benchmarks); :func:`snapshot_watermarks` adds the log starts with a
  consumer of its own (backfill planning).

Both assign the partitions themselves, because only a fresh assignment guarantees a fresh
end-of-partition event, and leave unassigning and closing to the caller, who owns the consumer and
its config (``enable.partition.eof=true`` is required; ``auto.offset.reset=earliest`` lets an explicit
offset below the log start read from the log start without a ListOffsets round trip). What differs
between callers is passed in: what a fetch error means (``on_error``: raise, log or ignore; librdkafka
retries transient errors by itself), whether a partition that does not exist counts as read
(``missing_ok``), and how long to wait (``timeout_s``, and ``stop`` for a reader on its own thread).

It serves the runtime (KafkaBasedLog) and mirror.client (MirrorClient, translation, failover) alike:
mirror.client may use this package, the runtime's boundary around the Kafka client libraries, as Java's
mirror-client uses kafka-clients, and nothing else of the runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from connect_runtime.clients.factory import new_consumer

#: (topic, partition); a NamedTuple of the same shape (mirror.client's TopicPartition) works as a key.
PartitionKey = tuple[str, int]
#: Called with every error event except end-of-partition (and "does not exist" under ``missing_ok``).
ErrorHandler = Callable[[KafkaError], None]

#: The errors that say a topic or partition does not exist.
UNKNOWN_PARTITION_CODES = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION})

_EOF = KafkaError._PARTITION_EOF
_BATCH = 10_000
#: consume() waits this long for a full batch when fewer records are ready: the latency of one step.
_WAIT_S = 0.05


def raise_error(error: KafkaError) -> None:
    """``on_error`` for readers whose result is worthless after any error: the read ends, raising."""
    raise KafkaException(error)


def ignore_error(error: KafkaError) -> None:
    """``on_error`` that keeps reading until the deadline: librdkafka recovers from transient errors."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """How far a :func:`read_to_end` got."""

    #: The end offset (fetch high watermark) of every partition that reported its end, the latest one
    #: when it reported it more than once.
    ends: dict[PartitionKey, int]
    #: Partitions the broker said do not exist (only with ``missing_ok``): read, and empty.
    missing: frozenset[PartitionKey]
    #: Every partition reached its end or is missing; False when the timeout or ``stop`` came first.
    complete: bool


def read_to_end(consumer: Consumer, positions: Mapping[PartitionKey, int],
                on_records: Callable[[list[Message]], None], timeout_s: float | None, *,
                on_error: ErrorHandler = raise_error, missing_ok: bool = False,
                stop: Callable[[], bool] | None = None) -> ReadResult:
    """Hand every record from ``positions`` on to ``on_records`` until each partition reached its end.

    ``positions`` maps each partition to the offset to start at (``OFFSET_BEGINNING`` allowed).
    ``on_records`` runs on the calling thread with the records of one fetch batch at a time (error
    events removed), in log order per partition. A partition is done at its first end-of-partition
    event, or once its records reached the high watermark that came with its first record of this read
    (the end as of the read's start, as Java's KafkaBasedLog reads to the end offsets it took first): a
    log written more often than a fetch waits never reports an end of partition (an offset-syncs topic
    during a backlog copy: each fetch at the end brings the next few records), and a read waiting for
    one chased it until its deadline. Records written after the end are still handed over while other
    partitions are being read, but are not waited for. Returns when every partition is done, at
    ``timeout_s`` (``None``: no deadline), or once ``stop()`` is true.
    """
    pending = set(positions)
    ends: dict[PartitionKey, int] = {}
    targets: dict[PartitionKey, int] = {}  # the high watermark that came with a partition's first record
    missing: set[PartitionKey] = set()
    consumer.assign([TopicPartition(topic, partition, offset) for (topic, partition), offset in positions.items()])
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while pending and (stop is None or not stop()):
        wait = _WAIT_S
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                break
        batch = consumer.consume(_BATCH, wait)
        handed = 0  # records before this index were handed over
        reached: dict[PartitionKey, int] = {}  # the offset after each partition's last record in the batch
        for index, message in enumerate(batch):
            error = message.error()
            if error is None:
                reached[_key(message)] = (message.offset() or 0) + 1
                continue
            if index > handed:  # records before an error event first: on_error may raise
                on_records(batch[handed:index])
            handed = index + 1
            if error.code() == _EOF:
                key = _key(message)
                if key in positions:
                    ends[key] = message.offset() or 0
                    pending.discard(key)
            elif missing_ok and error.code() in UNKNOWN_PARTITION_CODES:
                gone = _partitions_of(message, pending)
                pending -= gone
                missing |= gone
            else:
                on_error(error)
        if handed < len(batch):
            on_records(batch if handed == 0 else batch[handed:])
        for key, position in reached.items():
            if key in pending and position >= _target(consumer, key, targets) >= 0:
                ends[key] = position
                pending.discard(key)
    return ReadResult(ends, frozenset(missing), not pending)


def _target(consumer: Consumer, key: PartitionKey, targets: dict[PartitionKey, int]) -> int:
    """The end a read waits for: the high watermark cached from the fetch response that brought the
    partition's first record of this read (every response after the assignment is newer than the
    read's start); -1 while librdkafka has none."""
    target = targets.get(key)
    if target is None:
        _, high = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
        if high < 0:
            return -1
        target = targets[key] = high
    return target


def end_offsets(consumer: Consumer, positions: Mapping[PartitionKey, int], timeout_s: float, *,
                on_first: Callable[[Message], None] | None = None, on_error: ErrorHandler = raise_error,
                missing_ok: bool = False) -> dict[PartitionKey, int]:
    """Each partition's end offset (fetch high watermark), from one fetch at its position.

    A partition at its end answers with an end-of-partition event. One behind its end answers with its
    first record at the position, whose fetch response carried the high watermark: that partition is
    paused there and ``on_first`` gets the record (its timestamp tells how far behind the position is).
    Paused partitions are resumed before returning (librdkafka keeps a pause across re-assignments).
    Partitions that did not answer within ``timeout_s``, or do not exist (``missing_ok``), are absent.
    """
    pending = set(positions)
    ends: dict[PartitionKey, int] = {}
    paused: list[TopicPartition] = []
    consumer.assign([TopicPartition(topic, partition, offset) for (topic, partition), offset in positions.items()])
    deadline = time.monotonic() + timeout_s
    try:
        while pending and (remaining := deadline - time.monotonic()) > 0:
            # At most one message per unanswered partition per call: a partition is paused at its first
            # record, and librdkafka then drops the rest of its queued fetch (a pause bumps the
            # partition's op version) without handing it to Python. With a large batch a probe of
            # partitions far behind their end built ~5,000 Message objects per partition to keep one
            # (bench/results.md, "the health probe's share of the GIL during a copy": 40-50k messages
            # and 113-141 ms of CPU per probe).
            answered: list[TopicPartition] = []
            for message in consumer.consume(len(pending), min(_WAIT_S, remaining)):
                error = message.error()
                if error is None:
                    key = _key(message)
                    if key not in pending:  # the rest of a batch, or a partition already answered
                        continue
                    partition = TopicPartition(*key)
                    _, high = consumer.get_watermark_offsets(partition, cached=True)
                    ends[key] = max(high, (message.offset() or 0) + 1)
                    pending.discard(key)
                    answered.append(partition)
                    if on_first is not None:
                        on_first(message)
                elif error.code() == _EOF:
                    key = _key(message)
                    if key in pending:
                        ends[key] = message.offset() or 0
                        pending.discard(key)
                elif missing_ok and error.code() in UNKNOWN_PARTITION_CODES:
                    pending -= _partitions_of(message, pending)
                else:
                    on_error(error)
            if answered and pending:
                # One pause for the whole batch, and none once nothing is left to wait for (the caller
                # unassigns): confluent-kafka holds the GIL while librdkafka pauses and waits for each
                # partition's thread to confirm, so a pause per partition stalled every other Python
                # thread (the copy loop too) once per partition and probe.
                consumer.pause(answered)
                paused.extend(answered)
    finally:
        if paused:
            consumer.resume(paused)
    return ends


def snapshot_watermarks(consumer_config: Mapping[str, Any], partitions: Iterable[PartitionKey],
                        timeout_s: float = 60.0) -> dict[PartitionKey, tuple[int, int]]:
    """(log start, end) per partition, the end taken from a fetch response's high watermark.

    ListOffsets "latest" is wrong on some brokers (Tansu: the last batch's base offset + 1); the fetch
    high watermark is exact everywhere. Each partition is fetched from its start until it returned one
    record or its end-of-partition event (:func:`end_offsets`); the
    log start is the cached (fetch-response) low watermark.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    consumer = new_consumer({**consumer_config, "group.id": consumer_config.get("group.id", "mm2-backfill-plan"),
                         "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest",
                         "allow.auto.create.topics": False,
                         # small fetch limits make brokers that return whole batches (Tansu) retry for
                         # seconds; the defaults answer at once. At the end, do not wait for data.
                         "fetch.wait.max.ms": 10})
    try:
        # offset 0 + auto.offset.reset=earliest reaches the log start without a ListOffsets round trip
        ends = end_offsets(consumer, dict.fromkeys(wanted, 0), timeout_s, on_error=raise_error)
        if len(ends) < len(wanted):
            late = sorted(set(wanted) - set(ends))
            raise TimeoutError(f"no fetch response within {timeout_s}s for {late[:5]}")
        result = {}
        for topic, partition in wanted:
            low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
            if low < 0:  # not reported by the fetch: the log start is exact through ListOffsets
                low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            result[(topic, partition)] = (max(0, low), max(0, ends[(topic, partition)]))
        return result
    finally:
        consumer.close()


def _key(message: Message) -> PartitionKey:
    return message.topic() or "", message.partition() or 0


def _partitions_of(message: Message, pending: set[PartitionKey]) -> set[PartitionKey]:
    """The pending partitions an error event is about: all of its topic's when it names no partition."""
    topic, partition = message.topic() or "", message.partition()
    if partition is None or partition < 0:
        return {key for key in pending if key[0] == topic}
    return {(topic, partition)} & pending
