"""Offset-sync emission rules, pinned with Kafka's MirrorSourceTaskTest.testOffsetSync."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror.client.models import TopicPartition
from mirror.source.offset_sync_writer import OffsetSyncWriter, PartitionState

TP = TopicPartition("orders", 0)

# (upstream, downstream, fires) with offset.lag.max=50, each update followed by reset.
GOLDEN = [
    (0, 100, True),  # first
    (2, 102, True),  # upstream skip
    (3, 152, False),  # 152 - 103 = 49
    (4, 153, True),  # 50 >= 50
    (5, 154, False),
    (6, 203, False),
    (7, 204, True),
    (2, 206, True),  # upstream rewind
    (3, 207, False),
    (4, 3, True),  # downstream rewind
]


def test_partition_state_golden_table() -> None:
    state = PartitionState(max_offset_lag=50)
    fired = []
    for upstream, downstream, _ in GOLDEN:
        fired.append(state.update(upstream, downstream))
        state.reset()
    assert fired == [f for _, _, f in GOLDEN]


def test_writer_golden_table_pending_vs_delayed() -> None:
    writer = OffsetSyncWriter(max_offset_lag=50)
    for upstream, downstream, fires in GOLDEN:
        assert writer.update(TP, upstream, downstream) is fires
        taken = writer.take_pending()
        if fires:
            assert [s.as_tuple() for s in taken] == [("orders", 0, upstream, downstream)]
            assert TP not in writer.delayed  # a fired sync replaces the delayed one
        else:
            assert taken == []
            assert writer.delayed[TP].as_tuple() == ("orders", 0, upstream, downstream)


def test_zero_lag_fires_every_record() -> None:
    writer = OffsetSyncWriter(max_offset_lag=0)
    assert all(writer.update(TP, u, u + 10) for u in range(20))


def test_should_sync_is_sticky_until_reset() -> None:
    state = PartitionState(max_offset_lag=100)
    assert state.update(0, 0)
    assert state.update(1, 1)  # not reset: still due
    state.reset()
    assert not state.update(2, 2)


def test_promote_delayed_flushes_the_latest_unfired_sync_per_partition() -> None:
    writer = OffsetSyncWriter(max_offset_lag=100)
    other = TopicPartition("orders", 1)
    writer.update(TP, 0, 0)
    writer.update(other, 0, 0)
    assert len(writer.take_pending()) == 2
    for offset in range(1, 5):
        writer.update(TP, offset, offset)
    writer.update(other, 1, 1)
    assert writer.take_pending() == []
    writer.promote_delayed()
    assert writer.delayed == {}
    assert sorted(s.as_tuple() for s in writer.take_pending()) == [("orders", 0, 4, 4), ("orders", 1, 1, 1)]


def test_delayed_sync_replaces_unsent_pending_one_on_promotion() -> None:
    writer = OffsetSyncWriter(max_offset_lag=100)
    writer.update(TP, 0, 0)  # fires, stays pending (not taken)
    writer.update(TP, 1, 1)  # delayed
    writer.promote_delayed()
    assert [s.as_tuple() for s in writer.take_pending()] == [("orders", 0, 1, 1)]


def test_take_pending_respects_the_in_flight_limit_in_queue_order() -> None:
    writer = OffsetSyncWriter(max_offset_lag=0)
    tps = [TopicPartition("t", p) for p in range(15)]
    for tp in tps:
        writer.update(tp, 0, 0)
    first = writer.take_pending(limit=10)
    assert [s.topic_partition for s in first] == tps[:10]
    assert writer.take_pending(limit=0) == []
    rest = writer.take_pending(limit=10)
    assert [s.topic_partition for s in rest] == tps[10:]


def test_forget_drops_partition_state() -> None:
    writer = OffsetSyncWriter(max_offset_lag=100)
    writer.update(TP, 5, 5)
    writer.forget(TP)
    assert writer.partition_state(TP) is None
    assert writer.pending == {}
    assert writer.update(TP, 6, 6)  # first record again


def test_negative_lag_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"offset\.lag\.max"):
        OffsetSyncWriter(max_offset_lag=-1)


pairs_strategy = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 400)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(pairs_strategy, st.lists(st.integers(1, 20), max_size=8), st.integers(0, 30))
def test_update_run_decides_exactly_like_update_one_by_one(pairs: list[tuple[int, int]], cuts: list[int],
                                                           max_lag: int) -> None:
    """The streaming task feeds acknowledged records as runs: same syncs, same order, same leftovers."""
    one_by_one, runs = OffsetSyncWriter(max_lag), OffsetSyncWriter(max_lag)
    expected: list[tuple[str, int, int, int]] = []
    for upstream, downstream in pairs:
        if one_by_one.update(TP, upstream, downstream):
            expected += [s.as_tuple() for s in one_by_one.take_pending()]
    fired: list[tuple[str, int, int, int]] = []
    position = 0
    for size in [*cuts, len(pairs)]:  # the same pairs, cut into runs of arbitrary sizes
        chunk = pairs[position:position + size]
        position += len(chunk)
        runs.update_run(TP, [u for u, _ in chunk], [d for _, d in chunk],
                        lambda: fired.extend(s.as_tuple() for s in runs.take_pending()))
    assert fired == expected
    assert runs.delayed == one_by_one.delayed
    assert runs.partition_state(TP) == one_by_one.partition_state(TP)


# Runs as the bulk path sees them: (upstream start, downstream start, count), consecutive inside a run,
# with jumps, rewinds and repeats between runs.
ranges_strategy = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 3000), st.integers(1, 120)),
                           max_size=12)


@settings(max_examples=300, deadline=None)
@given(ranges_strategy, st.integers(0, 30), st.booleans())
def test_update_range_decides_exactly_like_update_one_by_one(ranges: list[tuple[int, int, int]],
                                                             max_lag: int, keep_pending: bool) -> None:
    """A contiguous run fed at once fires the same syncs, in the same order, with the same leftovers as
    one update per record; with ``keep_pending`` nothing is taken between runs (the sticky/pending state
    carries over)."""
    one_by_one, ranged = OffsetSyncWriter(max_lag), OffsetSyncWriter(max_lag)
    expected: list[tuple[str, int, int, int]] = []
    fired: list[tuple[str, int, int, int]] = []
    for upstream, downstream, count in ranges:
        for i in range(count):
            if one_by_one.update(TP, upstream + i, downstream + i) and not keep_pending:
                expected += [s.as_tuple() for s in one_by_one.take_pending()]
        ranged.update_range(TP, upstream, downstream, count,
                            (lambda: None) if keep_pending else
                            (lambda: fired.extend(s.as_tuple() for s in ranged.take_pending())))
    assert fired == expected
    assert ranged.pending == one_by_one.pending
    assert ranged.delayed == one_by_one.delayed
    assert ranged.partition_state(TP) == one_by_one.partition_state(TP)


def test_update_range_fires_every_lag_plus_one_records() -> None:
    writer = OffsetSyncWriter(max_offset_lag=100)
    fired: list[int] = []
    writer.update_range(TP, 1000, 0, 450, lambda: fired.extend(s.downstream_offset for s in writer.take_pending()))
    assert fired == [0, 101, 202, 303, 404]
    assert writer.delayed[TP].as_tuple()[2:] == (1449, 449)


# -- the producer side: what the writer decided, sent (fake producer: the broker's answers are scripted) --
def test_a_failed_sync_delivery_frees_its_slot_and_names_the_sync(caplog: pytest.LogCaptureFixture) -> None:
    from confluent_kafka import KafkaError

    from mirror.client.models import OffsetSync
    from mirror.source.offset_sync_writer import OffsetSyncProducer
    from tests.support.fakes import FakeProducer

    fake = FakeProducer()
    producer = OffsetSyncProducer("mm2-offset-syncs.B.internal", {}, OffsetSyncWriter(100),
                                  producer_factory=lambda _config: fake)
    tp = TopicPartition("orders", 3)
    producer.record_range(tp, 10, 0, 1)  # the first record of a partition always fires
    producer.record_range(tp, 11, 1, 150)  # and the lag fires again at downstream 101
    assert producer.in_flight == 2
    sent = [(r.key, r.value, r.partition) for r in fake.delivery.produced]
    expected = [OffsetSync(tp, 10, 0), OffsetSync(tp, 111, 101)]
    assert sent == [(s.key_bytes(), s.value_bytes(), 0) for s in expected]
    fake.delivery.release([0], KafkaError(KafkaError.REQUEST_TIMED_OUT))
    fake.delivery.release([1])
    with caplog.at_level("ERROR"):
        fake.poll(0)
    assert producer.in_flight == 0
    assert [r.getMessage() for r in caplog.records] == [
        f"Failure sending offset sync {expected[0]} to mm2-offset-syncs.B.internal: "
        f"{KafkaError(KafkaError.REQUEST_TIMED_OUT)}"]
