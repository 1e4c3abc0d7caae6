"""The exact offset map: wire format and both translations, by example and by simulated replication."""

from __future__ import annotations

import random

import pytest

from mirror.client.models import MalformedRecordError, TopicPartition
from mirror.client.offset_map import OffsetMap, OffsetRun, PartitionMap, offset_map_topic
from mirror.client.replication_policy import DefaultReplicationPolicy
from mirror.source.offset_map_writer import OffsetMapRuns


def test_record_golden_bytes_and_round_trip() -> None:
    run = OffsetRun(TopicPartition("orders", 3), 1234, 1200, 50)
    assert run.key_bytes().hex() == "00066f72646572730000000300000000000004b0"
    assert run.value_bytes().hex() == "0000" "00000000000004d2" "0000000000000032"
    assert OffsetRun.from_record(run.key_bytes(), run.value_bytes()) == run
    assert OffsetRun.from_record(run.key_bytes(), run.value_bytes() + b"later-field") == run
    with pytest.raises(MalformedRecordError):
        OffsetRun.from_record(run.key_bytes(), None)  # a tombstone is not a run
    with pytest.raises(MalformedRecordError):
        OffsetRun.from_record(run.key_bytes(), b"\x00\x01" + run.value_bytes()[2:])  # unknown version


def test_topic_name_is_internal_and_follows_the_separator() -> None:
    policy = DefaultReplicationPolicy()
    assert offset_map_topic(policy, "A") == "mm2-offset-map.A.internal"
    assert policy.is_internal_topic(offset_map_topic(policy, "A"))
    custom = DefaultReplicationPolicy()
    custom.configure({"replication.policy.separator": "_"})
    assert offset_map_topic(custom, "A") == "mm2-offset-map_A_internal"


def partition(*runs: tuple[int, int, int]) -> PartitionMap:
    result = PartitionMap()
    for upstream, downstream, count in runs:
        result.add(upstream, downstream, count)
    return result


def test_dense_partition_translates_exactly_at_any_lag() -> None:
    m = partition((0, 0, 1000))
    assert [m.downstream(g) for g in (0, 1, 777, 1000, 5000)] == [0, 1, 777, 1000, 1000]
    m = partition((150, 10, 100))  # replication started at upstream 150, the remote topic at 10
    assert m.downstream(150) == 10 and m.downstream(200) == 60 and m.downstream(149) is None
    assert [m.upstream(d) for d in (0, 10, 60, 110, 200)] == [None, 150, 200, 250, 250]


def test_transaction_markers_are_holes() -> None:
    # commit markers at upstream 3 and 7: records 0-2, 4-6, 8-9 land densely at 0..7
    m = partition((0, 0, 3), (4, 3, 3), (8, 6, 2))
    assert [m.downstream(g) for g in range(11)] == [0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8]
    assert [m.upstream(d) for d in range(9)] == [0, 1, 2, 4, 5, 6, 8, 9, 10]


def test_records_resent_after_a_restart_translate_to_their_newest_copy() -> None:
    m = partition((0, 0, 60), (50, 60, 50))  # the restart re-sent upstream 50..59 at 60..69
    assert [m.downstream(g) for g in (49, 50, 55, 60, 99, 100)] == [49, 60, 65, 70, 109, 110]
    assert [m.upstream(d) for d in (50, 60, 65, 70, 71, 110)] == [50, 60, 60, 60, 61, 100]


def test_a_lost_run_is_never_skipped() -> None:
    # the map lost upstream 40..69 (written at 40..69); the restart resumed at 60, writing from 70
    m = partition((0, 0, 40), (60, 70, 40))
    assert m.downstream(50) == 40 and m.downstream(60) == 40  # the unknown records are read again
    assert m.downstream(65) == 75  # inside a known run: exact
    assert m.upstream(50) == 40  # D-1 unknown: back to the last record known to be read


