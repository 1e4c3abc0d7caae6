"""Backfill planning: ranges from stored offsets and watermarks, chunks and waves (pure)."""

from __future__ import annotations

from mirror.backfill.plan import PartitionRange, plan_range, plan_ranges, split, waves


def test_range_starts_after_the_stored_offset_else_at_the_log_start() -> None:
    assert plan_range("t", 0, stored_offset=41, low=0, high=100) == PartitionRange("t", 0, 42, 100)
    assert plan_range("t", 1, stored_offset=None, low=7, high=100) == PartitionRange("t", 1, 7, 100)


def test_range_below_the_log_start_is_reported_as_lost_not_skipped() -> None:
    rng = plan_range("t", 0, stored_offset=9, low=50, high=100)
    assert (rng.start, rng.end, rng.lost, rng.records) == (50, 100, 40, 50)


def test_streaming_past_the_snapshot_leaves_an_empty_range() -> None:
    rng = plan_range("t", 0, stored_offset=120, low=0, high=100)
    assert rng.records == 0 and rng.start == rng.end == 121


def test_resume_moves_the_start_forward_only() -> None:
    assert plan_range("t", 0, stored_offset=None, low=0, high=100, resume_from=60).start == 60
    assert plan_range("t", 0, stored_offset=80, low=0, high=100, resume_from=60).start == 81


def test_plan_ranges_sorted_with_missing_watermarks_empty() -> None:
    ranges = plan_ranges([("b", 0), ("a", 1), ("a", 0)], {("a", 0): 4}, {("a", 0): (0, 10), ("a", 1): (0, 3)})
    assert [(r.topic, r.partition, r.start, r.end) for r in ranges] == [
        ("a", 0, 5, 10), ("a", 1, 0, 3), ("b", 0, 0, 0)]


def test_split_into_chunks_that_cover_the_range_in_order() -> None:
    chunks = split(PartitionRange("t", 3, 10, 35), 10)
    assert [(c.start, c.end, c.index, c.range_end) for c in chunks] == [(10, 20, 0, 35), (20, 30, 1, 35),
                                                                        (30, 35, 2, 35)]
    assert [(c.start, c.end) for c in split(PartitionRange("t", 3, 10, 35), None)] == [(10, 35)]
    assert split(PartitionRange("t", 3, 10, 10), 5) == []


def test_waves_never_hold_two_chunks_of_one_partition() -> None:
    ranges = [PartitionRange("t", 0, 0, 25), PartitionRange("t", 1, 0, 5), PartitionRange("u", 0, 0, 0)]
    result = waves(ranges, 10)
    assert [[(c.topic, c.partition, c.index) for c in wave] for wave in result] == [
        [("t", 0, 0), ("t", 1, 0)], [("t", 0, 1)], [("t", 0, 2)]]
    for wave in result:
        assert len({(c.topic, c.partition) for c in wave}) == len(wave)
