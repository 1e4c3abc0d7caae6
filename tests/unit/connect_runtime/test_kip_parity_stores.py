"""KIP-558 topic statuses, KIP-976 logger records and KIP-1017 stages over in-memory logs: the record
formats Java reads and writes, and the read-side rules (what resets a task's recorder, what a worker
applies). The end-to-end behaviour against real brokers is in tests/integration/test_rest_parity.py."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

import pytest

from connect_runtime.api.connector import SourceConnector
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.distributed.distributed_herder import ConfigChangeInbox
from connect_runtime.runtime.distributed.tick_executor import TickExecutor
from connect_runtime.runtime.task.topic_tracking import ActiveTopicRecorder
from connect_runtime.runtime.worker.log_levels import LogLevels
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.storage.status_store import KafkaStatusStore, TopicStatus, parse_topic_status_key
from tests.unit.connect_runtime.herder_fakes import FakeBroker
from tests.unit.connect_runtime.test_config_status_store_unit import config_store


def status_store(broker: FakeBroker) -> KafkaStatusStore:
    return KafkaStatusStore("status", producer_config={}, consumer_config={}, admin_config={},
                            log_factory=broker.log_factory)


def test_topic_status_record_is_javas() -> None:
    status = TopicStatus("orders", "mirror-source", 2, 1700000000123)
    assert status.key == b"status-topic-orders:connector-mirror-source"
    assert status.value() == (b'{"topic":{"name":"orders","connector":"mirror-source","task":2,'
                              b'"discoverTimestamp":1700000000123}}')
    assert TopicStatus.parse(json.loads(status.value())) == status
    assert parse_topic_status_key("status-topic-a.b:connector-c:connector-d") == ("a.b", "c:connector-d")
    assert parse_topic_status_key("status-task-c-0") is None


def test_recorder_writes_each_topic_once_and_again_after_a_reset() -> None:
    broker = FakeBroker()
    store, other_worker = status_store(broker), status_store(broker)
    store.start()
    other_worker.start()
    recorder = ActiveTopicRecorder(ConnectorTaskId("src", 1), store)
    recorder.record({"a", "b"})
    recorder.record({"a"})
    written = [r.key for r in broker.topics["status"]]
    assert sorted(written) == [b"status-topic-a:connector-src", b"status-topic-b:connector-src"]
    assert [t.topic for t in other_worker.get_all_topics("src")] == ["a", "b"]
    assert other_worker.get_topic("src", "a") is not None and other_worker.get_topic("src", "a").task == 1  # type: ignore[union-attr]

    other_worker.delete_topic("src", "a")  # PUT /connectors/src/topics/reset on another worker
    assert [t.topic for t in store.get_all_topics("src")] == ["b"]
    recorder.record({"a", "b"})
    assert [r.key for r in broker.topics["status"]][-1] == b"status-topic-a:connector-src"
    assert [t.topic for t in store.get_all_topics("src")] == ["a", "b"]
    assert len(broker.topics["status"]) == 4  # b was still known: not written again


def test_a_recorder_does_not_rewrite_what_another_task_recorded() -> None:
    broker = FakeBroker()
    store = status_store(broker)
    store.start()
    ActiveTopicRecorder(ConnectorTaskId("src", 0), store).record({"t"})
    ActiveTopicRecorder(ConnectorTaskId("src", 1), store).record({"t"})
    assert len(broker.topics["status"]) == 1 and store.get_all_topics("src")[0].task == 0


def test_malformed_topic_status_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    broker = FakeBroker()
    store = status_store(broker)
    store.start()
    broker.logs["status"][0].send_sync(b"status-topic-t:connector-c", b'{"topic":{"name":"t"}}')
    assert store.get_all_topics("c") == [] and "malformed topic status" in caplog.text


class LevelRecorder(ConfigChangeInbox):
    def __init__(self) -> None:
        self.levels: list[tuple[str, str]] = []
        super().__init__(lambda: None, lambda ns, level: self.levels.append((ns, level)))


def test_cluster_logger_level_records_reach_every_started_worker_only() -> None:
    broker = FakeBroker()
    writer, reader = config_store(broker), config_store(broker)
    writer.start()
    writer.put_logger_level("org.old", "ERROR")  # written before `reader` started: history
    inbox = LevelRecorder()
    reader.set_update_listener(inbox)
    reader.start()
    writer.put_logger_level("org.example", "DEBUG")  # not the leader's fenced writer: any worker writes
    assert [(r.key, r.value) for r in broker.topics["configs"]][-1] == (b"logger-cluster-org.example",
                                                                        b'{"level":"DEBUG"}')
    assert inbox.levels == [("org.example", "DEBUG")]


def test_applying_a_cluster_level() -> None:
    levels = LogLevels()
    name = "kip976.test.ns"
    child = logging.getLogger(name + ".child")
    levels.apply_cluster_level(name, "warn")
    assert logging.getLogger(name).level == logging.WARNING and child.level == logging.WARNING
    assert levels.last_modified(name) is not None
    levels.apply_cluster_level(name, "LOUD")  # unknown: ignored with a warning
    assert logging.getLogger(name).level == logging.WARNING


def test_plugins_beyond_connectors_are_listed_from_data() -> None:
    plugins = Plugins()
    plugins.register("Demo", type("Demo", (SourceConnector,), {}))
    plugins.register_plugin("transformation", "org.apache.kafka.connect.transforms.Filter", "1.0")
    connectors = plugins.plugins(connectors_only=True)
    everything = plugins.plugins(connectors_only=False)
    assert {p.type for p in connectors} <= {"source", "unknown"}
    others = [(p.class_name, p.type) for p in everything[len(connectors):]]
    converter = "org.apache.kafka.connect.converters.ByteArrayConverter"
    assert (converter, "converter") in others and (converter, "header_converter") in others
    assert ("org.apache.kafka.connect.transforms.Filter", "transformation") in others
    assert others == sorted(others, key=lambda o: (o[1], o[0]))


def test_stage_summary_reads_like_javas() -> None:
    ticks = TickExecutor("t", 1.0)
    with ticks.stage("reading to the end of internal topics"):
        assert ticks.current_stage is not None
        assert re.fullmatch(r"The worker is currently reading to the end of internal topics, which began at "
                            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.", ticks.current_stage.summarize())
    assert ticks.current_stage is not None
    assert ticks.current_stage.summarize().startswith(
        "The last operation the worker completed was reading to the end of internal topics, which began at ")


def test_health_is_unhealthy_while_the_tick_thread_is_stuck() -> None:
    """KIP-1017: a tick thread that cannot run a no-op request in time makes /health answer 500."""
    from connect_runtime.runtime.distributed.distributed_herder import probe_health

    ticks = TickExecutor("stuck", 5.0)
    release = threading.Event()
    stuck = threading.Event()

    def loop() -> None:
        while not ticks.stopping:
            with ticks.stage("ensuring membership in the cluster"):
                stuck.set()
                release.wait(10)
            ticks.run_pending()
            ticks.idle(0.05)

    ticks.start(loop)
    assert stuck.wait(5)
    health: Any = probe_health(ticks, failed=False, ready=True, timeout_s=0.2)
    assert health.status == "unhealthy"
    assert health.message.startswith("Worker was unable to handle this request and may be unable to handle "
                                     "other requests. The worker is currently ensuring membership in the cluster")
    release.set()
    assert probe_health(ticks, failed=False, ready=True, timeout_s=5).status == "healthy"
    starting = probe_health(ticks, failed=False, ready=False, timeout_s=5)
    assert starting.status == "starting" and starting.message.startswith("Worker is still starting up.")
    ticks.request_stop()
    assert ticks.join(5)


def test_herder_topic_endpoints_follow_the_worker_keys() -> None:
    """Off: Connect's 403 for both; reset not allowed: 403 for the reset only; on: read from and
    tombstoned in the status topic."""
    from connect_runtime.api.errors import ForbiddenError
    from connect_runtime.runtime.task.topic_tracking import TopicTracking
    from tests.unit.connect_runtime.test_distributed_herder import Cluster

    cluster = Cluster()
    cluster.status_store.start()
    herder = cluster.herder
    ActiveTopicRecorder(ConnectorTaskId("c", 0), cluster.status_store).record({"t2", "t1"})
    with pytest.raises(ForbiddenError, match=r"Topic tracking is disabled\."):
        herder.connector_active_topics("c")
    with pytest.raises(ForbiddenError, match=r"Topic tracking is disabled\."):
        herder.reset_connector_active_topics("c")
    herder.topic_tracking = TopicTracking(enabled=True, allow_reset=False)
    assert list(herder.connector_active_topics("c")) == ["t1", "t2"]
    assert list(herder.connector_active_topics("unknown")) == []
    with pytest.raises(ForbiddenError, match=r"Topic tracking reset is disabled\."):
        herder.reset_connector_active_topics("c")
    herder.topic_tracking = TopicTracking()
    herder.reset_connector_active_topics("c")
    assert list(herder.connector_active_topics("c")) == []
    assert [r.value for r in cluster.broker.topics["status"]][-2:] == [None, None]
