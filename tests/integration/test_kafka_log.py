"""KafkaBasedLog against a real broker: creation, read-to-end at start, following, barriers, writes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.clients.admin import TopicAdmin
from connect_runtime.storage.kafka_log import LOG_IDLE_REST_S, KafkaBasedLog, LogRecord
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration


class Collector:
    """Thread-safe list of the records a log hands to its consumed callback."""

    def __init__(self) -> None:
        self.records: list[LogRecord] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, record: LogRecord) -> None:
        with self._lock:
            self.records.append(record)
            self.threads.add(threading.current_thread().name)

    def values(self) -> list[bytes | None]:
        with self._lock:
            return [r.value for r in self.records]

    def count(self) -> int:
        with self._lock:
            return len(self.records)


def make_log(cluster: Cluster, topic: str, collector: Collector, **kwargs: object) -> KafkaBasedLog:
    base = {"bootstrap.servers": cluster.bootstrap}
    return KafkaBasedLog(topic, producer_config=base, consumer_config=base, admin_config=base,
                         consumed=collector, replication_factor=1, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def logs() -> Iterator[list[KafkaBasedLog]]:
    started: list[KafkaBasedLog] = []
    yield started
    for log in started:
        log.stop()


def batched_produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, int]]) -> None:
    """Produce with a long linger so that each produce request carries multi-record batches: that is
    the case where a ListOffsets-based end (wrong on Tansu) and a fetch-based end differ."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "batch.num.messages": 10000})
    for key, value, partition in records:
        producer.produce(topic, value=value, key=key, partition=partition)
    assert producer.flush(30) == 0


def test_start_creates_a_compacted_topic_with_partitions_and_config(cluster_a: Cluster,
                                                                    logs: list[KafkaBasedLog]) -> None:
    topic = unique("log-create")
    log = make_log(cluster_a, topic, Collector(), partitions=3,
                   topic_config={"min.compaction.lag.ms": "1234"})
    log.start(timeout_s=60)
    logs.append(log)

    admin = TopicAdmin({"bootstrap.servers": cluster_a.bootstrap})
    assert admin.describe_topics([topic]) == {topic: 3}
    assert log.partitions == [0, 1, 2]
    configs = {e.name: e.value for e in admin.describe_configs([topic])[topic]}
    assert configs["cleanup.policy"] == "compact"
    assert configs["min.compaction.lag.ms"] == "1234"


