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
counts and what the worker caps with its ``max_outstanding_records`` argument.

Not thread-safe by design: every call happens on the task thread (delivery reports are served by
``producer.poll()`` calls made on that thread), so the hot path takes no lock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.records import SourceMap, SourceRecord
from connect_runtime.runtime.task.partition_queues import PartitionQueue, PartitionQueues

#: A delivery report as the producer gave it: ``(submitted record, error or None, message)``.
Report = tuple["SubmittedRecord", Any, Any]


class SubmittedRecord:
    """One record handed to the producer; ``acked`` once the target acknowledged it.

    The object is itself the producer's ``on_delivery`` callback, so sending a record allocates no
    closure, and the callback only files the report: librdkafka calls it once per record, so it must be
    one Python frame; the reports are then processed together by :meth:`SubmittedRecords.ack_reports`.
    """

    __slots__ = ("acked", "queue", "record", "reports")

    def __init__(self, record: SourceRecord, queue: _PartitionQueue, reports: list[Report]) -> None:
        self.record = record
        self.queue = queue
        self.reports = reports
        self.acked = False

    def __call__(self, error: Any, message: Any) -> None:
        self.reports.append((self, error, message))


class _PartitionQueue(PartitionQueue):
    """Records of one source partition in submission order, and its committable offset."""

    __slots__ = ("records",)

    def __init__(self, partition: SourceMap) -> None:
        super().__init__(partition)
        self.records: deque[SubmittedRecord] = deque()

    def empty(self) -> bool:
        return not self.records


class SubmittedRecords(PartitionQueues[_PartitionQueue]):
    """All records of one task between ``submit`` and the point where they join a committable prefix."""

    __slots__ = ("outstanding", "peak", "reports")

    def __init__(self) -> None:
        super().__init__()
        #: Delivery reports filed by the producer's callbacks, for :meth:`ack_reports`.
        self.reports: list[Report] = []
        #: Records submitted and not yet trimmed (in flight, or acked behind an unacked one).
        self.outstanding = 0
        #: Highest value ``outstanding`` ever reached (tests assert the cap holds).
        self.peak = 0

    def submit(self, record: SourceRecord) -> SubmittedRecord:
        """Track ``record`` as sent (call just before producing it; :meth:`drop` it if that fails)."""
        partition = record.source_partition
        known = self._by_identity.get(id(partition))
        queue = known[1] if known is not None and known[0] is partition else self._queue_of(partition)
        submitted = SubmittedRecord(record, queue, self.reports)
        queue.records.append(submitted)
        self.outstanding += 1
        if self.outstanding > self.peak:
            self.peak = self.outstanding
        return submitted

    def _new_queue(self, partition: SourceMap, target: tuple[str, int]) -> _PartitionQueue:
        return _PartitionQueue(partition)

    def drop(self, submitted: SubmittedRecord) -> None:
        """Forget the most recently submitted record of its partition (the producer refused it)."""
        records = submitted.queue.records
        if records and records[-1] is submitted:
            records.pop()
            self.outstanding -= 1

    def ack(self, submitted: SubmittedRecord) -> None:
        """Mark acknowledged; trims the acknowledged prefix of its partition (Invariant C)."""
        self.ack_reports([(submitted, None, None)])

    def ack_reports(self, reports: list[Report],
                    acknowledged: list[tuple[SourceRecord, Any]] | None = None) -> list[Report]:
        """Process delivery reports: :meth:`ack` every success, in one loop; returns the failed reports.

        With ``acknowledged`` the acknowledged records are appended to it with their delivery reports, in
        delivery order (for ``SourceTask.commit_records``). A failed record stays tracked unacknowledged,
        so nothing after it in its source partition can be committed.
        """
        failed: list[Report] = []
        trimmed = 0
        for report in reports:
            submitted, error, message = report
            if error is not None:
                failed.append(report)
                continue
            submitted.acked = True
            if acknowledged is not None:
                acknowledged.append((submitted.record, message))
            queue = submitted.queue
            records = queue.records
            if records[0] is not submitted:
                continue  # out of order: stays until every earlier record of the partition is acked
            offset = None
            while records and records[0].acked:
                head = records.popleft()
                trimmed += 1
                if head.record.source_offset is not None:
                    offset = head.record.source_offset
            if offset is not None:
                queue.committable = offset
        self.outstanding -= trimmed
        return failed

    def pending_partitions(self) -> int:
        """Number of source partitions with records still in flight."""
        return sum(1 for q in self._queues.values() if q.records)


    def submitted_offsets(self) -> list[tuple[SourceMap, Mapping[str, Any]]]:
        """Per partition, the offset of its last submitted record (else its committable one): what is
        committable once every record in flight is acknowledged. An exactly-once task writes these into
        the transaction that holds those records, which commits all of them or none."""
        out: list[tuple[SourceMap, Mapping[str, Any]]] = []
        for queue in self._queues.values():
            offset = next((s.record.source_offset for s in reversed(queue.records)
                           if s.record.source_offset is not None), None) or queue.committable
            if offset is not None:
                out.append((queue.partition, offset))
        return out
