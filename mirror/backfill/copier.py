"""The executor side: copy one chunk of one source partition to its remote partition.

Runs inside a Spark Python worker. Everything it needs arrives in a :class:`ChunkSpec` (plain strings
and numbers, so it pickles); the Kafka clients are created here and closed before returning, so no
client ever crosses the pickling boundary.

Per chunk: read the marker topic to find the partition's progress (a retried task or a re-run resumes
right after the last acknowledged batch), assign the source partition at that offset (no consumer
group), and copy records ``[resume, end)`` in batches of ``batch_records``: produce each record to the
same partition of the remote topic with its key, value, headers and timestamp; ``flush`` (every record
of the batch acknowledged, in order: the producer is idempotent), then write and flush the progress
marker with the remote offset of the next record. A crash can leave at most the batch in flight written
without progress; on resume the records between the recorded remote offset and the remote partition's
end are exactly that batch's first records (this copy is the partition's only writer, in order), so
they are skipped instead of written twice. Acknowledged records feed the same
:class:`~mirror.source.offset_sync_writer.OffsetSyncWriter` rules and offset-syncs topic as the
streaming task (through :class:`~mirror.source.offset_sync_writer.OffsetSyncProducer`), so
checkpoints translate group offsets across the backfilled range.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connect_runtime.clients.factory import new_consumer, new_producer
from connect_runtime.clients.log_reader import snapshot_watermarks
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import BACKFILLING, PartitionMarker
from mirror.client.models import TopicPartition
from mirror.errors import MirrorError
from mirror.source.offset_sync_writer import OffsetSyncProducer, OffsetSyncWriter

logger = logging.getLogger(__name__)

#: Throughput settings for a bulk copy; user settings from mm2.properties win.
CONSUMER_DEFAULTS = {"fetch.max.bytes": "52428800", "max.partition.fetch.bytes": "10485760",
                     "fetch.wait.max.ms": "100", "queued.min.messages": "1000000",
                     "fetch.queue.backoff.ms": "10"}
PRODUCER_DEFAULTS = {"linger.ms": "20", "batch.size": "1000000", "batch.num.messages": "100000",
                     "queue.buffering.max.messages": "1000000", "queue.buffering.max.kbytes": "1048576"}


@dataclass(frozen=True)
class ChunkSpec:
    """Everything one Spark task needs; plain data only (it is pickled to the executor)."""

    topic: str
    partition: int
    remote_topic: str
    start: int
    end: int
    range_start: int
    range_end: int
    source_consumer_config: dict[str, str]
    target_producer_config: dict[str, str]
    target_consumer_config: dict[str, str]
    marker_topic: str
    batch_records: int = 20_000
    offset_syncs_topic: str | None = None
    offset_syncs_producer_config: dict[str, str] = field(default_factory=dict)
    offset_lag_max: int = 100


@dataclass(frozen=True)
class ChunkResult:
    topic: str
    partition: int
    start: int
    end: int
    copied: int
    resumed_from: int
    seconds: float
    #: ``host:pid`` of the Python worker that ran the chunk.
    worker: str = ""
    #: Wall-clock start of the chunk (epoch seconds), to see how Spark scheduled the chunks.
    started_at: float = 0.0


#: Fault injection for tests only: after this many records a chunk flushes them (so they land on the
#: target without a progress marker, as when a process dies between two markers) and then hangs, so
#: that a test can kill the command half-way deterministically. Unset in production.
HANG_AFTER_ENV = "MIRROR_BACKFILL_TEST_HANG_AFTER"


class CopyError(MirrorError):
    """A record of the chunk could not be written; the Spark task fails and is retried."""


def _consumer_config(spec: ChunkSpec) -> dict[str, Any]:
    config: dict[str, Any] = {**CONSUMER_DEFAULTS, **spec.source_consumer_config}
    config.setdefault("group.id", f"mm2-backfill-{spec.topic}-{spec.partition}")
    config.update({"enable.auto.commit": False, "enable.partition.eof": False,
                   "allow.auto.create.topics": False})
    config.setdefault("isolation.level", "read_uncommitted")  # Java's default, as the streaming task
    return config


def _producer_config(spec: ChunkSpec) -> dict[str, Any]:
    config: dict[str, Any] = {**PRODUCER_DEFAULTS, **spec.target_producer_config}
    # Order and at-most-one-batch duplication rest on an idempotent producer (no reordering on retry).
    config.update({"enable.idempotence": True, "acks": "all", "allow.auto.create.topics": False})
    return config


def resume_point(spec: ChunkSpec, marker: PartitionMarker | None) -> tuple[int, int]:
    """(first source offset to read, remote offset its copy goes to; -1 if unknown) from the marker."""
    if marker is None or marker.state != BACKFILLING or marker.end != spec.range_end:
        return spec.start, -1
    return min(spec.end, max(spec.start, marker.progress + 1)), marker.next


def records_to_skip(next_remote: int, remote_end: int) -> int:
    """Records already on the remote partition past the recorded progress (a batch lost its marker)."""
    if next_remote < 0:
        return 0
    if remote_end < next_remote:
        raise CopyError(f"the remote partition ends at {remote_end}, before the recorded offset {next_remote}: "
                        "it was truncated or recreated during the backfill")
    return remote_end - next_remote


def copy_chunk(spec: ChunkSpec) -> ChunkResult:
    """Copy ``[start, end)`` of one partition (resuming after recorded progress); the Spark task body."""
    began, started_at = time.monotonic(), time.time()
    # Created first: the idempotent producer gets its producer id while the marker topic is read.
    errors: list[KafkaError] = []
    producer = new_producer({**_producer_config(spec), "delivery.report.only.error": True,
                         "on_delivery": lambda error, _msg: errors.append(error)})
    markers = MarkerLog(spec.marker_topic, spec.target_consumer_config, spec.target_producer_config)
    state = markers.read_to_end()
    resume, next_remote = resume_point(spec, state.partitions.get((spec.topic, spec.partition)))
    if resume >= spec.end:
        markers.close()
        producer.flush(0)
        return ChunkResult(spec.topic, spec.partition, spec.start, spec.end, 0, resume, 0.0, _worker(), started_at)
    remote_tp = (spec.remote_topic, spec.partition)
    remote_end = snapshot_watermarks(spec.target_consumer_config, [remote_tp])[remote_tp][1]
    skip = records_to_skip(next_remote, remote_end)
    if skip:
        logger.info("%s-%d: skipping %d records a previous attempt wrote after its last progress marker",
                    spec.topic, spec.partition, skip)
    syncs = None
    writer = OffsetSyncWriter(spec.offset_lag_max)
    if spec.offset_syncs_topic:
        syncs = OffsetSyncProducer(spec.offset_syncs_topic, spec.offset_syncs_producer_config, writer)
    consumer = new_consumer(_consumer_config(spec))
    try:
        copied = _copy(spec, resume, skip, remote_end, consumer, producer, markers,
                       writer if syncs is not None else None, syncs, errors)
    finally:
        consumer.close()
        if syncs is not None:
            _last_syncs(syncs, writer)
        markers.close()
    return ChunkResult(spec.topic, spec.partition, spec.start, spec.end, copied, resume,
                       time.monotonic() - began, _worker(), started_at)


def _last_syncs(syncs: OffsetSyncProducer, writer: OffsetSyncWriter, timeout_s: float = 30.0) -> None:
    """The task's final commit(): every partition's latest sync, sent even when all 10 slots were busy."""
    deadline = time.monotonic() + timeout_s
    syncs.promote_delayed_and_send()
    while writer.pending and time.monotonic() < deadline:
        syncs.flush(1.0)  # frees in-flight slots
        syncs.send_pending()
    syncs.close()


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _copy(spec: ChunkSpec, resume: int, skip: int, base: int, consumer: Consumer, producer: Producer,
          markers: MarkerLog, writer: OffsetSyncWriter | None, syncs: OffsetSyncProducer | None,
          errors: list[KafkaError]) -> int:
    """Copy ``[resume, end)``, skipping the first ``skip`` records; returns the number written.

    The copy is the remote partition's only writer and its producer is idempotent, so the i-th record
    produced lands at remote offset ``base + i`` and, as delivery is in order, the first
    ``produced - len(producer)`` records are acknowledged. No per-record delivery callback is needed
    (only errors are reported); the end is verified against the remote partition's high watermark.
    Every ``batch_records`` acknowledged records the (upstream, remote next) pair goes to the marker topic
    asynchronously, and the acknowledged records feed the offset-sync rules.
    """
    topic, partition, end = spec.topic, spec.partition, spec.end
    feed = _SyncFeed(writer, syncs, TopicPartition(topic, partition), base)
    consumer.assign([KafkaTopicPartition(topic, partition, resume)])
    produced = marked = 0
    last = resume - 1
    batch = max(1, spec.batch_records)
    hang_after = int(os.environ.get(HANG_AFTER_ENV, "0") or 0)
    while last < end - 1:
        if hang_after and produced >= hang_after:
            producer.flush(30.0)
            time.sleep(3600)
        messages = consumer.consume(min(10_000, batch, hang_after or batch), 1.0)
        if not messages:
            position = consumer.position([KafkaTopicPartition(topic, partition)])[0].offset
            if position >= end:  # the rest of the range holds no records (compaction, txn markers)
                break
            continue
        if skip:
            messages, skip, last = _skip(messages, skip, last)
        last, written = _produce_all(messages, end, spec.remote_topic, partition, producer, feed.upstream, last)
        produced += written
        producer.poll(0)
        if errors:
            raise CopyError(f"writing {spec.remote_topic}-{partition} failed: {errors[0]}")
        acked = produced - len(producer)
        if acked - marked >= batch:
            marked = acked
            feed.acknowledged(acked)
            _record_progress(spec, markers, feed.last_upstream(resume - 1), base + acked, durable=False)
    remaining = producer.flush(120.0)
    if errors or remaining:
        raise CopyError(f"writing {spec.remote_topic}-{partition} failed: "
                        f"{errors[0] if errors else f'{remaining} records not acknowledged'}")
    feed.acknowledged(produced)
    remote_tp = (spec.remote_topic, partition)
    remote_end = snapshot_watermarks(spec.target_consumer_config, [remote_tp])[remote_tp][1]
    if remote_end != base + produced:
        raise CopyError(f"{spec.remote_topic}-{partition} ends at {remote_end}, expected {base + produced}: "
                        "another producer wrote to it during the backfill")
    _record_progress(spec, markers, end - 1, base + produced, durable=True)
    return produced


class _SyncFeed:
    """Feeds acknowledged (upstream, downstream) pairs to the :class:`OffsetSyncWriter`, cheaply.

    Within a run of consecutive upstream offsets (downstream offsets are always consecutive here) a sync
    can only fire on the run's first record or where ``offset.lag.max`` is reached, so only those records
    and the run's last one go through ``OffsetSyncWriter.update``; for the others only the state's
    previous offsets move, which is exactly what ``update`` would have done for them.
    """

    def __init__(self, writer: OffsetSyncWriter | None, syncs: OffsetSyncProducer | None, tp: TopicPartition,
                 base: int) -> None:
        self._writer, self._syncs, self._tp = writer, syncs, tp
        self.upstream: list[int] = []
        self._first = 0  # produce index of upstream[0]
        self._base = base
        self._last_upstream: int | None = None

    def last_upstream(self, default: int) -> int:
        return default if self._last_upstream is None else self._last_upstream

    def acknowledged(self, count: int) -> None:
        """The first ``count`` produced records are acknowledged."""
        n = count - self._first
        if n <= 0:
            return
        ups = self.upstream[:n]
        del self.upstream[:n]
        first_down = self._base + self._first
        self._first = count
        self._last_upstream = ups[-1]
        if self._writer is not None and self._syncs is not None:
            feed_syncs(self._writer, self._tp, ups, first_down, self._syncs.send_pending)


def feed_syncs(writer: OffsetSyncWriter, tp: TopicPartition, ups: list[int], first_down: int,
               on_fire: Callable[[], None]) -> None:
    """``writer.update`` for every pair, skipping the calls that cannot fire; ``on_fire`` after each fired
    sync (it sends the pending sync at once, as the streaming task does)."""
    i, n = 0, len(ups)
    while i < n:
        # the run of consecutive upstream offsets starting at i
        j = i
        while j + 1 < n and ups[j + 1] - ups[j] == 1:
            if ups[-1] - ups[j] == n - 1 - j:  # the rest is one run: jump to its end
                j = n - 1
                break
            j += 1
        if writer.update(tp, ups[i], first_down + i):
            on_fire()
        k = i
        while k < j:
            state = writer.partition_state(tp)
            assert state is not None
            due = state.last_sync_downstream + 1 + writer.max_offset_lag  # first downstream that is stale
            target = min(j, max(k + 1, due - first_down))
            if target - 1 > k:  # the records in between only move the previous offsets
                state.previous_upstream = ups[target - 1]
                state.previous_downstream = first_down + target - 1
            if writer.update(tp, ups[target], first_down + target):
                on_fire()
            k = target
        i = j + 1


def _record_progress(spec: ChunkSpec, markers: MarkerLog, progress: int, next_remote: int, *,
                     durable: bool) -> None:
    markers.write_partition(spec.topic, spec.partition,
                            PartitionMarker(BACKFILLING, spec.range_start, spec.range_end, progress, next_remote))
    if durable:
        markers.flush()
    else:
        markers.poll()


def _skip(messages: list[Any], skip: int, last: int) -> tuple[list[Any], int, int]:
    """Drop the first ``skip`` records (already on the remote partition)."""
    dropped = messages[:skip]
    for msg in dropped:
        if msg.error() is not None:
            raise KafkaException(msg.error())
        last = msg.offset()
    return messages[skip:], skip - len(dropped), last


def _produce_all(messages: list[Any], end: int, remote: str, partition: int, producer: Producer,
                 upstream: list[int], last: int) -> tuple[int, int]:
    """Produce the records below ``end``; returns (last upstream offset seen, records produced)."""
    produce = producer.produce
    append = upstream.append
    written = 0
    for msg in messages:
        offset = msg.offset()
        if offset is None or msg.error() is not None:
            raise KafkaException(msg.error())
        if offset >= end:
            return end - 1, written
        ts_type, ts = msg.timestamp()
        if ts_type == TIMESTAMP_NOT_AVAILABLE:
            ts = 0  # the producer's "now", as Kafka's producer does for a record without one
        try:
            produce(remote, msg.value(), msg.key(), partition, timestamp=ts, headers=msg.headers())
        except BufferError:
            _produce_when_room(producer, remote, msg.value(), msg.key(),
                               {"partition": partition, "timestamp": ts, "headers": msg.headers()})
        append(offset)
        last = offset
        written += 1
    return last, written


def _produce_when_room(producer: Producer, topic: str, value: bytes | None, key: bytes | None,
                       kwargs: dict[str, Any]) -> None:
    """The local queue is full: serve delivery reports until the record fits."""
    while True:
        producer.poll(0.05)
        try:
            producer.produce(topic, value, key, **kwargs)
            return
        except BufferError:
            continue
