"""MirrorCheckpointConnector/Task and MirrorHeartbeatConnector/Task on real brokers (scenarios of Java's
``MirrorConnectorsIntegrationBaseTest``).

cluster_a is the source, cluster_b the target. The source task first replicates a topic (which writes
the offset syncs), then the checkpoint task translates a consumer group's source offsets. Groups are
committed without joining (manual commit), as MM2's tests do after their warm-up.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from connect_runtime.api.connector import SourceConnector
from connect_runtime.clients.admin import GROUP_OFFSETS_IN_FLIGHT, TopicAdmin
from connect_runtime.testing.harness import run_source_task
from mirror.checkpoint.connector import MirrorCheckpointConnector
from mirror.checkpoint.task import MirrorCheckpointTask
from mirror.client.models import Checkpoint, Heartbeat
from mirror.heartbeat.connector import MirrorHeartbeatConnector
from mirror.heartbeat.task import MirrorHeartbeatTask
from mirror.source.connector import MirrorSourceConnector
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.support.kafka import (
    commit_group_offsets,
    consume_all,
    create_topic,
    produce,
    topics,
    unique,
    wait_until,
)
from tests.support.mm2 import RecordingConnectorContext, flow_config, start_connector

pytestmark = pytest.mark.integration


@contextmanager
def started(connector: SourceConnector, config: dict[str, str]) -> Iterator[RecordingConnectorContext]:
    context = start_connector(connector, config)
    try:
        yield context
    finally:
        connector.stop()


def replicate(cluster_a: Cluster, cluster_b: Cluster, src: str, tgt: str, topic: str, count: int,
              **overrides: str) -> None:
    """Run the source connector and one task until ``count`` records are written, then commit."""
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": topic, "offset.lag.max": "10", **overrides})
    connector = MirrorSourceConnector()
    with started(connector, config):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap) as run:
            wait_until(lambda: run.records_written() >= count, 30, f"{count} records written")
            run.commit_now()


def checkpoint_config(cluster_a: Cluster, cluster_b: Cluster, src: str, tgt: str, topic: str,
                      group_prefix: str, **overrides: str) -> dict[str, str]:
    return flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, name="MirrorCheckpointConnector",
                       overrides={"topics": topic, "groups": f"{group_prefix}.*",
                                  "emit.checkpoints.interval.seconds": "1",
                                  "refresh.groups.interval.seconds": "1", **overrides})


def checkpoints(cluster_b: Cluster, src: str) -> list[Checkpoint]:
    records = consume_all(cluster_b.bootstrap, f"{src}.checkpoints.internal")
    return [Checkpoint.from_record(r.key, r.value) for r in records]


def committed_on(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        [tp] = consumer.committed([TopicPartition(topic, partition)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def test_group_discovery_and_task_chunks(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Only groups with offsets on accepted topics get tasks (KAFKA-14837); contiguous chunks."""
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("ck-topic"), 1)
    other = create_topic(cluster_a.bootstrap, unique("ck-other"), 1)
    produce(cluster_a.bootstrap, topic, 5)
    prefix = unique("cg")
    groups = [f"{prefix}-{i}" for i in range(3)]
    for group in groups:
        commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 3})
    commit_group_offsets(cluster_a.bootstrap, f"{prefix}-unrelated", {(other, 0): 0})
    connector = MirrorCheckpointConnector()
    with started(connector, checkpoint_config(cluster_a, cluster_b, src, tgt, topic, prefix)) as context:
        assert f"{src}.checkpoints.internal" in topics(cluster_b.bootstrap)
        assert connector.known_consumer_groups == groups
        configs = connector.task_configs(2)
        assert [c["task.assigned.groups"] for c in configs] == [",".join(groups[:2]), groups[2]]
        assert [c["task.index"] for c in configs] == ["0", "1"]
        commit_group_offsets(cluster_a.bootstrap, f"{prefix}-late", {(topic, 0): 1})
        wait_until(lambda: context.reconfigurations >= 1, 30, "reconfiguration after a new group")
        assert f"{prefix}-late" in (connector.known_consumer_groups or [])


