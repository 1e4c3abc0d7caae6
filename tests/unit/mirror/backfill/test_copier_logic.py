"""Executor-side rules: where a chunk resumes, what it skips, and the progress the display shows (pure)."""

from __future__ import annotations

import pickle

import pytest

from mirror.backfill.copier import ChunkSpec, CopyError, records_to_skip, resume_point
from mirror.backfill.markers import BACKFILLING, DONE, MarkerState, PartitionMarker, partition_key
from mirror.backfill.progress import Tracked, copied_of


def spec(start: int = 100, end: int = 200, range_end: int = 300) -> ChunkSpec:
    return ChunkSpec(topic="t", partition=0, remote_topic="A.t", start=start, end=end, range_start=0,
                     range_end=range_end, source_consumer_config={"bootstrap.servers": "a:1"},
                     target_producer_config={"bootstrap.servers": "b:1"},
                     target_consumer_config={"bootstrap.servers": "b:1"}, marker_topic="mm2-backfill.A.internal")


def test_spec_is_plain_data_that_pickles() -> None:
    assert pickle.loads(pickle.dumps(spec())) == spec()


def test_resume_after_recorded_progress_of_the_same_range_only() -> None:
    assert resume_point(spec(), None) == (100, -1)
    assert resume_point(spec(), PartitionMarker(BACKFILLING, 0, 300, 149, 1150)) == (150, 1150)
    assert resume_point(spec(), PartitionMarker(BACKFILLING, 0, 300, 99, 1100)) == (100, 1100)  # previous chunk
    assert resume_point(spec(), PartitionMarker(BACKFILLING, 0, 300, 250, 1251)) == (200, 1251)  # chunk done
    assert resume_point(spec(), PartitionMarker(BACKFILLING, 0, 999, 149, 1150)) == (100, -1)  # another run
    assert resume_point(spec(), PartitionMarker(DONE, 0, 300, 299, 1300)) == (100, -1)


def test_records_a_lost_batch_wrote_are_skipped_not_duplicated() -> None:
    assert records_to_skip(-1, 500) == 0
    assert records_to_skip(1150, 1150) == 0
    assert records_to_skip(1150, 1180) == 30
    with pytest.raises(CopyError, match="truncated or recreated"):
        records_to_skip(1150, 1000)


def test_progress_counts_acknowledged_records_of_this_run() -> None:
    state = MarkerState()
    state.apply(partition_key("t", 0), PartitionMarker(BACKFILLING, 0, 100, 49, 50).value())
    state.apply(partition_key("t", 1), PartitionMarker(DONE, 0, 10, 9, 10).value())
    state.apply(partition_key("t", 2), PartitionMarker(BACKFILLING, 0, 70, 69, 70).value())  # older run
    tracked = {("t", 0): Tracked(20, 100), ("t", 1): Tracked(0, 10), ("t", 2): Tracked(0, 50), ("t", 3): Tracked(0, 5)}
    assert copied_of(state, tracked) == {("t", 0): 30, ("t", 1): 10, ("t", 2): 0, ("t", 3): 0}
