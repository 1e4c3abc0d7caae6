"""MirrorSourceTask honours finished backfills: start at max(stored + 1, backfill end), read from the marker topic."""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING

from mirror.backfill_markers.markers import (
    DONE,
    STARTED,
    MarkerState,
    PartitionMarker,
    TaskEvent,
    partition_marker_key,
)
from tests.unit.mirror.test_mirror_tasks import started_task


class _MarkerLog:
    """The marker topic as the task sees it: what a backfill wrote, and the events the task writes."""

    topic = "mm2-backfill.src.internal"

    def __init__(self, done: dict[tuple[str, int], int]) -> None:
        self.state = MarkerState()
        for (topic, partition), end in done.items():
            self.state.apply(partition_marker_key(topic, partition), PartitionMarker(DONE, 0, end, end).value())
        self.events: list[TaskEvent] = []

    def write_task(self, instance: str, event: TaskEvent) -> None:
        self.events.append(event)

    def flush(self, timeout_s: float) -> None:
        pass

    def read_to_end(self, timeout_s: float) -> MarkerState:
        return self.state

    def close(self) -> None:
        pass


def test_done_partitions_start_at_the_backfill_end_unless_streaming_is_further() -> None:
    markers = _MarkerLog({("my-topic", 0): 3, ("my-topic", 1): 10})
    task, consumer, _ = started_task({0: 4, 2: 0}, markers=markers)
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [(0, 5), (1, 10), (2, 1)]
    assert [e.state for e in markers.events] == [STARTED]
    task._events.note_positions = lambda consumer: None  # type: ignore[method-assign,union-attr]  # not this test's
    task.stop()


def test_without_a_marker_topic_nothing_changes() -> None:
    task, consumer, _ = started_task({0: 4})
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [(0, 5), (1, OFFSET_BEGINNING),
                                                                        (2, OFFSET_BEGINNING)]
    task.stop()
