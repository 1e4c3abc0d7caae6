"""Per-source-partition tracking of bulk *runs* sent but not yet committable (the bulk twin of
:mod:`~connect_runtime.runtime.task.submitted_records`).

The commit rule is the same, Invariant C: the offset committed for a source partition is that of the
last run of its longest acknowledged prefix of runs, in the order the runs were opened. What differs is
how a run becomes acknowledged. Only its first and last record carry a delivery callback, and every run
of a source partition goes to one target partition of an idempotent producer, which acknowledges that
partition's records in order and, with ``enable.gapless.guarantee``, fails every later record once one
failed. So:

* a successful report of run X's *last* record acknowledges X and every run opened before it;
* a successful report of X's *first* record acknowledges every run opened before X;
* when the producer holds no record any more and no failure is pending, every run is acknowledged
  (this closes a run whose last record carried no callback: it was cut short, see :meth:`cut`);
* a failed report fails the task, unless errors are tolerated: then every record carries a callback
  (failures are reported one by one and skipped) and a run is done once its last record was reported.

A run whose first and last target offsets are both known and span fewer records than it holds is a
gap, reported as a failure (it cannot happen with the producer settings above; this is the check).

Not thread-safe by design: every call happens on the task thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.bulk import EACH, FIRST, LAST, ONLY, BulkRun, RunReport
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap
from connect_runtime.runtime.task.partition_queues import PartitionQueue, PartitionQueues


class _RunQueue(PartitionQueue):
    """The open runs of one source partition in the order they were opened, and its committable offset."""

    __slots__ = ("next_seq", "runs", "target")

    def __init__(self, partition: SourceMap, target: tuple[str, int]) -> None:
        super().__init__(partition)
        self.target = target
        self.runs: deque[BulkRun] = deque()
        self.next_seq = 0

    def empty(self) -> bool:
        return not self.runs


class RunGap(ConnectError):
    """A run's target offsets span fewer records than it holds: some were not written."""


class SubmittedRuns(PartitionQueues[_RunQueue]):
    """All runs of one task between ``open`` and the point where they join a committable prefix."""

    __slots__ = ("outstanding", "peak", "reports")

    def __init__(self) -> None:
        super().__init__()
        #: Delivery reports filed by the runs' callbacks, for :meth:`ack_reports`.
        self.reports: list[RunReport] = []
        #: Records of runs opened and not yet acknowledged.
        self.outstanding = 0
        self.peak = 0

    def open(self, partition: SourceMap, offset: Mapping[str, Any], count: int, target_topic: str,
             target_partition: int, tag: Any) -> BulkRun:
        """Track a run of ``count`` records (call before producing them); ``offset`` is its last record's."""
        known = self._by_identity.get(id(partition))
        queue = known[1] if known is not None and known[0] is partition else self._queue_of(
            partition, (target_topic, target_partition))
        if not queue.runs:
            queue.target = (target_topic, target_partition)  # nothing in flight: any target keeps order
        elif queue.target[1] != target_partition or queue.target[0] != target_topic:
            raise ConnectError(f"runs of source partition {dict(partition)} go to {queue.target}, not to "
                               f"{(target_topic, target_partition)}: acknowledgements would not be in order")
        run = BulkRun(offset, count, tag, queue, queue.next_seq, self.reports)
        queue.next_seq += 1
        queue.runs.append(run)
        self.outstanding += count
        if self.outstanding > self.peak:
            self.peak = self.outstanding
        return run

    def _new_queue(self, partition: SourceMap, target: tuple[str, int]) -> _RunQueue:
        return _RunQueue(partition, target)

    def cut(self, run: BulkRun, produced: int, offset: Mapping[str, Any] | None) -> None:
        """The run ends after its first ``produced`` records (the rest were never produced).

        A cut run's last record carries no callback: it is acknowledged by a later run of its partition
        or once the producer is empty (:meth:`ack_all`). A run cut to nothing is forgotten (it must be
        the last one opened for its partition).
        """
        queue: _RunQueue = run.queue
        self.outstanding -= run.count - produced
        if produced <= 0:
            if queue.runs and queue.runs[-1] is run:
                queue.runs.pop()
            return
        run.count = produced
        if offset is not None:
            run.offset = offset

    def ack_reports(self, reports: list[RunReport], tolerate: bool,
                    acknowledged: list[BulkRun]) -> list[RunReport]:
        """Process delivery reports in one loop; acknowledged runs are appended to ``acknowledged`` in
        order per partition. Returns the failed reports (a gap as a report whose error is a RunGap).
        """
        failed: list[RunReport] = []
        for report in reports:
            run, error, message, kind = report
            if error is not None:
                failed.append(report)
                if tolerate and kind != FIRST and kind != EACH:
                    self._ack_through(run, True, acknowledged, failed)  # every record of the run reported
                continue
            if kind == EACH:
                continue
            queue: _RunQueue = run.queue
            if message.partition() != queue.target[1] or message.topic() != queue.target[0]:
                failed.append((run, ConnectError(f"a run for {queue.target} was written to "
                                                 f"{(message.topic(), message.partition())}"), message, kind))
                continue
            downstream = message.offset()
            if kind == FIRST:
                run.first_downstream = downstream
                self._ack_through(run, False, acknowledged, failed)
            else:
                run.last_downstream = downstream
                if kind == ONLY:
                    run.first_downstream = downstream
                self._ack_through(run, True, acknowledged, failed, tolerate)
        return failed

    def _ack_through(self, run: BulkRun, inclusive: bool, acknowledged: list[BulkRun],
                     failed: list[RunReport], tolerate: bool = True) -> None:
        """Acknowledge the runs of ``run``'s partition opened before it (and ``run`` if ``inclusive``)."""
        queue: _RunQueue = run.queue
        runs = queue.runs
        limit = run.seq if inclusive else run.seq - 1
        last = None
        acked = 0
        while runs and runs[0].seq <= limit:
            head = runs.popleft()
            acked += head.count
            last = head
            acknowledged.append(head)
        if last is None:
            return
        self.outstanding -= acked
        queue.committable = last.offset
        if not tolerate and inclusive and run.first_downstream >= 0 and run is last:
            span = run.last_downstream - run.first_downstream + 1
            if span < run.count:
                failed.append((run, RunGap(
                    f"a run of {run.count} records for {queue.target} was written to offsets "
                    f"{run.first_downstream}..{run.last_downstream}: {run.count - span} records are missing"),
                    None, LAST))

    def ack_all(self, acknowledged: list[BulkRun]) -> None:
        """The producer holds no record and no failure is pending: every open run was written."""
        for queue in self._queues.values():
            if queue.runs:
                self._ack_through(queue.runs[-1], True, acknowledged, [])

    def submitted_offsets(self) -> list[tuple[SourceMap, Mapping[str, Any]]]:
        """Per partition, the offset of its last opened run (else its committable one); see
        :meth:`SubmittedRecords.submitted_offsets`."""
        out: list[tuple[SourceMap, Mapping[str, Any]]] = []
        for queue in self._queues.values():
            offset = queue.runs[-1].offset if queue.runs else queue.committable
            if offset is not None:
                out.append((queue.partition, offset))
        return out
