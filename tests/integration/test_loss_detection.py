"""Loss detection of MirrorSourceTask on real brokers (issue 17 item 3, mirror/source/loss_detector.py).

cluster_a is the source, cluster_b the target; the task runs through the real WorkerSourceTask
(``connect_runtime.testing.harness``), whose status listener holds what REST's task status shows.

Cases here: a source topic deleted and re-created below the replicated offset (warn: detected, replicated
again from the new start; fail: the task FAILED with the loss in its trace), and a remote topic deleted on
the target under a running task. Records deleted at the source by DeleteRecords or retention cannot be
made on Tansu (DeleteRecords panics the broker task, retention never runs: docs/tansu.md), so that case
is tested through the consumer seam in tests/unit/mirror/test_loss_detection.py and on Apache Kafka in
tests/kafka/test_kafka_loss_detection.py.

Tansu: deleting a topic while a librdkafka 2.16 consumer is assigned to it crashes the consumer's
process (SIGSEGV, after "Received Fetch response (error 3) for unknown topic"), so the source topic is
re-created here while no task consumes it (a re-creation during a restart or rebalance).
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import NewTopic

from connect_runtime.lifecycle import State
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import run_source_task
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.support.kafka import admin, consume_all, create_topic, produce, unique, wait_until
from tests.support.mm2 import flow_config, start_connector

pytestmark = pytest.mark.integration

CONNECTOR = "MirrorSourceConnector"


def task_config(config: dict[str, str]) -> dict[str, str]:
    connector = MirrorSourceConnector()
    start_connector(connector, config)  # creates the remote topic
    try:
        [first] = connector.task_configs(1)
        return first
    finally:
        connector.stop()


def recreate(bootstrap: str, topic: str) -> None:
    client = admin(bootstrap)
    client.delete_topics([topic], operation_timeout=10)[topic].result(timeout=15)
    wait_until(lambda: topic not in client.list_topics(timeout=10).topics, 15, f"{topic} deleted")
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)


def loss_sample(run: object, name: str, src: str, tgt: str, remote: str, reason: str) -> float | None:
    labels = {"source": src, "target": tgt, "topic": remote, "partition": "0", "reason": reason}
    return run.registry.get_sample_value(name, labels)  # type: ignore[attr-defined, no-any-return]


def test_source_topic_recreated_is_detected_and_replicated_again(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("recreated"), partitions=1)
    produce(cluster_a.bootstrap, topic, 10)
    config = task_config(flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic}))
    remote = f"{src}.{topic}"
    store = MemoryOffsetStore()
    partition = {"cluster": src, "partition": 0, "topic": topic}
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store) as run:
        wait_until(lambda: run.records_written() >= 10, 30, "10 records written")
        run.commit_now()
    assert store.get(CONNECTOR, partition) == {"offset": 9}

    recreate(cluster_a.bootstrap, topic)
    produce(cluster_a.bootstrap, topic, [(b"k", f"new-{i}".encode()) for i in range(3)])
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store) as run:
        # Without detection the task would wait at offset 10 of a 3-record topic and skip its records.
        wait_until(lambda: run.records_written() >= 3, 30, "the new topic's 3 records written")
        run.commit_now()
        assert loss_sample(run, "mirror_source_loss_events_total", src, tgt, remote, "source-recreated") == 1
        assert run.state() is State.RUNNING
    assert store.get(CONNECTOR, partition) == {"offset": 2}
    replicated = consume_all(cluster_b.bootstrap, remote, expect=13)
    assert [r.value for r in replicated][10:] == [b"new-0", b"new-1", b"new-2"]


def test_policy_fail_fails_the_task_with_the_loss_in_its_trace(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("recreated"), partitions=1)
    produce(cluster_a.bootstrap, topic, 4)  # the re-created topic: 4 records, 20 were replicated before
    config = task_config(flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                                     overrides={"topics": topic, "replication.loss.policy": "fail"}))
    store = MemoryOffsetStore()
    partition = {"cluster": src, "partition": 0, "topic": topic}
    store.put(CONNECTOR, [(partition, {"offset": 19})])
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap, connector=CONNECTOR,
                         offset_store=store, wait_running_s=None) as run:
        run.wait_for_state(State.FAILED, 30)
        trace = run.trace() or ""
        assert "ReplicationLossError" in trace
        assert f"lost records on {topic}-0 (source-recreated" in trace
        assert "below the next offset to replicate 20" in trace
        assert "replication.loss.policy=fail" in trace
        assert run.records_written() == 0
    assert store.get(CONNECTOR, partition) == {"offset": 19}  # nothing committed past the loss


def test_remote_topic_deleted_on_target_is_detected(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("remote-deleted"), partitions=1)
    produce(cluster_a.bootstrap, topic, 10)
    config = task_config(flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic}))
    remote = f"{src}.{topic}"
    with run_source_task(MirrorSourceTask, config, bootstrap_servers=cluster_b.bootstrap,
                         connector=CONNECTOR) as run:
        wait_until(lambda: run.records_written() >= 10, 30, "10 records written")
        client = admin(cluster_b.bootstrap)
        client.delete_topics([remote], operation_timeout=10)[remote].result(timeout=15)
        produce(cluster_a.bootstrap, topic, 5)
        # The task's producer writes the next records at offsets from 0 again (Tansu: into the void of
        # the deleted topic or a topic its metadata request re-created, docs/tansu.md; Kafka: an
        # auto-created topic, or errors until the connector's refresh re-creates it, as in Apache MM2).
        wait_until(lambda: run.records_written() >= 15, 30, "5 more records written")
        wait_until(lambda: loss_sample(run, "mirror_source_loss_events_total", src, tgt, remote,
                                       "target-truncated") == 1, 15, "the loss counted")
        assert loss_sample(run, "mirror_source_records_lost_total", src, tgt, remote, "target-truncated") == 10
        assert run.state() is State.RUNNING  # warn, the default: it goes on
