"""The Worker running a connector and its tasks against a real broker, as the herder drives it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pytest
from prometheus_client import CollectorRegistry

from connect_runtime.api.records import SourceRecord
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.storage.kafka_offset_store import KafkaOffsetStore
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.sequence_source import SequenceSourceConnector, SequenceSourceTask
from tests.conftest import Cluster
from tests.support.kafka import consume_all, create_topic, unique, wait_until

pytestmark = pytest.mark.integration


class FlakySequenceTask(SequenceSourceTask):
    """Raises from poll() once it reached ``fail.at`` (when set)."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.fail_at = int(config.get("fail.at", "-1"))

    def poll(self) -> list[SourceRecord] | None:
        if 0 <= self.fail_at <= self._next_seq:
            raise RuntimeError(f"source went away at seq {self._next_seq}")
        return super().poll()


class FlakySequenceConnector(SequenceSourceConnector):
    def task_class(self) -> type[FlakySequenceTask]:
        return FlakySequenceTask


@pytest.fixture
def parts(cluster_a: Cluster) -> Iterator[tuple[Worker, RecordingStatusListener, CollectorRegistry]]:
    listener = RecordingStatusListener()
    registry = CollectorRegistry()
    worker = Worker("worker-1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(registry), listener,
                    {"bootstrap.servers": cluster_a.bootstrap}, offset_flush_interval_ms=500)
    worker.start()
    yield worker, listener, registry
    worker.stop()


def seqs_by_task(bootstrap: str, topic: str, expect: int) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for record in consume_all(bootstrap, topic, expect=expect):
        value = json.loads(record.value or b"{}")
        out.setdefault(value["task"], []).append(value["seq"])
    return out


def test_connector_with_two_tasks_writes_commits_pauses_and_stops(
        cluster_a: Cluster, parts: tuple[Worker, RecordingStatusListener, CollectorRegistry]) -> None:
    worker, listener, registry = parts
    topic = create_topic(cluster_a.bootstrap, unique("worker-seq"), partitions=2)
    config = {"name": "seq", "connector.class": "SequenceSourceConnector", "tasks.max": "2", "topic": topic,
              "max.records": "1000"}
    assert worker.start_connector("seq", config, TargetState.STARTED, lambda name: None)
    ids = [ConnectorTaskId("seq", i) for i in range(2)]
    for task_id, task_config in zip(ids, worker.connector_task_configs("seq", 2), strict=True):
        assert worker.start_task(task_id, config, task_config, TargetState.STARTED)
    assert worker.task_ids() == ids

    store = worker.offset_store
    wait_until(lambda: all(store.get("seq", {"task": i}) == {"seq": 999} for i in range(2)), 60,
               "both tasks to commit their last seq")
    assert seqs_by_task(cluster_a.bootstrap, topic, 2000) == {0: list(range(1000)), 1: list(range(1000))}
    assert all(listener.state(t) is State.RUNNING for t in ids)
    starts = [registry.get_sample_value("connect_task_starts_total", {"connector": "seq", "task": str(i)})
              for i in range(2)]
    assert starts == [1.0, 1.0]

    worker.set_target_state("seq", TargetState.PAUSED)
    wait_until(lambda: all(listener.state(t) is State.PAUSED for t in ids), 10, "tasks paused")
    assert listener.state("seq") is State.PAUSED
    worker.set_target_state("seq", TargetState.STARTED)
    wait_until(lambda: all(listener.state(t) is State.RUNNING for t in ids), 10, "tasks resumed")

    worker.stop_tasks(ids, 30)
    assert worker.task_ids() == []
    assert all(listener.state(t) is State.UNASSIGNED for t in ids)
    worker.stop_connector("seq")
    assert listener.state("seq") is State.UNASSIGNED


def test_failed_task_reports_its_trace_and_restarts_where_it_left_off(
        cluster_a: Cluster, parts: tuple[Worker, RecordingStatusListener, CollectorRegistry]) -> None:
    worker, listener, _ = parts
    topic = create_topic(cluster_a.bootstrap, unique("worker-flaky"))
    config = {"name": "flaky", "connector.class": f"{__name__}.FlakySequenceConnector", "tasks.max": "1",
              "topic": topic, "batch.size": "100"}
    assert worker.start_connector("flaky", config, TargetState.STARTED, lambda name: None)
    task_id = ConnectorTaskId("flaky", 0)
    [task_config] = worker.connector_task_configs("flaky", 1)
    assert task_config["task.class"] == f"{__name__}.FlakySequenceTask"
    assert worker.start_task(task_id, config, {**task_config, "fail.at": "300"}, TargetState.STARTED)
    wait_until(lambda: listener.state(task_id) is State.FAILED, 30, "the task to fail")
    event = listener.last(task_id)
    assert event is not None and "RuntimeError: source went away at seq 300" in (event.trace or "")
    assert worker.offset_store.get("flaky", {"task": 0}) == {"seq": 299}

    # The herder's restart: stop the failed task, start it again with its (fixed) config.
    worker.stop_tasks([task_id], 10)
    assert worker.start_task(task_id, config, {**task_config, "max.records": "500"}, TargetState.STARTED)
    wait_until(lambda: worker.offset_store.get("flaky", {"task": 0}) == {"seq": 499}, 60, "seq 499 committed")
    assert listener.state(task_id) is State.RUNNING
    assert seqs_by_task(cluster_a.bootstrap, topic, 500) == {0: list(range(500))}


def test_offsets_survive_a_worker_restart_through_the_offsets_topic(cluster_a: Cluster) -> None:
    topic = create_topic(cluster_a.bootstrap, unique("worker-restart"))
    offsets_topic = unique("connect-offsets")
    base = {"bootstrap.servers": cluster_a.bootstrap}
    config = {"name": "seq", "connector.class": "SequenceSourceConnector", "tasks.max": "1", "topic": topic}
    task_id = ConnectorTaskId("seq", 0)

    def run_worker(max_records: int) -> None:
        store = KafkaOffsetStore(offsets_topic, producer_config=base, consumer_config=base, admin_config=base,
                                 partitions=5, replication_factor=1)
        worker = Worker("worker-1", store, Plugins(), ConnectMetrics.create(CollectorRegistry()),
                        RecordingStatusListener(), base, offset_flush_interval_ms=500)
        worker.start()  # loads the offsets topic
        try:
            connector_config = {**config, "max.records": str(max_records)}
            assert worker.start_connector("seq", connector_config, TargetState.STARTED, lambda name: None)
            [task_config] = worker.connector_task_configs("seq", 1)
            assert worker.start_task(task_id, connector_config, task_config, TargetState.STARTED)
            wait_until(lambda: store.get("seq", {"task": 0}) == {"seq": max_records - 1}, 60,
                       f"seq {max_records - 1} committed")
        finally:
            worker.stop()

    run_worker(2000)
    run_worker(3000)  # a new process: only the offsets topic says where the first one stopped
    assert seqs_by_task(cluster_a.bootstrap, topic, 3000) == {0: list(range(3000))}
