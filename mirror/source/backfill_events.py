"""A MirrorSourceTask's lifecycle in the backfill marker topic (docs/backfill.md).

The task records ``started`` (its partitions) when it starts and ``stopped`` (with its consumer's closing
positions) once it is done, so a backfill knows when streaming let go of a partition. None of this
touches the per-record path.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer

from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import STARTED, STOPPED, TaskEvent, TopicPartitionT

logger = logging.getLogger(__name__)

#: Reading the marker topic at task start: it is small (one record per key and progress marker).
_READ_TIMEOUT_S = 10.0


class BackfillEvents:
    """Writes one task instance's STARTED and STOPPED events; a failed write is only logged."""

    def __init__(self, log: MarkerLog, label: str, partitions: tuple[tuple[str, int], ...]) -> None:
        self._log = log
        self._label = label
        self._partitions = partitions
        self._instance = uuid.uuid4().hex
        self._closing_positions: dict[tuple[str, int], int] = {}
        self._done_ends: dict[TopicPartitionT, int] = {}

    def started(self) -> tuple[TopicPartitionT, ...]:
        """Record STARTED, then leave out the partitions a backfill has claimed: returns those to copy.

        The task's config may predate a claim (the connector computed it before the backfill wrote
        ``backfilling``). Both sides write first and read second on this one-partition log: the
        backfill writes its claim, then waits while a task's latest event is STARTED with a claimed
        partition; the task writes STARTED, then reads the log to its end. Whichever record comes
        first, one side sees the other: either the backfill waits for this task's STOPPED, or this
        task sees the claim and never copies those partitions (STARTED is written again without them,
        so a backfill still waiting is released). Reading failed: every partition is kept (logged);
        the backfill waits for STOPPED if it saw STARTED.
        """
        self._report(TaskEvent(STARTED, self._label, self._partitions))
        try:
            state = self._log.read_to_end(_READ_TIMEOUT_S)
        except Exception as exc:  # keep copying: a backfill that saw STARTED waits for STOPPED
            logger.warning("%s could not read %s for backfill claims: %s", self._label, self._log.topic, exc)
            return self._partitions
        claimed = state.backfilling()
        self._done_ends = state.done_ends()
        mine = [tp for tp in self._partitions if tp in claimed]
        if mine:
            self._partitions = tuple(tp for tp in self._partitions if tp not in claimed)
            logger.info("%s leaves %d partitions to a backfill that claimed them after this task's config "
                        "was written: %s", self._label, len(mine), ", ".join(f"{t}-{p}" for t, p in mine[:8]))
            self._report(TaskEvent(STARTED, self._label, self._partitions))
        return self._partitions

    def done_ends(self) -> dict[TopicPartitionT, int]:
        """After :meth:`started`: the partitions a backfill handed back, with the first offset streaming copies."""
        return dict(self._done_ends)

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


def open_marker_log(topic: str, consumer_config: Mapping[str, Any],
                    producer_config: Mapping[str, Any]) -> MarkerLog | None:
    """The flow's marker topic if it exists (a source connector of ours creates it), else None: a flow only Java
    ran has none, and a task must not create it (a producer would, with the broker's defaults). A topic that
    cannot be looked up counts as missing (logged): the task copies every partition it was given."""
    log = MarkerLog(topic, consumer_config, producer_config)
    try:
        if log.exists(_READ_TIMEOUT_S):
            return log
    except Exception as exc:
        logger.warning("Could not look up the backfill marker topic %s: %s", topic, exc)
    return None
