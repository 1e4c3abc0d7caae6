"""The exact offset map: which downstream offset holds each replicated upstream record (docs/failover.md).

MM2's offset syncs keep a sparse sample of (upstream, downstream) pairs, so translation rounds a group's
position down to the previous sample and the group replays records after a failover. The map instead
records *runs*: "upstream offsets ``[u, u+n)`` of source partition ``tp`` were written, in order, at
downstream offsets ``[d, d+n)``". A run breaks only where the two stop moving together: an upstream gap
(transaction markers, compaction holes, records the task skipped) or a new task lifetime (records
re-sent after a restart). A dense partition replicated by one task is one run, however long.

Wire format (topic ``mm2-offset-map.<source>.internal`` on the target, one partition, compacted):

* key   ``STRING topic`` (source-side), ``INT32 partition``, ``INT64 downstream start``
* value ``INT16 version = 0``, ``INT64 upstream start``, ``INT64 record count``

Keying by the downstream start makes every run its own key (downstream offsets are unique), so
compaction keeps one record per run: the newest, i.e. the longest, since a growing run is rewritten
with its new length at each flush. Encoding follows Kafka's protocol types like the other MM2 records
(:mod:`mirror.client.models`); readers ignore trailing bytes so later versions can append fields.

Translation rules (:class:`PartitionMap`):

* **Upstream -> downstream** (failover). A group at upstream position ``g`` has processed every record
  ``< g`` and none ``>= g``. Each upstream record's *latest* copy counts (older copies are duplicates
  that a restart re-sent). ``A`` = the lowest latest-copy position of a record ``>= g``; ``B`` = just
  after the latest copy of the highest record ``< g``. The answer is ``A``, unless a downstream position
  in ``[B, A)`` is not in the map (records whose run was never written, e.g. lost in a crash): then the
  first such position, so nothing unknown is skipped. With no record ``>= g`` mapped yet the answer is
  ``B`` (the group is at, or ahead of, what was replicated). ``g`` below the map's first record is
  outside the map: :meth:`PartitionMap.downstream` returns None and callers use MM2's rule.
* **Downstream -> upstream** (failback). A consumer at downstream position ``D`` has processed the
  records at ``< D``: the answer is the lowest mapped upstream record none of whose copies lies below
  ``D`` (all mapped records processed: one past the highest). If position ``D - 1`` is not in the map,
  the answer is at most one past the upstream of the last mapped record below ``D``. ``D`` before the
  map's first downstream position is outside the map (None).

Both are exact for dense partitions, holes and restarts; they are conservative (replay, never skip)
only where the map lost a run.
"""

from __future__ import annotations

import bisect
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from mirror.client.models import MalformedRecordError, TopicPartition, _check_range, _check_string, _Reader
from mirror.client.replication_policy import ReplicationPolicy

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VALUE = struct.Struct(">hqq")
VERSION = 0
_INT64_RANGE = (-(2**63), 2**63 - 1)
_INT32_RANGE = (-(2**31), 2**31 - 1)


def offset_map_topic(policy: ReplicationPolicy, source_alias: str) -> str:
    """``mm2-offset-map.<source>.internal``: named like the offset-syncs topic on the target (same
    separators), so every policy treats it as internal and never replicates it."""
    return policy.offset_syncs_topic(source_alias).replace("mm2-offset-syncs", "mm2-offset-map", 1)


