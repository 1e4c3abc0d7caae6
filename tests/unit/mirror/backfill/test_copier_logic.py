"""Executor-side rules: where a chunk resumes, what it skips, and the progress the display shows (pure)."""

from __future__ import annotations

import itertools
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.backfill.copier import ChunkSpec, CopyError, feed_syncs, records_to_skip, resume_point
from mirror.backfill.progress import Tracked, copied_of
from mirror.backfill_markers.markers import BACKFILLING, DONE, MarkerState, PartitionMarker, partition_marker_key
from mirror.client.models import OffsetSync, TopicPartition
from mirror.source.offset_sync_writer import OffsetSyncWriter


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
    state.apply(partition_marker_key("t", 0), PartitionMarker(BACKFILLING, 0, 100, 49, 50).value())
    state.apply(partition_marker_key("t", 1), PartitionMarker(DONE, 0, 10, 9, 10).value())
    state.apply(partition_marker_key("t", 2), PartitionMarker(BACKFILLING, 0, 70, 69, 70).value())  # older run
    tracked = {("t", 0): Tracked(20, 100), ("t", 1): Tracked(0, 10), ("t", 2): Tracked(0, 50), ("t", 3): Tracked(0, 5)}
    assert copied_of(state, tracked) == {("t", 0): 30, ("t", 1): 10, ("t", 2): 0, ("t", 3): 0}


@given(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=400), st.integers(0, 20),
       st.integers(1, 5))
def test_feeding_syncs_in_runs_equals_updating_every_record(steps: list[int], lag: int, pieces: int) -> None:
    """The copier skips update() calls that cannot fire: the syncs sent and the final state are the same."""
    ups = list(itertools.accumulate(steps))
    tp = TopicPartition("t", 0)
    every, fast = OffsetSyncWriter(lag), OffsetSyncWriter(lag)
    sent_every: list[OffsetSync] = []
    sent_fast: list[OffsetSync] = []
    for i, up in enumerate(ups):
        if every.update(tp, up, 1000 + i):
            sent_every += every.take_pending()
    size = max(1, len(ups) // pieces)
    for start in range(0, len(ups), size):  # acknowledged in pieces, as batches are
        feed_syncs(fast, tp, ups[start:start + size], 1000 + start, lambda: sent_fast.extend(fast.take_pending()))
    assert sent_fast == sent_every
    assert fast.delayed == every.delayed
    assert fast.partition_state(tp) == every.partition_state(tp)