def test_disabled_checkpoint_connector_has_no_tasks(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = unique("src"), unique("tgt")
    connector = MirrorCheckpointConnector()
    config = checkpoint_config(cluster_a, cluster_b, src, tgt, "nothing", "none", enabled="false")
    with started(connector, config):
        assert connector.task_configs(1) == []  # KAFKA-18021: not a retriable error for ever
    assert f"{src}.checkpoints.internal" not in topics(cluster_b.bootstrap)


@pytest.mark.slow
def test_checkpoints_translated_monotonic_and_synced(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Java's testReplication failover + testNoCheckpointsIfNoRecordsAreMirrored + offset sync to the target.

    A group committed in the middle of the range translates to a downstream offset <= the true one and
    > 0; checkpoints only appear for partitions that have offset syncs; they never go backwards while
    the group moves forward; sync.group.offsets writes them into the (non-existent) target group.
    """
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("ck-data"), 1)
    empty = create_topic(cluster_a.bootstrap, unique("ck-empty"), 1)
    produce(cluster_a.bootstrap, topic, 100)
    replicate(cluster_a, cluster_b, src, tgt, f"{topic}|{empty}", 100)
    group = unique("ck-group")
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 55, (empty, 0): 0})
    remote, remote_empty = f"{src}.{topic}", f"{src}.{empty}"
    config = checkpoint_config(cluster_a, cluster_b, src, tgt, f"{topic}|{empty}", group,
                               **{"sync.group.offsets.enabled": "true",
                                  "sync.group.offsets.interval.seconds": "1"})
    connector = MirrorCheckpointConnector()
    with started(connector, config):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorCheckpointTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorCheckpointConnector") as run:
            first = wait_until(
                lambda: [c for c in checkpoints(cluster_b, src) if c.consumer_group_id == group], 30,
                "a checkpoint")
            # no sync for the (mirrored but empty) topic: no checkpoint for it
            assert remote_empty in topics(cluster_b.bootstrap)
            assert {c.topic for c in first} == {remote}
            checkpoint = first[0]
            assert checkpoint.partition == 0 and checkpoint.upstream_offset == 55
            assert 0 < checkpoint.downstream_offset <= 55
            wait_until(
                lambda: committed_on(cluster_b.bootstrap, group, remote) == checkpoint.downstream_offset, 30,
                "the translated offset synced into the target group")
            commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 100})
            wait_until(lambda: any(c.upstream_offset == 100 for c in checkpoints(cluster_b, src)), 30,
                       "a checkpoint at the end of the topic")
            run.commit_now()
    ours = [c for c in checkpoints(cluster_b, src) if c.consumer_group_id == group]
    downstream = [c.downstream_offset for c in ours]
    assert downstream == sorted(downstream)  # monotonic in log order
    # the last record's sync is flushed at task commit (KAFKA-15906): the end translates to the end
    assert ours[-1].downstream_offset == 100


def test_checkpoints_with_offset_syncs_on_target(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Java's testOffsetSyncsTopicsOnTarget: the checkpoint task reads the syncs from the target cluster."""
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("ck-on-target"), 1)
    produce(cluster_a.bootstrap, topic, 20)
    replicate(cluster_a, cluster_b, src, tgt, topic, 20, **{"offset-syncs.topic.location": "target"})
    assert f"mm2-offset-syncs.{src}.internal" in topics(cluster_b.bootstrap)
    assert f"mm2-offset-syncs.{tgt}.internal" not in topics(cluster_a.bootstrap)
    group = unique("ck-on-target-group")
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 20})
    config = checkpoint_config(cluster_a, cluster_b, src, tgt, topic, group,
                               **{"offset-syncs.topic.location": "target"})
    connector = MirrorCheckpointConnector()
    with started(connector, config):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorCheckpointTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorCheckpointConnector"):
            [checkpoint] = wait_until(
                lambda: [c for c in checkpoints(cluster_b, src) if c.consumer_group_id == group], 30, "a checkpoint")
    assert (checkpoint.topic, checkpoint.upstream_offset, checkpoint.downstream_offset) == (f"{src}.{topic}", 20, 20)


@pytest.mark.slow
def test_restarted_task_keeps_syncing_from_loaded_checkpoints(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """KAFKA-15905 / Java's testRestartReplication: checkpoints read back at start feed sync.group.offsets.

    The first task emits a checkpoint with group-offset sync off. The restarted task sees the same source
    offset (a repeat, so no new checkpoint), yet writes the loaded checkpoint into the target group.
    """
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("ck-restart"), 1)
    produce(cluster_a.bootstrap, topic, 30)
    replicate(cluster_a, cluster_b, src, tgt, topic, 30)
    group = unique("ck-restart-group")
    commit_group_offsets(cluster_a.bootstrap, group, {(topic, 0): 30})
    config = checkpoint_config(cluster_a, cluster_b, src, tgt, topic, group)
    connector = MirrorCheckpointConnector()
    with started(connector, config):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorCheckpointTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorCheckpointConnector"):
            wait_until(lambda: any(c.consumer_group_id == group for c in checkpoints(cluster_b, src)), 30,
                       "a checkpoint")
    [emitted] = [c for c in checkpoints(cluster_b, src) if c.consumer_group_id == group]
    assert emitted.downstream_offset == 30
    remote = f"{src}.{topic}"
    assert committed_on(cluster_b.bootstrap, group, remote) < 0  # sync was off: nothing on the target yet
    task_config = {**task_config, "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1"}
    with run_source_task(MirrorCheckpointTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                         connector="MirrorCheckpointConnector"):
        wait_until(lambda: committed_on(cluster_b.bootstrap, group, remote) == 30, 30,
                   "the loaded checkpoint synced into the target group")
    assert [c for c in checkpoints(cluster_b, src) if c.consumer_group_id == group] == [emitted]  # no repeat


