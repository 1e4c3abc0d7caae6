"""The transformation stage of a source task's per-record path (Connect's ``TransformationChain`` use in
``AbstractWorkerSourceTask.sendRecords``).

Transformations run after ``poll`` and before the record is produced. What Connect does, done here:

* A record a transformation drops (None) is *done*: it is tracked and acknowledged at once, so its
  source offset is committed as soon as every earlier record of its source partition is acknowledged
  (Connect's ``recordDropped``), and a restart does not poll it again. It is not handed to
  ``SourceTask.commit_records`` (it has no target offset; Java calls ``commitRecord(record, null)``,
  which MirrorSourceTask ignores), so an offset sync or offset-map run simply breaks at it.
* A transformation that raises fails the task (``errors.tolerance=none``) or, with
  ``errors.tolerance=all``, the record is skipped: counted, logged as the policy says, and done like a
  dropped one.
* The producer gets the transformed record; the offset tracking and ``commit_records`` get the record
  the task returned (Java's ``preTransformRecord``), whose source partition and offset are the task's.
"""

from __future__ import annotations

from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.transforms import TransformationChain, TransformError
from connect_runtime.runtime.task.error_policy import ErrorPolicy, SkipReporter
from connect_runtime.runtime.task.submitted_records import SubmittedRecords


class TransformStage:
    """One task's chain, applied record by record on the task thread."""

    __slots__ = ("_chain", "_policy", "_skips", "_submitted", "_task", "dropped")

    def __init__(self, chain: TransformationChain, task: object, policy: ErrorPolicy, skips: SkipReporter,
                 submitted: SubmittedRecords) -> None:
        self._chain = chain
        self._task = task
        self._policy = policy
        self._skips = skips
        self._submitted = submitted
        #: Records dropped by a transformation (skipped ones not included).
        self.dropped = 0

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        """The record to produce, or None when it was dropped or skipped (then it is already done)."""
        try:
            transformed = self._chain.apply(record)
        except TransformError as exc:
            if not self._policy.tolerate:
                raise ConnectError(f"{self._task}: {exc}") from exc
            self._skips.skip(exc, record.topic, record.partition, f"{dict(record.source_partition)} "
                             f"{record.source_offset}", record.key, record.value, what="failed to transform")
            transformed = None
        else:
            if transformed is None:
                self.dropped += 1
        if transformed is None:
            submitted = self._submitted
            submitted.ack(submitted.submit(record))
        return transformed

    def close(self) -> None:
        self._chain.close()
