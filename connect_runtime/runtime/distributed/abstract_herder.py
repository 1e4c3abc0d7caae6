"""What every herder answers the same way from the stores (Java's ``AbstractHerder``).

Reads never go through the tick thread: connector configs come from the config store's latest
snapshot, statuses from the status store and offsets from the offset store, all thread-safe and all
fed by topics every worker reads in full, so any worker can answer them. Validation
and plugin listings need only the plugin registry.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from connect_runtime.api.client_overrides import ALLOW_ALL, OverridePolicy
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.errors import BadRequestError, ConnectError, ForbiddenError, NotFoundError
from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.herder import (
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    Herder,
    PluginInfo,
    TaskInfo,
    TaskStateInfo,
)
from connect_runtime.runtime.task.topic_tracking import RESET_DISABLED_MESSAGE, TRACKING_OFF, TopicTracking
from connect_runtime.runtime.worker import connector_validation as validation
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.offset_store import OffsetStore
from connect_runtime.storage.status_store import KafkaStatusStore


class AbstractHerder(Herder):
    """The store-backed half of a herder; subclasses add the state-changing half."""

    #: The worker's exactly.once.source.support=enabled, applied when a config is validated.
    exactly_once = False

    def __init__(self, plugins: Plugins, config_store: KafkaConfigStore, status_store: KafkaStatusStore,
                 offset_store: OffsetStore, override_policy: OverridePolicy = ALLOW_ALL,
                 topic_tracking: TopicTracking = TRACKING_OFF) -> None:
        self._plugins = plugins
        #: KIP-558 (the worker's topic.tracking.* keys); off unless the assembly turns it on.
        self.topic_tracking = topic_tracking
        #: The worker's connector.client.config.override.policy, applied when a config is validated.
        self.override_policy = override_policy
        self._config_store = config_store
        self._status_store = status_store
        self._offset_store = offset_store

    def _current(self) -> ClusterConfigState:
        return self._config_store.snapshot()

    def _require(self, snap: ClusterConfigState, name: str) -> Mapping[str, str]:
        config = snap.connector_config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def connectors(self) -> list[str]:
        return self._current().connectors()

    def _connector_type(self, config: Mapping[str, str]) -> str:
        try:
            cls = self._plugins.connector_class(config.get(validation.CONNECTOR_CLASS, ""))
        except ConnectError:
            return "unknown"
        return "source" if issubclass(cls, SourceConnector) else "unknown"

    def connector_info(self, name: str) -> ConnectorInfo:
        snap = self._current()
        config = self._require(snap, name)
        tasks = snap.tasks(name)
        return ConnectorInfo(name, dict(config), tasks, self._connector_type(config))

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._require(self._current(), name))

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        """Merge ``patch`` into the stored config (a None value removes the key), then store it whole."""
        existing = dict(self._require(self._current(), name))
        for key, value in patch.items():
            if value is None:
                existing.pop(key, None)
            else:
                existing[key] = value
        return self.put_connector_config(name, existing, allow_replace=True).info

    def connector_status(self, name: str) -> ConnectorStateInfo:
        snap = self._current()
        config = self._require(snap, name)
        status = self._status_store.get(name)
        if status is None:
            raise NotFoundError(f"No status found for connector {name}")
        tasks = []
        for task in snap.tasks(name):
            task_status = self._status_store.get_task(task.connector, task.task)
            if task_status is not None:
                tasks.append(TaskStateInfo(task.task, task_status.state, task_status.worker_id,
                                           task_status.trace))
        return ConnectorStateInfo(name, status.state, status.worker_id, tasks, self._connector_type(config),
                                  status.trace)

    def task_status(self, task: ConnectorTaskId) -> TaskStateInfo:
        status = self._status_store.get_task(task.connector, task.task)
        if status is None:
            raise NotFoundError(f"No status found for task {task}")
        return TaskStateInfo(task.task, status.state, status.worker_id, status.trace)

    def task_configs(self, name: str) -> list[TaskInfo]:
        snap = self._current()
        self._require(snap, name)
        return [TaskInfo(t, dict(snap.task_configs[t])) for t in snap.tasks(name)]

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        self._require(self._current(), name)
        self._offset_store.refresh()
        return [ConnectorOffset(p, o) for p, o in self._offset_store.connector_offsets(name)]


    # ================================================================ Herder: topics (KIP-558) ===
    def connector_active_topics(self, name: str) -> Collection[str]:
        """From the status topic, on any worker; an unknown connector has none (Java's answer)."""
        if not self.topic_tracking.enabled:
            return super().connector_active_topics(name)
        return [status.topic for status in self._status_store.get_all_topics(name)]

    def reset_connector_active_topics(self, name: str) -> None:
        """Tombstone the connector's topic statuses (any worker may; Java's reset is not forwarded)."""
        if not self.topic_tracking.enabled:
            super().reset_connector_active_topics(name)
            return
        if not self.topic_tracking.allow_reset:
            raise ForbiddenError(RESET_DISABLED_MESSAGE)
        for status in self._status_store.get_all_topics(name):
            self._status_store.delete_topic(name, status.topic)
        self._status_store.flush()

    # ====================================================== Herder: cluster log levels (KIP-976) ===
    def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
        """Write ``logger-cluster-<namespace>`` to the config topic; every worker (this one included)
        applies it when it reads it."""
        self._config_store.put_logger_level(namespace, level)
        return True

    # ======================================================================= Herder: plugins ===
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        return self._plugins.plugins(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        cls = self._plugins.connector_class(plugin)
        keys = cls.config_def().keys()
        return [validation.config_key_info(k) for k in keys]

    def validate_connector_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        class_name = config.get(validation.CONNECTOR_CLASS)
        if not class_name:
            raise BadRequestError("Connector config contains no connector type (connector.class)")
        try:
            connector = self._plugins.new_connector(class_name)
        except NotFoundError as exc:
            raise BadRequestError(str(exc)) from exc
        return validation.validate(connector, config, self.override_policy, exactly_once=self.exactly_once)
