"""Consumed source records turned into the SourceRecords written to their remote topics.

The per-record path's hot loop: it runs once per replicated record, so it calls nothing per record but
the constructors (the metric update of :meth:`mirror.metrics.PartitionStats.polled` is written out
here). Kept apart from :mod:`mirror.source.task`, which owns the consumer and the task's lifecycle: this
module only converts and counts, with the per-partition state handed in.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Message

from connect_runtime.api.records import SourceRecord
from mirror.connect_offset_keys import OFFSET_KEY
from mirror.metrics import LATENCY_BOUNDS_MS
from mirror.source.partition_state import SourcePartition

logger = logging.getLogger(__name__)


def convert_consumed(messages: list[Message], by_source: dict[tuple[str, int], SourcePartition],
                     new_state: Callable[[str, int], SourcePartition],
                     consumed_jump: Callable[[SourcePartition, int], None], now: int,
                     label: str) -> list[SourceRecord]:
    """Each consumed message (errors logged and skipped) as its SourceRecord, counted in the source
    metrics. ``by_source`` holds the partitions' states, ``new_state`` creates a missing one, and
    ``consumed_jump`` hears of an offset that is not the one expected (lost records, or a benign gap).
    """
    records: list[SourceRecord] = []
    append = records.append
    bounds = LATENCY_BOUNDS_MS
    for message in messages:
        if message.error() is not None:
            logger.warning("%s consumer error on %s-%s: %s", label, message.topic(),
                           message.partition(), message.error())
            continue
        state = by_source.get((message.topic(), message.partition()))  # type: ignore[arg-type]
        if state is None:
            state = new_state(message.topic() or "", message.partition() or 0)
        offset: int = message.offset()  # type: ignore[assignment]
        if offset != state.next_offset:
            consumed_jump(state, offset)
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