def test_start_reads_existing_multi_record_batches_to_the_end(cluster_a: Cluster,
                                                              logs: list[KafkaBasedLog]) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("log-existing"), partitions=3)
    records = [(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(3000)]
    batched_produce(cluster_a.bootstrap, topic, records)
    collector = Collector()
    log = make_log(cluster_a, topic, collector, partitions=5)  # exists already: its 3 partitions count
    log.start(timeout_s=60)
    logs.append(log)

    # Everything is there the moment start() returns: no waiting.
    assert collector.count() == 3000
    assert log.partitions == [0, 1, 2]
    for partition in range(3):
        got = [(r.key, r.value) for r in collector.records if r.partition == partition]
        assert got == [(k, v) for k, v, p in records if p == partition]
        assert [r.offset for r in collector.records if r.partition == partition] == list(range(1000))
    assert collector.threads == {f"kafka-log-{topic}"}


#: Every following and barrier test runs with the follower resting at the end (kafka_log.IdleRest) and without.
RESTS = pytest.mark.parametrize("rest", [0.0, LOG_IDLE_REST_S], ids=["no-rest", "rest"])


@RESTS
def test_empty_topic_starts_and_follows_new_records(cluster_a: Cluster, logs: list[KafkaBasedLog],
                                                    rest: float) -> None:
    topic = unique("log-follow")
    collector = Collector()
    log = make_log(cluster_a, topic, collector, partitions=2, idle_rest_s=rest)
    log.start(timeout_s=60)
    logs.append(log)
    assert collector.count() == 0

    batched_produce(cluster_a.bootstrap, topic, [(b"a", b"1", 0), (b"b", b"2", 1), (b"a", b"3", 0)])
    wait_until(lambda: collector.count() == 3, 30, "followed records")
    assert sorted(v for v in collector.values() if v) == [b"1", b"2", b"3"]
    # and again after the follower had time to rest at the end: a rest never stops the following
    time.sleep(3 * rest)
    batched_produce(cluster_a.bootstrap, topic, [(b"b", b"4", 1)])
    wait_until(lambda: collector.count() == 4, 30, "followed a record written while resting")


@RESTS
def test_read_to_end_is_a_barrier_for_acknowledged_writes(cluster_a: Cluster, logs: list[KafkaBasedLog],
                                                          rest: float) -> None:
    topic = unique("log-barrier")
    collector = Collector()
    log = make_log(cluster_a, topic, collector, partitions=3, idle_rest_s=rest)
    log.start(timeout_s=60)
    logs.append(log)
    for round_ in range(3):
        records = [(f"k{i}".encode(), f"r{round_}-{i}".encode(), i % 3) for i in range(2000)]
        batched_produce(cluster_a.bootstrap, topic, records)
        log.read_to_end(timeout_s=30)
        # No polling here: read_to_end must not return before every acknowledged record was consumed.
        assert collector.count() == 2000 * (round_ + 1)


@RESTS
def test_two_logs_on_one_topic_see_each_others_writes(cluster_a: Cluster, logs: list[KafkaBasedLog],
                                                      rest: float) -> None:
    topic = unique("log-shared")
    first, second = Collector(), Collector()
    log1 = make_log(cluster_a, topic, first, partitions=1, idle_rest_s=rest)
    log1.start(timeout_s=60)
    logs.append(log1)
    log2 = make_log(cluster_a, topic, second, partitions=1, idle_rest_s=rest)
    log2.start(timeout_s=60)
    logs.append(log2)

    written = log1.send_sync(b"from-1", b"hello")
    log2.send_sync(b"from-2", b"world")
    assert written.topic == topic and written.partition == 0 and written.offset == 0
    log1.read_to_end()
    log2.read_to_end()
    assert first.values() == [b"hello", b"world"]
    assert second.values() == [b"hello", b"world"]


def test_send_callbacks_report_acknowledgements_and_failures(cluster_a: Cluster,
                                                             logs: list[KafkaBasedLog]) -> None:
    topic = unique("log-send")
    log = make_log(cluster_a, topic, Collector(), partitions=2)
    log.start(timeout_s=60)
    logs.append(log)
    results: list[tuple[Exception | None, LogRecord | None]] = []
    done = threading.Event()

    def callback(error: Exception | None, record: LogRecord | None) -> None:
        results.append((error, record))
        if len(results) == 3:
            done.set()

    log.send(b"k", b"v0", callback, partition=1)
    log.send(b"k", b"v1", callback, partition=1)
    log.send(None, None, callback, partition=0)  # tombstone with null key
    assert done.wait(30)
    assert all(error is None for error, _ in results)
    by_value = {r.value: r for _, r in results if r is not None}
    assert by_value[b"v0"].partition == 1 and by_value[b"v1"].offset == by_value[b"v0"].offset + 1
    assert by_value[None].partition == 0 and by_value[None].key is None

    with pytest.raises(ConnectError):
        log.send_sync(b"k", b"nowhere", partition=7, timeout_s=10)

    stored = consume_all(cluster_a.bootstrap, topic)
    assert sorted((c.partition, c.value or b"") for c in stored) == [(0, b""), (1, b"v0"), (1, b"v1")]


def test_transactional_writes_and_fencing(cluster_a: Cluster, logs: list[KafkaBasedLog]) -> None:
    topic = unique("log-txn")
    txn_id = unique("leader")
    collector = Collector()
    old = make_log(cluster_a, topic, collector, partitions=1, transactional_id=txn_id)
    old.start(timeout_s=60)
    logs.append(old)
    old.send_sync(b"config", b"v1")

    new = make_log(cluster_a, topic, Collector(), partitions=1, transactional_id=txn_id)
    new.start(timeout_s=60)  # init_transactions with the same id fences the old producer
    logs.append(new)
    new.send_sync(b"config", b"v2")
    with pytest.raises(ConnectError):
        old.send_sync(b"config", b"zombie", timeout_s=10)
    old.read_to_end()
    assert collector.values() == [b"v1", b"v2"]


def test_read_to_end_times_out_while_the_broker_hangs_and_recovers(fresh_cluster: Callable[[str], Cluster],
                                                                   logs: list[KafkaBasedLog]) -> None:
    cluster = fresh_cluster("hang")
    assert cluster.broker is not None
    collector = Collector()
    log = make_log(cluster, unique("log-hang"), collector, partitions=1)
    log.start(timeout_s=60)
    logs.append(log)
    log.send_sync(b"k", b"before")

    cluster.broker.pause()
    try:
        with pytest.raises(RetriableError):
            log.read_to_end(timeout_s=2)
    finally:
        cluster.broker.resume()
    log.send_sync(b"k", b"after")
    log.read_to_end(timeout_s=30)
    assert collector.values() == [b"before", b"after"]


def test_a_resting_follower_fetches_far_less_at_the_end(cluster_a: Cluster, logs: list[KafkaBasedLog]) -> None:
    """Two idle logs side by side, one resting: librdkafka's own request counts (statistics) over the same
    seconds. Without a rest the follower fetches again as soon as an empty fetch comes back."""
    fetches: dict[str, int] = {}

    def counter(name: str) -> Callable[[str], None]:
        def count(stats: str) -> None:
            fetches[name] = sum(b.get("req", {}).get("Fetch", 0) for b in json.loads(stats)["brokers"].values())
        return count

    for name, rest in (("busy", 0.0), ("resting", LOG_IDLE_REST_S)):
        base = {"bootstrap.servers": cluster_a.bootstrap}
        consumer = {**base, "statistics.interval.ms": 500, "stats_cb": counter(name)}
        log = KafkaBasedLog(unique(f"log-{name}"), producer_config=base, consumer_config=consumer,  # type: ignore[arg-type]
                            admin_config=base, consumed=Collector(), partitions=5, replication_factor=1,
                            idle_rest_s=rest)
        log.start(timeout_s=60)
        logs.append(log)
    time.sleep(1.0)
    before = dict(fetches)
    time.sleep(5.0)
    busy, resting = (fetches[name] - before[name] for name in ("busy", "resting"))
    assert busy > 0 and resting > 0  # both still follow their topic
    assert resting * 2 < busy, (resting, busy)