def test_offset_map_indexes_partitions_and_skips_bad_records() -> None:
    offset_map = OffsetMap()
    run = OffsetRun(TopicPartition("t", 1), 5, 0, 10)
    assert offset_map.add_record(run.key_bytes(), run.value_bytes()) == run
    assert offset_map.add_record(b"junk", b"junk") is None
    assert offset_map.downstream(("t", 1), 8) == 3 and offset_map.upstream(("t", 1), 3) == 8
    assert offset_map.downstream(("t", 0), 8) is None
    assert offset_map.coverage(("t", 1)) == (5, 15)


def test_runs_split_where_either_side_jumps() -> None:
    runs = OffsetMapRuns()
    tp = TopicPartition("t", 0)
    runs.add_offsets(tp, [0, 1, 2], [10, 11, 12])
    runs.add_offsets(tp, [3, 4], [13, 14])  # continues the open run
    runs.add_offsets(tp, [6, 7, 9], [15, 16, 17])  # upstream jumps twice
    runs.add(tp, 10, 19, 2)  # downstream jumps
    due = [(r.upstream, r.downstream, r.count) for _, r in runs.due()]
    assert due == [(0, 10, 5), (6, 15, 2), (9, 17, 1), (10, 19, 2)]


def simulate(seed: int, lose_map: bool) -> tuple[PartitionMap, list[int], dict[int, list[int]]]:
    """Replicate a partition with holes over several task lifetimes; returns the map, the downstream log
    (upstream offset per downstream position) and every upstream record's copies."""
    rng = random.Random(seed)
    upstream = [u for u in range(300) if rng.random() > 0.15]  # the rest are markers / compacted away
    downstream: list[int] = []
    runs = OffsetMapRuns()
    tp = TopicPartition("t", 0)
    m = PartitionMap()
    position = 0  # index into upstream of the next record to copy
    while position < len(upstream):
        end = min(len(upstream), position + rng.randint(1, 80))
        copied = upstream[position:end]
        first = len(downstream)
        downstream.extend(copied)
        mapped = copied if not lose_map else copied[: rng.randint(0, len(copied))]
        lifetime = OffsetMapRuns()  # a new task lifetime starts new runs
        lifetime.add_offsets(tp, mapped, list(range(first, first + len(mapped))))
        for _, run in lifetime.due():
            m.add(run.upstream, run.downstream, run.count)
        # the Connect offset committed somewhere in what was copied: the restart re-sends the rest
        position = rng.randint(position + 1, end) if rng.random() < 0.7 else end
    del runs
    copies: dict[int, list[int]] = {}
    for d, u in enumerate(downstream):
        copies.setdefault(u, []).append(d)
    return m, downstream, copies


@pytest.mark.parametrize("seed", range(25))
def test_simulated_replication_is_exact_with_a_complete_map(seed: int) -> None:
    m, downstream, copies = simulate(seed, lose_map=False)
    start = m.upstream_start
    assert start is not None
    for g in range(start, 302):
        d = m.downstream(g)
        assert d is not None
        assert all(max(c) >= d for u, c in copies.items() if u >= g), (g, d)  # nothing skipped
        assert all(u >= g for u in downstream[d:]), (g, d)  # nothing replayed
    for d in range(len(downstream) + 1):
        u_pos = m.upstream(d)
        assert u_pos is not None
        read = set(downstream[:d])
        assert all(u in read for u in copies if u < u_pos), (d, u_pos)  # nothing skipped on failback
        assert all(u not in read for u in copies if u >= u_pos), (d, u_pos)  # nothing replayed


@pytest.mark.parametrize("seed", range(25))
def test_simulated_replication_never_skips_with_lost_runs(seed: int) -> None:
    m, downstream, copies = simulate(seed, lose_map=True)
    start = m.upstream_start
    if start is None:
        return
    for g in range(start, 302):
        d = m.downstream(g)
        assert d is not None
        assert all(max(c) >= d for u, c in copies.items() if u >= g), (g, d)
    first = m.runs[0][1]
    assert m.upstream(first - 1) is None if first > 0 else True  # before the map: unknown
    for d in range(first, len(downstream) + 1):
        u_pos = m.upstream(d)
        assert u_pos is not None
        read = set(downstream[:d])
        assert all(u in read for u in copies if u < u_pos), (d, u_pos)
