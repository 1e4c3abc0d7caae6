"""MirrorSourceTask honours finished backfills: start at max(stored + 1, backfill end)."""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING

from tests.unit.mirror.test_mirror_tasks import started_task


def test_done_partitions_start_at_the_backfill_end_unless_streaming_is_further() -> None:
    task, consumer, _ = started_task({0: 4, 2: 0}, **{"backfill.done.offsets": "my-topic-0:3,my-topic-1:10"})
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [(0, 5), (1, 10), (2, 1)]
    task.stop()


def test_no_marker_keys_change_nothing() -> None:
    task, consumer, _ = started_task({0: 4})
    assert [(tp.partition, tp.offset) for tp in consumer.assigned] == [(0, 5), (1, OFFSET_BEGINNING),
                                                                        (2, OFFSET_BEGINNING)]
    task.stop()
