"""Checkpoint renaming and monotonicity (Java's ``MirrorCheckpointTask``)."""

from __future__ import annotations

import pytest

from mirror.checkpoint.task import checkpoint_is_more_recent, rename_topic_partition
from mirror.client.models import Checkpoint, TopicPartition
from mirror.client.replication_policy import DefaultReplicationPolicy, IdentityReplicationPolicy


@pytest.mark.parametrize(
    ("upstream", "renamed"),
    [
        ("topic3", "source1.topic3"),
        ("target2.topic3", "topic3"),
        ("source6.topic7", "source1.source6.topic7"),
        ("target2.source6.topic7", "topic7"),  # strips every hop, not just one
    ],
)
def test_rename_topic_partition(upstream: str, renamed: str) -> None:
    result = rename_topic_partition(
        DefaultReplicationPolicy(), "source1", "target2", TopicPartition(upstream, 4)
    )
    assert result == TopicPartition(renamed, 4)


def test_rename_with_identity_policy_keeps_names() -> None:
    policy = IdentityReplicationPolicy("source1")
    assert rename_topic_partition(policy, "source1", "target2", TopicPartition("orders", 0)) == ("orders", 0)


def cp(upstream: int, downstream: int) -> Checkpoint:
    return Checkpoint("g", TopicPartition("t", 0), upstream, downstream)


@pytest.mark.parametrize(
    ("new", "last", "emit"),
    [
        (cp(10, 5), None, True),  # first
        (cp(10, 6), cp(9, 5), True),  # downstream advanced
        (cp(10, 5), cp(9, 5), False),  # repeat
        (cp(12, 4), cp(10, 5), False),  # downstream would go back without an upstream rewind
        (cp(3, 1), cp(10, 5), True),  # upstream group rewound: may go back
        (cp(10, 5), cp(10, 5), False),
    ],
)
def test_checkpoint_is_more_recent(new: Checkpoint, last: Checkpoint | None, emit: bool) -> None:
    assert checkpoint_is_more_recent(new, last) is emit
