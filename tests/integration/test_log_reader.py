"""read_to_end / end_offsets on a real broker.

The case that matters: the last batch of a partition holds several records. Tansu answers ListOffsets
"latest" with that batch's base offset + 1 (docs/tansu.md); the fetch high watermark the readers use
is exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition

from connect_runtime.clients import log_reader as reader
from tests.conftest import Cluster
from tests.support.kafka import create_topic, topics, unique

pytestmark = pytest.mark.integration

PER_PARTITION = 7


@pytest.fixture
def consumer(cluster_a: Cluster) -> Iterator[Consumer]:
    consumer = Consumer({"bootstrap.servers": cluster_a.bootstrap, "group.id": unique("log-reader"),
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", "allow.auto.create.topics": False})
    yield consumer
    consumer.close()


def batched_topic(bootstrap: str) -> str:
    """Partitions 0 and 1 hold PER_PARTITION records each, written as one batch; partition 2 is empty."""
    topic = create_topic(bootstrap, unique("log-reader"), partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "batch.num.messages": 10000,
                         "allow.auto.create.topics": False})
    for i in range(2 * PER_PARTITION):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    return topic


def test_the_end_is_exact_when_the_last_batch_holds_several_records(cluster_a: Cluster, consumer: Consumer) -> None:
    topic = batched_topic(cluster_a.bootstrap)
    records: list[Message] = []
    reached = reader.read_to_end(consumer, {(topic, p): OFFSET_BEGINNING for p in range(3)}, records.extend, 30)
    assert reached.complete
    assert reached.ends == {(topic, 0): PER_PARTITION, (topic, 1): PER_PARTITION, (topic, 2): 0}
    assert sorted((m.partition(), m.offset()) for m in records) == [
        (p, o) for p in range(2) for o in range(PER_PARTITION)]

    # From the start, from inside the last batch, at the end, and an empty partition.
    ends = reader.end_offsets(consumer, {(topic, 0): 0, (topic, 1): PER_PARTITION - 2, (topic, 2): 0}, 30)
    assert ends == {(topic, 0): PER_PARTITION, (topic, 1): PER_PARTITION, (topic, 2): 0}
    assert reader.end_offsets(consumer, {(topic, 0): PER_PARTITION}, 30) == {(topic, 0): PER_PARTITION}

    if cluster_a.broker is not None:  # Tansu: proves the batch held several records, i.e. this test bites
        _, latest = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert latest < PER_PARTITION


def test_a_topic_that_does_not_exist_never_ends_and_is_not_created(cluster_a: Cluster, consumer: Consumer) -> None:
    """librdkafka reports no end (and, here, no error) for an assigned topic that does not exist: that
    is why callers that tolerate a missing topic look it up in the metadata first."""
    topic = unique("log-reader-absent")
    reached = reader.read_to_end(consumer, {(topic, 0): OFFSET_BEGINNING}, list[Message]().extend, 2,
                                 missing_ok=True)
    assert not reached.complete and reached.ends == {}
    assert topic not in topics(cluster_a.bootstrap)


class _CountingConsumer:
    """The real consumer, counting the messages ``consume`` hands to Python."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer
        self.handed_over = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._consumer, name)

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        batch = self._consumer.consume(num_messages, timeout)
        self.handed_over += len(batch)
        return batch


def test_end_offsets_hands_python_a_few_records_per_partition_not_whole_fetches(
        cluster_a: Cluster, consumer: Consumer) -> None:
    # The health probe asks for the ends of partitions far behind them every 2 s while replication runs:
    # a fetch there answers with thousands of records per partition, of which only the first is needed.
    partitions, per_partition = 6, 3000
    topic = create_topic(cluster_a.bootstrap, unique("log-reader-probe"), partitions=partitions)
    producer = Producer({"bootstrap.servers": cluster_a.bootstrap, "linger.ms": 200, "batch.num.messages": 100000,
                         "batch.size": 10_000_000, "allow.auto.create.topics": False})
    for i in range(partitions * per_partition):
        producer.produce(topic, value=b"x" * 100, partition=i % partitions)
    assert producer.flush(30) == 0
    counting = _CountingConsumer(consumer)
    first: dict[int, int] = {}
    ends = reader.end_offsets(counting, {(topic, p): 10 for p in range(partitions)}, 30,
                              on_first=lambda m: first.setdefault(m.partition(), m.offset()))
    assert ends == {(topic, p): per_partition for p in range(partitions)}
    assert first == {p: 10 for p in range(partitions)}
    # Each call asks for one message per partition not answered yet, and answers at least one of them: at
    # most 6 + 5 + ... + 1. Handing whole fetches over (the code before) gave thousands.
    assert counting.handed_over <= partitions * (partitions + 1) // 2


def test_a_log_written_every_few_milliseconds_is_read_to_its_end_as_of_the_start(
        cluster_a: Cluster, consumer: Consumer) -> None:
    """Each fetch at the end of a log written every few ms brings the next records, so no end-of-partition
    event comes while the writer runs (an offset-syncs topic during a backlog copy). The read still ends,
    long before its deadline, with every record written before it began."""
    topic = create_topic(cluster_a.bootstrap, unique("log-reader-busy"), partitions=1)
    producer = Producer({"bootstrap.servers": cluster_a.bootstrap, "linger.ms": 0,
                         "allow.auto.create.topics": False})
    for i in range(2000):
        producer.produce(topic, value=b"before %d" % i, partition=0)
    assert producer.flush(30) == 0
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            producer.produce(topic, value=b"during", partition=0)
            producer.poll(0)
            time.sleep(0.003)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        time.sleep(0.5)
        records: list[Message] = []
        began = time.monotonic()
        reached = reader.read_to_end(consumer, {(topic, 0): OFFSET_BEGINNING}, records.extend, 20)
        took = time.monotonic() - began
    finally:
        stop.set()
        writer.join(5)
        producer.flush(10)
    assert reached.complete, "the read chased the writer until its deadline"
    assert took < 10
    values = [m.value() for m in records]
    assert values[:2000] == [b"before %d" % i for i in range(2000)]
    assert reached.ends[(topic, 0)] == len(records) and len(records) > 2000
