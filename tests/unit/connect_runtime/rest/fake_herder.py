"""FakeHerder: an in-memory :class:`Herder`, the REST layer's collaborator seam in unit tests.

It keeps connectors, task configs, target states and offsets in dicts, records every call in
``calls`` as ``(method, args...)``, and can be told to raise any error from a method
(``fail("put_connector_config", NotLeaderError(...))``) to exercise error mapping and forwarding.
It implements the whole contract (internal endpoints too: session key, task configs, fencing) and
keeps the defaults of the optional capabilities (topic tracking 403, no cluster logger levels).
The real herder is tested end to end against real brokers elsewhere; this fake only pins the
REST layer's own contract: statuses, JSON shapes, validation, forwarding.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.errors import AlreadyExistsError, BadRequestError, NotFoundError
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.runtime.herder import (
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    Created,
    Herder,
    PluginInfo,
    TaskInfo,
    TaskStateInfo,
    WorkerHealth,
)

PLUGINS = [PluginInfo("org.apache.kafka.connect.mirror.MirrorSourceConnector", "source", "3.9.0"),
           PluginInfo("org.apache.kafka.connect.mirror.MirrorHeartbeatConnector", "source", "3.9.0")]
CONVERTERS = [PluginInfo("org.apache.kafka.connect.converters.ByteArrayConverter", "converter")]
PLUGIN_CONFIG = [{"name": "topics", "type": "LIST", "required": False, "default_value": ".*",
                  "importance": "HIGH", "documentation": "Topics to replicate.", "group": None, "order": -1,
                  "width": "NONE", "display_name": "topics", "dependents": []}]


class FakeHerder(Herder):
    def __init__(self, worker: str = "worker-1:8083", cluster_id: str | None = "cluster-A") -> None:
        self.worker = worker
        self.cluster_id = cluster_id
        self.calls: list[tuple[Any, ...]] = []
        self.errors: dict[str, BaseException] = {}
        self.health_state = WorkerHealth("healthy", "Worker has completed startup")
        self.configs: dict[str, dict[str, str]] = {}
        self.target: dict[str, TargetState] = {}
        self.offsets: dict[str, list[ConnectorOffset]] = {}
        self.key: bytes | None = b"session-key-0123456789abcdef"
        self.task_config_writes: list[tuple[str, list[dict[str, str]]]] = []
        self._lock = threading.Lock()

    # -- test controls ------------------------------------------------------------------------------
    def fail(self, method: str, error: BaseException) -> None:
        """Make every later call of ``method`` raise ``error``."""
        self.errors[method] = error

    def _call(self, method: str, *args: Any) -> None:
        with self._lock:
            self.calls.append((method, *args))
        error = self.errors.get(method)
        if error is not None:
            raise error

    def called(self, method: str) -> list[tuple[Any, ...]]:
        return [c[1:] for c in self.calls if c[0] == method]

    def _config(self, name: str) -> dict[str, str]:
        if name not in self.configs:
            raise NotFoundError(f"Connector {name} not found")
        return self.configs[name]

    def _tasks(self, name: str) -> list[ConnectorTaskId]:
        if self.target.get(name) is TargetState.STOPPED:
            return []
        return [ConnectorTaskId(name, i) for i in range(int(self._config(name).get("tasks.max", "1")))]

    # -- Herder -------------------------------------------------------------------------------------
    def worker_id(self) -> str:
        return self.worker

    def kafka_cluster_id(self) -> str | None:
        return self.cluster_id

    def health(self) -> WorkerHealth:
        self._call("health")
        return self.health_state

    def connectors(self) -> list[str]:
        self._call("connectors")
        return sorted(self.configs)

    def connector_info(self, name: str) -> ConnectorInfo:
        self._call("connector_info", name)
        return ConnectorInfo(name, dict(self._config(name)), self._tasks(name))

    def connector_config(self, name: str) -> dict[str, str]:
        self._call("connector_config", name)
        return dict(self._config(name))

    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        self._call("put_connector_config", name, dict(config), allow_replace, initial_state)
        exists = name in self.configs
        if exists and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.configs[name] = dict(config)
        if not exists:
            self.target[name] = initial_state or TargetState.STARTED
        return Created(not exists, ConnectorInfo(name, dict(config), self._tasks(name)))

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        self._call("patch_connector_config", name, dict(patch))
        config = self._config(name)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return ConnectorInfo(name, dict(config), self._tasks(name))

    def delete_connector(self, name: str) -> None:
        self._call("delete_connector", name)
        self._config(name)
        del self.configs[name]

    def _state(self, name: str) -> State:
        return {TargetState.STARTED: State.RUNNING, TargetState.PAUSED: State.PAUSED,
                TargetState.STOPPED: State.STOPPED}[self.target.get(name, TargetState.STARTED)]

    def connector_status(self, name: str) -> ConnectorStateInfo:
        self._call("connector_status", name)
        state = self._state(name)
        tasks = [TaskStateInfo(t.task, state, self.worker) for t in self._tasks(name)]
        return ConnectorStateInfo(name, state, self.worker, tasks)

    def task_status(self, task: ConnectorTaskId) -> TaskStateInfo:
        self._call("task_status", task)
        if task not in self._tasks(task.connector):
            raise NotFoundError(f"No status found for task {task}")
        return TaskStateInfo(task.task, State.FAILED, self.worker, trace="java.lang.RuntimeException: boom")

    def task_configs(self, name: str) -> list[TaskInfo]:
        self._call("task_configs", name)
        base = self._config(name)
        return [TaskInfo(t, {**base, "task.id": str(t.task)}) for t in self._tasks(name)]

    def restart_connector(self, name: str, include_tasks: bool,
                          only_failed: bool) -> ConnectorStateInfo | None:
        self._call("restart_connector", name, include_tasks, only_failed)
        self._config(name)
        if not include_tasks and not only_failed:
            return None
        tasks = [TaskStateInfo(t.task, State.RESTARTING, self.worker) for t in self._tasks(name)]
        return ConnectorStateInfo(name, State.RESTARTING, self.worker, tasks)

    def restart_task(self, task: ConnectorTaskId) -> None:
        self._call("restart_task", task)
        if task not in self._tasks(task.connector):
            raise NotFoundError(f"Task {task} not found")

    def pause_connector(self, name: str) -> None:
        self._call("pause_connector", name)
        self._config(name)
        self.target[name] = TargetState.PAUSED

    def resume_connector(self, name: str) -> None:
        self._call("resume_connector", name)
        self._config(name)
        self.target[name] = TargetState.STARTED

    def stop_connector(self, name: str) -> None:
        self._call("stop_connector", name)
        self._config(name)
        self.target[name] = TargetState.STOPPED

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        self._call("connector_offsets", name)
        self._config(name)
        return list(self.offsets.get(name, []))

    def _require_stopped(self, name: str) -> None:
        self._config(name)
        if self.target.get(name) is not TargetState.STOPPED:
            raise BadRequestError("Connectors must be in the STOPPED state before their offsets can be "
                                  "modified.")

    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        self._call("alter_connector_offsets", name, offsets)
        self._require_stopped(name)
        self.offsets[name] = list(offsets)

    def reset_connector_offsets(self, name: str) -> None:
        self._call("reset_connector_offsets", name)
        self._require_stopped(name)
        self.offsets[name] = []

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        self._call("connector_plugins", connectors_only)
        return PLUGINS if connectors_only else PLUGINS + CONVERTERS

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        self._call("plugin_config", plugin)
        if not any(p.class_name.endswith(plugin) for p in PLUGINS):
            raise NotFoundError(f"Unknown plugin {plugin}")
        return PLUGIN_CONFIG

    def validate_connector_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        self._call("validate_connector_config", dict(config), plugin)
        configs = [{"definition": {"name": k, "type": "PASSWORD" if k.endswith("password") else "STRING"},
                    "value": {"name": k, "value": v, "recommended_values": [], "errors": [], "visible": True}}
                   for k, v in sorted(config.items())]
        return ConfigInfos(plugin or config.get("connector.class", ""), 0, ["Common"], configs)

    # -- internal endpoints (connect_runtime.runtime.herder.InternalHerder) ------------------------
    def session_key(self) -> bytes | None:
        return self.key

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        self._call("put_task_configs", connector, configs)
        self.task_config_writes.append((connector, configs))

    def fence_zombies(self, connector: str) -> None:
        self._call("fence_zombies", connector)
        self._config(connector)
