"""The shape both copy paths of a source task share, so that the task's loop has one path to drive.

:class:`~connect_runtime.runtime.task.worker_source_task.WorkerSourceTask` owns the loop around a step (pause,
the outstanding cap, offset commits, shutdown); a :class:`SourceLoop` owns what a step does: the
per-record path (:class:`~connect_runtime.runtime.task.record_source_loop.RecordLoop`) or the bulk path
(:class:`~connect_runtime.runtime.task.bulk_source_loop.BulkLoop`). Both run on the task thread only.

Acknowledgements reach the task (``commit_records`` / ``runs_acknowledged``) as they come, or, for a loop
that holds them (exactly-once: only after their transaction committed), at :meth:`SourceLoop.release`.
"""

from __future__ import annotations

from typing import Protocol

from confluent_kafka import Producer

from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.submitted_runs import SubmittedRuns


class SourceLoop(Protocol):
    """One source task's copy path, driven by WorkerSourceTask on the task thread."""

    #: The first error that fails the task (a refused record, a failed delivery); the task raises it.
    failure: BaseException | None
    #: Set once the producer was purged at close: failed reports after that are not failures.
    closing: bool
    #: Records acknowledged since the task last counted them (the task resets it).
    written: int

    @property
    def tracking(self) -> SubmittedRecords | SubmittedRuns:
        """What was produced and not yet committed: the offset committer's input."""
        ...

    @property
    def holds_acknowledgements(self) -> bool:
        """Whether acknowledgements wait for :meth:`release` (always False for a loop that does not hold)."""
        ...

    def step(self, producer: Producer) -> None:
        """Poll the task once, produce what it returned, serve the delivery reports."""

    def serve(self, producer: Producer, timeout_s: float) -> None:
        """``producer.poll``, then acknowledge what it delivered."""

    def release(self) -> None:
        """The held acknowledgements committed: tell the task now."""

    def close(self) -> None:
        """Release what the loop holds (the transformations), after the producer closed."""
