"""Worker connector lifecycle without brokers: start, target states, context callbacks, failures."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from connect_runtime.api.config_provider import build_providers, resolve
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import ConflictError, ConnectError, NotFoundError
from connect_runtime.api.task import Task
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.status import RecordingStatusListener
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.storage.memory import MemoryOffsetStore
from connect_runtime.testing.sequence_source import SequenceSourceTask


class RecordingConnector(SourceConnector):
    """Keeps every call, so tests can see what the worker did to it."""

    instances: list[RecordingConnector] = []

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.config: dict[str, str] = {}
        RecordingConnector.instances.append(self)

    def start(self, config: Mapping[str, str]) -> None:
        self.calls.append("start")
        self.config = dict(config)
        if config.get("fail.start") == "true":
            raise RuntimeError("cannot reach the source cluster")

    def task_class(self) -> type[Task]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        self.calls.append("task_configs")
        count = max_tasks + int(self.config.get("extra.tasks", "0"))
        return [{"topic": "t", "n": str(i)} for i in range(count)]

    def stop(self) -> None:
        self.calls.append("stop")


CLASS = f"{__name__}.RecordingConnector"


class JavaNamedConnector(RecordingConnector):
    """Stores its task configs under a Java class name, as MM2's connectors do for Java MirrorMaker."""

    def stored_task_class(self) -> str:
        return "org.apache.kafka.connect.mirror.MirrorSourceTask"


@pytest.fixture
def listener() -> RecordingStatusListener:
    return RecordingStatusListener()


@pytest.fixture
def worker(listener: RecordingStatusListener) -> Worker:
    RecordingConnector.instances.clear()
    providers = build_providers({"config.providers": "env",
                                 "config.providers.env.class": "EnvVarConfigProvider"})
    metrics = ConnectMetrics.create(CollectorRegistry())
    return Worker("w1", MemoryOffsetStore(), Plugins(), metrics, listener,
                  {"bootstrap.servers": "127.0.0.1:1"}, config_transformer=lambda c: resolve(c, providers))


def test_start_connector_resolves_placeholders_and_reports_running(
        worker: Worker, listener: RecordingStatusListener, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_PASSWORD", "s3cret")
    assert worker.start_connector("c", {"connector.class": CLASS, "sasl.password": "${env:SOURCE_PASSWORD}"},
                                  TargetState.STARTED, lambda name: None)
    connector = RecordingConnector.instances[-1]
    assert connector.config["sasl.password"] == "s3cret"
    assert listener.state("c") is State.RUNNING
    assert worker.is_running("c") and worker.connector_names() == ["c"]
    with pytest.raises(ConflictError):
        worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)


def test_the_connector_context_carries_the_workers_metrics_registry(listener: RecordingStatusListener) -> None:
    registry = CollectorRegistry()
    worker = Worker("w1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(CollectorRegistry()), listener,
                    {}, metrics_registry=registry)
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    assert RecordingConnector.instances[-1].context.metrics_registry is registry


def test_a_worker_without_a_registry_gives_its_plugins_a_private_one(worker: Worker) -> None:
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    registry = RecordingConnector.instances[-1].context.metrics_registry
    assert isinstance(registry, CollectorRegistry) and registry is not REGISTRY


def test_task_configs_carry_the_task_class_and_respect_tasks_max(worker: Worker) -> None:
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    configs = worker.connector_task_configs("c", 2)
    assert [c["n"] for c in configs] == ["0", "1"]
    assert {c["task.class"] for c in configs} == {f"{SequenceSourceTask.__module__}.SequenceSourceTask"}
    worker.start_connector("greedy", {"connector.class": CLASS, "extra.tasks": "1"}, TargetState.STARTED,
                           lambda name: None)
    with pytest.raises(ConnectError, match=r"more than tasks\.max=2"):
        worker.connector_task_configs("greedy", 2)
    with pytest.raises(NotFoundError):
        worker.connector_task_configs("nope", 1)


def test_a_connector_names_the_task_class_its_task_configs_store(worker: Worker) -> None:
    worker.start_connector("c", {"connector.class": f"{__name__}.JavaNamedConnector"}, TargetState.STARTED,
                           lambda name: None)
    configs = worker.connector_task_configs("c", 2)
    assert {c["task.class"] for c in configs} == {"org.apache.kafka.connect.mirror.MirrorSourceTask"}


def test_pause_stops_the_instance_and_resume_starts_it_again(worker: Worker,
                                                               listener: RecordingStatusListener) -> None:
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    connector = RecordingConnector.instances[-1]
    worker.set_target_state("c", TargetState.PAUSED)
    assert listener.state("c") is State.PAUSED and not worker.is_running("c")
    with pytest.raises(ConnectError, match="PAUSED"):
        worker.connector_task_configs("c", 1)
    worker.set_target_state("c", TargetState.STARTED)
    worker.set_target_state("c", TargetState.STOPPED)
    assert listener.state("c") is State.STOPPED
    assert connector.calls == ["start", "stop", "start", "stop"]
    assert [e.state for e in listener.events] == [State.RUNNING, State.PAUSED, State.RUNNING, State.STOPPED]