@dataclass(frozen=True)
class OffsetRun:
    """Upstream ``[upstream, upstream+count)`` of ``topic_partition`` is at downstream ``[downstream, ...)``."""

    topic_partition: TopicPartition
    upstream: int
    downstream: int
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic_partition, TopicPartition):
            object.__setattr__(self, "topic_partition", TopicPartition(*self.topic_partition))
        _check_string("topic", self.topic_partition.topic)
        _check_range("partition", self.topic_partition.partition, _INT32_RANGE)
        for name in ("upstream", "downstream", "count"):
            _check_range(name, getattr(self, name), _INT64_RANGE)

    def key_bytes(self) -> bytes:
        topic = self.topic_partition.topic.encode("utf-8")
        return _INT16.pack(len(topic)) + topic + _INT32.pack(self.topic_partition.partition) + _INT64.pack(
            self.downstream)

    def value_bytes(self) -> bytes:
        return _VALUE.pack(VERSION, self.upstream, self.count)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> OffsetRun:
        """Decode an offset-map record. Raises MalformedRecordError (also for a tombstone)."""
        value_reader = _Reader(value, "offset map value")
        value_reader.version()
        upstream = value_reader.int64("upstream")
        count = value_reader.int64("count")
        key_reader = _Reader(key, "offset map key")
        topic = key_reader.string("topic")
        partition = key_reader.int32("partition")
        downstream = key_reader.int64("downstream")
        if count <= 0:
            raise MalformedRecordError(f"offset map run with count {count}")
        return cls(TopicPartition(topic, partition), upstream, downstream, count)

    def __str__(self) -> str:
        return (f"OffsetRun{{topicPartition={self.topic_partition}, upstream={self.upstream}, "
                f"downstream={self.downstream}, count={self.count}}}")


