"""Per-source-partition tracking of records sent but not yet committable (Connect's ``SubmittedRecords``).

Invariant C (commit safety): the offset committed for a source partition is the ``source_offset`` of
the last record of the longest *fully acknowledged prefix* of that partition's records, in the order
the task returned them. An acknowledgement that arrives out of order (a later record acked while an
earlier one is still in flight, e.g. because they went to different target partitions) is remembered
but does not move the committable offset until every earlier record of the same source partition is
acknowledged too. So a crash can only make the task re-send records, never skip one.

Unlike Java, which trims the deques only when offsets are committed, the acknowledged prefix is
trimmed on every acknowledgement: memory then stays proportional to the records actually in flight
(plus those stuck behind an unacknowledged one), which is what :attr:`SubmittedRecords.outstanding`
counts and what the worker caps with ``max.outstanding.records``.

Not thread-safe by design: every call happens on the task thread (delivery reports are served by
``producer.poll()`` calls made on that thread), so the hot path takes no lock.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from connect_runtime.api.records import SourceMap, SourceRecord


def partition_key(partition: SourceMap) -> Hashable:
    """A hashable identity for a source partition map, independent of key order.

    ``frozenset(items)`` is several times cheaper than canonical JSON and covers the usual flat maps
    of str/int values; nested (unhashable) values fall back to sorted JSON.
    """
    try:
        return frozenset(partition.items())
    except TypeError:
        return json.dumps(partition, sort_keys=True, separators=(",", ":"), default=str)


#: ``handler(submitted, error, message)``: what a delivery report of a submitted record triggers.
DeliveryHandler = Callable[["SubmittedRecord", Any, Any], None]


class SubmittedRecord:
    """One record handed to the producer; ``acked`` once the target acknowledged it.

    The object is itself the producer's ``on_delivery`` callback, so sending a record allocates no
    closure: ``__call__`` forwards the report to the handler given to :class:`SubmittedRecords`.
    """

    __slots__ = ("acked", "handler", "queue", "record")

    def __init__(self, record: SourceRecord, queue: _PartitionQueue, handler: DeliveryHandler) -> None:
        self.record = record
        self.queue = queue
        self.handler = handler
        self.acked = False

    def __call__(self, error: Any, message: Any) -> None:
        self.handler(self, error, message)


class _PartitionQueue:
    """Records of one source partition in submission order, and its committable offset."""

    __slots__ = ("committable", "partition", "records")

    def __init__(self, partition: SourceMap) -> None:
        self.partition = partition
        self.records: deque[SubmittedRecord] = deque()
        #: Offset of the last record of the acknowledged prefix not yet taken by a commit.
        self.committable: Mapping[str, Any] | None = None


class SubmittedRecords:
    """All records of one task between ``submit`` and the point where they join a committable prefix."""

    __slots__ = ("_handler", "_last_key", "_last_partition", "_queues", "outstanding", "peak")

    def __init__(self, handler: DeliveryHandler | None = None) -> None:
        self._handler: DeliveryHandler = handler or _ignore
        self._queues: dict[Hashable, _PartitionQueue] = {}
        self._last_partition: SourceMap | None = None
        self._last_key: Hashable = None
        #: Records submitted and not yet trimmed (in flight, or acked behind an unacked one).
        self.outstanding = 0
        #: Highest value ``outstanding`` ever reached (tests assert the cap holds).
        self.peak = 0

    def submit(self, record: SourceRecord) -> SubmittedRecord:
        """Track ``record`` as sent (call just before producing it; :meth:`drop` it if that fails)."""
        partition = record.source_partition
        # Tasks commonly reuse one partition dict per source partition: skip hashing then.
        if partition is self._last_partition:
            key = self._last_key
        else:
            key = partition_key(partition)
            self._last_partition, self._last_key = partition, key
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _PartitionQueue(partition)
        submitted = SubmittedRecord(record, queue, self._handler)
        queue.records.append(submitted)
        self.outstanding += 1
        if self.outstanding > self.peak:
            self.peak = self.outstanding
        return submitted

    def drop(self, submitted: SubmittedRecord) -> None:
        """Forget the most recently submitted record of its partition (the producer refused it)."""
        records = submitted.queue.records
        if records and records[-1] is submitted:
            records.pop()
            self.outstanding -= 1

    def ack(self, submitted: SubmittedRecord) -> None:
        """Mark acknowledged; trims the acknowledged prefix of its partition (Invariant C)."""
        submitted.acked = True
        queue = submitted.queue
        records = queue.records
        if records[0] is not submitted:
            return  # out of order: stays until every earlier record of the partition is acked
        trimmed = 0
        offset = None
        while records and records[0].acked:
            head = records.popleft()
            trimmed += 1
            if head.record.source_offset is not None:
                offset = head.record.source_offset
        self.outstanding -= trimmed
        if offset is not None:
            queue.committable = offset

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
            if not queue.records:
                empty.append(key)
        for key in empty:
            del self._queues[key]
        if empty:
            self._last_partition = None
        return out

    def restore(self, offsets: list[tuple[SourceMap, Mapping[str, Any]]]) -> None:
        """Put back offsets whose commit failed, unless a newer offset became committable meanwhile."""
        for partition, offset in offsets:
            key = partition_key(partition)
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = _PartitionQueue(partition)
            if queue.committable is None:
                queue.committable = offset

    def pending_partitions(self) -> int:
        """Number of source partitions with records still in flight."""
        return sum(1 for q in self._queues.values() if q.records)


def _ignore(submitted: SubmittedRecord, error: Any, message: Any) -> None:
    """Default handler: delivery reports are acknowledged by the caller itself (tests)."""