def test_connector_created_paused_is_not_started_until_resumed(worker: Worker,
                                                               listener: RecordingStatusListener) -> None:
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.PAUSED, lambda name: None)
    connector = RecordingConnector.instances[-1]
    assert connector.calls == [] and listener.state("c") is State.PAUSED
    worker.set_target_state("c", TargetState.STARTED)
    assert connector.calls == ["start"] and listener.state("c") is State.RUNNING


def test_context_reconfiguration_request_and_raised_error(worker: Worker,
                                                          listener: RecordingStatusListener) -> None:
    requests: list[str] = []
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, requests.append)
    connector = RecordingConnector.instances[-1]
    connector.context.request_task_reconfiguration()
    assert requests == ["c"]
    connector.context.raise_error(ValueError("topic filter broke"))
    event = listener.last("c")
    assert event is not None and event.state is State.FAILED
    assert "ValueError: topic filter broke" in (event.trace or "")
    assert not worker.is_running("c")


def test_offset_reader_of_a_connector_sees_only_its_own_offsets(worker: Worker) -> None:
    worker.offset_store.put("c", [({"task": 0}, {"seq": 4})])
    worker.offset_store.put("other", [({"task": 0}, {"seq": 9})])
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    reader = RecordingConnector.instances[-1].context.offset_storage_reader()
    assert reader.offset({"task": 0}) == {"seq": 4}
    assert reader.offsets([{"task": 0}, {"task": 1}]) == [({"task": 0}, {"seq": 4}), ({"task": 1}, None)]


def test_start_failures_report_failed_with_the_trace(worker: Worker,
                                                     listener: RecordingStatusListener) -> None:
    assert not worker.start_connector("bad", {"connector.class": CLASS, "fail.start": "true"},
                                      TargetState.STARTED, lambda name: None)
    assert listener.state("bad") is State.FAILED
    assert "RuntimeError: cannot reach the source cluster" in (listener.last("bad").trace or "")  # type: ignore[union-attr]

    assert not worker.start_connector("unknown", {"connector.class": "com.example.Missing"},
                                      TargetState.STARTED, lambda name: None)
    assert "NotFoundError" in (listener.last("unknown").trace or "")  # type: ignore[union-attr]

    worker.stop_connector("bad")  # a FAILED connector keeps its FAILED status when it leaves
    assert listener.state("bad") is State.FAILED


def test_stop_connector_stops_the_instance_and_reports_unassigned(worker: Worker,
                                                                  listener: RecordingStatusListener) -> None:
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    worker.stop_connector("c")
    assert RecordingConnector.instances[-1].calls == ["start", "stop"]
    assert listener.state("c") is State.UNASSIGNED and worker.connector_names() == []


def test_java_task_class_falls_back_to_the_connector_task_class(worker: Worker,
                                                               listener: RecordingStatusListener) -> None:
    task_id = ConnectorTaskId("c", 0)
    java = {"task.class": "org.apache.kafka.connect.mirror.MirrorSourceTask", "topic": "t"}
    assert worker.start_task(task_id, {"connector.class": CLASS}, java, TargetState.PAUSED)
    task = worker.task(task_id)
    assert task is not None and isinstance(task._task, SequenceSourceTask)
    worker.stop_tasks([task_id], 10)
    assert listener.state(task_id) is State.UNASSIGNED


def test_task_that_cannot_be_created_reports_failed(worker: Worker,
                                                    listener: RecordingStatusListener) -> None:
    task_id = ConnectorTaskId("c", 0)
    assert not worker.start_task(task_id, {"connector.class": "nope.Missing"}, {"task.class": "nope.Missing"},
                                 TargetState.STARTED)
    assert listener.state(task_id) is State.FAILED
    assert worker.task_ids() == []


def test_connector_start_ups_are_counted_by_result(listener: RecordingStatusListener) -> None:
    registry = CollectorRegistry()
    worker = Worker("w1", MemoryOffsetStore(), Plugins(), ConnectMetrics.create(registry), listener, {})
    worker.start_connector("c", {"connector.class": CLASS}, TargetState.STARTED, lambda name: None)
    worker.start_connector("bad", {"connector.class": "no.such.Connector"}, TargetState.STARTED, lambda name: None)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("connect_worker_connector_startup_total", result="success") == 1
    assert value("connect_worker_connector_startup_total", result="failure") == 1
    assert value("connect_worker_connector_count") == 1
    worker.stop_connector("c")
    assert value("connect_worker_connector_count") == 0
