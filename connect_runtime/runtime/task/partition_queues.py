"""What :mod:`~connect_runtime.runtime.task.submitted_records` and :mod:`~connect_runtime.runtime.task.submitted_runs`
share: one queue per source partition, found by the partition's identity, and the committable offsets
taken from them for a commit (and put back when it fails).

Why a base: the commit side must behave identically on both paths (the per-record path is the model the
bulk path is property-tested against), so it exists once. The per-record work (submitting, acknowledging)
stays in the subclasses, written for their own queues.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, TypeVar

from connect_runtime.api.records import SourceMap, partition_identity

#: Where nothing was sent yet (a queue made only to hold a restored offset).
NO_TARGET = ("", -1)


class PartitionQueue:
    """One source partition's queue; subclasses hold what is in flight."""

    __slots__ = ("committable", "partition")

    def __init__(self, partition: SourceMap) -> None:
        self.partition = partition
        #: Offset of the last record of the acknowledged prefix not yet taken by a commit.
        self.committable: Mapping[str, Any] | None = None

    def empty(self) -> bool:
        """Nothing of this partition in flight (the queue may be dropped once its offset was taken)."""
        raise NotImplementedError


Q = TypeVar("Q", bound=PartitionQueue)


class PartitionQueues(Generic[Q]):
    """The queues of one task by source partition; subclasses say how a queue is made."""

    __slots__ = ("_by_identity", "_queues")

    #: Bound of the identity cache: a task that builds a new partition map per record fills it quickly.
    _IDENTITY_CACHE_MAX = 4096

    def __init__(self) -> None:
        self._queues: dict[Hashable, Q] = {}
        #: id(partition map) -> (the map, its queue): tasks usually reuse one map per source partition,
        #: so most records find their queue without hashing the map's items. Holding the map keeps its id
        #: from being reused by another object.
        self._by_identity: dict[int, tuple[SourceMap, Q]] = {}

    def _new_queue(self, partition: SourceMap, target: tuple[str, int]) -> Q:
        raise NotImplementedError

    def _queue_of(self, partition: SourceMap, target: tuple[str, int] = NO_TARGET) -> Q:
        key = partition_identity(partition)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = self._new_queue(partition, target)
        if len(self._by_identity) >= self._IDENTITY_CACHE_MAX:
            self._by_identity.clear()
        self._by_identity[id(partition)] = (partition, queue)
        return queue

    def take_committable(self) -> list[tuple[SourceMap, Mapping[str, Any]]]:
        """The committable offset of every partition that advanced since the last call, and forget them.

        Queues left empty are dropped so that a task cycling through many source partitions does not
        accumulate them. A caller whose commit fails hands the result back with :meth:`restore`.
        """
        out: list[tuple[SourceMap, Mapping[str, Any]]] = []
        empty: list[Hashable] = []
        for key, queue in self._queues.items():
            if queue.committable is not None:
                out.append((queue.partition, queue.committable))
                queue.committable = None
            if queue.empty():
                empty.append(key)
        for key in empty:
            del self._queues[key]
        if empty:
            self._by_identity.clear()
        return out

    def restore(self, offsets: list[tuple[SourceMap, Mapping[str, Any]]]) -> None:
        """Put back offsets whose commit failed, unless a newer offset became committable meanwhile."""
        for partition, offset in offsets:
            key = partition_identity(partition)
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = self._new_queue(partition, NO_TARGET)
            if queue.committable is None:
                queue.committable = offset
