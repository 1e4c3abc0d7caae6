"""A MirrorSourceTask's lifecycle in the backfill marker topic (docs/backfill.md).

The task records ``started`` (its partitions) when it starts and ``stopped`` (with its consumer's closing
positions) once it is done, so a backfill knows when streaming let go of a partition. None of this
touches the per-record path.
"""

from __future__ import annotations

import logging
import uuid

from confluent_kafka import Consumer

from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import STARTED, STOPPED, TaskEvent

logger = logging.getLogger(__name__)


class BackfillEvents:
    """Writes one task instance's STARTED and STOPPED events; a failed write is only logged."""

    def __init__(self, log: MarkerLog, label: str, partitions: tuple[tuple[str, int], ...]) -> None:
        self._log = log
        self._label = label
        self._partitions = partitions
        self._instance = uuid.uuid4().hex
        self._closing_positions: dict[tuple[str, int], int] = {}

    def started(self) -> None:
        self._report(TaskEvent(STARTED, self._label, self._partitions))

    def note_positions(self, consumer: Consumer) -> None:
        """Remember where the consumer stopped (before it closes): the STOPPED event carries it."""
        self._closing_positions = {(tp.topic, tp.partition): tp.offset
                                   for tp in consumer.position(consumer.assignment())}

    def stopped(self) -> None:
        """Record STOPPED with the closing positions, then release the marker log."""
        positions = tuple(sorted(self._closing_positions.items()))
        self._report(TaskEvent(STOPPED, self._label, self._partitions, positions))
        self._log.close()

    def _report(self, event: TaskEvent) -> None:
        """Record a lifecycle event (bounded; a failure is only logged)."""
        try:
            self._log.write_task(self._instance, event)
            self._log.flush(10.0)
        except Exception as exc:  # a backfill then waits for this task until its timeout
            logger.warning("%s could not record %s in %s: %s", self._label, event.state, self._log.topic, exc)
