"""TopicAdmin against a real broker: topics, configs, consumer-group offsets.

ACL creation is never called here (it aborts the process on Tansu); see tests/unit/.../test_admin_seam.py.
"""

from __future__ import annotations

import logging

import pytest

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.admin import GROUP_OFFSETS_IN_FLIGHT, TopicAdmin, TopicSpec
from tests.conftest import Cluster
from tests.support.kafka import commit_group_offsets, create_topic, unique

pytestmark = pytest.mark.integration


def admin_for(cluster: Cluster) -> TopicAdmin:
    return TopicAdmin({"bootstrap.servers": cluster.bootstrap}, timeout_s=15)


def test_topics_are_created_described_and_listed(cluster_a: Cluster) -> None:
    admin = admin_for(cluster_a)
    topic = unique("admin-topic")
    assert admin.create_topic(topic, 4, 1, {"retention.ms": "3600000"}, compacted=True) is True
    assert admin.create_topic(topic, 4, 1) is False  # already exists: tolerated
    assert admin.describe_topics([topic, unique("absent")]) == {topic: 4}
    assert topic in admin.list_topics()
    configs = {e.name: e for e in admin.describe_configs([topic])[topic]}
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].value == "3600000"


def test_describe_topics_does_not_auto_create(cluster_a: Cluster) -> None:
    admin = admin_for(cluster_a)
    absent = unique("admin-absent")
    assert admin.describe_topics([absent]) == {}
    assert absent not in admin.list_topics()


def test_incremental_alter_configs_sets_and_deletes(cluster_a: Cluster) -> None:
    admin = admin_for(cluster_a)
    topic = create_topic(cluster_a.bootstrap, unique("admin-configs"), config={"retention.ms": "1000",
                                                                              "segment.ms": "2000"})
    admin.incremental_alter_configs({topic: [("retention.ms", "SET", "999"), ("segment.ms", "DELETE", None)]})
    configs = {e.name: e.value for e in admin.describe_configs([topic])[topic]}
    assert configs["retention.ms"] == "999"
    assert "segment.ms" not in configs or configs["segment.ms"] != "2000"


def test_create_partitions_where_unsupported_is_a_warning(cluster_a: Cluster,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    admin = admin_for(cluster_a)
    topic = create_topic(cluster_a.bootstrap, unique("admin-grow"), partitions=1)
    with caplog.at_level(logging.WARNING, logger="connect_runtime.clients.admin"):
        grown = admin.create_partitions({topic: 3})
    count = admin.describe_topics([topic])[topic]
    if grown:  # a real Kafka cluster grows the topic
        assert count == 3
    else:  # Tansu does not support CreatePartitions: one warning naming the topic, nothing raised
        assert count == 1
        assert [r for r in caplog.records if topic in r.getMessage()]


def test_consumer_group_offsets_round_trip(cluster_a: Cluster) -> None:
    admin = admin_for(cluster_a)
    topic = create_topic(cluster_a.bootstrap, unique("admin-groups"), partitions=2)
    group = unique("admin-group")
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 5, (topic, 1): 7})
    assert group in admin.list_consumer_groups()
    offsets = admin.list_consumer_group_offsets([group])[group]
    assert {tp: offset for tp, (offset, _meta) in offsets.items()} == {(topic, 0): 5, (topic, 1): 7}

    admin.alter_consumer_group_offsets(group, {(topic, 0): 11})
    offsets = admin.list_consumer_group_offsets([group])[group]
    assert offsets[(topic, 0)][0] == 11 and offsets[(topic, 1)][0] == 7
    assert admin.describe_consumer_groups([group]) == {group: "EMPTY"}  # committed offsets, no members


def test_offsets_of_more_groups_than_the_requests_in_flight_in_one_call(cluster_a: Cluster) -> None:
    """Every group's own offsets come back, however the answers of the requests in flight interleave."""
    admin = admin_for(cluster_a)
    topic = create_topic(cluster_a.bootstrap, unique("admin-many-groups"), partitions=2)
    prefix = unique("admin-many-group")
    groups = [f"{prefix}-{i:03d}" for i in range(GROUP_OFFSETS_IN_FLIGHT * 2 + 3)]
    for i, group in enumerate(groups):
        admin.alter_consumer_group_offsets(group, {(topic, 0): i, (topic, 1): 1000 + i})
    errors: dict[str, ConnectError] = {}
    offsets = admin.list_consumer_group_offsets(reversed(groups), errors=errors)
    assert errors == {} and list(offsets) == groups[::-1]
    assert {g: {tp: offset for tp, (offset, _meta) in by_tp.items()} for g, by_tp in offsets.items()} == {
        g: {(topic, 0): i, (topic, 1): 1000 + i} for i, g in enumerate(groups)}


def test_create_topics_creates_a_batch_and_sorts_existing_ones(cluster_a: Cluster) -> None:
    admin = admin_for(cluster_a)
    existing = create_topic(cluster_a.bootstrap, unique("admin-batch-old"), partitions=1)
    prefix = unique("admin-batch")
    new = {f"{prefix}-{i:02d}": TopicSpec(1 + i % 3, 1, {"retention.ms": str(3_600_000 + i)}) for i in range(40)}
    outcome = admin.create_topics({**new, existing: TopicSpec(2, 1)})
    assert sorted(outcome.created) == sorted(new) and outcome.existed == [existing]
    assert (outcome.throttled, outcome.failed, outcome.skipped) == ([], {}, [])
    assert admin.describe_topics([*new, existing]) == {**{name: spec.partitions for name, spec in new.items()},
                                                       existing: 1}
    last = f"{prefix}-39"
    assert {e.name: e.value for e in admin.describe_configs([last])[last]}["retention.ms"] == "3600039"
