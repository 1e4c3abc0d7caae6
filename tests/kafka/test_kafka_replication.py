"""Our driver (``connect-mirror-maker``) between two Apache Kafka 4.4 clusters: what the Tansu tiers prove,
here on the broker users run.

* fidelity: keys, values, headers, timestamps and partitions copied; a classic group and a KIP-848 group
  (``group.protocol=consumer``) get checkpoints and synced offsets on the target, and a KIP-848 consumer
  on the target resumes exactly there;
* partition growth: partitions added on the source are really added on the target (Tansu cannot, so its
  test only checks a warning) and their records land in the same partitions;
* topic config sync with the broker's defaults: a topic override and a dynamic cluster-wide default are
  SET, a source default DELETEs the target's override, a static broker setting is never copied;
* topic config sync sends only what changed: Kafka's own description of a synced remote topic says its
  ops are in effect, so a round with nothing changed sends nothing, while a key changed on the target
  behind the sync's back is set back at the next round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions

from connect_runtime.clients.admin import ConfigOp, TopicAdmin
from mirror.client.mirror_client import MirrorClient
from mirror.client.replication_policy import DefaultReplicationPolicy
from mirror.filters import DefaultConfigPropertyFilter, DefaultTopicFilter
from mirror.source.topic_sync import TopicSync
from tests.integration.support.mm2_process import MirrorMakerProcess, aliases
from tests.kafka.flows import wait_for_records, write_mm2
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin, commit_group_offsets, create_topic, unique, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 3
PER_PARTITION = 40


def _produce_rich(bootstrap: str, topic: str, partitions: range, per_partition: int, start: int = 0) -> None:
    """Records with keys (some null), values (some tombstones), headers (one with a null value) and
    explicit timestamps, to explicit partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    base = int(time.time() * 1000) - 3_600_000  # recent: older than retention.ms (7 days) would be deleted
    for p in partitions:
        for i in range(start, start + per_partition):
            key = None if i % 7 == 0 else f"k{p}-{i}".encode()
            value = None if i % 11 == 5 else f"v{p}-{i}".encode() * (1 + i % 3)
            headers = [("seq", str(i).encode()), ("part", str(p).encode()), ("empty", None)]
            producer.produce(topic, value=value, key=key, partition=p, headers=headers,
                             timestamp=base + p * 100_000 + i)
    assert producer.flush(30) == 0


def _record_view(records: list) -> dict[int, list[tuple]]:  # type: ignore[type-arg]
    out: dict[int, list[tuple]] = {}  # type: ignore[type-arg]
    for r in records:
        out.setdefault(r.partition(), []).append((r.offset(), r.key(), r.value(), r.headers(), r.timestamp()[1]))
    return {p: sorted(v) for p, v in out.items()}


