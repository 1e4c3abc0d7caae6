"""``mirror backfill``: plan, claim, copy with Spark, hand over (the orchestration on the driver).

Topic selection and remote-topic creation are the source connector's own
(:class:`~mirror.source.topic_sync.TopicSync` with the flow's filter and replication policy); ``--topics``
only narrows that selection. See :mod:`mirror.backfill.handover` for the order of the durable steps and
docs/backfill.md for the whole mechanism.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.clients.factory import translate
from connect_runtime.clients.log_reader import snapshot_watermarks
from mirror.backfill.copier import ChunkResult, ChunkSpec
from mirror.backfill.handover import (
    assume_stopped,
    final_stored_offsets,
    hand_over,
    mark_backfilling,
    open_offset_store,
    stored_offsets,
    wait_released,
)
from mirror.backfill.plan import PartitionRange, plan_ranges, waves
from mirror.backfill.progress import ProgressDisplay, Tracked
from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import BACKFILLING, TopicPartitionT, marker_topic
from mirror.client.replication_policy import policy_from_config
from mirror.config.source import MirrorSourceConfig
from mirror.filters import load_config_property_filter, load_topic_filter
from mirror.source.topic_sync import TopicSync

logger = logging.getLogger(__name__)

#: How long a stopped task's final offset commit may take to reach the position it reported.
FINAL_COMMIT_WAIT_S = 15.0


@dataclass
class BackfillOptions:
    source: str
    target: str
    topics: str | None = None
    master: str = "local[*]"
    max_records_per_task: int | None = None
    batch_records: int = 20_000
    handover_timeout_s: float = 120.0
    assume_stopped: bool = False
    progress: bool = True
    verbose: bool = False
    spark_conf: dict[str, str] = field(default_factory=dict)


@dataclass
class BackfillSummary:
    ranges: list[PartitionRange]
    results: list[ChunkResult]
    seconds: float
    truncated: list[PartitionRange]
    #: The copy phase alone (the Spark job, after the context started).
    copy_seconds: float = 0.0

    @property
    def copied(self) -> int:
        return sum(r.copied for r in self.results)

    @property
    def planned(self) -> int:
        return sum(r.records for r in self.ranges)

    def lines(self) -> list[str]:
        rate = self.copied / self.seconds if self.seconds > 0 else 0.0
        out = [f"backfill: {self.copied:,} records copied ({self.planned:,} planned) in "
               f"{len(self.ranges)} partitions, {self.seconds:.1f}s, {rate:,.0f} records/s"]
        per_topic: dict[str, int] = {}
        for result in self.results:
            per_topic[result.topic] = per_topic.get(result.topic, 0) + result.copied
        out += [f"  {topic}: {count:,}" for topic, count in sorted(per_topic.items())]
        for rng in self.truncated:
            out.append(f"  WARNING {rng.topic}-{rng.partition}: {rng.lost:,} records were deleted by retention "
                       f"before they were replicated; copied from the log start {rng.start}")
        return out


class _NarrowedFilter:
    """The flow's topic filter, further restricted to ``--topics``."""

    def __init__(self, base: Any, pattern: str | None) -> None:
        self._base = base
        self._pattern = re.compile(pattern) if pattern else None

    def should_replicate_topic(self, topic: str) -> bool:
        return bool(self._base.should_replicate_topic(topic)) and (
            self._pattern is None or self._pattern.fullmatch(topic) is not None)


