"""bench/scale.py counts the lines of the node's log that tell of issue 45's trouble; the creation's summary line
names the throttled topics even when there are none, and only a line that names some counts as throttled."""

from __future__ import annotations

from bench import scale


def test_only_a_creation_that_the_target_throttled_counts_as_throttled() -> None:
    throttled = scale.TROUBLE["throttled"]
    summary = "A->B created {} remote topic(s) (8001 partitions, replication factor 1), 0 existed, {} still throttled "
    assert not throttled.search(summary.format(2001, 0) + "by the target, 0 refused")
    assert throttled.search(summary.format(1991, 10) + "by the target, 0 refused")
    assert throttled.search("A->B: the target still throttles the creation of 3 remote topic(s)")
    assert throttled.search("CreateTopics answered THROTTLING_QUOTA_EXCEEDED for 40 topics")
