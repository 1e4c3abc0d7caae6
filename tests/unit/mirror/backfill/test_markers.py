"""The marker topic's records and what the connector, the task and the command read from them (pure)."""

from __future__ import annotations

from mirror.backfill_markers.markers import (
    BACKFILLING,
    DONE,
    STARTED,
    STOPPED,
    MarkerState,
    PartitionMarker,
    TaskEvent,
    marker_topic,
    partition_marker_key,
    streaming_start,
    task_marker_key,
)


def test_marker_topic_is_excluded_from_replication_like_other_internal_topics() -> None:
    assert marker_topic("A") == "mm2-backfill.A.internal"


def test_partition_markers_round_trip_and_the_latest_wins() -> None:
    state = MarkerState()
    state.apply(partition_marker_key("t-x", 3), PartitionMarker(BACKFILLING, 10, 100, 9, 0).value())
    state.apply(partition_marker_key("t-x", 3), PartitionMarker(BACKFILLING, 10, 100, 59, 50).value())
    state.apply(partition_marker_key("t-x", 4), PartitionMarker(DONE, 0, 7, 6).value())
    assert state.partitions[("t-x", 3)] == PartitionMarker(BACKFILLING, 10, 100, 59, 50)
    assert state.partitions[("t-x", 3)].resume_from() == 60
    assert state.backfilling() == {("t-x", 3)}
    assert state.done_ends() == {("t-x", 4): 7}
    state.apply(partition_marker_key("t-x", 3), None)  # a tombstone forgets the partition
    assert state.backfilling() == frozenset()


def test_keys_are_canonical_and_foreign_records_ignored() -> None:
    assert partition_marker_key("t", 1) == b'{"kind":"partition","partition":1,"topic":"t"}'
    assert task_marker_key("i") == b'{"instance":"i","kind":"task"}'
    state = MarkerState()
    for key, value in [(None, b"{}"), (b"not json", b"{}"), (b"[1]", b"{}"), (b'{"kind":"other"}', b"{}")]:
        state.apply(key, value)
    assert state == MarkerState()


def test_holders_are_running_instances_and_positions_come_from_the_latest_stop() -> None:
    state = MarkerState()
    state.apply(task_marker_key("old"), TaskEvent(STARTED, "MSC-0", (("t", 0), ("t", 1))).value())
    state.apply(task_marker_key("other"), TaskEvent(STARTED, "MSC-1", (("t", 2),)).value())
    assert state.holders([("t", 1), ("t", 5)]) == {("t", 1): ["MSC-0 (old)"]}
    stopped = TaskEvent(STOPPED, "MSC-0", (("t", 0), ("t", 1)), ((("t", 0), 40), (("t", 1), 9)))
    state.apply(task_marker_key("old"), stopped.value())
    assert state.holders([("t", 0), ("t", 1)]) == {}
    assert state.final_positions([("t", 0), ("t", 1), ("t", 2)]) == {("t", 0): 40, ("t", 1): 9}
    # a newer task that holds t-0 again (and stopped with an older view) is the one that counts
    state.apply(task_marker_key("new"), TaskEvent(STOPPED, "MSC-0", (("t", 0),), ((("t", 0), 55),)).value())
    assert state.final_positions([("t", 0)]) == {("t", 0): 55}


def test_the_events_of_tasks_share_one_string_per_topic() -> None:
    """Each task and the connector keep every task event, each listing its partitions: a topic's name is one
    string however many events and partitions name it."""
    state = MarkerState()
    state.apply(task_marker_key("a"), TaskEvent(STARTED, "MSC-0", (("orders", 0), ("orders", 2))).value())
    state.apply(task_marker_key("b"), TaskEvent(STOPPED, "MSC-1", (("orders", 1),), ((("orders", 1), 7),)).value())
    names = [tp[0] for event in state.tasks.values() for tp in event.partitions]
    names += [tp[0] for event in state.tasks.values() for tp, _ in event.positions]
    assert names == ["orders"] * 4
    assert all(name is names[0] for name in names)


def test_streaming_starts_after_stored_but_never_before_a_backfill_end() -> None:
    assert streaming_start(None, None) is None  # auto.offset.reset applies
    assert streaming_start(5, None) == 5
    assert streaming_start(None, 100) == 100
    assert streaming_start(5, 100) == 100
    assert streaming_start(150, 100) == 150
