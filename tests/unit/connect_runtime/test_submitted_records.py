"""Per-source-partition acknowledgement tracking: only a fully acknowledged prefix is committable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from connect_runtime.api.records import SourceRecord, partition_identity
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.task.submitted_records import SubmittedRecords
from connect_runtime.runtime.task.worker_source_task import task_producer_config


def rec(partition: int | str, seq: int | None) -> SourceRecord:
    return SourceRecord(topic="t", value=b"v", source_partition={"p": partition},
                        source_offset=None if seq is None else {"seq": seq})


def test_in_order_acks_make_the_last_acked_record_committable() -> None:
    tracker = SubmittedRecords()
    subs = [tracker.submit(rec(0, i)) for i in range(3)]
    tracker.ack(subs[0])
    tracker.ack(subs[1])
    assert tracker.take_committable() == [({"p": 0}, {"seq": 1})]
    assert tracker.outstanding == 1


def test_out_of_order_ack_waits_for_every_earlier_record_of_the_partition() -> None:
    tracker = SubmittedRecords()
    first, second, third = (tracker.submit(rec(0, i)) for i in range(3))
    tracker.ack(third)
    tracker.ack(second)
    assert tracker.take_committable() == []
    assert tracker.outstanding == 3
    tracker.ack(first)
    assert tracker.take_committable() == [({"p": 0}, {"seq": 2})]
    assert tracker.outstanding == 0


def test_partitions_are_tracked_independently() -> None:
    tracker = SubmittedRecords()
    a0 = tracker.submit(rec("a", 0))
    b0 = tracker.submit(rec("b", 0))
    b1 = tracker.submit(rec("b", 1))
    tracker.ack(b1)
    tracker.ack(b0)
    assert tracker.take_committable() == [({"p": "b"}, {"seq": 1})]
    tracker.ack(a0)
    assert tracker.take_committable() == [({"p": "a"}, {"seq": 0})]


def test_each_advance_is_taken_once() -> None:
    tracker = SubmittedRecords()
    tracker.ack(tracker.submit(rec(0, 0)))
    assert tracker.take_committable() == [({"p": 0}, {"seq": 0})]
    assert tracker.take_committable() == []


def test_records_without_offset_neither_commit_nor_block() -> None:
    tracker = SubmittedRecords()
    with_offset = tracker.submit(rec(0, 5))
    without = tracker.submit(rec(0, None))
    tracker.ack(without)
    tracker.ack(with_offset)
    assert tracker.take_committable() == [({"p": 0}, {"seq": 5})]
    assert tracker.outstanding == 0


def test_restore_after_failed_commit_keeps_a_newer_offset() -> None:
    tracker = SubmittedRecords()
    subs = [tracker.submit(rec(0, i)) for i in range(2)]
    tracker.ack(subs[0])
    taken = tracker.take_committable()
    tracker.ack(subs[1])
    tracker.restore(taken)  # the commit of seq 0 failed, but seq 1 is committable now
    assert tracker.take_committable() == [({"p": 0}, {"seq": 1})]

    tracker.restore([({"p": 9}, {"seq": 7})])  # a partition whose queue was already dropped
    assert tracker.take_committable() == [({"p": 9}, {"seq": 7})]


def test_drop_forgets_a_record_the_producer_refused() -> None:
    tracker = SubmittedRecords()
    kept = tracker.submit(rec(0, 0))
    refused = tracker.submit(rec(0, 1))
    tracker.drop(refused)
    assert tracker.outstanding == 1
    tracker.ack(kept)
    assert tracker.take_committable() == [({"p": 0}, {"seq": 0})]


def test_peak_counts_the_most_records_in_flight() -> None:
    tracker = SubmittedRecords()
    subs = [tracker.submit(rec(0, i)) for i in range(4)]
    for sub in subs:
        tracker.ack(sub)
    tracker.submit(rec(0, 4))
    assert (tracker.outstanding, tracker.peak) == (1, 4)


def test_submitted_record_is_the_delivery_callback_and_files_its_report() -> None:
    tracker = SubmittedRecords()
    sub = tracker.submit(rec(0, 0))
    sub("error", "message")
    assert tracker.reports == [(sub, "error", "message")]


def test_ack_reports_acks_successes_in_one_pass_and_returns_failures() -> None:
    tracker = SubmittedRecords()
    subs = [tracker.submit(rec(0, i)) for i in range(4)]
    subs[2]("boom", "m2")  # a failed record blocks every later offset of its partition
    subs[1](None, "m1")
    subs[0](None, "m0")
    subs[3](None, "m3")
    acknowledged: list[tuple[SourceRecord, object]] = []
    failed = tracker.ack_reports(tracker.reports, acknowledged)
    assert failed == [(subs[2], "boom", "m2")]
    assert acknowledged == [(subs[1].record, "m1"), (subs[0].record, "m0"), (subs[3].record, "m3")]
    assert [o for _, o in tracker.take_committable()] == [{"seq": 1}]
    assert tracker.outstanding == 2


def test_a_new_map_per_record_still_finds_its_queue_and_the_identity_cache_stays_bounded() -> None:
    tracker = SubmittedRecords()
    count = SubmittedRecords._IDENTITY_CACHE_MAX + 10
    for i in range(count):
        tracker.ack(tracker.submit(SourceRecord("t", b"v", source_partition={"p": 0}, source_offset={"o": i})))
    assert tracker.pending_partitions() == 0
    assert tracker.take_committable() == [({"p": 0}, {"o": count - 1})]
    assert len(tracker._by_identity) <= SubmittedRecords._IDENTITY_CACHE_MAX


def test_partition_identity_ignores_key_order_and_handles_nested_values() -> None:
    assert partition_identity({"a": 1, "b": 2}) == partition_identity({"b": 2, "a": 1})
    assert partition_identity({"a": [1, 2]}) == partition_identity({"a": [1, 2]})
    assert partition_identity({"a": [1, 2]}) != partition_identity({"a": [2, 1]})


def test_equal_partition_maps_share_one_queue_even_as_distinct_objects() -> None:
    tracker = SubmittedRecords()
    first = tracker.submit(SourceRecord("t", b"v", source_partition={"x": 1, "y": 2}, source_offset={"o": 0}))
    second = tracker.submit(SourceRecord("t", b"v", source_partition={"y": 2, "x": 1},
                                         source_offset={"o": 1}))
    tracker.ack(second)
    assert tracker.take_committable() == []
    tracker.ack(first)
    assert [o for _, o in tracker.take_committable()] == [{"o": 1}]


@given(st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=40), st.randoms())
def test_committable_offset_is_always_the_end_of_the_acknowledged_prefix(partitions: list[int],
                                                                         random: object) -> None:
    tracker = SubmittedRecords()
    subs = [tracker.submit(rec(p, i)) for i, p in enumerate(partitions)]
    order = list(range(len(subs)))
    random.shuffle(order)  # type: ignore[attr-defined]
    acked: set[int] = set()
    committed: dict[int, int] = {}
    for index in order:
        tracker.ack(subs[index])
        acked.add(index)
        for partition, offset in tracker.take_committable():
            committed[partition["p"]] = offset["seq"]
        for p in set(partitions):
            mine = [i for i, q in enumerate(partitions) if q == p]
            prefix = 0
            while prefix < len(mine) and mine[prefix] in acked:
                prefix += 1
            assert committed.get(p) == (mine[prefix - 1] if prefix else None)
    assert tracker.outstanding == 0


def test_producer_config_defaults_to_idempotent_acks_all_with_a_task_client_id() -> None:
    config = task_producer_config({"bootstrap.servers": "b:9092"}, ConnectorTaskId("c", 3))
    assert config["acks"] == "all"
    assert config["enable.idempotence"] == "true"
    assert config["client.id"] == "connector-producer-c-3"
    assert config["message.timeout.ms"] == "0"
    assert config["queue.buffering.max.kbytes"] == "131072"
    assert config["topic.metadata.propagation.max.ms"] == "600000"  # a new topic shown late stalls the task
    assert "max.in.flight.requests.per.connection" not in config
    mine = task_producer_config({"topic.metadata.propagation.max.ms": "5000"}, ConnectorTaskId("c", 3))
    assert mine["topic.metadata.propagation.max.ms"] == "5000"


def test_weaker_acks_turn_idempotence_off_and_keep_order_with_one_request_in_flight() -> None:
    config = task_producer_config({"acks": "1"}, ConnectorTaskId("c", 0))
    assert config["enable.idempotence"] == "false"
    assert config["max.in.flight.requests.per.connection"] == "1"


def test_user_producer_settings_win() -> None:
    config = task_producer_config({"enable.idempotence": "false", "max.in.flight": "3", "linger.ms": "50",
                                   "client.id": "mine"}, ConnectorTaskId("c", 0))
    keys = ("enable.idempotence", "max.in.flight", "linger.ms", "client.id")
    assert [config[k] for k in keys] == ["false", "3", "50", "mine"]
    assert "max.in.flight.requests.per.connection" not in config