class Flow:
    """The clients and names of one ``source->target`` flow.

    ``connector_props`` is the flow's MirrorSourceConnector config and ``worker_props`` its Connect worker
    config, both as the driver derives them (``MirrorMakerConfig.connector_base_config`` /
    ``worker_config``, providers resolved): the backfill uses the same clients, policy and topics.
    """

    def __init__(self, connector_props: dict[str, str], worker_props: dict[str, str]) -> None:
        props = connector_props
        self.cfg = cfg = MirrorSourceConfig(props)
        self.source, self.target = cfg.source_alias, cfg.target_alias
        self.connector = props.get("name", "MirrorSourceConnector")
        self.policy = policy_from_config(cfg.replication_policy_config())
        self.source_consumer = translate(cfg.source_consumer_config(), "consumer")
        self.target_consumer = translate(cfg.target_consumer_config("backfill-marker-consumer"), "consumer")
        self.target_producer = translate(cfg.target_producer_config("backfill-producer"), "producer")
        self.source_admin_config = translate(cfg.source_admin_config(), "admin")
        self.target_admin_config = translate(cfg.target_admin_config(), "admin")
        worker = worker_props
        self.offsets_topic = worker.get("offset.storage.topic", f"mm2-offsets.{self.source}.internal")
        self.offsets_rf = int(worker.get("offset.storage.replication.factor", "3"))
        self.marker_topic = marker_topic(self.source)
        self.offset_syncs_topic: str | None = None
        if cfg.emit_offset_syncs_enabled:
            other = self.target if cfg.offset_syncs_topic_location == "source" else self.source
            self.offset_syncs_topic = self.policy.offset_syncs_topic(other)
        self.offset_syncs_producer = translate(cfg.offset_syncs_producer_config(), "producer")

    def remote(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.source, topic)

    def admin(self, side: str) -> TopicAdmin:
        timeout_s = self.cfg.admin_timeout_ms / 1000.0
        return TopicAdmin(self.source_admin_config if side == "source" else self.target_admin_config,
                          timeout_s=timeout_s)

    def marker_log(self) -> MarkerLog:
        return MarkerLog(self.marker_topic, self.target_consumer, self.target_producer)

    def select_and_create_topics(self, pattern: str | None) -> list[TopicPartitionT]:
        """Source partitions to backfill; missing remote topics are created as streaming would."""
        cfg = self.cfg
        source_admin, target_admin = self.admin("source"), self.admin("target")
        sync = TopicSync(self.source, self.target, self.policy,
                         _NarrowedFilter(load_topic_filter(cfg.originals()), pattern),
                         load_config_property_filter(cfg.originals()), source_admin, target_admin,
                         replication_factor=cfg.replication_factor,
                         heartbeats_replication_enabled=cfg.heartbeats_replication_enabled)
        sync.load_topic_partitions()
        sync.compute_and_create_topic_partitions()
        if self.offset_syncs_topic is not None:
            location = self.admin("source") if cfg.offset_syncs_topic_location == "source" else target_admin
            location.create_topic(self.offset_syncs_topic, 1, cfg.offset_syncs_topic_replication_factor,
                                  compacted=True)
        target_admin.create_topic(self.marker_topic, 1, cfg.replication_factor, compacted=True)
        return list(sync.known_source_topic_partitions)

    def spec(self, chunk_topic: str, partition: int, start: int, end: int, rng: PartitionRange,
             batch_records: int) -> ChunkSpec:
        return ChunkSpec(
            topic=chunk_topic, partition=partition,
            remote_topic=self.policy.format_remote_topic(self.source, chunk_topic),
            start=start, end=end, range_start=rng.start, range_end=rng.end,
            source_consumer_config=dict(self.source_consumer),
            target_producer_config=dict(self.target_producer),
            target_consumer_config=dict(self.target_consumer), marker_topic=self.marker_topic,
            batch_records=batch_records, offset_syncs_topic=self.offset_syncs_topic,
            offset_syncs_producer_config=dict(self.offset_syncs_producer), offset_lag_max=self.cfg.offset_lag_max)


def run_backfill(connector_props: dict[str, str], worker_props: dict[str, str], options: BackfillOptions,
                 run_job: Callable[[list[list[ChunkSpec]]], list[ChunkResult]] | None = None) -> BackfillSummary:
    """The whole command (see :class:`Flow` for the two configs); ``run_job`` replaces the Spark job."""
    began = time.monotonic()
    spark = None
    if run_job is None:
        from mirror.backfill.job import BackgroundSpark, run_waves

        spark = BackgroundSpark(options.master, verbose=options.verbose, extra_conf=options.spark_conf)
        started = spark

        def run_job(plan: list[list[ChunkSpec]]) -> list[ChunkResult]:
            return run_waves(started.context(), plan)
    try:
        return _run(connector_props, worker_props, options, run_job, began)
    finally:
        if spark is not None:
            spark.close()


