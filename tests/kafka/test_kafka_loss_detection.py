"""Loss detection on Apache Kafka: source records deleted before they were replicated, by DeleteRecords
and by retention, are detected by the real task against the real broker.

On Tansu neither can happen (DeleteRecords panics its broker task, retention never runs), so that case
was played on a fake consumer (tests/unit/mirror/test_loss_detection.py); here the broker deletes.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from connect_runtime.lifecycle import State
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.kafka.flows import read_uncommitted
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin, create_topic, produce, unique, wait_until
from tests.support.mm2 import flow_config, start_connector

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

CONNECTOR = "MirrorSourceConnector"


def _task_config(config: dict[str, str]) -> dict[str, str]:
    connector = MirrorSourceConnector()
    start_connector(connector, config)  # creates the remote topic
    try:
        [first] = connector.task_configs(1)
        return first
    finally:
        connector.stop()


def _low_watermark(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("wm")})
    try:
        low, _high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        return int(low)
    finally:
        consumer.close()


def _sample(run: object, name: str, src: str, tgt: str, remote: str) -> float | None:
    labels = {"source": src, "target": tgt, "topic": remote, "partition": "0", "reason": "source-truncated"}
    return run.registry.get_sample_value(name, labels)  # type: ignore[attr-defined, no-any-return]


def _replicate_first_ten(kafka_a: KafkaBroker, kafka_b: KafkaBroker, topic: str, policy: str
                         ) -> tuple[dict[str, str], MemoryOffsetStore, str, str]:
    src, tgt = unique("src"), unique("tgt")
    config = _task_config(flow_config(src, tgt, kafka_a.bootstrap_servers, kafka_b.bootstrap_servers,
                                      overrides={"topics": topic, "replication.loss.policy": policy}))
    store = MemoryOffsetStore()
    produce(kafka_a.bootstrap_servers, topic, [(b"k", f"old-{i}".encode()) for i in range(10)])
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=kafka_b.bootstrap_servers,
                         connector=CONNECTOR, offset_store=store) as run:
        wait_until(lambda: run.records_written() >= 10, 30, "10 records written")
        run.commit_now()
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 9}
    return config, store, src, tgt


def _delete_records(bootstrap: str, topic: str, before: int) -> None:
    client = admin(bootstrap)
    [future] = client.delete_records([TopicPartition(topic, 0, before)]).values()
    assert future.result(timeout=15).low_watermark == before


def _retention_deletes(bootstrap: str, topic: str) -> int:
    """Shrink the topic's retention to 1 s and write 30 records in separate segments (segment.ms=100);
    the broker's retention task (every second) deletes closed segments. Once at least 10 new records
    went, retention is set back to 7 days so the log start stays put; the new log start."""
    client = admin(bootstrap)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(timeout=15)
    for i in range(10, 40, 5):
        produce(bootstrap, topic, [(b"k", f"new-{j}".encode()) for j in range(i, i + 5)])
        time.sleep(0.25)  # past segment.ms: the next append rolls a new segment
    wait_until(lambda: _low_watermark(bootstrap, topic) >= 20, 60, "retention deleted the oldest segments",
               interval_s=0.5)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "604800000", incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(timeout=15)
    time.sleep(2)  # a retention round already under way finishes; none deletes after it
    return _low_watermark(bootstrap, topic)


@pytest.mark.parametrize("how", ["DeleteRecords", "retention"])
def test_records_deleted_at_the_source_before_replication_are_counted_and_skipped(
        kafka_a: KafkaBroker, kafka_b: KafkaBroker, how: str) -> None:
    topic = create_topic(kafka_a.bootstrap_servers, unique(f"truncated-{how.lower()}"), 1,
                         config={"segment.ms": "100"} if how == "retention" else None)
    config, store, src, tgt = _replicate_first_ten(kafka_a, kafka_b, topic, "warn")
    remote = f"{src}.{topic}"
    if how == "DeleteRecords":
        produce(kafka_a.bootstrap_servers, topic, [(b"k", f"new-{i}".encode()) for i in range(10, 40)])
        _delete_records(kafka_a.bootstrap_servers, topic, 25)
        start = 25
    else:
        start = _retention_deletes(kafka_a.bootstrap_servers, topic)
    assert _low_watermark(kafka_a.bootstrap_servers, topic) == start
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=kafka_b.bootstrap_servers,
                         connector=CONNECTOR, offset_store=store) as run:
        wait_until(lambda: run.records_written() >= 40 - start, 30, f"the {40 - start} remaining records written")
        wait_until(lambda: _sample(run, "mirror_source_loss_events_total", src, tgt, remote) == 1, 15,
                   "the loss counted")
        assert _sample(run, "mirror_source_records_lost_total", src, tgt, remote) == start - 10
        assert run.state() is State.RUNNING  # warn, the default: it goes on
        run.commit_now()
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 39}
    copied = [r.value() for r in read_uncommitted(kafka_b.bootstrap_servers, remote)]
    assert copied == [f"old-{i}".encode() for i in range(10)] + [f"new-{i}".encode() for i in range(start, 40)]


def test_policy_fail_fails_the_task_on_records_deleted_by_delete_records(kafka_a: KafkaBroker,
                                                                         kafka_b: KafkaBroker) -> None:
    topic = create_topic(kafka_a.bootstrap_servers, unique("truncated-fail"), 1)
    config, store, src, _tgt = _replicate_first_ten(kafka_a, kafka_b, topic, "fail")
    produce(kafka_a.bootstrap_servers, topic, [(b"k", f"new-{i}".encode()) for i in range(10, 40)])
    _delete_records(kafka_a.bootstrap_servers, topic, 25)
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=kafka_b.bootstrap_servers,
                         connector=CONNECTOR, offset_store=store, wait_running_s=None) as run:
        run.wait_for_state(State.FAILED, 30)
        trace = run.trace() or ""
        assert "ReplicationLossError" in trace
        assert f"lost records on {topic}-0 (source-truncated" in trace
        assert run.records_written() == 0
    assert store.get(CONNECTOR, {"cluster": src, "partition": 0, "topic": topic}) == {"offset": 9}
