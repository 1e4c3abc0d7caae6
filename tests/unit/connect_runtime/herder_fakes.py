"""In-memory stand-ins for the herder's collaborators (no sockets): a KafkaBasedLog over a shared dict,
a Worker that records calls and reports statuses (KIP-875 offset changes go to a real Worker's
``modify_connector_offsets``), and an offset store.

FakeLog delivers each write synchronously to every started log of the same topic, in write order, so a
second store instance on the same topic sees what the first wrote, as with a real compacted topic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.errors import RetriableError
from connect_runtime.api.records import SourceMap
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.metrics import ConnectMetrics
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.runtime.worker.worker import Worker
from connect_runtime.storage.config_records import SessionKey
from connect_runtime.storage.kafka_log import LogRecord
from connect_runtime.storage.memory import MemoryOffsetStore


class FakeBroker:
    def __init__(self) -> None:
        self.topics: dict[str, list[LogRecord]] = {}
        self.logs: dict[str, list[FakeLog]] = {}
        self.lock = threading.RLock()

    def log_factory(self, topic: str, **kwargs: Any) -> FakeLog:
        return FakeLog(self, topic, kwargs["consumed"], kwargs)


class FakeLog:
    def __init__(self, broker: FakeBroker, topic: str, consumed: Callable[[LogRecord], None],
                 options: dict[str, Any]) -> None:
        self.broker = broker
        self.topic = topic
        self.consumed = consumed
        self.options = options
        self.started = False

    def start(self, timeout_s: float = 120.0) -> None:
        with self.broker.lock:
            for record in self.broker.topics.setdefault(self.topic, []):
                self.consumed(record)
            self.broker.logs.setdefault(self.topic, []).append(self)
            self.started = True

    def stop(self) -> None:
        with self.broker.lock:
            if self in self.broker.logs.get(self.topic, []):
                self.broker.logs[self.topic].remove(self)
            self.started = False

    def send(self, key: bytes | None, value: bytes | None, callback: Any = None,
             partition: int | None = None) -> None:
        record = self.send_sync(key, value)
        if callback is not None:
            callback(None, record)

    def send_sync(self, key: bytes | None, value: bytes | None, timeout_s: float = 30.0,
                  partition: int | None = None) -> LogRecord:
        with self.broker.lock:
            records = self.broker.topics.setdefault(self.topic, [])
            record = LogRecord(self.topic, 0, len(records), key, value, 0)
            records.append(record)
            for log in list(self.broker.logs.get(self.topic, [])):
                log.consumed(record)
        return record

    def flush(self, timeout_s: float = 30.0) -> None:
        pass

    def read_to_end(self, timeout_s: float = 30.0) -> None:
        pass

    def wait_until_consumed(self, offsets: Mapping[int, int], timeout_s: float = 30.0) -> None:
        """Writes are delivered synchronously: a record written is consumed already."""
        with self.broker.lock:
            written = len(self.broker.topics.get(self.topic, []))
        assert all(offset < written for offset in offsets.values()), (offsets, written)


class FakeWorker:
    """Records what the herder asks and reports statuses the way the real Worker does."""

    def __init__(self, listener: Any, offset_store: MemoryOffsetStore | None = None,
                 plugins: Plugins | None = None) -> None:
        self.listener = listener
        self.offset_store = offset_store
        self.plugins = plugins
        self.calls: list[tuple[Any, ...]] = []
        self.connectors: dict[str, TargetState] = {}
        self.tasks: dict[ConnectorTaskId, Mapping[str, str]] = {}
        #: What each task was last started with to run once its producer is up (exactly-once), if anything.
        self.post_producer_checks: dict[ConnectorTaskId, Callable[[], None] | None] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self.failures_before_success: dict[str, int] = {}
        self.reconfigure: dict[str, Callable[[], None]] = {}  # name -> trigger
        self.lock = threading.Lock()

    def start(self) -> None:
        """Like the real Worker, starts the offset store."""
        self.calls.append(("start",))
        if self.offset_store is not None:
            self.offset_store.start()

    def stop(self) -> None:
        self.calls.append(("stop",))
        if self.offset_store is not None:
            self.offset_store.stop()

    def start_connector(self, name: str, config: Mapping[str, str], target_state: TargetState,
                        on_reconfigure: Callable[[str], None]) -> bool:
        with self.lock:
            self.calls.append(("start_connector", name, target_state))
            self.connectors[name] = target_state
            self.reconfigure[name] = lambda: on_reconfigure(name)
        self._report(name, target_state)
        return True

    def _report(self, name: str, state: TargetState) -> None:
        if state is TargetState.STARTED:
            self.listener.on_connector_startup(name)
        elif state is TargetState.PAUSED:
            self.listener.on_connector_pause(name)
        else:
            self.listener.on_connector_stop(name)

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        self.calls.append(("task_configs", name, max_tasks))
        remaining = self.failures_before_success.get(name, 0)
        if remaining:
            self.failures_before_success[name] = remaining - 1
            raise RetriableError("not ready yet")
        return [dict(c) for c in self.task_configs.get(name, [])][:max_tasks]

    def stop_connector(self, name: str) -> None:
        with self.lock:
            self.calls.append(("stop_connector", name))
            self.connectors.pop(name, None)
        self.listener.on_connector_shutdown(name)

    def start_task(self, task: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target_state: TargetState,
                   post_producer_check: Callable[[], None] | None = None) -> bool:
        with self.lock:
            self.calls.append(("start_task", task, target_state))
            self.tasks[task] = task_config
            self.post_producer_checks[task] = post_producer_check
        if target_state is TargetState.PAUSED:
            self.listener.on_task_pause(task)
        else:
            self.listener.on_task_startup(task)
        return True

    def stop_tasks(self, ids: Sequence[ConnectorTaskId], timeout_s: float) -> None:
        with self.lock:
            self.calls.append(("stop_tasks", tuple(sorted(ids))))
            for task in ids:
                self.tasks.pop(task, None)
        for task in ids:
            self.listener.on_task_shutdown(task)

    def set_target_state(self, name: str, state: TargetState) -> None:
        with self.lock:
            self.calls.append(("set_target_state", name, state))
            self.connectors[name] = state
        self._report(name, state)
        for task in [t for t in self.tasks if t.connector == name]:
            if state is TargetState.PAUSED:
                self.listener.on_task_pause(task)
            elif state is TargetState.STARTED:
                self.listener.on_task_resume(task)

    def modify_connector_offsets(self, name: str, config: Mapping[str, str],
                                 offsets: Sequence[tuple[SourceMap, Mapping[str, Any] | None]] | None,
                                 fence: Callable[[], None] | None = None) -> None:
        """Recorded, then done by a real Worker over this fake's plugins and offset store."""
        self.calls.append(("modify_connector_offsets", name))
        assert self.offset_store is not None and self.plugins is not None, "offsets need a store and plugins"
        worker = Worker("fake", self.offset_store, self.plugins, ConnectMetrics.create(CollectorRegistry()),
                        self.listener, {})
        worker.modify_connector_offsets(name, config, offsets, fence)

    def started(self, kind: str) -> list[Any]:
        return [c[1] for c in self.calls if c[0] == kind]


class RecordingForwarder(TaskConfigForwarder):
    """The real forwarder (its thread, its queue) with the HTTP POST replaced by a record of it."""

    def __init__(self) -> None:
        super().__init__(timeout_s=1.0)
        self.sent: list[tuple[str, str, list[dict[str, str]], bytes]] = []

    def send(self, leader_url: str, connector: str, configs: list[dict[str, str]], session_key: SessionKey) -> None:
        self.sent.append((leader_url, connector, list(configs), session_key.key))