def test_many_groups_each_get_a_checkpoint_and_an_active_one_is_never_synced(cluster_a: Cluster,
                                                                            cluster_b: Cluster) -> None:
    """More groups in one task than TopicAdmin keeps offset requests in flight: every group gets a checkpoint
    of its own committed offset, every idle group is written into its target group, and the group with a
    member on the target is never written (its consumer would be rewound or overwrite it)."""
    src, tgt = unique("src"), unique("tgt")
    topic = create_topic(cluster_a.bootstrap, unique("ck-many"), 1)
    produce(cluster_a.bootstrap, topic, 40)
    replicate(cluster_a, cluster_b, src, tgt, topic, 40)
    prefix = unique("ck-many-group")
    groups = [f"{prefix}-{i:03d}" for i in range(GROUP_OFFSETS_IN_FLIGHT * 2 + 3)]
    source = TopicAdmin({"bootstrap.servers": cluster_a.bootstrap}, timeout_s=15)
    committed = {group: 1 + i % 40 for i, group in enumerate(groups)}
    for group, offset in committed.items():
        source.alter_consumer_group_offsets(group, {(topic, 0): offset})
    remote, active = f"{src}.{topic}", groups[7]
    member = Consumer({"bootstrap.servers": cluster_b.bootstrap, "group.id": active, "enable.auto.commit": False,
                       "auto.offset.reset": "earliest", "session.timeout.ms": 6000,  # Tansu joins take half of it
                       "heartbeat.interval.ms": 1000})
    member.subscribe([remote])
    target = TopicAdmin({"bootstrap.servers": cluster_b.bootstrap}, timeout_s=15)
    try:
        wait_until(lambda: member.poll(0.5) is not None or member.assignment(), 30, "the member on B assigned")
        wait_until(lambda: target.describe_consumer_groups([active]) == {active: "STABLE"}, 30, "the group STABLE")
        config = checkpoint_config(cluster_a, cluster_b, src, tgt, topic, prefix,
                                   **{"sync.group.offsets.enabled": "true",
                                      "sync.group.offsets.interval.seconds": "1"})
        connector = MirrorCheckpointConnector()
        task = MirrorCheckpointTask()
        with started(connector, config):
            [task_config] = connector.task_configs(1)
            assert task_config["task.assigned.groups"] == ",".join(groups)
            with run_source_task(task, task_config, bootstrap_servers=cluster_b.bootstrap,
                                 connector="MirrorCheckpointConnector"):
                def latest() -> dict[str, Checkpoint]:
                    return {c.consumer_group_id: c for c in checkpoints(cluster_b, src)
                            if c.consumer_group_id.startswith(prefix)}

                last = wait_until(lambda: (found := latest()).keys() == set(groups) and found, 60,
                                  "a checkpoint of every group")
                idle = [g for g in groups if g != active]

                def synced() -> bool:
                    on_b = target.list_consumer_group_offsets(idle)
                    return all(on_b[g].get((remote, 0), (-1, None))[0] == last[g].downstream_offset for g in idle)

                wait_until(synced, 60, "every idle group synced into B")
                status = task.group_sync_status()
        assert {g: c.upstream_offset for g, c in last.items()} == committed
        assert all(0 <= c.downstream_offset <= c.upstream_offset for c in last.values())
        assert (status[active].outcome, "STABLE" in status[active].reason) == ("active", True)
        assert {status[g].outcome for g in idle} <= {"written", "synced"}
        assert target.list_consumer_group_offsets([active]) == {active: {}}  # never written
    finally:
        member.close()


def test_heartbeats_every_interval(cluster_b: Cluster) -> None:
    src, tgt = unique("hb-src"), unique("hb-tgt")
    config = flow_config(src, tgt, "unused:9092", cluster_b.bootstrap, name="MirrorHeartbeatConnector",
                         overrides={"emit.heartbeats.interval.seconds": "1", "enabled": "false"})
    connector = MirrorHeartbeatConnector()
    with started(connector, config):
        assert "heartbeats" in topics(cluster_b.bootstrap)
        [task_config] = connector.task_configs(3)  # ignores enabled=false; exactly one task
        with run_source_task(MirrorHeartbeatTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorHeartbeatConnector") as run:
            wait_until(lambda: run.records_written() >= 3, 30, "3 heartbeats")

    def ours() -> list[Any]:
        key = Heartbeat(src, tgt, 0).key_bytes()
        return [r for r in consume_all(cluster_b.bootstrap, "heartbeats") if r.key == key]

    records = wait_until(lambda: len(ours()) >= 3 and ours(), 30, "3 heartbeats readable")
    assert {r.partition for r in records} == {0}
    beats = [Heartbeat.from_record(r.key, r.value) for r in records]
    assert all(len(r.value) == 10 and r.value[:2] == b"\x00\x00" for r in records)
    assert [b.timestamp for b in beats] == [r.timestamp for r in records]
    gaps = [b.timestamp - a.timestamp for a, b in itertools.pairwise(beats)]
    assert all(gap >= 900 for gap in gaps), gaps  # one per interval, not a burst
    disabled = flow_config(src, tgt, "unused:9092", cluster_b.bootstrap, name="MirrorHeartbeatConnector",
                           overrides={"emit.heartbeats.enabled": "false"})
    connector = MirrorHeartbeatConnector()
    with started(connector, disabled):
        assert connector.task_configs(1) == []
