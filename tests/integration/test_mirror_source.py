"""MirrorSourceConnector + MirrorSourceTask on real brokers (Java MM2 integration scenarios that need no
herder).

cluster_a is the source, cluster_b the target. Every test uses its own aliases and topics because the
session brokers are shared. The connector is driven directly (initialize/start/task_configs/stop); the
task runs through the real WorkerSourceTask via ``connect_runtime.testing.harness``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from connect_runtime.api.errors import RetriableError
from connect_runtime.clients.admin import CreateOutcome, TopicAdmin, TopicSpec
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.harness import RunningSourceTask, run_source_task
from mirror.client.models import OffsetSync
from mirror.source.connector import MirrorSourceConnector
from mirror.source.describe_topics_order import describe_topics_order, spread, string_hash
from mirror.source.task import MirrorSourceTask
from tests.conftest import Cluster
from tests.support.kafka import admin, consume_all, create_topic, produce, topics, unique, wait_until
from tests.support.mm2 import RecordingConnectorContext, flow_config, start_connector

pytestmark = pytest.mark.integration


@contextmanager
def source_connector(config: dict[str, str]
                     ) -> Iterator[tuple[MirrorSourceConnector, RecordingConnectorContext]]:
    connector = MirrorSourceConnector()
    context = start_connector(connector, config)
    try:
        yield connector, context
    finally:
        connector.stop()


@contextmanager
def running_tasks(task_configs: list[dict[str, str]], target: Cluster, store: MemoryOffsetStore,
                  records: int) -> Iterator[list[Any]]:
    """Every task of ``task_configs`` running into ``target`` with one offset store, until they wrote ``records``."""
    with ExitStack() as stack:
        runs = [stack.enter_context(run_source_task(MirrorSourceTask, config, bootstrap_servers=target.bootstrap,
                                                    connector="MirrorSourceConnector", task_number=i,
                                                    offset_store=store))
                for i, config in enumerate(task_configs)]
        wait_until(lambda: sum(run.records_written() for run in runs) >= records, 30, f"{records} records written")
        yield runs


def aliases() -> tuple[str, str]:
    return unique("src"), unique("tgt")


def described_configs(bootstrap: str, topic: str) -> dict[str, Any]:
    client = admin(bootstrap)  # keep a reference: a destroyed client fails its futures
    futures = client.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
    entries: dict[str, Any] = next(iter(futures.values())).result(timeout=10)
    return entries


def topic_configs(bootstrap: str, topic: str) -> dict[str, str | None]:
    return {name: entry.value for name, entry in described_configs(bootstrap, topic).items()}


def alter_topic_configs(bootstrap: str, topic: str, values: dict[str, str]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    client = admin(bootstrap)
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    futures = client.incremental_alter_configs([resource])
    for future in futures.values():
        future.result(timeout=10)


def partitions_of(cluster: Cluster, topic: str) -> int:
    return len(admin(cluster.bootstrap).list_topics(topic, timeout=10).topics[topic].partitions)


def test_one_way_replication_keeps_records_exactly(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("orders"), partitions=3)
    # null values, null keys, headers (incl. a null header value) and explicit timestamps, per partition
    for p in range(3):
        records = [(f"k{p}-{i}".encode(), None if i % 4 == 0 else f"v{i}".encode()) for i in range(10)]
        produce(cluster_a.bootstrap, topic, records, partition=p, headers=[("h", f"{p}".encode()), ("empty", None)],
                timestamp=1_600_000_000_000 + p)
    produce(cluster_a.bootstrap, topic, [(None, b"no-key")], partition=1)
    expected = consume_all(cluster_a.bootstrap, topic)
    assert len(expected) == 31

    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    with source_connector(config) as (connector, _):
        remote = f"{src}.{topic}"
        assert remote in topics(cluster_b.bootstrap)
        assert len(admin(cluster_b.bootstrap).list_topics(remote, timeout=10).topics[remote].partitions) == 3
        task_configs = connector.task_configs(5)
        assert len(task_configs) == 3  # min(tasks.max, partitions)
        store = MemoryOffsetStore()
        with running_tasks(task_configs, cluster_b, store, 31) as runs:
            for run in runs:
                run.commit_now()
        replicated = consume_all(cluster_b.bootstrap, remote)
    assert len(replicated) == 31  # exact: no duplicates, nothing lost

    def view(records: list[Any]) -> list[tuple[Any, ...]]:
        return [(r.partition, r.offset, r.key, r.value, r.headers, r.timestamp) for r in records]

    assert sorted(view(replicated)) == sorted(view(expected))
    # the Connect offset of each source partition is the last replicated source offset, keys in Java order
    partition_1 = {"cluster": src, "partition": 1, "topic": topic}
    assert store.get("MirrorSourceConnector", partition_1) == {"offset": 10}
    assert list(store.connector_offsets("MirrorSourceConnector")[0][0]) == ["cluster", "partition", "topic"]


def test_by_topic_assignment_gives_each_task_whole_topics_and_copies_every_record(cluster_a: Cluster,
                                                                                   cluster_b: Cluster) -> None:
    """``task.assignment = by-topic``: three topics of two partitions into three tasks give each task one whole
    topic (round-robin would give every task a partition of two or three topics), in Java's topic order, and
    the tasks copy every record exactly once."""
    src, tgt = aliases()
    prefix = unique("whole")
    names = [create_topic(cluster_a.bootstrap, f"{prefix}-{i}", partitions=2) for i in range(3)]
    for name in names:
        for p in range(2):
            produce(cluster_a.bootstrap, name, 5 + p, partition=p)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": f"{prefix}-.*", "task.assignment": "by-topic"})
    with source_connector(config) as (connector, _):
        task_configs = connector.task_configs(3)
        order = describe_topics_order(names, names)
        assert [c["task.assigned.partitions"] for c in task_configs] == [f"{t}-0,{t}-1" for t in order]
        with running_tasks(task_configs, cluster_b, MemoryOffsetStore(), 33):
            pass
    for name in names:
        replicated = consume_all(cluster_b.bootstrap, f"{src}.{name}")
        assert sorted((r.partition, r.offset) for r in replicated) == [(p, o) for p in range(2) for o in range(5 + p)]


def test_empty_partition_is_created_and_stays_empty(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("with-empty"), partitions=4)
    for p in range(3):
        produce(cluster_a.bootstrap, topic, 10, partition=p)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    with source_connector(config) as (connector, _):
        [task_config] = connector.task_configs(1)
        assert task_config["task.assigned.partitions"] == ",".join(f"{topic}-{p}" for p in range(4))
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap) as run:
            wait_until(lambda: run.records_written() >= 30, 30, "30 records written")
    replicated = consume_all(cluster_b.bootstrap, f"{src}.{topic}")
    assert len(replicated) == 30
    assert {r.partition for r in replicated} == {0, 1, 2}
    assert len(admin(cluster_b.bootstrap).list_topics(f"{src}.{topic}", timeout=10)
               .topics[f"{src}.{topic}"].partitions) == 4


def test_resumes_after_stored_offset(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Replicate-from-a-position through stored offsets (KAFKA-13988's mechanism).

    MM2's testReplicateFromLatest uses auto.offset.reset=latest, which Tansu implements wrongly (it starts
    at the base offset of the last batch + 1, docs/tansu.md), so here the position comes from a stored
    Connect offset instead: the task must resume at stored offset + 1, and again after a restart.
    """
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("resume"), partitions=1)
    produce(cluster_a.bootstrap, topic, 10)
    partition = {"cluster": src, "partition": 0, "topic": topic}
    store = MemoryOffsetStore()
    store.put("MirrorSourceConnector", [(partition, {"offset": 4})])
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    remote = f"{src}.{topic}"
    with source_connector(config) as (connector, _):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorSourceConnector", offset_store=store) as run:
            wait_until(lambda: run.records_written() >= 5, 30, "5 records written")
            run.commit_now()
            labels = {"source": src, "target": tgt, "topic": remote, "partition": "0"}
            assert run.registry.get_sample_value("mirror_source_record_count_total", labels) == 5
        assert store.get("MirrorSourceConnector", partition) == {"offset": 9}
        produce(cluster_a.bootstrap, topic, [(b"late", b"late")])
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap,
                             connector="MirrorSourceConnector", offset_store=store) as run:
            wait_until(lambda: run.records_written() >= 1, 30, "1 record written after restart")
    replicated = consume_all(cluster_b.bootstrap, remote, expect=6)
    assert [r.value for r in replicated] == [f"value-{i}".encode() for i in range(5, 10)] + [b"late"]


