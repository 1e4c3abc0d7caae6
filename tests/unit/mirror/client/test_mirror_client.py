"""MirrorClient topology answers over a fake topic listing, and its client-config split."""

from __future__ import annotations

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message

import mirror.client
from mirror.client.mirror_client import MirrorClient, client_config, count_hops
from mirror.client.models import Checkpoint, TopicPartition
from mirror.client.replication_policy import DefaultReplicationPolicy
from tests.support.fakes import FakeAdminClient, FakeConsumer, calls_to, event, factory_of, message

IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


def fake_admin(topics: list[str]) -> FakeAdminClient:
    return FakeAdminClient(dict.fromkeys(topics, 1))


def client(topics: list[str], **config: str) -> MirrorClient:
    return MirrorClient({"bootstrap.servers": "unused:9092", **config}, admin=fake_admin(topics))


def test_heartbeat_topics() -> None:
    c = client(
        [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source2.source1.heartbeats",
            "source3.heartbeats",
            "source1-heartbeats",
        ]
    )
    assert c.heartbeat_topics() == {
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
        "source3.heartbeats",
    }


def test_checkpoint_topics_exclude_bare_checkpoints_internal() -> None:
    c = client(
        [
            "topic1",
            "checkpoints.internal",
            "source1.checkpoints.internal",
            "source2.source1.checkpoints.internal",
            "checkpoints-internal",
        ]
    )
    assert c.checkpoint_topics() == {"source1.checkpoints.internal", "source2.source1.checkpoints.internal"}


@pytest.mark.parametrize(
    ("topic", "alias", "hops"),
    [
        ("topic", "source", -1),
        ("source", "source", -1),
        ("sourcetopic", "source", -1),
        ("source1.topic", "source2", -1),
        ("source1.topic", "source1", 1),
        ("source2.source1.topic", "source2", 1),
        ("source2.source1.topic", "source1", 2),
        ("source3.source2.source1.topic", "source1", 3),
        ("source3.source2.source1.topic", "source4", -1),
    ],
)
def test_count_hops(topic: str, alias: str, hops: int) -> None:
    assert count_hops(DefaultReplicationPolicy(), topic, alias) == hops


def test_replication_hops_is_the_minimum_over_heartbeat_topics() -> None:
    c = client(
        [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.heartbeats",
            "source2.x.y.heartbeats",
            "source4.topic",
        ]
    )
    assert c.replication_hops("source1") == 1
    assert c.replication_hops("source2") == 1  # direct heartbeats beat the two-hop chain
    assert c.replication_hops("source3") == 1
    assert c.replication_hops("y") == 3
    assert c.replication_hops("source4") == -1  # not a heartbeats topic


def test_replication_hops_two_hops() -> None:
    c = client(["heartbeats", "source1.heartbeats", "source1.source2.heartbeats"])
    assert c.replication_hops("source2") == 2


def test_upstream_clusters_collects_every_alias_of_every_chain() -> None:
    c = client(
        [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.source4.source5.heartbeats",
            "sourceX.topic",
        ]
    )
    assert c.upstream_clusters() == {"source1", "source2", "source3", "source4", "source5"}


def test_identity_policy_upstream_clusters_still_follow_heartbeats() -> None:
    c = client(
        [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.source4.source5.heartbeats",
        ],
        **{"replication.policy.class": IDENTITY, "source.cluster.alias": "source"},
    )
    assert c.upstream_clusters() == {"source1", "source2", "source3", "source4", "source5"}


def test_remote_topics() -> None:
    c = client(
        [
            "topic1",
            "topic2",
            "source1.topic4",
            "source1.source2.topic5",
            "source3.source4.source5.topic6",
            "source1.checkpoints.internal",
            "__consumer_offsets",
            "source2.heartbeats",
        ]
    )
    assert c.remote_topics() == {
        "source1.topic4",
        "source1.source2.topic5",
        "source3.source4.source5.topic6",
        "source2.heartbeats",
    }
    assert c.remote_topics("source1") == {"source1.topic4", "source1.source2.topic5"}
    assert c.remote_topics("source2") == {"source2.heartbeats"}


def test_remote_topics_with_custom_separator() -> None:
    c = client(
        ["topic1", "source1__topic4", "source1__source2__topic5"], **{"replication.policy.separator": "__"}
    )
    assert c.remote_topics() == {"source1__topic4", "source1__source2__topic5"}


def test_identity_policy_remote_topics_are_all_but_bare_heartbeats() -> None:
    c = client(
        ["topic1", "topic2", "heartbeats", "backup.heartbeats"],
        **{"replication.policy.class": IDENTITY, "source.cluster.alias": "source"},
    )
    assert c.remote_topics() == {"topic1", "topic2", "backup.heartbeats"}


def test_replication_policy_is_built_from_config() -> None:
    c = client([], **{"replication.policy.separator": "_"})
    assert c.replication_policy().format_remote_topic("a", "t") == "a_t"


# ------------------------------------------------------------------------------------------ client configs

MM2_VIEW = {
    "clusters": "A, B",
    "A->B.enabled": "true",
    "topics": ".*",
    "bootstrap.servers": "host:9092",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "ssl.ca.location": "/ca.pem",
    "replication.policy.separator": "_",
    "replication.policy.class": IDENTITY,
    "source.cluster.alias": "A",
    "admin.bootstrap.servers": "admin-host:9092",
    "consumer.fetch.max.bytes": "1000",
    "consumer.client.id": "reader",
    "producer.linger.ms": "5",
}


