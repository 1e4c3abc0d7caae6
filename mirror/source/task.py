"""MirrorSourceTask: copies its assigned source partitions, record for record.

Start: one byte-array consumer on the source, *assigned* (no group membership) to
``task.assigned.partitions``, each partition where :mod:`mirror.source.source_consumer` says.

Each record keeps key, value (also null), headers, timestamp and partition number; it goes to the remote
topic ``formatRemoteTopic(source, topic)``. Its Connect partition is ``{cluster, partition, topic}`` (in
Java ``HashMap`` order, so keys in a shared offsets topic are byte-identical) and its offset
``{offset: n}``, n being the source offset: the task resumes *after* it.

Once the target acknowledged a record (``commit_record``) the offset-sync writer learns the
(upstream, downstream) pair; syncs due now are sent at once, the others on the next ``commit``.
The two per-record hot loops are their own modules: consumed messages to SourceRecords
(:mod:`mirror.source.consumed_records`), acknowledgements to syncs, offset map and metrics
(:mod:`mirror.source.acknowledged_records`); this module owns the consumer, the writers and the lifecycle.

Backfill handover (docs/backfill.md): when the flow's marker topic exists (a source connector of ours creates
it), the task records its lifecycle there (:mod:`mirror.source.backfill_events`), leaves out the partitions a
backfill claimed, and starts a partition whose backfill is done at ``max(stored offset + 1, backfill end)``.
Its config is Java's, key for key, so that a Java node runs it and a Java leader rewrites none.

Threading: ``stop`` comes from another thread and must not block. The consumer is guarded by a lock:
``stop`` closes it at once if no poll is running, otherwise the running poll closes it on its way out.
The runtime still delivers acknowledgements and calls ``commit`` after ``stop`` (its final flush), so
the offset-sync and offset-map producers, the metrics and the marker log stay open until ``close``,
which the runtime calls once after its final offset commit attempt: the last syncs are not lost, and the
STOPPED marker is written only when the task writes nothing more.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message

from connect_runtime.api.bulk import BulkRun, BulkSink, BulkSourceTask
from connect_runtime.api.records import Acknowledged, RecordMetadata, SourceRecord
from connect_runtime.api.task import DurabilityBarrier, SourceTask
from connect_runtime.clients.factory import learn_leaders, new_consumer, translate
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import marker_topic
from mirror.client.models import TopicPartition
from mirror.client.offset_map import offset_map_topic
from mirror.client.replication_policy import policy_from_config
from mirror.config.source import MirrorSourceTaskConfig
from mirror.connect_offset_keys import OFFSET_KEY, PARTITION_KEY, TOPIC_KEY, wrap_partition
from mirror.metrics import MirrorSourceMetrics, loss_counters
from mirror.source.acknowledged_records import feed_acknowledged, feed_run
from mirror.source.backfill_events import BackfillEvents, open_marker_log
from mirror.source.bulk_copy import RunTag, copy_batch
from mirror.source.consumed_records import convert_consumed
from mirror.source.loss_detector import LossDetector
from mirror.source.offset_map_writer import OffsetMapWriter
from mirror.source.offset_sync_producer import OffsetSyncProducer
from mirror.source.offset_sync_writer import OffsetSyncWriter
from mirror.source.partition_state import SourcePartition
from mirror.source.source_consumer import (
    COPIER_CONSUMER_DEFAULTS,
    MAX_POLL_RECORDS_DEFAULT,
    copier_consumer_config,
    initial_assignment,
    start_when_unknown,
)

logger = logging.getLogger(__name__)

__all__ = ["COPIER_CONSUMER_DEFAULTS", "MAX_POLL_RECORDS_DEFAULT", "MirrorSourceTask"]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MirrorSourceTask(SourceTask, BulkSourceTask):
    """Replicates records of the assigned source partitions to their remote topics.

    In bulk (:meth:`poll_bulk`, :mod:`mirror.source.bulk_copy`) unless records must be transformed; the
    per-record path (:meth:`poll`, :meth:`commit_records`) decides and emits exactly the same.
    """

    def __init__(self, consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 offset_sync_factory: Callable[..., OffsetSyncProducer] = OffsetSyncProducer,
                 offset_map_factory: Callable[..., OffsetMapWriter] = OffsetMapWriter,
                 clock_ms: Callable[[], int] = _now_ms,
                 marker_log_factory: Callable[..., MarkerLog | None] = open_marker_log) -> None:
        self._consumer_factory = consumer_factory
        self._marker_log_factory = marker_log_factory
        self._offset_sync_factory = offset_sync_factory
        self._offset_map_factory = offset_map_factory
        self._offset_map: OffsetMapWriter | None = None
        self._clock_ms = clock_ms
        self._consumer: Consumer | None = None
        self._consumer_lock = threading.Lock()
        self._stopping = False
        self._offset_syncs: OffsetSyncProducer | None = None
        self._metrics: MirrorSourceMetrics | None = None
        self._source = ""
        self._target = ""
        self._remote: dict[str, str] = {}
        self._poll_timeout_s = 1.0
        self._max_records = MAX_POLL_RECORDS_DEFAULT
        self._label = ""
        #: Per source partition: its shared Connect partition map, remote topic and metrics, found by
        #: (topic, partition) when converting and by the map's identity when acknowledged.
        self._by_source: dict[tuple[str, int], SourcePartition] = {}
        self._by_map: dict[int, SourcePartition] = {}
        self._events: BackfillEvents | None = None
        self._bulk = True
        #: A consumed batch the bulk path has not produced in full yet (queue full at stop), and where.
        self._pending: tuple[list[Message], int] | None = None
        self._loss = LossDetector("", "", "", False, None, clock_ms)

    def start(self, config: Mapping[str, str]) -> None:
        cfg = MirrorSourceTaskConfig(config)
        self._stopping = False
        self._source, self._target = cfg.source_alias, cfg.target_alias
        self._label = cfg.entity_label()
        policy = policy_from_config(cfg.replication_policy_config())
        self._poll_timeout_s = cfg.consumer_poll_timeout_ms / 1000.0
        java_consumer = cfg.source_consumer_config()
        self._max_records = int(java_consumer.get("max.poll.records", MAX_POLL_RECORDS_DEFAULT))
        consumer_config = copier_consumer_config(java_consumer, self._label)
        partitions = cfg.task_topic_partitions
        done_ends: dict[tuple[str, int], int] = {}
        markers = self._marker_log_factory(
            marker_topic(cfg.source_alias),
            translate(cfg.target_consumer_config("backfill-marker-consumer"), "consumer"),
            translate(cfg.target_producer_config("backfill-marker-producer"), "producer"))
        if markers is not None:
            self._events = BackfillEvents(markers, self._label, tuple(partitions))
            partitions = list(self._events.started())  # without partitions a backfill claimed meanwhile
            done_ends = self._events.done_ends()  # partitions a backfill handed back: streaming starts at its end
        self._remote = {t: policy.format_remote_topic(self._source, t) for t, _ in partitions}
        self._metrics = MirrorSourceMetrics(self.context.metrics_registry, self._source, self._target,
                                            cfg.connector_name, self.context.task_id,
                                            tuple(cfg.metric_names_formats))
        self._by_source.clear()
        self._by_map.clear()
        for topic, partition in partitions:
            self._partition_state(topic, partition)  # also creates its series, as MM2 does
        if cfg.emit_offset_syncs_enabled:
            other = self._target if cfg.offset_syncs_topic_location == "source" else self._source
            self._offset_syncs = self._offset_sync_factory(
                policy.offset_syncs_topic(other), translate(cfg.offset_syncs_producer_config(), "producer"),
                OffsetSyncWriter(cfg.offset_lag_max))
        if cfg.emit_offset_map_enabled:
            self._offset_map = self._offset_map_factory(
                offset_map_topic(policy, self._source), translate(cfg.offset_map_producer_config(), "producer"))
        # Transforms need a record object per record: the per-record path (the runtime declines bulk too).
        self._bulk = not str(config.get("transforms", "")).strip()
        self._pending = None
        self._loss = LossDetector(self._label, self._source, self._target, cfg.replication_loss_policy == "fail",
                                  loss_counters(self.context.metrics_registry), self._clock_ms)
        self._loss.zero_series(self._by_source.values())
        assignment = initial_assignment(self.context.offset_storage_reader(), self._source, partitions, done_ends,
                                        start_when_unknown(consumer_config))
        for tp in assignment:
            if tp.offset >= 0:
                self._partition_state(tp.topic, tp.partition).next_offset = tp.offset
        # Held at once, so that the stop() the runtime calls after a failed start closes it too.
        consumer = self._consumer = self._consumer_factory(consumer_config)
        learn_leaders(consumer, (t for t, _ in partitions))  # else the first fetch waits 500 ms
        consumer.assign(assignment)
        resumed = sum(1 for tp in assignment if tp.offset >= 0)
        logger.info("%s replicating %d topic-partitions %s->%s (%d resuming after stored offsets): %s",
                    self._label, len(partitions), self._source, self._target, resumed,
                    ", ".join(f"{t}-{p}" for t, p in partitions))

    def poll(self) -> list[SourceRecord] | None:
        if not self._consumer_lock.acquire(blocking=False):
            return None
        try:
            consumer = self._consumer
            if self._stopping or consumer is None:
                return None
            self._loss.raise_pending()
            self._loss.check_watermarks(consumer, self._by_source.values())
            try:
                messages = self._consume(consumer)
            except KafkaException as exc:  # Java swallows client errors here and polls again
                logger.warning("%s failure during poll: %s", self._label, exc)
                return None
            records = self._convert_all(messages)
            return records or None
        finally:
            if self._stopping:
                self._close_consumer()
            self._consumer_lock.release()

    def bulk_ready(self) -> bool:
        return self._bulk

    def poll_bulk(self, sink: BulkSink) -> int:
        """Consume what is there (as :meth:`poll`) and produce it in runs, without a record object."""
        if not self._consumer_lock.acquire(blocking=False):
            return 0
        try:
            consumer = self._consumer
            if self._stopping or consumer is None:
                return 0
            self._loss.raise_pending()
            self._loss.check_watermarks(consumer, self._by_source.values())
            if self._pending is not None:
                messages, pos = self._pending
                self._pending = None
            else:
                try:
                    messages, pos = self._consume(consumer), 0
                except KafkaException as exc:  # Java swallows client errors here and polls again
                    logger.warning("%s failure during poll: %s", self._label, exc)
                    return 0
                if not messages:
                    return 0
            produced, pos = copy_batch(messages, pos, sink, self._state_of, self._clock_ms(), self._label,
                                       self._consumed_jump)
            if pos < len(messages):
                self._pending = (messages, pos)
            return produced
        finally:
            if self._stopping:
                self._close_consumer()
            self._consumer_lock.release()

    def _state_of(self, topic: str, partition: int) -> SourcePartition:
        return self._by_source.get((topic, partition)) or self._partition_state(topic, partition)

    def _consumed_jump(self, state: SourcePartition, first: int) -> None:
        """A consumed run does not start at the expected offset: lost records, or a benign gap."""
        self._loss.consumed_jump(state, first, self._consumer)

    def runs_acknowledged(self, runs: list[BulkRun]) -> None:
        """Metrics and offset syncs per acknowledged run (what :meth:`commit_records` does per record)."""
        now = self._clock_ms()
        offset_syncs = self._offset_syncs
        for run in runs:
            tag: RunTag = run.tag
            state: SourcePartition = tag.state
            count = run.count
            last_down = run.last_downstream
            if last_down >= 0:  # the remote partition's offsets never go back unless it lost records
                first_down = run.first_downstream if run.first_downstream >= 0 else last_down - count + 1
                if first_down < state.downstream_next:
                    self._loss.produced_regressed(state, first_down)
                state.downstream_next = last_down + 1
            if state.stats is not None:
                state.stats.committed_run(count, now - tag.timestamp if tag.timestamp > 0 else 0)
            self.on_run_replicated(state, run.offset[OFFSET_KEY] - count + 1, run.first_downstream,
                                   run.last_downstream, count, offset_syncs)

    def on_run_replicated(self, state: SourcePartition, upstream_first: int, downstream_first: int,
                          downstream_last: int, count: int, offset_syncs: OffsetSyncProducer | None) -> None:
        """The one hook per acknowledged run of one partition: ``count`` records from source offset
        ``upstream_first`` landed from target offset ``downstream_first`` (-1: not reported).

        When the target offsets are known to be contiguous (first and last reported, spanning ``count``)
        every record's pair is implied and the run is fed whole; otherwise only the pairs that were
        reported are (a run acknowledged by a later one's report, or another writer interleaved).
        """
        feed_run(state, upstream_first, downstream_first, downstream_last, count, offset_syncs, self._offset_map)

    def _consume(self, consumer: Consumer) -> list[Message]:
        """Up to ``max.poll.records`` messages, returning as soon as there are any (Java's ``poll``).

        librdkafka's ``consume(n, timeout)`` waits until it has ``n`` messages or the timeout ran out,
        so at 200 records/s every record waited up to the whole ``consumer.poll.timeout.ms`` (p50 532 ms
        end to end). Take what is there, else wait for one message and take what came with it.
        """
        messages = consumer.consume(self._max_records, 0)
        if messages:
            return messages
        first = consumer.poll(self._poll_timeout_s)
        if first is None:
            return []
        if self._max_records > 1:
            return [first, *consumer.consume(self._max_records - 1, 0)]
        return [first]

    def _convert_all(self, messages: list[Message]) -> list[SourceRecord]:
        """:meth:`convert` each message and count it in the source metrics (:func:`convert_consumed`)."""
        return convert_consumed(messages, self._by_source, self._partition_state, self._consumed_jump,
                                self._clock_ms(), self._label)

    def _partition_state(self, topic: str, partition: int) -> SourcePartition:
        """The per-partition state of the hot loops, created on first use."""
        remote = self._remote.get(topic)
        if remote is None:  # not expected: only assigned partitions are consumed
            remote = self._remote[topic] = topic
        stats = self._metrics.stats(remote, partition) if self._metrics is not None else None
        state = SourcePartition(wrap_partition(self._source, topic, partition), remote, partition,
                                 TopicPartition(topic, partition), stats)
        self._by_source[(topic, partition)] = state
        self._by_map[id(state.source_map)] = state
        return state

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        if metadata is None:
            logger.debug("No RecordMetadata (source record was probably filtered out during "
                         "transformation) -- can't sync offsets for %s.", record.topic)
            return
        if metadata.offset < 0:
            logger.error("RecordMetadata has no offset -- can't sync offsets for %s.", record.topic)
            return
        if self._metrics is not None and record.partition is not None:
            latency = self._clock_ms() - record.timestamp if record.timestamp is not None else 0
            self._metrics.record_committed(record.topic, record.partition, latency)
        if record.source_offset is not None and (self._offset_syncs is not None or self._offset_map is not None):
            source_tp = TopicPartition(str(record.source_partition[TOPIC_KEY]),
                                       int(record.source_partition[PARTITION_KEY]))
            upstream = int(record.source_offset[OFFSET_KEY])
            if self._offset_syncs is not None:
                self._offset_syncs.record(source_tp, upstream, metadata.offset)
            if self._offset_map is not None:
                self._offset_map.record_run(source_tp, upstream, metadata.offset, 1)

    def commit_records(self, acknowledged: Acknowledged) -> None:
        """What :meth:`commit_record` does for each record, in one loop (:func:`feed_acknowledged`)."""
        feed_acknowledged(acknowledged, self._by_map, self._clock_ms(), self._loss, self._offset_syncs,
                          self._offset_map, self.commit_record)

    def before_offset_commit(self) -> DurabilityBarrier | None:
        """The offset map's runs of every acknowledged record are sent; the offsets wait for their delivery."""
        return None if self._offset_map is None else self._offset_map.barrier()

    def commit(self) -> None:
        """After each offset flush: emit every partition's latest sync (KAFKA-15906) and the offset map's
        new or grown runs (once stopped, :meth:`close` sends what is left)."""
        if self._offset_map is not None and not self._stopping:
            self._offset_map.flush()
        if self._offset_syncs is not None:
            self._offset_syncs.promote_delayed_and_send()

    def close(self) -> None:
        """Release the producers, the metrics and the marker log (STOPPED last); each only once.

        The runtime calls this once, after its final flush and offset commit attempt (also when that
        commit failed and ``commit`` never ran, and after a ``start`` that raised half-way). Never
        earlier: a ``commit`` after ``stop`` may be a periodic one that finished while the task thread
        was still copying, and STOPPED tells a backfill that this task writes no more records and its
        stored offsets are final (a STOPPED written before the final flush let a backfill copy records
        the flush then delivered too). Each is released even if releasing another raised.
        """
        offset_map, self._offset_map = self._offset_map, None
        offset_syncs, self._offset_syncs = self._offset_syncs, None
        metrics, self._metrics = self._metrics, None
        events, self._events = self._events, None
        releases: list[tuple[str, Callable[[], None] | None]] = [
            ("offset-map producer", offset_map.close if offset_map is not None else None),  # sends what is due
            ("offset-sync producer", offset_syncs.close if offset_syncs is not None else None),
            ("metrics", metrics.close if metrics is not None else None),
            ("loss counters at 0", self._loss.release_zero_series),
            ("backfill marker log", events.stopped if events is not None else None),
        ]
        for what, release in releases:
            if release is None:
                continue
            try:
                release()
            except Exception:  # the others must still be released
                logger.exception("%s error releasing the %s", self._label, what)

    def stop(self) -> None:
        self._stopping = True
        if self._consumer_lock.acquire(blocking=False):
            try:
                self._close_consumer()
            finally:
                self._consumer_lock.release()
        logger.info("%s stopping", self._label)

    def _close_consumer(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is None:
            return
        try:
            if self._events is not None:  # a backfill waits until the final commit reaches these
                self._events.note_positions(consumer)
        except (KafkaException, RuntimeError) as exc:  # the consumer must be closed all the same
            logger.warning("%s could not read the source consumer's positions: %s", self._label, exc)
        try:
            consumer.close()
        except (KafkaException, RuntimeError) as exc:
            logger.warning("%s error closing the source consumer: %s", self._label, exc)