@pytest.mark.parametrize("location", ["source", "target"])
def test_offset_syncs_location(cluster_a: Cluster, cluster_b: Cluster, location: str) -> None:
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("syncs"), partitions=1)
    produce(cluster_a.bootstrap, topic, 50)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": topic, "offset-syncs.topic.location": location,
                                    "offset.lag.max": "10"})
    on_source, on_target = f"mm2-offset-syncs.{tgt}.internal", f"mm2-offset-syncs.{src}.internal"
    with source_connector(config) as (connector, _):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap) as run:
            wait_until(lambda: run.records_written() >= 50, 30, "50 records written")
            run.commit_now()  # promotes the delayed sync of the last record (KAFKA-15906)
    bootstrap, sync_topic = ((cluster_a.bootstrap, on_source) if location == "source"
                             else (cluster_b.bootstrap, on_target))
    assert on_target not in topics(cluster_a.bootstrap) and on_source not in topics(cluster_b.bootstrap)
    records = consume_all(bootstrap, sync_topic)
    assert {r.partition for r in records} == {0}
    syncs = [OffsetSync.from_record(r.key, r.value) for r in records]
    assert all(s.topic_partition == (topic, 0) for s in syncs)
    # a fresh remote topic: downstream offsets equal upstream ones; first record and the last one synced
    assert all(s.upstream_offset == s.downstream_offset for s in syncs)
    assert syncs[0].upstream_offset == 0 and syncs[-1].upstream_offset == 49
    assert len(syncs) < 50  # offset.lag.max=10: not one per record


