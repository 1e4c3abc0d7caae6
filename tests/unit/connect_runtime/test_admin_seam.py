"""TopicAdmin through a fake AdminClient: the paths Tansu cannot exercise.

Tansu does not support CreatePartitions and librdkafka aborts the process on its CreateAcls answer
(docs/tansu.md), and error tolerances need errors a healthy broker does not give. The shared fake
client (tests/support/fakes.py) records calls and answers with prepared futures.
"""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.clients.admin import TopicAdmin
from tests.support.fakes import FakeAdminClient, calls_to


def make(fake: FakeAdminClient) -> TopicAdmin:
    client: AdminClient = fake  # type: ignore[assignment]
    return TopicAdmin({}, client=client, timeout_s=5)


def test_create_partitions_on_a_cluster_without_support_warns_once_per_topic(
        caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeAdminClient(answers={"create_partitions": {"tansu-topic": KafkaError._UNSUPPORTED_FEATURE,
                                                          "full": KafkaError.INVALID_PARTITIONS}})
    admin = make(fake)
    with caplog.at_level(logging.DEBUG, logger="connect_runtime.clients.admin"):
        grown = admin.create_partitions({"tansu-topic": 8, "grows": 4, "full": 2})
    assert grown == {"grows"}
    assert [[(p.topic, p.new_total_count) for p in request] for request in calls_to(fake, "create_partitions")] == [
        [("tansu-topic", 8), ("grows", 4), ("full", 2)]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'tansu-topic'" in warnings[0] and "8" in warnings[0]


def test_create_partitions_raises_on_other_errors() -> None:
    admin = make(FakeAdminClient(answers={"create_partitions": {"t": KafkaError.INVALID_REQUEST}}))
    with pytest.raises(ConnectError, match="creating partitions for topic t"):
        admin.create_partitions({"t": 3})
    assert make(FakeAdminClient()).create_partitions({}) == set()


def test_create_acls_sends_the_bindings_and_maps_errors() -> None:
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    fake = FakeAdminClient()
    make(fake).create_acls([binding])
    assert fake.calls == [("create_acls", [binding])]

    denied = FakeAdminClient(answers={"create_acls": {binding: KafkaError.CLUSTER_AUTHORIZATION_FAILED}})
    with pytest.raises(ConnectError, match="creating ACL"):
        make(denied).create_acls([binding])
    empty = FakeAdminClient()
    make(empty).create_acls([])
    assert empty.calls == []


def test_create_topic_tolerates_what_mm2_tolerates(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeAdminClient(answers={"create_topics": {"exists": KafkaError.TOPIC_ALREADY_EXISTS,
                                                      "denied": KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                      "old-broker": KafkaError.UNSUPPORTED_VERSION}})
    admin = make(fake)
    assert admin.create_topic("new", 1, 3, {"retention.ms": "1"}, compacted=True) is True
    [request] = calls_to(fake, "create_topics")
    assert [(t.topic, t.num_partitions, t.replication_factor, t.config) for t in request] == [
        ("new", 1, 3, {"retention.ms": "1", "cleanup.policy": "compact"})]
    with caplog.at_level(logging.WARNING, logger="connect_runtime.clients.admin"):
        assert admin.create_topic("exists", 1, 3) is False
        assert admin.create_topic("denied", 1, 3) is False
        assert admin.create_topic("old-broker", 1, 3) is False
    assert len(caplog.records) == 2  # "already exists" is only a debug line


@pytest.mark.parametrize(("code", "error", "text"), [
    (KafkaError.INVALID_CONFIG, ConnectError, "Unable to create topic 'bad'"),
    (KafkaError.REQUEST_TIMED_OUT, ConnectError, "Timed out"),
    (KafkaError.POLICY_VIOLATION, ConnectError, "Unable to create topic 'bad'"),
])
def test_create_topic_raises_on_invalid_config_and_timeouts(code: int, error: type[Exception],
                                                            text: str) -> None:
    admin = make(FakeAdminClient(answers={"create_topics": {"bad": code}}))
    with pytest.raises(error, match=text):
        admin.create_topic("bad", 1, 3)


def test_alter_group_offsets_raises_on_a_partition_error() -> None:
    # TopicPartition.error is read-only in confluent-kafka: a stand-in with the same attributes.
    bad = type("TP", (), {"topic": "t", "partition": 1, "offset": 5,
                          "error": KafkaError(KafkaError.UNKNOWN_MEMBER_ID)})()
    answer = type("Answer", (), {"topic_partitions": [TopicPartition("t", 0, 5), bad]})()
    fake = FakeAdminClient(answers={"alter_consumer_group_offsets": {"g": answer}})
    with pytest.raises(ConnectError, match="t-1"):
        make(fake).alter_consumer_group_offsets("g", {("t", 0): 5, ("t", 1): (5, "meta")})
    assert [[(r.group_id, [(tp.topic, tp.partition, tp.offset) for tp in r.topic_partitions]) for r in request]
            for request in calls_to(fake, "alter_consumer_group_offsets")] == [[("g", [("t", 0, 5), ("t", 1, 5)])]]


def test_transient_client_errors_are_retriable() -> None:
    fake = FakeAdminClient(answers={"create_partitions": {"t": KafkaError._TRANSPORT}})
    with pytest.raises(RetriableError):
        make(fake).create_partitions({"t": 3})


def test_a_group_the_cluster_refuses_can_be_reported_in_a_given_state() -> None:
    """The health probe reads a group the cluster answers with an error as DEAD; a timeout still raises."""
    from types import SimpleNamespace

    from confluent_kafka import ConsumerGroupState

    fake = FakeAdminClient(answers={"describe_consumer_groups": {
        "live": SimpleNamespace(state=ConsumerGroupState.STABLE), "gone": KafkaError.GROUP_ID_NOT_FOUND}})
    assert make(fake).describe_consumer_groups(["live", "gone"], refused_state="DEAD") == {
        "live": "STABLE", "gone": "DEAD"}
    with pytest.raises(ConnectError, match="describing group gone"):
        make(fake).describe_consumer_groups(["live", "gone"])
    fake.answers["describe_consumer_groups"]["slow"] = TimeoutError()  # the future's wait runs out
    with pytest.raises(ConnectError, match="timed out"):
        make(fake).describe_consumer_groups(["slow"], refused_state="DEAD")