def test_admin_config_keeps_connection_keys_and_admin_overrides_only() -> None:
    assert client_config(MM2_VIEW, "admin.") == {
        "bootstrap.servers": "admin-host:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "allow.auto.create.topics": "false",
    }


def test_consumer_config_takes_consumer_prefixed_librdkafka_settings() -> None:
    assert client_config(MM2_VIEW, "consumer.") == {
        "bootstrap.servers": "host:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "fetch.max.bytes": "1000",
        "client.id": "reader",
        "allow.auto.create.topics": "false",
    }


def test_auto_topic_creation_cannot_be_turned_back_on() -> None:
    assert (
        client_config({"consumer.allow.auto.create.topics": "true"}, "consumer.")["allow.auto.create.topics"]
        == "false"
    )


def test_admin_is_created_lazily_and_close_drops_it() -> None:
    admin = fake_admin(["heartbeats"])
    with MirrorClient({"bootstrap.servers": "x:1"}, admin=admin) as c:
        assert admin.calls == []
        assert c.heartbeat_topics() == {"heartbeats"}
        assert calls_to(admin, "list_topics") == [None]
    assert c._admin is None


def test_public_surface_is_sorted_and_complete() -> None:
    assert mirror.client.__all__ == sorted(mirror.client.__all__)
    for name in mirror.client.__all__:
        assert getattr(mirror.client, name) is not None
    public = {n for n in dir(mirror.client) if not n.startswith("_")}
    modules = {"cutover", "failover", "log_reader", "mirror_client", "models", "offset_map", "plugins",
               "replication_policy", "translation"}
    assert public - modules == set(mirror.client.__all__)


# ------------------------------------------------------------------------------ reading the checkpoints topic


#: The topic MirrorClient reads checkpoints of source "primary" from (the reader ends the partitions it assigned).
CHECKPOINTS_TOPIC = "primary.checkpoints.internal"


def checkpoint_message(group: str, topic: str, downstream: int, metadata: str = "") -> Message:
    checkpoint = Checkpoint(group, TopicPartition(topic, 0), downstream + 100, downstream, metadata)
    return message(CHECKPOINTS_TOPIC, key=checkpoint.key_bytes(), value=checkpoint.value_bytes())


def reading(messages: list[Message | None], **config: str) -> tuple[MirrorClient, FakeConsumer]:
    consumer = FakeConsumer(script=messages)
    admin = fake_admin(["primary.checkpoints.internal", "primary__checkpoints__internal"])
    c = MirrorClient({"bootstrap.servers": "x:1", **config}, admin=admin, consumer_factory=factory_of(consumer))  # type: ignore[arg-type]
    return c, consumer


def test_reads_from_the_beginning_of_partition_0_to_eof() -> None:
    c, consumer = reading(
        [
            checkpoint_message("g", "primary.orders", 5),
            None,
            event(KafkaError._TRANSPORT),  # transient: keep reading
            checkpoint_message("other", "primary.orders", 6),
            checkpoint_message("g", "primary.orders", 9, "m"),
            event(KafkaError._PARTITION_EOF, CHECKPOINTS_TOPIC),
            checkpoint_message("g", "primary.orders", 99),  # after EOF: not read
        ]
    )
    assert c.remote_consumer_offsets("g", "primary", timeout_s=5) == {("primary.orders", 0): (9, "m")}
    [tp] = consumer.assigned
    assert (tp.topic, tp.partition, tp.offset) == ("primary.checkpoints.internal", 0, OFFSET_BEGINNING)
    assert consumer.config["enable.partition.eof"] == "true"
    assert consumer.config["allow.auto.create.topics"] == "false"
    assert consumer.config["isolation.level"] == "read_uncommitted"
    assert consumer.closed


def test_checkpoints_topic_follows_the_policy() -> None:
    c, consumer = reading(
        [event(KafkaError._PARTITION_EOF, CHECKPOINTS_TOPIC)], **{"replication.policy.separator": "__"}
    )
    assert c.remote_consumer_offsets("g", "primary", timeout_s=5) == {}
    assert consumer.assigned[0].topic == "primary__checkpoints__internal"


def test_authorization_errors_are_raised() -> None:
    c, consumer = reading([event(KafkaError.TOPIC_AUTHORIZATION_FAILED)])
    with pytest.raises(KafkaException):
        c.remote_consumer_offsets("g", "primary", timeout_s=5)
    assert consumer.closed


def test_timeout_returns_the_partial_result() -> None:
    c, _ = reading([checkpoint_message("g", "primary.orders", 5)])  # then silence, never EOF
    assert c.remote_consumer_offsets("g", "primary", timeout_s=0.3) == {("primary.orders", 0): (5, "")}


def test_mirror_client_config_names_its_clients_when_given_who_reads() -> None:
    """The node's translation endpoint names its clients (node id, purpose, kind; the user's id first), so
    that brokers do not see librdkafka's default ``rdkafka``; without a label the user's id stays as it is."""
    from mirror.client.mirror_client import mirror_client_config

    raw = {"bootstrap.servers": "a:9092"}
    named = mirror_client_config(raw, "node-1:8083|offset-translation")
    assert named["admin.client.id"] == "node-1:8083|offset-translation|admin"
    assert named["consumer.client.id"] == "node-1:8083|offset-translation|consumer"
    assert mirror_client_config({**raw, "client.id": "ops"}, "n|offset-translation")["consumer.client.id"] == \
        "ops|n|offset-translation|consumer"
    assert "consumer.client.id" not in mirror_client_config(raw)
    assert mirror_client_config({**raw, "client.id": "ops"})["admin.client.id"] == "ops"