def test_remote_topic_gets_filtered_configs_at_creation(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Java's createAndTestNewTopicWithConfigFilter.

    Tansu reports explicitly set topic configs as DEFAULT_CONFIG (docs/tansu.md); with MM2's default
    use.defaults.from=target they would therefore count as defaults and not be copied, whereas Kafka
    reports them as DYNAMIC_TOPIC_CONFIG and copies them. use.defaults.from=source copies both kinds, so
    the filtering at creation is tested the same way on both brokers.
    """
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("with-config"), partitions=2,
                         config={"delete.retention.ms": "1000", "retention.bytes": "1000",
                                 "cleanup.policy": "compact"})
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": topic, "use.defaults.from": "source",
                                    "config.properties.exclude": r"delete\.retention\..*",
                                    "sync.topic.configs.enabled": "false"})
    with source_connector(config):
        remote_configs = topic_configs(cluster_b.bootstrap, f"{src}.{topic}")
    assert remote_configs.get("retention.bytes") == "1000"
    assert remote_configs.get("cleanup.policy") == "compact"
    assert remote_configs.get("delete.retention.ms") != "1000"  # excluded


def test_topic_config_sync_set_and_delete(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """Java's testSyncTopicConfigs / testReplicateTargetDefault, with a 1 s sync interval.

    SET: with use.defaults.from=source, a value changed on the remote is set back to the source value
    while an excluded property keeps its remote value.
    DELETE: with use.defaults.from=target, a source entry reported as a *default* becomes a DELETE of the
    remote override. On Kafka a default is a key the source topic does not override; Tansu reports
    explicit overrides as DEFAULT_CONFIG and reports nothing for other keys (docs/tansu.md), so the entry
    used here is an explicit one and the expectation follows what the source broker reports.
    """
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("sync-configs"), partitions=1,
                         config={"delete.retention.ms": "1000", "retention.bytes": "1000"})
    remote = f"{src}.{topic}"

    def remote_value(key: str) -> str | None:
        return topic_configs(cluster_b.bootstrap, remote).get(key)

    base = {"topics": topic, "config.properties.exclude": r"delete\.retention\..*",
            "sync.topic.configs.interval.seconds": "1"}
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={**base, "use.defaults.from": "source"})
    with source_connector(config):
        alter_topic_configs(cluster_b.bootstrap, remote,
                            {"retention.bytes": "2000", "delete.retention.ms": "2000"})
        wait_until(lambda: remote_value("retention.bytes") == "1000", 30,
                   "retention.bytes synced back to the source value")
        assert topic_configs(cluster_b.bootstrap, remote).get("delete.retention.ms") == "2000"

    source_reports_default = described_configs(cluster_a.bootstrap, topic)["retention.bytes"].is_default
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={**base, "use.defaults.from": "target"})
    alter_topic_configs(cluster_b.bootstrap, remote, {"retention.bytes": "3000"})
    with source_connector(config):
        if source_reports_default:  # Tansu: DELETE -> the remote override disappears
            wait_until(lambda: "retention.bytes" not in topic_configs(cluster_b.bootstrap, remote), 30,
                       "remote retention.bytes override deleted")
        else:  # Kafka: an explicit source override is SET
            wait_until(lambda: remote_value("retention.bytes") == "1000", 30, "retention.bytes synced")
        assert topic_configs(cluster_b.bootstrap, remote).get("delete.retention.ms") == "2000"


def test_partition_growth_unsupported_is_one_warning(cluster_a: Cluster, cluster_b: Cluster,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Partitions only grow; a target without CreatePartitions (Tansu) gets a warning, not a crash. That
    partitions really grow on a broker that can add them is asserted on Apache Kafka
    (tests/kafka/test_kafka_replication.py::test_partitions_added_on_the_source_are_added_on_the_target)."""
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("grow"), partitions=3)
    create_topic(cluster_b.bootstrap, f"{src}.{topic}", partitions=1)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    with caplog.at_level(logging.INFO), source_connector(config) as (connector, _):
        assert len(connector.task_configs(1)[0]["task.assigned.partitions"].split(",")) == 3
        sync = connector.topic_sync
        assert sync is not None
        for _ in range(2):  # later refreshes neither retry a refused growth nor ask for reconfiguration
            assert not sync.refresh_topic_partitions() or partitions_of(cluster_b, f"{src}.{topic}") == 3
    partitions = partitions_of(cluster_b, f"{src}.{topic}")
    if partitions == 1:  # the broker cannot add partitions (Tansu)
        warnings = [r for r in caplog.records
                    if r.levelno == logging.WARNING and f"{src}.{topic}" in r.getMessage()]
        assert len(warnings) == 1
    else:
        assert partitions == 3


