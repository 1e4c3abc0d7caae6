"""The per-partition state a MirrorSourceTask's hot loops look up once per record (or run)."""

from __future__ import annotations

from typing import Any

from mirror.client.models import TopicPartition
from mirror.metrics import PartitionStats


class SourcePartition:
    """What the per-record loops need of one source partition, looked up once per record."""

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
