"""MirrorSourceTask: copies its assigned source partitions, record for record.

Start: one byte-array consumer on the source, *assigned* (no group membership) to
``task.assigned.partitions``, each partition where :func:`initial_assignment` says: after its stored
offset, else where ``auto.offset.reset`` says ("replicate from latest", KAFKA-13988).

Each record keeps key, value (also null), headers, timestamp and partition number; it goes to the remote
topic ``formatRemoteTopic(source, topic)``. Its Connect partition is ``{cluster, partition, topic}`` (in
Java ``HashMap`` order, so keys in a shared offsets topic are byte-identical) and its offset
``{offset: n}``, n being the source offset: the task resumes *after* it.

Once the target acknowledged a record (``commit_record``) the offset-sync writer learns the
(upstream, downstream) pair; syncs due now are sent at once, the others on the next ``commit``.
The exact offset map learns the pair too; its runs go out on the map's own one-second clock
(:meth:`_map_clock`) and at each ``commit``.
On the per-record path two loops run once per record: consumed messages to SourceRecords (:meth:`_convert`) and
acknowledgements to offset syncs, offset map and metrics (:meth:`commit_records`). Each reads the
task's fields into locals before it starts and calls no method of ours per record unless something is
off (a partition not seen yet, an offset gap, a regression); what they need of a partition is one
:class:`SourcePartition`, looked up once per record. The bulk path's loop is
:func:`mirror.source.bulk_copy.copy_batch`, which produces a consumed batch in runs of records.

Backfill handover (docs/backfill.md): when the flow's marker topic exists (a source connector of ours
creates it), the task records its lifecycle there
(:class:`~mirror.backfill_markers.marker_log.BackfillEvents`), leaves out the partitions a backfill
claimed, and starts a partition whose backfill is done at ``max(stored offset + 1, backfill end)``. Its
config is Java's, key for key, so that a Java node runs it and a Java leader rewrites none. The marker
topic is looked up as the task starts; on a target that cannot be reached the lookup gives up at once
(:meth:`~mirror.backfill_markers.marker_log.MarkerLog.exists`) and the task copies every partition it
was given.

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
from bisect import bisect_left
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaException,
    Message,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connect_runtime.api.bulk import BulkRun, BulkSink, BulkSourceTask
from connect_runtime.api.connector_config import TASKS_MAX
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.api.records import Acknowledged, RecordMetadata, SourceRecord, metadata_of
from connect_runtime.api.task import DurabilityBarrier, SourceTask
from connect_runtime.clients.factory import learn_leaders, new_consumer, translate
from mirror.backfill_markers.marker_log import BackfillEvents, MarkerLog, open_marker_log
from mirror.backfill_markers.markers import marker_topic, streaming_start
from mirror.client.models import TopicPartition
from mirror.client.offset_map import offset_map_topic
from mirror.client.replication_policy import policy_from_config
from mirror.config.source import MirrorSourceTaskConfig
from mirror.connect_offset_keys import OFFSET_KEY, PARTITION_KEY, TOPIC_KEY, wrap_partition
from mirror.metrics import (
    AUTO_PARTITION_LIMIT,
    LATENCY_BOUNDS_MS,
    MirrorSourceMetrics,
    PartitionStats,
    loss_counters,
    resolve_detail,
)
from mirror.source.bulk_copy import RunTag, copy_batch
from mirror.source.loss_detector import LossDetector
from mirror.source.offset_map_writer import OffsetMapWriter
from mirror.source.offset_sync_writer import OffsetSyncProducer, OffsetSyncWriter

logger = logging.getLogger(__name__)

#: Java's ``max.poll.records`` default: the most records one ``poll`` returns.
MAX_POLL_RECORDS_DEFAULT = 500

#: librdkafka prefetch settings for a copier (no Java equivalent; the user's keys win). With librdkafka's
#: defaults a partition stops being fetched for ``fetch.queue.backoff.ms`` (1 s) once
#: ``queued.min.messages`` (100,000) are queued: a task that drains them in a few milliseconds then idles
#: most of each second (measured on Tansu: 180-230k vs 758k records/s). The queue stays bounded in bytes by
#: ``queued.max.messages.kbytes`` (64 MiB).
COPIER_CONSUMER_DEFAULTS = {"queued.min.messages": "1000000", "fetch.queue.backoff.ms": "10"}

#: How long the broker may hold the copier's fetch when none of its partitions has a record (librdkafka's
#: ``fetch.wait.max.ms``, Java's ``fetch.max.wait.ms``; the user's key wins). A fetch is answered as soon as
#: a record arrives, so a longer wait delays no arriving record; what it sets is how often an idle task
#: asks. librdkafka has no fetch sessions (KIP-227): every fetch names every partition of the task, and
#: its broker thread looks each topic of the response up by a walk over every topic the client knows
#: (``rd_kafka_topic_find_by_topic_id``), so an idle response of a task of thousands of topics costs it
#: milliseconds: at librdkafka's 500 ms, the idle fetches of four tasks of 2,000 topics each cost an idle
#: node more than anything but the health monitor's reads (``perf`` of bench/scale.py start). What waits
#: longer: a partition that becomes fetchable while an idle fetch is held (its start offset looked up, a
#: fetch error retried) and the consumer's other requests to that broker, which the broker answers in
#: order behind it, by up to this much. A prefetch queue over its bounds stops every partition of the
#: consumer at once (they share the one queue), so a held fetch never keeps a busy partition waiting.
COPIER_FETCH_WAIT_MAX_MS = 2000

#: A task of more partitions than this gets :data:`COPIER_FETCH_WAIT_MAX_MS`; a smaller one keeps librdkafka's
#: 500 ms, whose idle fetches cost little, and whose shorter hold keeps a partition that becomes fetchable, and
#: the end-to-end latency on brokers that hold a fetch its whole wait (docs/tansu.md), where they were. The
#: number of ``metrics.partition.series = auto``, here counted per task: a fetch is one task's consumer's.
LONG_FETCH_WAIT_PARTITIONS = AUTO_PARTITION_LIMIT


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def copier_consumer_config(java_consumer: Mapping[str, str], label: str, partitions: int = 0) -> dict[str, Any]:
    """The librdkafka config of the source consumer of a task of ``partitions`` partitions, from its Java-style
    keys."""
    consumer_config = translate(java_consumer, "consumer")
    # librdkafka needs a group.id even for assign(); Java MM2 has none, so nothing is ever committed
    # under it. Java's consumer default is read_uncommitted (aborted source data IS copied unless
    # the user asks for read_committed); librdkafka's default differs, so say it explicitly.
    consumer_config.setdefault("group.id", java_consumer.get("client.id", label))
    consumer_config.setdefault("isolation.level", "read_uncommitted")
    for key, value in COPIER_CONSUMER_DEFAULTS.items():
        consumer_config.setdefault(key, value)
    if partitions > LONG_FETCH_WAIT_PARTITIONS:
        consumer_config.setdefault("fetch.wait.max.ms", str(COPIER_FETCH_WAIT_MAX_MS))
    return consumer_config


def start_when_unknown(consumer_config: Mapping[str, Any]) -> int:
    """Where a partition with no stored offset starts: the consumer's ``auto.offset.reset`` as a logical
    offset (librdkafka's default is the end, as Java's). ``none``/``error`` stay OFFSET_INVALID: the
    consumer then reports the missing offset, as Java's throws.

    The start is a logical offset (beginning or end), never "no offset": librdkafka would first ask the
    group coordinator for the committed offset of a group that never commits, and an answer of
    NOT_COORDINATOR (the coordinator still loading or moving) leaves the partition unfetched for good,
    its task RUNNING and copying nothing (tests/kafka/test_kafka_chaos.py).
    """
    reset = str(consumer_config.get("auto.offset.reset", "latest")).strip().lower()
    if reset in ("earliest", "smallest", "beginning"):
        return OFFSET_BEGINNING
    if reset in ("latest", "largest", "end"):
        return OFFSET_END
    return OFFSET_INVALID


def initial_assignment(reader: OffsetStorageReader, source: str, partitions: list[tuple[str, int]],
                       done_ends: Mapping[tuple[str, int], int],
                       unknown: int = OFFSET_INVALID) -> list[KafkaTopicPartition]:
    """Each partition at its start position.

    A partition with a stored Connect offset ``o >= 0`` resumes at ``o + 1``; one without starts at
    ``unknown`` (:func:`start_when_unknown`). A partition whose backfill is done (``done_ends``) starts at
    ``max(stored offset + 1, backfill end)`` (docs/backfill.md).
    """
    wrapped = [wrap_partition(source, topic, partition) for topic, partition in partitions]
    stored = reader.offsets(wrapped) if wrapped else []
    offsets: dict[tuple[str, int], int] = {}
    for partition_map, offset_map in stored:
        value = None if offset_map is None else offset_map.get(OFFSET_KEY)
        if isinstance(value, int) and value >= 0:
            offsets[(str(partition_map[TOPIC_KEY]), int(partition_map[PARTITION_KEY]))] = value + 1
    result = []
    for t, p in partitions:
        start = streaming_start(offsets.get((t, p)), done_ends.get((t, p)))
        result.append(KafkaTopicPartition(t, p, unknown if start is None else start))
    return result


class SourcePartition:
    """What the per-record loops need of one source partition, looked up once per record (or run)."""

    __slots__ = ("downstream_next", "next_offset", "partition", "remote", "seen_end", "source_map", "stats", "tp")

    def __init__(self, source_map: dict[str, Any], remote: str, partition: int, tp: TopicPartition,
                 stats: PartitionStats | None) -> None:
        self.source_map = source_map
        self.remote = remote
        self.partition = partition
        self.tp = tp
        self.stats = stats
        #: Loss detection (:mod:`mirror.source.loss_detector`): the next upstream offset expected (-1:
        #: not known yet), the highest source end seen, the next downstream offset of the remote partition.
        self.next_offset = -1
        self.seen_end = -1
        self.downstream_next = -1


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
        partitions = cfg.task_topic_partitions
        consumer_config = copier_consumer_config(java_consumer, self._label, len(partitions))
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
        tasks = int(cfg.originals().get(TASKS_MAX) or 1)
        detail = resolve_detail(cfg.metrics_partition_series, len(partitions), tasks)
        if detail != cfg.metrics_partition_series:
            logger.info("%s labels its metrics per %s (metrics.partition.series = %s: %d partitions in this task, "
                        "one of tasks.max = %d)", self._label, detail, cfg.metrics_partition_series,
                        len(partitions), tasks)
        self._metrics = MirrorSourceMetrics(self.context.metrics_registry, self._source, self._target,
                                            cfg.connector_name, self.context.task_id,
                                            tuple(cfg.metric_names_formats), detail)
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
                                  loss_counters(self.context.metrics_registry), self._clock_ms,
                                  detail=detail)
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
            self._map_clock()  # an idle poll returns within consumer.poll.timeout.ms: the last runs go out
            self._loss.raise_pending()
            self._loss.check_watermarks(consumer, self._by_source.values())
            try:
                messages = self._consume(consumer)
            except KafkaException as exc:  # Java swallows client errors here and polls again
                logger.warning("%s failure during poll: %s", self._label, exc)
                return None
            records = self._convert(messages)
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
            self._map_clock()
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
        self._map_clock()

    def on_run_replicated(self, state: SourcePartition, upstream_first: int, downstream_first: int,
                          downstream_last: int, count: int, offset_syncs: OffsetSyncProducer | None) -> None:
        """The one hook per acknowledged run of one partition: ``count`` records from source offset
        ``upstream_first`` landed from target offset ``downstream_first`` (-1: not reported).

        When the target offsets are known to be contiguous (first and last reported, spanning ``count``)
        every record's pair is implied and the run is fed whole; otherwise only the pairs that were
        reported are (a run acknowledged by a later one's report, or another writer interleaved).
        """
        offset_map = self._offset_map
        if offset_syncs is None and offset_map is None:
            return
        upstream_last = upstream_first + count - 1
        if downstream_first >= 0 and downstream_last - downstream_first + 1 == count:
            if offset_syncs is not None:
                offset_syncs.record_range(state.tp, upstream_first, downstream_first, count)
            if offset_map is not None:  # the exact offset map: the whole run, both sides contiguous
                offset_map.record_run(state.tp, upstream_first, downstream_first, count)
            return
        pairs = [(upstream_first, downstream_first)] if downstream_first >= 0 else []
        if downstream_last >= 0 and count > 1:
            pairs.append((upstream_last, downstream_last))
        for upstream, downstream in pairs:  # only what was reported: the records between are unknown
            if offset_syncs is not None:
                offset_syncs.record(state.tp, upstream, downstream)
            if offset_map is not None:
                offset_map.record_run(state.tp, upstream, downstream, 1)

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

    def _convert(self, messages: list[Message]) -> list[SourceRecord]:
        """Each consumed message (errors logged and skipped) as its SourceRecord, counted in the source
        metrics (the update of :meth:`mirror.metrics.PartitionStats.polled`, written out here).

        This loop runs once per replicated record: it calls nothing per record but the constructors. A
        partition without state yet gets it (:meth:`_partition_state`), and an offset that is not the one
        expected goes to :meth:`_consumed_jump` (lost records, or a benign gap).
        """
        records: list[SourceRecord] = []
        append = records.append
        by_source = self._by_source
        now = self._clock_ms()
        bounds = LATENCY_BOUNDS_MS
        for message in messages:
            if message.error() is not None:
                logger.warning("%s consumer error on %s-%s: %s", self._label, message.topic(),
                               message.partition(), message.error())
                continue
            state = by_source.get((message.topic(), message.partition()))  # type: ignore[arg-type]
            if state is None:
                state = self._partition_state(message.topic() or "", message.partition() or 0)
            offset: int = message.offset()  # type: ignore[assignment]
            if offset != state.next_offset:
                self._consumed_jump(state, offset)
            state.next_offset = offset + 1
            ts_type, ts = message.timestamp()
            value = message.value()
            headers: Any = message.headers()  # consumed: a list of (str, bytes | None), or None
            append(SourceRecord(state.remote, value, message.key(), state.partition, headers,
                                None if ts_type == TIMESTAMP_NOT_AVAILABLE else ts, state.source_map,
                                {OFFSET_KEY: offset}))
            stats = state.stats
            if stats is not None:
                age = now - ts if ts_type != TIMESTAMP_NOT_AVAILABLE else 0
                stats.bytes += 0 if value is None else len(value)
                stats.age_ms = age
                if age < 0:
                    age = 0
                stats.age_sum_ms += age
                stats.age_buckets[bisect_left(bounds, age)] += 1
        return records

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
        """What :meth:`commit_record` does for each record, in one loop (it runs once per record).

        Each acknowledged record is counted in the metrics and its (upstream, downstream) pair fed to the
        writers; an offset that goes back on the remote partition is a loss
        (:mod:`mirror.source.loss_detector`). A record that is not one of ours (``_by_map`` finds its
        partition by the identity of its source partition map) takes the general path,
        :meth:`commit_record`. The pairs are gathered per source partition and handed to the offset-sync
        writer as runs, which decides exactly as it would one record at a time (every sync that fires is
        sent in order), and to the offset map in one call per partition run.
        """
        by_map = self._by_map
        now = self._clock_ms()
        loss = self._loss
        offset_syncs, offset_map = self._offset_syncs, self._offset_map
        bounds = LATENCY_BOUNDS_MS
        syncing = offset_syncs is not None or offset_map is not None
        runs: dict[int, tuple[SourcePartition, list[int], list[int]]] = {}
        for record, delivered in acknowledged:
            state = by_map.get(id(record.source_partition))
            downstream = delivered.offset()
            if state is None or state.source_map is not record.source_partition or downstream is None:
                self.commit_record(record, metadata_of(delivered))  # not one of ours: the general path
                continue
            if downstream < 0:
                logger.error("RecordMetadata has no offset -- can't sync offsets for %s.", record.topic)
                continue
            if downstream < state.downstream_next:
                loss.produced_regressed(state, downstream)
            state.downstream_next = downstream + 1
            stats = state.stats
            if stats is not None:
                timestamp = record.timestamp
                latency = now - timestamp if timestamp is not None else 0
                stats.records += 1
                stats.latency_ms = latency
                if latency < 0:
                    latency = 0
                stats.latency_sum_ms += latency
                stats.latency_buckets[bisect_left(bounds, latency)] += 1
            if syncing and record.source_offset is not None:
                run = runs.get(id(state))
                if run is None:
                    run = runs[id(state)] = (state, [], [])
                run[1].append(record.source_offset[OFFSET_KEY])
                run[2].append(downstream)
        for state, upstream, downstream_offsets in runs.values():
            if offset_syncs is not None:
                offset_syncs.record_run(state.tp, upstream, downstream_offsets)
            if offset_map is not None:  # the exact offset map: one call per partition run
                offset_map.record_offsets(state.tp, upstream, downstream_offsets)
        self._map_clock()

    def _map_clock(self) -> None:
        """The offset map's own clock (:meth:`OffsetMapWriter.flush_if_due`), on the task thread after each
        acknowledged batch and at each poll: new runs reach the target within seconds of their records,
        not only at the next offset commit (``offset.flush.interval.ms``). The offsets still wait for
        every run they cover (:meth:`before_offset_commit`)."""
        offset_map = self._offset_map
        if offset_map is not None:
            offset_map.flush_if_due()

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
