"""Fencing on a real broker: the leader's config-topic writer, and KIP-618 zombie fencing of task ids.

Both rest on the transaction coordinator bumping a transactional id's producer epoch when a new
producer calls ``init_transactions`` with that id (Tansu implements this correctly, docs/tansu.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from connect_runtime.lifecycle import TargetState
from connect_runtime.storage.config_store import KafkaConfigStore, WritePrivilegesError
from connect_runtime.storage.fenced_writer import (
    FencedError,
    fence_producers,
    leader_transactional_id,
    task_transactional_id,
)
from tests.conftest import Cluster
from tests.support.kafka import consume_all, unique, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def stores() -> Iterator[list[KafkaConfigStore]]:
    started: list[KafkaConfigStore] = []
    yield started
    for store in started:
        store.stop()


def fenced_store(bootstrap: str, topic: str, group: str, started: list[KafkaConfigStore]) -> KafkaConfigStore:
    base = {"bootstrap.servers": bootstrap}
    store = KafkaConfigStore(topic, producer_config=base, consumer_config=base, admin_config=base,
                             replication_factor=1, leader_transactional_id=leader_transactional_id(group))
    store.start(60)
    started.append(store)
    return store


def test_a_new_leader_fences_the_old_leaders_config_writes(cluster_a: Cluster,
                                                           stores: list[KafkaConfigStore]) -> None:
    topic, group = unique("fence-configs"), unique("fence-group")
    old = fenced_store(cluster_a.bootstrap, topic, group, stores)
    new = fenced_store(cluster_a.bootstrap, topic, group, stores)
    with pytest.raises(WritePrivilegesError):
        old.put_target_state("nobody", TargetState.PAUSED)  # no claim, no write

    old.claim_write_privileges()
    old.put_connector_config("c", {"k": "old"})
    old.put_task_configs("c", [{"t": "0"}, {"t": "1"}])
    wait_until(lambda: new.snapshot().task_count("c") == 2, 30, "the old leader's writes read by the other")

    new.claim_write_privileges()  # a rebalance made `new` the leader
    with pytest.raises(FencedError):
        old.put_connector_config("c", {"k": "stale"})
    assert not old.has_write_privileges()
    new.put_connector_config("c", {"k": "new"})

    for store in (old, new):
        snapshot = store.refresh()
        assert snapshot.connector_config("c") == {"k": "new"}
        assert [dict(c) for c in snapshot.task_config_list("c")] == [{"t": "0"}, {"t": "1"}]
    values = [r.value for r in consume_all(cluster_a.bootstrap, topic) if r.key == b"connector-c"]
    assert values == [b'{"properties":{"k":"old"}}', b'{"properties":{"k":"new"}}'], \
        "the stale leader's write never reached the topic"


def test_fence_producers_fences_every_task_id_of_a_connector(cluster_a: Cluster) -> None:
    group, topic = unique("kip618"), unique("kip618-out")
    ids = [task_transactional_id(group, "src", t) for t in range(3)]
    assert ids[2] == f"{group}-src-2"
    zombies = []
    for transactional_id in ids:
        producer = Producer({"bootstrap.servers": cluster_a.bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, b"zombie")
        producer.flush(10)
        zombies.append(producer)

    fence_producers(ids, {"bootstrap.servers": cluster_a.bootstrap})

    fenced_codes = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
    for producer in zombies:
        # The zombie's next write fails fenced; on Apache Kafka its open transaction was aborted by the
        # fence. (No delivery callback here: confluent-kafka raises SystemError from a callback that
        # runs while the fatal fenced error is pending.)
        producer.produce(topic, b"after the fence")
        with pytest.raises(KafkaException) as caught:
            producer.commit_transaction(10)
        assert caught.value.args[0].code() in fenced_codes, caught.value.args[0].str()


def test_a_leader_write_reports_its_last_offset_and_is_read_back_at_once(cluster_a: Cluster,
                                                                         stores: list[KafkaConfigStore]) -> None:
    """The config store reads a write back by waiting for the offset the writer reports (not for a
    read-to-end round): the offsets must be the records' own, the commit marker after each transaction
    taking one more, and the snapshot must hold the write as soon as the call returns."""
    from connect_runtime.storage.fenced_writer import TransactionalWriter

    topic = unique("leader-offsets")
    store = fenced_store(cluster_a.bootstrap, topic, unique("g"), stores)  # creates the topic
    store.claim_write_privileges(30)
    writer = TransactionalWriter(topic, {"bootstrap.servers": cluster_a.bootstrap}, unique("txid"), 30)
    try:
        assert writer.write([(b"k1", b"v1"), (b"k2", b"v2")]) == 1  # offsets 0 and 1, then a marker (2)
        assert writer.write([(b"k3", b"v3")]) == 3
    finally:
        writer.close()
    store.put_connector_config("c", {"name": "c"}, TargetState.STARTED)
    assert store.snapshot().connector_config("c") == {"name": "c"}  # no refresh needed
    store.put_task_configs("c", [{"task": "0"}, {"task": "1"}])
    assert [dict(c) for c in store.snapshot().task_config_list("c")] == [{"task": "0"}, {"task": "1"}]