def _kip848_consume_and_commit(bootstrap: str, group: str, topic: str, count: int) -> dict[int, int]:
    """A KIP-848 consumer (group.protocol=consumer) reads ``count`` records and commits; the group's
    committed offsets per partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    seen: dict[int, int] = {}
    try:
        consumer.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 60
        while got < count:
            assert time.monotonic() < deadline, f"the KIP-848 consumer read {got} of {count} records in 60 s"
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            seen[msg.partition()] = msg.offset() + 1
            got += 1
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in seen.items()], asynchronous=False)
    finally:
        consumer.close()
    return seen


def _group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    client = admin(bootstrap)
    [future] = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return {tp.partition: tp.offset for tp in future.result(timeout=15).topic_partitions
            if tp.topic == topic and tp.offset >= 0}


def test_records_headers_partitions_and_both_group_protocols_copied_exactly(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(kafka_a.bootstrap_servers, unique("fidelity"), PARTITIONS)
    remote = f"{a}.{topic}"
    _produce_rich(kafka_a.bootstrap_servers, topic, range(PARTITIONS), PER_PARTITION)
    classic, modern = unique("classic"), unique("kip848")
    classic_at = {0: 13, 1: 40, 2: 1}
    commit_group_offsets(kafka_a.bootstrap_servers, classic, {(topic, p): o for p, o in classic_at.items()})
    modern_at = _kip848_consume_and_commit(kafka_a.bootstrap_servers, modern, topic, 50)
    assert _group_offsets(kafka_a.bootstrap_servers, modern, topic) == modern_at
    body = (f"{a}->{b}.enabled = true\ntopics = {topic}\ngroups = {classic}|{modern}\n"
            "sync.group.offsets.enabled = true\noffset.lag.max = 0\n")
    props = write_mm2(tmp_path / "mm2.properties", {a: kafka_a, b: kafka_b}, body)
    source = wait_for_records(kafka_a.bootstrap_servers, topic, PARTITIONS * PER_PARTITION)
    with MirrorMakerProcess(props, log=tmp_path / "mm2.log") as node:
        node.wait_running(2)
        copied = wait_for_records(kafka_b.bootstrap_servers, remote, PARTITIONS * PER_PARTITION, 90)
        assert _record_view(copied) == _record_view(source)  # offsets too: the remote topic started empty
        for group, expected in ((classic, classic_at), (modern, modern_at)):
            wait_until(lambda g=group, e=expected: _group_offsets(kafka_b.bootstrap_servers, g, remote) == e,  # type: ignore[misc]
                       60, f"group {group} synced to {expected} on the target", interval_s=1)
        with MirrorClient({"bootstrap.servers": kafka_b.bootstrap_servers}) as client:
            translated = client.remote_consumer_offsets(modern, a)
        assert {tp.partition: o.offset for tp, o in translated.items() if tp.topic == remote} == modern_at
        assert node.terminate() == 0
    # A KIP-848 consumer of the same group on the target starts where the group was on the source.
    consumer = Consumer({"bootstrap.servers": kafka_b.bootstrap_servers, "group.id": modern,
                         "group.protocol": "consumer", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    # (a partition the group never committed starts at the earliest offset; a finished one gives nothing)
    expected = {p: modern_at.get(p, 0) for p in range(PARTITIONS) if modern_at.get(p, 0) < PER_PARTITION}
    first: dict[int, int] = {}
    try:
        consumer.subscribe([remote])
        wait_until(lambda: _first_offsets(consumer, first) and len(first) == len(expected), 60,
                   "the target consumer's first records")
    finally:
        consumer.close()
    assert first == expected


def _first_offsets(consumer: Consumer, first: dict[int, int]) -> bool:
    msg = consumer.poll(1.0)
    if msg is not None and not msg.error():
        first.setdefault(msg.partition(), msg.offset())
    return True


def test_partitions_added_on_the_source_are_added_on_the_target(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(kafka_a.bootstrap_servers, unique("growth"), 2)
    remote = f"{a}.{topic}"
    _produce_rich(kafka_a.bootstrap_servers, topic, range(2), 10)
    props = write_mm2(tmp_path / "mm2.properties", {a: kafka_a, b: kafka_b},
                      f"{a}->{b}.enabled = true\ntopics = {topic}\n")
    with MirrorMakerProcess(props, log=tmp_path / "mm2.log") as node:
        node.wait_running(2)
        wait_for_records(kafka_b.bootstrap_servers, remote, 20, 90)
        assert len(admin(kafka_b.bootstrap_servers).list_topics(remote, timeout=10).topics[remote].partitions) == 2
        source_admin = admin(kafka_a.bootstrap_servers)  # kept: a destroyed client fails its futures
        source_admin.create_partitions([NewPartitions(topic, 5)])[topic].result(timeout=15)
        wait_until(lambda: len(admin(kafka_b.bootstrap_servers).list_topics(remote, timeout=10)
                               .topics[remote].partitions) == 5, 60, "5 partitions on the target", interval_s=1)
        _produce_rich(kafka_a.bootstrap_servers, topic, range(2, 5), 10)
        copied = wait_for_records(kafka_b.bootstrap_servers, remote, 50, 90)
        assert node.terminate() == 0
    by_partition = _record_view(copied)
    assert sorted(by_partition) == [0, 1, 2, 3, 4]
    assert all(len(records) == 10 for records in by_partition.values())
    for p in (2, 3, 4):  # the new partitions' records landed in the same partitions, from offset 0
        assert [(r[0], r[3][1][1]) for r in by_partition[p]] == [(i, str(p).encode()) for i in range(10)]


def _topic_configs(bootstrap: str, topic: str) -> dict[str, ConfigEntry]:
    client = admin(bootstrap)
    [future] = client.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return dict(future.result(timeout=15))


def test_topic_configs_synced_with_the_broker_defaults(fresh_kafka: Callable[..., KafkaBroker],
                                                       kafka_b: KafkaBroker, tmp_path: Path) -> None:
    """The source broker has a static ``log.roll.ms`` and a dynamic cluster-wide ``log.retention.bytes``
    (its own broker; a cluster-wide default would reach the shared brokers' other tests)."""
    source = fresh_kafka("configsrc", config={"log.roll.ms": "7200000"})
    # a cluster-wide dynamic default, with Kafka's own kafka-configs (librdkafka cannot name the default)
    source.run_tool("org.apache.kafka.tools.ConfigCommand", "--entity-type", "brokers", "--entity-default",
                    "--alter", "--add-config", "log.retention.bytes=987654321")
    a, b = aliases("A", "B")
    topic = create_topic(source.bootstrap_servers, unique("configs"), 1,
                         config={"retention.ms": "123456789", "cleanup.policy": "compact,delete"})
    remote = f"{a}.{topic}"
    configs = _topic_configs(source.bootstrap_servers, topic)
    assert configs["retention.bytes"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert configs["segment.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    # the target already has the remote topic with an override the source does not have
    create_topic(kafka_b.bootstrap_servers, remote, 1, config={"max.message.bytes": "2000000"})
    props = write_mm2(tmp_path / "mm2.properties", {a: source, b: kafka_b},
                      f"{a}->{b}.enabled = true\ntopics = {topic}\n")
    with MirrorMakerProcess(props, log=tmp_path / "mm2.log") as node:
        node.wait_running(2)

        def synced() -> bool:
            c = _topic_configs(kafka_b.bootstrap_servers, remote)
            return (c["retention.ms"].value == "123456789" and c["retention.bytes"].value == "987654321"
                    and c["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value)

        wait_until(synced, 60, "topic configs synced on the target", interval_s=1)
        target = _topic_configs(kafka_b.bootstrap_servers, remote)
        assert target["cleanup.policy"].value == "compact,delete"
        assert target["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value  # copied as an override
        assert target["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value  # static broker value not copied
        assert target["segment.ms"].value != "7200000"
        assert node.terminate() == 0


class _AlterCountingAdmin(TopicAdmin):
    """The real TopicAdmin on the target, recording the topics of each IncrementalAlterConfigs it sends."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__({"bootstrap.servers": bootstrap}, timeout_s=30)
        self.altered: list[list[str]] = []

    def incremental_alter_configs(self, changes: Mapping[str, Sequence[ConfigOp]]) -> None:
        self.altered.append(sorted(changes))
        super().incremental_alter_configs(changes)


def _alter(bootstrap: str, topic: str, key: str, value: str) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    client = admin(bootstrap)  # kept: a destroyed client fails its pending futures
    client.incremental_alter_configs([resource])[resource].result(timeout=15)


def test_topic_config_sync_alters_only_what_changed_and_sets_back_a_target_change(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker) -> None:
    """The source connector's TopicSync over real admin clients on both clusters, round by round."""
    (a,) = aliases("A")
    topic = create_topic(kafka_a.bootstrap_servers, unique("cfgsync"), 1,
                         config={"retention.bytes": "1000000", "cleanup.policy": "compact,delete"})
    remote = f"{a}.{topic}"
    # the remote topic exists with an override the source does not have: a source default DELETEs it
    create_topic(kafka_b.bootstrap_servers, remote, 1, config={"max.message.bytes": "2000000"})
    target = _AlterCountingAdmin(kafka_b.bootstrap_servers)
    sync = TopicSync(a, "B", DefaultReplicationPolicy(), DefaultTopicFilter({"topics": topic}),
                     DefaultConfigPropertyFilter({}), TopicAdmin({"bootstrap.servers": kafka_a.bootstrap_servers}),
                     target, replication_factor=1, heartbeats_replication_enabled=False)
    sync.load_topic_partitions()

    def on_target(retention_bytes: str) -> bool:
        c = _topic_configs(kafka_b.bootstrap_servers, remote)
        return (c["retention.bytes"].value == retention_bytes and c["cleanup.policy"].value == "compact,delete"
                and c["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value)

    sync.sync_topic_configs()
    assert target.altered == [[remote]]
    wait_until(lambda: on_target("1000000"), 15, "the first round's alter visible on B")
    sync.sync_topic_configs()
    sync.sync_topic_configs()
    assert target.altered == [[remote]]  # Kafka describes the ops as in effect: nothing sent
    _alter(kafka_b.bootstrap_servers, remote, "retention.bytes", "2000000")  # behind the sync's back
    wait_until(lambda: on_target("2000000"), 15, "the change on B visible")
    sync.sync_topic_configs()
    assert len(target.altered) == 2
    wait_until(lambda: on_target("1000000"), 15, "retention.bytes set back on B")
    _alter(kafka_b.bootstrap_servers, remote, "max.message.bytes", "3000000")  # an override behind a DELETE
    wait_until(lambda: _topic_configs(kafka_b.bootstrap_servers, remote)["max.message.bytes"].value == "3000000",
               15, "the override on B visible")
    sync.sync_topic_configs()
    assert len(target.altered) == 3
    wait_until(lambda: on_target("1000000"), 15, "max.message.bytes override deleted on B")
    _alter(kafka_a.bootstrap_servers, topic, "retention.bytes", "5000000")  # a source change
    wait_until(lambda: _topic_configs(kafka_a.bootstrap_servers, topic)["retention.bytes"].value == "5000000",
               15, "the change on A visible")
    sync.sync_topic_configs()
    assert len(target.altered) == 4
    wait_until(lambda: on_target("5000000"), 15, "the source change synced to B")
    sync.sync_topic_configs()
    assert len(target.altered) == 4