def test_disabled_connector_has_no_tasks_and_touches_nothing(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("disabled"), partitions=1)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": topic, "enabled": "false"})
    with source_connector(config) as (connector, _):
        assert connector.task_configs(3) == []
    assert f"{src}.{topic}" not in topics(cluster_b.bootstrap)
    assert f"mm2-offset-syncs.{tgt}.internal" not in topics(cluster_a.bootstrap)


def test_new_topic_triggers_reconfiguration(cluster_a: Cluster, cluster_b: Cluster) -> None:
    src, tgt = aliases()
    # two names Java's topic order tells apart by their hashes alone (not by the broker's listing order)
    prefix = next(p for p in iter(lambda: unique("refresh"), None)
                  if len({spread(string_hash(f"{p}-{n}")) % 16 for n in (1, 2)}) == 2)
    first = create_topic(cluster_a.bootstrap, f"{prefix}-1", partitions=1)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": f"{prefix}-.*", "refresh.topics.interval.seconds": "1"})
    with source_connector(config) as (connector, context):
        assert connector.task_configs(1)[0]["task.assigned.partitions"] == f"{first}-0"
        second = create_topic(cluster_a.bootstrap, f"{prefix}-2", partitions=2)
        wait_until(lambda: context.reconfigurations >= 1, 30, "a task reconfiguration request")
        assert f"{src}.{second}" in topics(cluster_b.bootstrap)
        # dealt round-robin in Java's order of the two topics, partitions ascending
        known = [f"{t}-{p}" for t in describe_topics_order([first, second], [first, second])
                 for p in range(1 if t == first else 2)]
        assert [c["task.assigned.partitions"] for c in connector.task_configs(2)] == [f"{known[0]},{known[2]}",
                                                                                    known[1]]


