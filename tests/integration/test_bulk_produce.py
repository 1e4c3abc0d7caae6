"""The C span producer (connect_runtime/clients/bulk_produce.py) against confluent-kafka's own produce.

What it must hold: a record it produces is byte for byte what ``Producer.produce`` would have sent (key,
value, headers, timestamp, partition, order); it stops at the first record it cannot produce and says how
many it produced, so the Python path meets that record's error itself; it never takes a producer whose
``produce`` is not confluent-kafka's own. Every check reads the records back from a real broker.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer, TopicPartition

from connect_runtime.clients import bulk_produce
from connect_runtime.clients.bulk_produce import run_end, span_producer
from mirror.source import bulk_copy
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique

pytestmark = pytest.mark.integration

needs_extension = pytest.mark.skipif(bulk_produce._module() is None, reason="the C extension is not built")


def source_records(count: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]:
    """(key, value, headers, timestamp) with nulls, empties, repeated and non-ASCII header names."""
    out = []
    for i in range(count):
        key = None if i % 5 == 0 else b"" if i % 5 == 1 else b"k%d" % i
        value = None if i % 7 == 0 else b"" if i % 7 == 1 else bytes([i % 256]) * (i % 300)
        headers: list[tuple[str, bytes | None]] = [] if i % 4 == 0 else [("h", b"%d" % i), ("h", None),
                                                                           ("n\u00e9", b"\x00\xff")][: i % 4]
        out.append((key, value, headers, 1_700_000_000_000 + i * 17))
    return out


def consumed_batch(bootstrap: str, topic: str, count: int) -> list[Message]:
    """The topic's records as confluent-kafka Messages, as a task's consumer hands them over."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("span-reader"),
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    out: list[Message] = []
    try:
        for _ in range(200):
            out.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
            if len(out) >= count:
                break
    finally:
        consumer.close()
    assert len(out) == count, f"read {len(out)} of {count}"
    return out


def fill(bootstrap: str, topic: str, records: list[Any], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, headers, ts in records:
        producer.produce(topic, value, key, partition, None, None, ts, headers or None)
    assert producer.flush(30) == 0


def view(bootstrap: str, topic: str, expect: int) -> list[tuple[Any, ...]]:
    return [(r.partition, r.key, r.value, r.headers, r.timestamp)
            for r in sorted(consume_all(bootstrap, topic, expect=expect), key=lambda r: (r.partition, r.offset))]


def task_producer(bootstrap: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, **extra})


def span_over(bootstrap: str, records: list[Any], **producer_extra: Any) -> tuple[list[Message], Producer, Any]:
    """``records`` written to a new topic and consumed back, a task producer, and its span producer."""
    source = create_topic(bootstrap, unique("span-src"))
    fill(bootstrap, source, records)
    messages = consumed_batch(bootstrap, source, len(records))
    producer = task_producer(bootstrap, **producer_extra)
    span = span_producer(producer)
    assert span is not None
    return messages, producer, span


@needs_extension
def test_a_span_sends_what_produce_sends(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    messages, producer, span = span_over(bootstrap, source_records(700))
    by_c, by_python = create_topic(bootstrap, unique("span-c"), 3), create_topic(bootstrap, unique("span-py"), 3)
    assert span(messages, 0, 700, by_c, 2) == (700, sum(len(m.value() or b"") for m in messages))
    for m in messages:
        ts = m.timestamp()[1]
        producer.produce(by_python, m.value(), m.key(), 2, None, None, ts if ts > 0 else 0, m.headers())
    assert producer.flush(30) == 0

    copied = view(bootstrap, by_c, 700)
    assert copied == view(bootstrap, by_python, 700)
    assert [(k, v, h or None, ts) for _, k, v, h, ts in copied] == \
        [(k, v, h or None, ts) for k, v, h, ts in source_records(700)]
    assert {p for p, *_ in copied} == {2}


@needs_extension
def test_a_span_stops_at_a_full_queue_and_says_where(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    messages, producer, span = span_over(bootstrap, source_records(300),
                                         **{"queue.buffering.max.messages": 40, "linger.ms": 1000})
    target = create_topic(bootstrap, unique("span-full"))

    done, _ = span(messages, 0, 300, target, 0)
    assert done == 40  # the queue's size, and no more
    with pytest.raises(BufferError):  # the record it stopped at: produce meets the same full queue
        producer.produce(target, messages[done].value(), messages[done].key(), 0)
    position = done
    while position < 300:
        producer.poll(0.05)
        position += span(messages, position, 300, target, 0)[0]
    assert producer.flush(30) == 0
    copied = view(bootstrap, target, 300)
    assert [(k, v) for _, k, v, _, _ in copied] == [(m.key(), m.value()) for m in messages]


@needs_extension
def test_a_span_stops_at_a_record_the_client_refuses(cluster_a: Cluster) -> None:
    bootstrap = cluster_a.bootstrap
    records = [(b"k%d" % i, b"x" * (5000 if i == 30 else 10), [], 1_700_000_000_000) for i in range(50)]
    messages, producer, span = span_over(bootstrap, records, **{"message.max.bytes": 2000})
    target = create_topic(bootstrap, unique("span-refused"))
    assert span(messages, 0, 50, target, 0) == (30, 300)
    with pytest.raises(KafkaException, match="MSG_SIZE_TOO_LARGE"):
        producer.produce(target, messages[30].value(), messages[30].key(), 0)
    assert span(messages, 31, 50, target, 0) == (19, 190)
    assert producer.flush(30) == 0
    assert [k for _, k, *_ in view(bootstrap, target, 49)] == [b"k%d" % i for i in range(50) if i != 30]


@needs_extension
def test_a_closed_producer_produces_nothing_and_produce_says_why(cluster_a: Cluster) -> None:
    messages, producer, span = span_over(cluster_a.bootstrap, source_records(10))
    target = messages[0].topic() or ""
    producer.close()
    assert span(messages, 0, 10, target, 0) == (0, 0)
    with pytest.raises(RuntimeError):
        producer.produce(target, b"v", None, 0)


@needs_extension
def test_the_run_scan_agrees_with_the_python_scan(cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = cluster_a.bootstrap
    source = create_topic(bootstrap, unique("span-runs"), 3)
    for p in range(3):  # several produce calls per partition: the consumer interleaves partitions
        for chunk in range(4):
            fill(bootstrap, source, source_records(60)[chunk * 15:(chunk + 1) * 15], partition=p)
    messages = consumed_batch(bootstrap, source, 180)
    scan = run_end()
    assert scan is not None

    ends = [scan(messages, i) for i in range(len(messages))]
    monkeypatch.setattr(bulk_copy, "_run_end", None)  # the bulk copy's own scan, in Python
    assert ends == [bulk_copy.run_end(messages, i) for i in range(len(messages))]
    assert any(messages[end].partition() != messages[end - 1].partition() for end in ends if end < len(messages))
    assert scan([object(), *messages], 0) == -1  # not a Message: the caller scans itself


def test_only_confluent_kafkas_own_produce_is_bypassed(cluster_a: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    class Counting(Producer):
        def produce(self, *args: Any, **kwargs: Any) -> None:
            super().produce(*args, **kwargs)

    assert span_producer(Counting({"bootstrap.servers": cluster_a.bootstrap})) is None
    monkeypatch.setenv(bulk_produce.DISABLE_ENV, "1")
    bulk_produce._module.cache_clear()
    try:
        assert span_producer(task_producer(cluster_a.bootstrap)) is None
        assert run_end() is None
    finally:
        monkeypatch.delenv(bulk_produce.DISABLE_ENV)
        bulk_produce._module.cache_clear()
