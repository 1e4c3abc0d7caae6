"""MirrorCheckpointTask: translates its groups' source offsets into checkpoints on the target.

Start returns at once; a scheduler thread then loads the previous checkpoints (:class:`CheckpointStore`)
and starts tailing the offset syncs (:class:`~mirror.checkpoint.offset_sync_store.OffsetSyncReader` ->
:class:`~mirror.checkpoint.offset_sync_store.OffsetSyncStore`), telling the sync store to keep only the
latest historical sync per partition when the checkpoints could not be read.
Until both are ready no checkpoint is produced.

Every ``emit.checkpoints.interval.seconds``, and as soon as the exact offset map advanced (at most once per
:data:`MAP_EMIT_MIN_GAP_S`), ``poll`` runs a round: it lists its groups' committed offsets on the source
(time T; one call, the groups' requests in flight together, so a thousand groups cost a few round trips)
and, for partitions of topics the topic filter accepts, translates them: through the exact
offset map (``mm2-offset-map.<source>.internal`` on the target, :mod:`mirror.client.offset_map`) to the
downstream offset of the very record the group would read next, and only where the map has no entry by
MM2's rule (at most one past the nearest older sync; counted in ``mirror_checkpoint_translations_total``
with ``basis="offset-sync"``). Untranslatable offsets (no map entry and no sync, or older than every
retained sync) produce nothing. Each checkpoint names the *target-side* topic and passes the
monotonicity filter against the store (downstream never goes back unless the upstream group
rewound); the store is updated before the records are returned. Records go to
``<source>.checkpoints.internal`` partition 0 with timestamp T.

Why early rounds: the source task sends the map's runs within seconds of their records' arrival, so a
lagging group's exact checkpoint can follow within seconds too, instead of on the next interval (60 s by
default). Every group is listed, not only those whose partitions the map reached: a group's new commit on
the source is only known after a listing. While records flow that is one OffsetFetch per group per
:data:`MAP_EMIT_MIN_GAP_S` on the source, and a checkpoint only where a group's position moved (repeats are
filtered); a round that takes longer than the gap (many groups) is followed by a pause as long as itself,
so the listings never take more than half the time. With the map quiet (an idle flow,
``emit.offset-map.enabled=false``, a source task of Apache MM2) rounds run on the interval only, as in Java.

With ``sync.group.offsets.enabled`` the scheduler also writes the checkpointed offsets into the target's
consumer groups (:mod:`mirror.checkpoint.group_sync`): never into a group with members there, never past
a partition's end or before its first record, never backwards.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Message

from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import RecordMetadata, SourceRecord
from connect_runtime.api.task import SourceTask
from connect_runtime.clients.factory import new_consumer, translate
from connect_runtime.logging_context import carry_context
from mirror.checkpoint.checkpoint_store import CheckpointStore
from mirror.checkpoint.group_sync import GroupOffsetSync, GroupSyncStatus
from mirror.checkpoint.metrics import MirrorCheckpointMetrics
from mirror.checkpoint.offset_sync_store import OffsetSyncReader, OffsetSyncStore
from mirror.checkpoint.topic_tail import TopicTail
from mirror.client.models import Checkpoint, TopicPartition
from mirror.client.offset_map import OffsetMap, offset_map_topic
from mirror.client.replication_policy import ReplicationPolicy, policy_from_config
from mirror.config.checkpoint import MirrorCheckpointTaskConfig
from mirror.connect_offset_keys import CONSUMER_GROUP_ID_KEY, PARTITION_KEY, TOPIC_KEY, wrap_offset
from mirror.filters import TopicFilter, load_topic_filter
from mirror.metrics import resolve_detail
from mirror.scheduler import Scheduler

logger = logging.getLogger(__name__)

#: How long the offset-map reader waits before it looks for a missing topic again.
_MISSING_RETRY_S = 5.0

GroupOffsets = Mapping[tuple[str, int], tuple[int, str | None]]

#: The least time between two rounds when the exact offset map advanced: bounds the OffsetFetch requests
#: (one per group per round) while records flow, whatever the number of source tasks writing the map.
MAP_EMIT_MIN_GAP_S = 1.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def rename_topic_partition(
    policy: ReplicationPolicy, source_cluster_alias: str, target_cluster_alias: str, upstream: TopicPartition
) -> TopicPartition:
    """The target-side name of source partition ``upstream`` (Java ``renameTopicPartition``): a checkpoint
    names the *target-side* topic. A topic that came from the target in the first place (``target.topic1``
    on the source) maps back to its original name, stripping **all** hops; any other topic gets the source
    prefix (``topic1`` -> ``source.topic1``).

    Examples for source1->target2: ``topic3`` -> ``source1.topic3``; ``target2.topic3`` -> ``topic3``;
    ``source6.topic7`` -> ``source1.source6.topic7``.
    """
    topic, partition = upstream
    if policy.topic_source(topic) == target_cluster_alias:
        # The topic came from the target cluster: us-west.topic1 -> topic1.
        return TopicPartition(policy.original_topic(topic), partition)
    return TopicPartition(policy.format_remote_topic(source_cluster_alias, topic), partition)


def checkpoint_is_more_recent(checkpoint: Checkpoint, last: Checkpoint | None) -> bool:
    """Whether ``checkpoint`` may be emitted given ``last``, the latest one for its (group, partition).

    The downstream offset of the checkpoints of a (group, partition) never goes backwards, except when the
    upstream group itself rewound: translation is not monotonic while the OffsetSyncStore's state changes,
    and consumers failing over must never be moved back by a stale translation.

    Emit when there is no previous checkpoint, when the upstream group rewound (the downstream offset may
    then go back too), or when the downstream offset advanced. Equal downstream offsets are repeats;
    a lower downstream offset without an upstream rewind is suppressed.
    """
    if last is None:
        logger.log(5, "Emitting %s (first for this partition)", checkpoint)
        return True
    if checkpoint.upstream_offset < last.upstream_offset:
        logger.log(5, "Emitting %s (upstream offset rewind)", checkpoint)
        return True
    if checkpoint.downstream_offset > last.downstream_offset:
        logger.log(5, "Emitting %s (downstream offset advanced)", checkpoint)
        return True
    if checkpoint.downstream_offset != last.downstream_offset:
        logger.log(5, "Skipping %s (preventing downstream rewind)", checkpoint)
    else:
        logger.log(5, "Skipping %s (repeated checkpoint)", checkpoint)
    return False


def checkpoints_for_group(group: str, upstream: GroupOffsets, *, policy: ReplicationPolicy,
                          topic_filter: TopicFilter, source_alias: str, target_alias: str,
                          translate_downstream: Callable[[str, TopicPartition, int], int | None],
                          last_checkpoint: Callable[[TopicPartition], Checkpoint | None]
                          ) -> dict[TopicPartition, Checkpoint]:
    """The new checkpoints of one group, keyed by target-side partition (pure)."""
    result: dict[TopicPartition, Checkpoint] = {}
    for (topic, partition), (offset, metadata) in upstream.items():
        if not topic_filter.should_replicate_topic(topic):
            continue
        source_tp = TopicPartition(topic, partition)
        downstream = translate_downstream(group, source_tp, offset)
        if downstream is None or downstream < 0:
            continue
        renamed = rename_topic_partition(policy, source_alias, target_alias, source_tp)
        checkpoint = Checkpoint(group, renamed, offset, downstream, metadata or "")
        if checkpoint_is_more_recent(checkpoint, last_checkpoint(renamed)):
            result[renamed] = checkpoint
    return result


class ExactTranslator:
    """Upstream -> downstream through the offset map first, MM2's ``OffsetSyncStore`` where it has no entry.

    When both answer (the map lags the data by up to one flush), the larger wins: each is a position no
    later than the true one, so the larger replays less and still skips nothing.
    """

    def __init__(self, offset_map: OffsetMap, syncs: OffsetSyncStore, map_ready: Callable[[], bool],
                 counted: Callable[[str], None] | None = None) -> None:
        self._map = offset_map
        self._syncs = syncs
        self._map_ready = map_ready
        self._counted = counted or (lambda _basis: None)

    def __call__(self, group: str | None, tp: TopicPartition, upstream: int) -> int | None:
        if not self._map_ready():
            return None
        exact = self._map.downstream(tp, upstream)
        fallback = self._syncs.translate_downstream(group, tp, upstream)
        if exact is not None and (fallback is None or exact >= fallback):
            self._counted("offset-map")
            return exact
        if fallback is not None and fallback >= 0:
            self._counted("offset-sync")
        return fallback


class OffsetMapReader(TopicTail):
    """Tails the offset-map topic on the target into an :class:`OffsetMap` (the checkpoint task's exact half),
    until :meth:`stop`.

    Like :class:`~mirror.checkpoint.offset_sync_store.OffsetSyncReader` (both are a :class:`TopicTail`): reads
    partition 0 from the beginning, marks the map ready after the first read to the end and keeps following
    it; each batch of runs handled after that sets :attr:`advanced`, which wakes the checkpoint task for an
    early round. The topic may not exist (the flow's source task runs Apache MM2, or
    ``emit.offset-map.enabled=false``): the map is then ready and empty, translation uses MM2's rule, and the
    reader looks for the topic again every few seconds.
    """

    what = "offset-map reader"

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], offset_map: OffsetMap, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 timeout_s: float = 30.0, on_advance: Callable[[], None] | None = None) -> None:
        """``on_advance``: called on the reader's thread each time :attr:`advanced` is set."""
        super().__init__(topic, consumer_config, consumer_factory=consumer_factory)
        self.offset_map = offset_map
        self._timeout_s = timeout_s
        self._ready = threading.Event()
        #: Set when runs arrived after the first read to the end (the map advanced); the reader's user clears it.
        self.advanced = threading.Event()
        self._on_advance = on_advance or (lambda: None)

    @property
    def ready(self) -> bool:
        """The first read to the end finished (or the topic does not exist)."""
        return self._ready.is_set()

    def wait_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def start(self) -> None:
        self._start_thread()

    def _exists(self, consumer: Consumer) -> bool:
        metadata = consumer.list_topics(self.topic, timeout=self._timeout_s).topics.get(self.topic)
        return metadata is not None and metadata.error is None and 0 in metadata.partitions

    def _wait_for_topic(self, consumer: Consumer) -> bool:
        while not self._stopping.is_set() and not self._exists(consumer):
            if not self._ready.is_set():
                logger.info("%s does not exist: translating with offset syncs only until it does", self.topic)
            self._ready.set()
            self._stopping.wait(_MISSING_RETRY_S)
        return not self._stopping.is_set()

    def _caught_up(self, complete: bool) -> None:
        if complete:
            logger.info("Read %d offset-map runs from %s; exact translation is available",
                        self.offset_map.records_read, self.topic)
        self._ready.set()

    def _gave_up(self) -> None:
        self._ready.set()

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.offset_map.add_record(message.key(), message.value())
        if records and self._ready.is_set():
            self.advanced.set()
            self._on_advance()


class MirrorCheckpointTask(SourceTask):
    """Emits checkpoints for the assigned consumer groups and optionally syncs their target offsets."""

    def __init__(self, admin_factory: Callable[..., Any] | None = None,
                 clock_ms: Callable[[], int] = _now_ms) -> None:
        #: Tests inject a fake; otherwise ``forwarding.admin.class`` decides, at start.
        self._admin_factory: Callable[..., Any] | None = admin_factory
        self._clock_ms = clock_ms
        self._stopping = threading.Event()
        #: Set on stop and when the offset map advanced: ``poll`` waits on it.
        self._wake = threading.Event()
        #: When an early round may start: MAP_EMIT_MIN_GAP_S after the last one began, and no sooner than
        #: its own length after it ended (the listings take at most half the time).
        self._early_after = float("-inf")
        self._groups: list[str] = []
        self._group_sync: GroupOffsetSync | None = None
        self._map_reader: OffsetMapReader | None = None
        self._scheduler: Scheduler | None = None
        self._reader: OffsetSyncReader | None = None
        self._store: CheckpointStore | None = None
        self._syncs = OffsetSyncStore()
        self._offset_map = OffsetMap()
        self._translate = ExactTranslator(self._offset_map, self._syncs, lambda: False)
        self._metrics: MirrorCheckpointMetrics | None = None
        self._source_admin: Any = None
        self._target_admin: Any = None

    def start(self, config: Mapping[str, str]) -> None:
        cfg = MirrorCheckpointTaskConfig(config)
        self._stopping.clear()
        self._source, self._target = cfg.source_alias, cfg.target_alias
        self._groups = cfg.task_consumer_groups
        self._policy = policy_from_config(cfg.replication_policy_config())
        self._topic_filter = load_topic_filter(cfg.originals())
        self._checkpoints_topic = self._policy.checkpoints_topic(self._source)
        self._interval_s = float(cfg.emit_checkpoints_interval_s)
        self._poll_timeout_s = cfg.consumer_poll_timeout_ms / 1000.0
        timeout_s = cfg.admin_timeout_ms / 1000.0
        admin_factory = self._admin_factory or cfg.admin_class()
        self._source_admin = admin_factory(translate(cfg.source_admin_config(), "admin"), timeout_s=timeout_s)
        self._target_admin = admin_factory(translate(cfg.target_admin_config(), "admin"), timeout_s=timeout_s)
        self._metrics = MirrorCheckpointMetrics(self.context.metrics_registry, self._source, self._target,
                                                cfg.connector_name, self.context.task_id,
                                                tuple(cfg.metric_names_formats),
                                                resolve_detail(cfg.metrics_partition_series, 0))
        self._syncs = OffsetSyncStore()
        offset_syncs_topic = self._policy.offset_syncs_topic(
            self._target if cfg.offset_syncs_topic_location == "source" else self._source)
        self._reader = OffsetSyncReader(offset_syncs_topic, translate(cfg.offset_syncs_consumer_config(),
                                                                      "consumer"), self._syncs)
        self._store = CheckpointStore(self._checkpoints_topic,
                                      translate(cfg.target_consumer_config(), "consumer"), self._groups,
                                      timeout_s=timeout_s)
        self._offset_map = OffsetMap()
        self._map_reader = OffsetMapReader(offset_map_topic(self._policy, self._source),
                                           translate(cfg.target_consumer_config("offset-map-target-consumer"),
                                                     "consumer"), self._offset_map, timeout_s=timeout_s,
                                           on_advance=self._wake.set)
        metrics = self._metrics
        self._translate = ExactTranslator(self._offset_map, self._syncs,
                                          lambda: self._map_reader is not None and self._map_reader.ready,
                                          metrics.translated)
        store = self._store
        self._group_sync = GroupOffsetSync(
            self._target_admin, translate(cfg.target_consumer_config("group-sync-target-consumer"), "consumer"),
            store.converted_upstream_offsets, self._groups, on_outcome=metrics.group_synced, timeout_s=timeout_s)
        self._scheduler = Scheduler(cfg.entity_label(), timeout_s)
        sync_interval_s = cfg.sync_group_offsets_interval_s
        self._scheduler.execute_async(lambda: self._start_stores(sync_interval_s),
                                      "starting checkpoint and offset sync stores")
        self._next_emit = time.monotonic() + self._interval_s
        self._early_after = float("-inf")
        logger.info("%s checkpointing %d consumer groups %s->%s: %s", cfg.entity_label(), len(self._groups),
                    self._source, self._target, self._groups)

    def _start_stores(self, sync_interval_s: int) -> None:
        assert self._store is not None and self._reader is not None and self._scheduler is not None
        loaded = self._store.start()
        if self._stopping.is_set():
            return
        if self._map_reader is not None:
            self._map_reader.start()
        self._reader.start(initialization_must_read_to_end=not loaded)
        self._scheduler.schedule_repeating_delayed(self.sync_group_offsets, sync_interval_s,
                                                   "syncing consumer group offsets onto the target")

    @property
    def offset_map(self) -> OffsetMap:
        return self._offset_map

    def group_sync_status(self) -> dict[str, GroupSyncStatus]:
        """Each group's last sync outcome (``synced``, ``written``, ``active``, ``failed``) and why."""
        group_sync = self._group_sync
        return {} if group_sync is None else group_sync.status()

    # -- checkpoints --

    def poll(self) -> list[SourceRecord] | None:
        # Sleep in steps of consumer.poll.timeout.ms, like Java, but wake up at once on stop, and for an
        # early round once the offset map advanced (module docstring).
        advanced = self._map_reader.advanced if self._map_reader is not None else None
        while not self._stopping.is_set():
            now = time.monotonic()
            due = self._next_emit
            if advanced is not None and advanced.is_set():
                due = min(due, self._early_after)
            if now >= due:
                break
            self._wake.wait(min(self._poll_timeout_s, due - now))
            self._wake.clear()  # the loop re-reads the flags: a wake-up lost here is seen at once
        if self._stopping.is_set():
            return None
        if advanced is not None:
            advanced.clear()  # runs that arrive during this round trigger the next one
        began = time.monotonic()
        self._next_emit = began + self._interval_s
        self._early_after = began + MAP_EMIT_MIN_GAP_S
        store = self._store
        if store is None or not store.initialized:
            return None
        records: list[SourceRecord] = []
        timestamp = self._clock_ms()
        for group, upstream in self._committed_offsets().items():
            records.extend(self._records_for_group(group, upstream, store, timestamp))
        ended = time.monotonic()
        self._early_after = max(self._early_after, ended + (ended - began))
        return records or None

    def _committed_offsets(self) -> dict[str, GroupOffsets]:
        """Every assigned group's committed offsets on the source, read in one call (its requests in flight
        together); a group that cannot be read is logged and skipped this round, the others go on."""
        errors: dict[str, ConnectError] = {}
        try:
            committed: dict[str, GroupOffsets] = self._source_admin.list_consumer_group_offsets(
                self._groups, errors=errors)
        except ConnectError as exc:
            logger.error("Error querying offsets of %d consumer groups on cluster %s: %s", len(self._groups),
                         self._source, exc)
            return {}
        for group, error in errors.items():
            logger.error("Error querying offsets for consumer group %s on cluster %s: %s", group,
                         self._source, error)
        return committed

    def _records_for_group(self, group: str, upstream: GroupOffsets, store: CheckpointStore,
                           timestamp: int) -> list[SourceRecord]:
        checkpoints = checkpoints_for_group(
            group, upstream, policy=self._policy, topic_filter=self._topic_filter, source_alias=self._source,
            target_alias=self._target, translate_downstream=self._translate,
            last_checkpoint=lambda tp: store.get(group, tp))
        store.update(group, checkpoints)
        return [SourceRecord(topic=self._checkpoints_topic, partition=0, key=cp.key_bytes(),
                             value=cp.value_bytes(), timestamp=timestamp,
                             source_partition=cp.connect_partition(), source_offset=wrap_offset(0))
                for cp in checkpoints.values()]

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        if self._metrics is None or record.timestamp is None:
            return
        partition = record.source_partition
        self._metrics.checkpoint_latency(str(partition[CONSUMER_GROUP_ID_KEY]), str(partition[TOPIC_KEY]),
                                         int(partition[PARTITION_KEY]), self._clock_ms() - record.timestamp)

    # -- sync.group.offsets --

    def sync_group_offsets(self) -> dict[str, dict[tuple[str, int], tuple[int, str | None]]]:
        """Write checkpointed offsets into the target groups that have no members; returns what was written."""
        group_sync = self._group_sync  # read once: close() may drop it meanwhile
        return {} if group_sync is None else group_sync.run()

    # -- lifecycle --

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._store is not None:
            self._store.stop()
        threading.Thread(target=carry_context(self._close), name="checkpoint-task-close", daemon=True).start()

    def close(self) -> None:
        """Drop the admin clients (librdkafka handles) on the task thread, once ``poll`` no longer runs.

        The runtime calls this after ``stop`` also when ``start`` raised half-way (the target admin
        refused its config, say): the FAILED task then holds no client until it is restarted.
        """
        self._source_admin = self._target_admin = None
        self._group_sync = None  # holds the target admin too; a running sync job keeps its own reference

    def _close(self) -> None:
        if self._scheduler is not None:
            self._scheduler.close()
        if self._reader is not None:
            self._reader.stop()
        if self._map_reader is not None:
            self._map_reader.stop()
        metrics, self._metrics = self._metrics, None
        if metrics is not None:
            metrics.close()