class HeldCreationAdmin(TopicAdmin):
    """The target's remote-topic creation waits until the test releases it (a large cluster's creation)."""

    release = threading.Event()

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome:
        HeldCreationAdmin.release.wait(60)
        return super().create_topics(topics, deadline_s, stop)


def test_start_returns_before_the_remote_topics_exist_and_tasks_wait_for_them(cluster_a: Cluster,
                                                                              cluster_b: Cluster) -> None:
    """The runtime calls ``start`` on the herder's tick thread, which keeps the group membership alive: it
    must not wait for the creation of the remote topics. Tasks are configured once they exist."""
    src, tgt = aliases()
    prefix = unique("held")
    names = [create_topic(cluster_a.bootstrap, f"{prefix}-{i}", partitions=2) for i in range(3)]
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": f"{prefix}-.*"})
    HeldCreationAdmin.release.clear()
    connector = MirrorSourceConnector(admin_factory=HeldCreationAdmin)
    context = RecordingConnectorContext()
    connector.initialize(context)
    connector.start(config)
    try:
        with pytest.raises(RetriableError):
            connector.task_configs(2)
        assert not any(f"{src}.{name}" in topics(cluster_b.bootstrap) for name in names)
        assert context.reconfigurations == 0
        HeldCreationAdmin.release.set()
        wait_until(lambda: context.reconfigurations == 1, 30, "the connector asking for its task configs")
        assert {f"{src}.{name}" for name in names} <= topics(cluster_b.bootstrap)
        assert {name: len(admin(cluster_b.bootstrap).list_topics(f"{src}.{name}", timeout=10)
                          .topics[f"{src}.{name}"].partitions) for name in names} == dict.fromkeys(names, 2)
        assigned = [c["task.assigned.partitions"].split(",") for c in connector.task_configs(2)]
        assert sorted(tp for task in assigned for tp in task) == sorted(f"{n}-{p}" for n in names for p in range(2))
    finally:
        HeldCreationAdmin.release.set()
        connector.stop()


def test_metrics_partition_series_topic_sums_a_topics_partitions(cluster_a: Cluster, cluster_b: Cluster) -> None:
    """A task replicating a topic of 3 partitions with ``metrics.partition.series = topic`` exports one
    record-count series for the remote topic (the sum) and none per partition."""
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("summed"), partitions=3)
    for p in range(3):
        produce(cluster_a.bootstrap, topic, 4 + p, partition=p)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap,
                         overrides={"topics": topic, "metrics.partition.series": "topic"})
    with source_connector(config) as (connector, _):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, task_config, bootstrap_servers=cluster_b.bootstrap) as run:
            wait_until(lambda: run.records_written() >= 15, 30, "15 records written")
            labels = {"source": src, "target": tgt, "topic": f"{src}.{topic}"}
            value = run.registry.get_sample_value
            wait_until(lambda: value("mirror_source_record_count_total", {**labels, "partition": ""}) == 15, 30,
                       "the topic's record count summed")
            assert [value("mirror_source_record_count_total", {**labels, "partition": str(p)}) for p in range(3)] \
                == [None, None, None]


