"""KafkaOffsetStore against a real broker: Connect's exact bytes, tombstones, reloads, placement."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer

from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore, OffsetStoreReader, java_partition, murmur2
from tests.conftest import Cluster
from tests.support.kafka import consume_all, unique

pytestmark = pytest.mark.integration

MM2_PARTITION = {"cluster": "a", "partition": 0, "topic": "t"}


def test_murmur2_matches_kafkas_own_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


StoreFactory = Callable[..., KafkaOffsetStore]


@pytest.fixture
def new_store(cluster_a: Cluster) -> Iterator[StoreFactory]:
    started: list[KafkaOffsetStore] = []

    def make(topic: str, partitions: int = 25) -> KafkaOffsetStore:
        base = {"bootstrap.servers": cluster_a.bootstrap}
        store = KafkaOffsetStore(topic, producer_config=base, consumer_config=base, admin_config=base,
                                 partitions=partitions, replication_factor=1)
        store.start(timeout_s=60)
        started.append(store)
        return store

    yield make
    for store in started:
        store.stop()


def test_records_have_connects_exact_bytes(cluster_a: Cluster, new_store: StoreFactory) -> None:
    topic = unique("offsets-format")
    store = new_store(topic, partitions=1)
    store.put("conn", [(MM2_PARTITION, {"offset": 5})])
    store.put("MirrorHeartbeatConnector", [({"sourceClusterAlias": "ä", "targetClusterAlias": "b"},
                                            {"offset": 0})])
    records = consume_all(cluster_a.bootstrap, topic)
    assert [(r.key, r.value) for r in records] == [
        (b'["conn",{"cluster":"a","partition":0,"topic":"t"}]', b'{"offset":5}'),
        ('["MirrorHeartbeatConnector",{"sourceClusterAlias":"ä","targetClusterAlias":"b"}]'.encode(),
         b'{"offset":0}'),
    ]
    assert store.get("conn", MM2_PARTITION) == {"offset": 5}


def test_tombstones_forget_a_partition(cluster_a: Cluster, new_store: StoreFactory) -> None:
    topic = unique("offsets-tombstone")
    store = new_store(topic, partitions=3)
    other = {"cluster": "a", "partition": 1, "topic": "t"}
    store.put("conn", [(MM2_PARTITION, {"offset": 5}), (other, {"offset": 7})])
    store.put("conn", [(MM2_PARTITION, None)])

    assert store.get("conn", MM2_PARTITION) is None
    assert store.connector_offsets("conn") == [(other, {"offset": 7})]
    records = consume_all(cluster_a.bootstrap, topic)
    tombstones = [r for r in records if r.value is None]
    assert [r.key for r in tombstones] == [b'["conn",{"cluster":"a","partition":0,"topic":"t"}]']


def test_a_second_store_reloads_everything(cluster_a: Cluster, new_store: StoreFactory) -> None:
    topic = unique("offsets-reload")
    first = new_store(topic)
    for round_ in range(3):
        first.put("source", [({"cluster": "a", "topic": "t", "partition": p}, {"offset": round_ * 100 + p})
                             for p in range(50)])
        first.put("checkpoint", [({"group": "g", "topic": "t", "partition": p}, {"offset": 0})
                                 for p in range(10)])
    first.put("source", [({"cluster": "a", "topic": "t", "partition": 49}, None)])

    second = new_store(topic)
    assert second.connectors() == ["checkpoint", "source"]
    assert second.get("source", {"partition": 3, "topic": "t", "cluster": "a"}) == {"offset": 203}
    assert second.get("source", {"cluster": "a", "topic": "t", "partition": 49}) is None
    assert sorted(p["partition"] for p, _ in second.connector_offsets("source")) == list(range(49))
    assert len(second.connector_offsets("checkpoint")) == 10
    assert second.get("unknown", MM2_PARTITION) is None

    # Following and refresh: a write of the first store is seen by the second after refresh().
    first.put("source", [({"cluster": "a", "topic": "t", "partition": 3}, {"offset": 999})])
    second.refresh()
    assert second.get("source", {"cluster": "a", "topic": "t", "partition": 3}) == {"offset": 999}
    reader = OffsetStoreReader(second, "source")
    missing = {"cluster": "a", "topic": "t", "partition": 77}
    assert reader.offsets([{"cluster": "a", "topic": "t", "partition": 3}, missing]) == [
        ({"cluster": "a", "topic": "t", "partition": 3}, {"offset": 999}), (missing, None)]


def test_keys_in_another_field_order_are_the_same_partition(cluster_a: Cluster,
                                                            new_store: StoreFactory) -> None:
    topic = unique("offsets-order")
    store = new_store(topic, partitions=1)
    # A Java worker's HashMap may order the fields differently from ours: written directly here.
    java_key = b'["conn",{"topic":"t","partition":0,"cluster":"a"}]'
    producer = Producer({"bootstrap.servers": cluster_a.bootstrap})
    producer.produce(topic, key=java_key, value=b'{"offset":41}', partition=0)
    assert producer.flush(10) == 0
    store.refresh()
    assert store.get("conn", MM2_PARTITION) == {"offset": 41}

    store.put("conn", [(MM2_PARTITION, {"offset": 42})])  # re-uses the stored key bytes
    store.put("conn", [(MM2_PARTITION, None)])
    records = consume_all(cluster_a.bootstrap, topic)
    assert [(r.key, r.value) for r in records] == [
        (java_key, b'{"offset":41}'), (java_key, b'{"offset":42}'), (java_key, None)]


def test_keys_land_on_javas_default_partition(cluster_a: Cluster, new_store: StoreFactory) -> None:
    topic = unique("offsets-murmur")
    store = new_store(topic, partitions=25)
    partitions = [{"cluster": "a", "partition": p, "topic": f"topic-{p % 7}"} for p in range(60)]
    store.put("MirrorSourceConnector", [(p, {"offset": 1}) for p in partitions])

    records = consume_all(cluster_a.bootstrap, topic)
    assert len(records) == 60
    assert len({r.partition for r in records}) > 10  # spread out, not all on one partition
    for record in records:
        assert record.key is not None
        assert record.partition == java_partition(record.key, 25), record.key