def _subtract(start: int, end: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of ``[start, end)`` outside the sorted disjoint intervals ``covered``."""
    parts = []
    i = max(0, bisect.bisect_right(covered, (start, start)) - 1)
    position = start
    while position < end and i < len(covered):
        low, high = covered[i]
        if high <= position:
            i += 1
            continue
        if low >= end:
            break
        if low > position:
            parts.append((position, low))
        position = max(position, high)
        i += 1
    if position < end:
        parts.append((position, end))
    return parts


def _union(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1]:
            if high > merged[-1][1]:
                merged[-1] = (merged[-1][0], high)
        else:
            merged.append((low, high))
    return merged


class PartitionMap:
    """The runs of one source partition and the two translations (module docstring). Not thread-safe."""

    def __init__(self) -> None:
        #: downstream start -> (upstream start, count); a later record for the same start replaces it
        self._runs: dict[int, tuple[int, int]] = {}
        self._dirty = True
        self._live: list[tuple[int, int, int]] = []  # (upstream start, upstream end, downstream start)
        self._live_ends: list[int] = []
        self._mapped: list[tuple[int, int]] = []  # union of downstream intervals

    def add(self, upstream: int, downstream: int, count: int) -> None:
        self._runs[downstream] = (upstream, count)
        self._dirty = True

    @property
    def runs(self) -> list[tuple[int, int, int]]:
        """(upstream, downstream, count) in downstream order."""
        return [(u, d, n) for d, (u, n) in sorted(self._runs.items())]

    def __len__(self) -> int:
        return len(self._runs)

    def _refresh(self) -> None:
        if not self._dirty:
            return
        covered: list[tuple[int, int]] = []
        live: list[tuple[int, int, int]] = []
        for d0, (u0, n) in sorted(self._runs.items(), reverse=True):  # newest copy first
            for low, high in _subtract(u0, u0 + n, covered):
                live.append((low, high, d0 + low - u0))
            covered = _union([*covered, (u0, u0 + n)])
        live.sort()
        self._live = live
        self._live_ends = [high for _, high, _ in live]
        self._mapped = _union((d0, d0 + n) for d0, (_, n) in self._runs.items())
        self._dirty = False

    @property
    def upstream_start(self) -> int | None:
        """The lowest mapped upstream offset (translation starts here)."""
        self._refresh()
        return self._live[0][0] if self._live else None

    @property
    def upstream_end(self) -> int | None:
        """One past the highest mapped upstream offset: how far replication is known to have come."""
        self._refresh()
        return self._live_ends[-1] if self._live else None

    def _first_unmapped(self, position: int) -> int:
        i = bisect.bisect_right(self._mapped, (position, 2**63)) - 1
        if i >= 0 and self._mapped[i][0] <= position < self._mapped[i][1]:
            return self._mapped[i][1]
        return position

    def downstream(self, upstream: int) -> int | None:
        """The downstream position equivalent to upstream position ``upstream``; None outside the map."""
        self._refresh()
        live = self._live
        if not live or upstream < live[0][0]:
            return None
        i = bisect.bisect_right(self._live_ends, upstream)
        a = None
        if i < len(live):
            low, _, d0 = live[i]
            a = d0 + max(0, upstream - low)
        j = bisect.bisect_left(live, (upstream, -(2**63), -(2**63))) - 1  # last live segment starting < g
        if j < 0:
            return a
        low, high, d0 = live[j]
        b = d0 + (min(high, upstream) - 1 - low) + 1
        unknown = self._first_unmapped(b)
        return unknown if a is None else min(a, unknown)

    def _upstream_at(self, position: int) -> int:
        """The upstream offset of the record at mapped downstream ``position`` (newest run wins)."""
        best = None
        for d0, (u0, n) in self._runs.items():
            if d0 <= position < d0 + n and (best is None or d0 > best[0]):
                best = (d0, u0)
        assert best is not None
        return best[1] + position - best[0]

    def upstream(self, downstream: int) -> int | None:
        """The upstream position equivalent to downstream position ``downstream``; None before the map."""
        self._refresh()
        if not self._runs or downstream < self._mapped[0][0]:
            return None
        processed = _union((u0, u0 + min(n, downstream - d0)) for d0, (u0, n) in self._runs.items()
                           if downstream > d0)
        mapped = _union((low, high) for low, high, _ in self._live)
        answer = None
        for low, high in mapped:
            rest = _subtract(low, high, processed)
            if rest:
                answer = rest[0][0]
                break
        if answer is None:
            answer = mapped[-1][1]
        # Positions the map does not know (a lost run, or records replicated since the last flush) at or
        # after D - 1 hold records that follow, upstream, the known record just before them: a consumer
        # may not have read them, so never go past that record.
        for (_, gap_start), (next_start, _) in zip(self._mapped, [*self._mapped[1:], (2**63, 0)], strict=True):
            if next_start >= downstream:  # the gap [gap_start, next_start) reaches D - 1 or later
                answer = min(answer, self._upstream_at(gap_start - 1) + 1)
        return answer


class OffsetMap:
    """Every partition's runs, fed record by record from the map topic; thread-safe reads and writes."""

    def __init__(self) -> None:
        self._partitions: dict[TopicPartition, PartitionMap] = {}
        self._lock = threading.Lock()
        self.records_read = 0

    def add(self, run: OffsetRun) -> None:
        with self._lock:
            self.records_read += 1
            partition = self._partitions.get(run.topic_partition)
            if partition is None:
                partition = self._partitions[run.topic_partition] = PartitionMap()
            partition.add(run.upstream, run.downstream, run.count)

    def add_record(self, key: bytes | None, value: bytes | None) -> OffsetRun | None:
        """Decode and add one map-topic record; undecodable records (and tombstones) are skipped."""
        try:
            run = OffsetRun.from_record(key, value)
        except MalformedRecordError:
            return None
        self.add(run)
        return run

    def partitions(self) -> list[TopicPartition]:
        with self._lock:
            return list(self._partitions)

    def has(self, tp: tuple[str, int]) -> bool:
        with self._lock:
            return TopicPartition(*tp) in self._partitions

    def downstream(self, tp: tuple[str, int], upstream: int) -> int | None:
        """Upstream position -> downstream position of ``tp`` (source-side name); None outside the map."""
        with self._lock:
            partition = self._partitions.get(TopicPartition(*tp))
            return None if partition is None else partition.downstream(upstream)

    def upstream(self, tp: tuple[str, int], downstream: int) -> int | None:
        """Downstream position -> upstream position of ``tp`` (source-side name); None if unmapped."""
        with self._lock:
            partition = self._partitions.get(TopicPartition(*tp))
            return None if partition is None else partition.upstream(downstream)

    def coverage(self, tp: tuple[str, int]) -> tuple[int, int] | None:
        """``(first, end)`` of the mapped upstream offsets of ``tp``."""
        with self._lock:
            partition = self._partitions.get(TopicPartition(*tp))
            if partition is None or partition.upstream_start is None:
                return None
            return partition.upstream_start, partition.upstream_end or 0

    def runs(self, tp: tuple[str, int]) -> list[tuple[int, int, int]]:
        with self._lock:
            partition = self._partitions.get(TopicPartition(*tp))
            return [] if partition is None else partition.runs