def test_metrics_partition_series_auto_counts_the_flow_through_tasks_max(cluster_a: Cluster,
                                                                         cluster_b: Cluster) -> None:
    """With ``auto`` (the default) a task of 3 partitions labels per partition alone, and per topic as one of
    ``tasks.max = 501``: evenly dealt, its flow has at least 2 x 501 + 1 = 1,003 partitions, above the bound."""
    src, tgt = aliases()
    topic = create_topic(cluster_a.bootstrap, unique("flowwide"), partitions=3)
    for p in range(3):
        produce(cluster_a.bootstrap, topic, 2 + p, partition=p)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    labels = {"source": src, "target": tgt, "topic": f"{src}.{topic}"}

    def counts(run: RunningSourceTask) -> tuple[list[float | None], float | None]:
        """The record count per partition, and summed per topic (``partition=""``)."""
        value = run.registry.get_sample_value
        per_partition = [value("mirror_source_record_count_total", {**labels, "partition": str(p)})
                         for p in range(3)]
        return per_partition, value("mirror_source_record_count_total", {**labels, "partition": ""})

    with source_connector(config) as (connector, _):
        [task_config] = connector.task_configs(1)
        with run_source_task(MirrorSourceTask, {**task_config, "tasks.max": "1"},
                             bootstrap_servers=cluster_b.bootstrap) as alone:
            wait_until(lambda: counts(alone) == ([2, 3, 4], None), 30, "a record count per partition")
        with run_source_task(MirrorSourceTask, {**task_config, "tasks.max": "501"},
                             bootstrap_servers=cluster_b.bootstrap) as one_of_many:
            wait_until(lambda: counts(one_of_many) == ([None, None, None], 9), 30, "the topic's count summed")


def test_the_backfill_marker_poll_keeps_one_consumer_and_sees_each_new_claim(
        cluster_a: Cluster, cluster_b: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connector reads the backfill marker topic every ``BACKFILL_MARKER_POLL_S`` for as long as it runs:
    one consumer serves every read (a client per read opened its threads and connections, and on a secured
    cluster its handshakes, every two seconds), each read still sees what was written since the last one (a
    claim reconfigures the tasks), and the consumer closes with the connector."""
    from confluent_kafka import Producer

    from connect_runtime.clients import registry
    from mirror.backfill_markers.markers import BACKFILLING, PartitionMarker, marker_topic, partition_marker_key
    from mirror.source import connector as source_connector_module

    monkeypatch.setattr(source_connector_module, "BACKFILL_MARKER_POLL_S", 0.1)
    component = "mirror.backfill_markers.marker_log"
    src, tgt = unique("mka"), unique("mkb")
    topic = create_topic(cluster_a.bootstrap, unique("mk"), partitions=2)
    config = flow_config(src, tgt, cluster_a.bootstrap, cluster_b.bootstrap, overrides={"topics": topic})
    created_before = registry.created_by()[component]
    with source_connector(config) as (_, context):
        time.sleep(2.0)  # about 20 polls
        assert registry.created_by()[component] - created_before == 1
        assert registry.open_clients()[(component, "consumer")] >= 1
        writer = Producer({"bootstrap.servers": cluster_b.bootstrap})  # not the factory's: it counts no client
        writer.produce(marker_topic(src), key=partition_marker_key(topic, 1), partition=0,
                       value=PartitionMarker(BACKFILLING, 0, 100, -1, -1).value())
        assert writer.flush(30) == 0
        wait_until(lambda: context.reconfigurations >= 1, 30, "the claim seen by a poll")
        assert registry.created_by()[component] - created_before == 1, "a poll opened a consumer of its own"
    assert registry.open_clients()[(component, "consumer")] == 0
