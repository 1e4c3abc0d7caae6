"""What the target acknowledged, fed to the offset syncs, the exact offset map and the source metrics.

Once the target acknowledged a record, its (upstream, downstream) offset pair is known: the offset-sync
writer learns it, the offset map records it, and the partition's latency metrics count it; an
offset that goes back on the remote partition is a loss (:mod:`mirror.source.loss_detector`). These
are the acknowledgement side's hot loops, per record (:func:`feed_acknowledged`) and per bulk run
(:func:`feed_run`); kept apart from :mod:`mirror.source.task`, which consumes and owns the lifecycle of
the writers it hands in here.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable

from connect_runtime.api.records import Acknowledged, RecordMetadata, SourceRecord, metadata_of
from mirror.connect_offset_keys import OFFSET_KEY
from mirror.metrics import LATENCY_BOUNDS_MS
from mirror.source.loss_detector import LossDetector
from mirror.source.offset_map_writer import OffsetMapWriter
from mirror.source.offset_sync_producer import OffsetSyncProducer
from mirror.source.partition_state import SourcePartition

logger = logging.getLogger(__name__)


def feed_acknowledged(acknowledged: Acknowledged, by_map: dict[int, SourcePartition], now: int,
                      loss: LossDetector, offset_syncs: OffsetSyncProducer | None,
                      offset_map: OffsetMapWriter | None,
                      one_record: Callable[[SourceRecord, RecordMetadata | None], None]) -> None:
    """Count each acknowledged record in the metrics and feed its pair to the writers, in one loop (it runs
    once per record); a record that is not one of ours (``by_map`` finds its partition by the identity of
    its source partition map) goes to ``one_record``, the general path.

    The (upstream, downstream) pairs are gathered per source partition and handed to the offset-sync
    writer as runs, which decides exactly as it would one record at a time (every sync that fires is
    sent in order).
    """
    bounds = LATENCY_BOUNDS_MS
    syncing = offset_syncs is not None or offset_map is not None
    runs: dict[int, tuple[SourcePartition, list[int], list[int]]] = {}
    for record, delivered in acknowledged:
        state = by_map.get(id(record.source_partition))
        downstream = delivered.offset()
        if state is None or state.source_map is not record.source_partition or downstream is None:
            one_record(record, metadata_of(delivered))  # not one of ours: the general path
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


def feed_run(state: SourcePartition, upstream_first: int, downstream_first: int, downstream_last: int,
             count: int, offset_syncs: OffsetSyncProducer | None, offset_map: OffsetMapWriter | None) -> None:
    """``count`` records of one partition from source offset ``upstream_first`` landed from target offset
    ``downstream_first`` (-1: not reported).

    When the target offsets are known to be contiguous (first and last reported, spanning ``count``)
    every record's pair is implied and the run is fed whole; otherwise only the pairs that were
    reported are (a run acknowledged by a later one's report, or another writer interleaved).
    """
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
