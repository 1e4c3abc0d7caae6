"""The shared fakes behave as the clients they stand for, where tests rely on it."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.support.fakes import FakeAdminClient, FakeConsumer, FakeProducer, calls_to, event, factory_of, message


def test_consumer_plays_back_polls_and_batches() -> None:
    consumer = FakeConsumer(script=[message(offset=0), None, [message(offset=1), message(offset=2),
                                                              message(offset=3)], event(KafkaError._PARTITION_EOF)])
    first = consumer.poll(1.0)
    assert first is not None and first.offset() == 0
    assert consumer.poll(1.0) is None  # a poll that found nothing
    assert [m.offset() for m in consumer.consume(2, 0.5)] == [1, 2]
    rest = consumer.poll(0)
    assert rest is not None and rest.offset() == 3
    eof = consumer.consume(5, 0)
    assert [m.error().code() for m in eof] == [KafkaError._PARTITION_EOF]  # type: ignore[union-attr]
    assert consumer.poll(2.0) is None and consumer.consume(3, 2.0) == []
    assert consumer.waits == [1.0, 1.0, 0.5, 0, 0, 2.0, 2.0]


def test_factory_records_the_config_and_hands_out_the_fake() -> None:
    consumer = FakeConsumer()
    assert factory_of(consumer)({"group.id": "g"}) is consumer
    assert consumer.config == {"group.id": "g"}


def test_producer_reports_only_released_records_on_poll_in_release_order() -> None:
    producer = FakeProducer()
    reports: list[tuple[KafkaError | None, Message]] = []
    for value in (b"a", b"b", b"c"):
        producer.produce("t", value, on_delivery=lambda err, msg: reports.append((err, msg)))
    producer.produce("u", b"d", partition=2, on_delivery=lambda err, msg: reports.append((err, msg)))
    assert len(producer) == 4 and producer.poll(0) == 0 and reports == []
    producer.delivery.release([2, 0])
    producer.delivery.release([1], error=KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    assert reports == []  # not before the next poll
    assert producer.poll(0) == 3
    assert [(m.value(), m.offset(), err) for err, m in reports] == [
        (b"c", 2, None), (b"a", 0, None), (b"b", 1, KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))]
    assert len(producer) == 1
    assert producer.flush(1.0) == 0  # a healthy broker acknowledges the rest
    err, last = reports[-1]
    assert err is None and (last.topic(), last.partition(), last.offset(), last.value()) == ("u", 2, 0, b"d")
    assert len(producer) == 0


def test_admin_answers_per_resource_and_records_requests() -> None:
    admin = FakeAdminClient({"t": 3}, answers={"create_topics": {"taken": KafkaError.TOPIC_ALREADY_EXISTS}})
    futures = admin.create_topics([NewTopic("new", 1), NewTopic("taken", 1)])
    assert futures["new"].result() is None
    with pytest.raises(KafkaException) as raised:
        futures["taken"].result()
    assert raised.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert [t.topic for t in calls_to(admin, "create_topics")[0]] == ["new", "taken"]
    assert sorted(admin.list_topics(timeout=5).topics["t"].partitions) == [0, 1, 2]
    assert admin.list_topics("other").topics == {}
    request = ConsumerGroupTopicPartitions("g", [TopicPartition("t", 0, 5)])
    echoed: Any = admin.alter_consumer_group_offsets([request])["g"].result()
    assert echoed.group_id == "g" and [tp.offset for tp in echoed.topic_partitions] == [5]
