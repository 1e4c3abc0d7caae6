"""What to copy: per source partition the range [start, end) and its split into ordered chunks (pure).

``start`` is the MirrorSource connector's stored offset + 1 (where streaming would resume), else the
partition's log start; a previous interrupted run's progress moves it further (see
:meth:`~mirror.backfill_markers.markers.PartitionMarker.resume_from`). ``end`` is the partition's end offset
snapshotted when the job starts (the fetch-response high watermark): records written later are left
to streaming. A start below the log start means retention already deleted records streaming never
copied: the range is *truncated* and reported, and copying begins at the log start.

Chunks of one partition must be written in order, so a partition split by ``max_records_per_task`` is
copied in *waves*: wave i holds chunk i of every partition, and a wave starts when the previous ended.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TopicPartitionT = tuple[str, int]


@dataclass(frozen=True)
class PartitionRange:
    """One source partition's backfill range, ``[start, end)``."""

    topic: str
    partition: int
    start: int
    end: int
    #: Records between the wanted start and the log start that retention deleted (0 if none).
    lost: int = 0

    @property
    def records(self) -> int:
        return max(0, self.end - self.start)

    @property
    def tp(self) -> TopicPartitionT:
        return self.topic, self.partition


def plan_range(topic: str, partition: int, *, stored_offset: int | None, low: int, high: int,
               resume_from: int | None = None) -> PartitionRange:
    """The range of one partition.

    ``stored_offset`` is the connector's last replicated offset (None: never replicated); ``low`` and
    ``high`` the log start and the snapshot end; ``resume_from`` the first offset an interrupted run
    had not copied yet.
    """
    wanted = stored_offset + 1 if stored_offset is not None and stored_offset >= 0 else low
    if resume_from is not None:
        wanted = max(wanted, resume_from)
    lost = max(0, low - wanted)
    start = max(wanted, low)
    return PartitionRange(topic, partition, min(start, max(high, start)), max(high, start), lost)


def plan_ranges(partitions: Iterable[TopicPartitionT], stored: Mapping[TopicPartitionT, int],
                watermarks: Mapping[TopicPartitionT, tuple[int, int]],
                resume: Mapping[TopicPartitionT, int] | None = None) -> list[PartitionRange]:
    """Ranges of all ``partitions`` (sorted by topic, partition); missing watermarks mean empty."""
    resume = resume or {}
    ranges = []
    for tp in sorted(set(partitions)):
        low, high = watermarks.get(tp, (0, 0))
        ranges.append(plan_range(tp[0], tp[1], stored_offset=stored.get(tp), low=low, high=high,
                                 resume_from=resume.get(tp)))
    return ranges


@dataclass(frozen=True)
class Chunk:
    """A contiguous part ``[start, end)`` of a partition range; ``index`` is its place in the partition."""

    topic: str
    partition: int
    start: int
    end: int
    index: int
    #: The end of the whole partition range (the last chunk's ``end``).
    range_end: int


def split(rng: PartitionRange, max_records: int | None) -> list[Chunk]:
    """``rng`` cut into chunks of at most ``max_records`` (one chunk if None or <= 0); none if empty."""
    if rng.records <= 0:
        return []
    size = rng.records if not max_records or max_records <= 0 else max_records
    return [Chunk(rng.topic, rng.partition, s, min(s + size, rng.end), i, rng.end)
            for i, s in enumerate(range(rng.start, rng.end, size))]


def waves(ranges: Iterable[PartitionRange], max_records: int | None) -> list[list[Chunk]]:
    """Chunk i of every partition in wave i: waves run one after another, chunks of a wave in parallel."""
    result: list[list[Chunk]] = []
    for rng in ranges:
        for chunk in split(rng, max_records):
            while len(result) <= chunk.index:
                result.append([])
            result[chunk.index].append(chunk)
    return result