def _run(connector_props: dict[str, str], worker_props: dict[str, str], options: BackfillOptions,
         run_job: Callable[[list[list[ChunkSpec]]], list[ChunkResult]], began: float) -> BackfillSummary:
    flow = Flow(connector_props, worker_props)
    src = flow.source
    partitions = flow.select_and_create_topics(options.topics)
    logger.info("%s->%s: %d source partitions selected", flow.source, flow.target, len(partitions))
    markers = flow.marker_log()
    state = markers.read_to_end()
    store = open_offset_store(flow.offsets_topic, flow.target_producer, flow.target_consumer,
                              flow.target_admin_config, flow.offsets_rf)
    try:
        # 1. snapshot the ends; an interrupted run's partitions keep their range (and progress)
        resumed = {tp: m for tp, m in state.partitions.items() if m.state == BACKFILLING and tp in set(partitions)}
        watermarks = snapshot_watermarks(flow.source_consumer, partitions)
        early = stored_offsets(store, flow.connector, src, partitions)
        claim: dict[TopicPartitionT, tuple[int, int, int, int]] = {}
        for tp in partitions:
            low, high = watermarks.get(tp, (0, 0))
            if tp in resumed:
                m = resumed[tp]
                claim[tp] = (m.start, m.end, m.progress, m.next)
                watermarks[tp] = (low, m.end)
            elif early.get(tp, low - 1) + 1 < high:  # streaming has not copied up to the snapshot yet
                claim[tp] = (low, high, low - 1, -1)
        logger.info("claiming %d of %d partitions (watermarks %s, stored before the claim %s)", len(claim),
                    len(partitions), _short(watermarks), _short(early))
        # 2. claim, wait until streaming let go, then the stored offsets are final
        mark_backfilling(markers, claim)
        if options.assume_stopped:
            fixed = assume_stopped(markers, claim)
            if fixed:
                logger.warning("recorded %d task instances as stopped: %s", len(fixed), ", ".join(fixed))
        wait_released(markers, claim, options.handover_timeout_s)
        positions = markers.state.final_positions(claim)
        stored = final_stored_offsets(store, flow.connector, src, claim, positions,
                                      min(FINAL_COMMIT_WAIT_S, options.handover_timeout_s))
        resume = {tp: m.resume_from() for tp, m in resumed.items()}
        ranges = plan_ranges(claim, stored, watermarks, resume)
        truncated = [r for r in ranges if r.lost > 0]
        for rng in truncated:
            logger.warning("%s-%d: %d records below the log start were deleted by retention before they were "
                           "replicated; copying from %d", rng.topic, rng.partition, rng.lost, rng.start)
        # the remote ends are final too now: the backfill is the only writer of these remote partitions
        remote_ends = snapshot_watermarks(flow.target_consumer, [(flow.remote(r.topic), r.partition)
                                                                 for r in ranges])
        final_claim = {}
        for r in ranges:
            old = resumed.get(r.tp)
            if old is not None and old.end == r.end and old.next >= 0:
                final_claim[r.tp] = (old.start, r.end, old.progress, old.next)
            else:
                final_claim[r.tp] = (r.start, r.end, r.start - 1, remote_ends[(flow.remote(r.topic), r.partition)][1])
        mark_backfilling(markers, final_claim)
        logger.info("streaming released %d partitions; copying %d records", len(final_claim),
                    sum(r.records for r in ranges))
        # 3. copy
        plan = [[flow.spec(c.topic, c.partition, c.start, c.end, _range_of(ranges, c.topic, c.partition),
                           options.batch_records) for c in wave]
                for wave in waves(ranges, options.max_records_per_task)]
        tracked = {r.tp: Tracked(r.start, r.end) for r in ranges}
        with ProgressDisplay(flow.marker_log(), tracked, enabled=options.progress):
            copy_began = time.monotonic()
            results = run_job(plan) if plan else []
            copy_seconds = time.monotonic() - copy_began
        logger.info("copied %d records in %d Spark tasks", sum(r.copied for r in results), len(results))
        # 4. hand over every planned partition (also the empty ranges: they were claimed)
        hand_over(store, markers, flow.connector, src, {r.tp: (r.start, r.end) for r in ranges})
    finally:
        store.stop()
        markers.close()
    return BackfillSummary(ranges, results, time.monotonic() - began, truncated, copy_seconds)


def _short(values: dict[TopicPartitionT, Any], limit: int = 8) -> str:
    items = sorted(values.items())
    shown = ", ".join(f"{t}-{p}: {v}" for (t, p), v in items[:limit])
    return "{" + shown + (", ..." if len(items) > limit else "") + "}"


def _range_of(ranges: list[PartitionRange], topic: str, partition: int) -> PartitionRange:
    return next(r for r in ranges if r.topic == topic and r.partition == partition)
