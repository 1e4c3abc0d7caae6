"""What the config topic says: the records applied one by one, and the immutable view the herder reads.

:class:`ConfigTopicState` applies each record of ``config.storage.topic`` to in-memory maps and keeps
invariant "commit" (task configs become visible only with the ``commit-<name>`` record that covers a
complete set ``0..N-1``; Java's ``processTasksCommitRecord``); :class:`ClusterConfigState` is the
snapshot it hands out, and :class:`ConfigUpdateListener` what the herder is told as records arrive.
This is pure state, with no broker and no thread: :mod:`connect_runtime.storage.config_store` reads and
writes the topic (the log, leader fencing, read-your-writes) and applies records here under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.storage.config_records import (
    COMMIT_PREFIX,
    CONNECTOR_PREFIX,
    FENCING_PREFIX,
    LOGGER_CLUSTER_PREFIX,
    RESTART_PREFIX,
    SESSION_KEY,
    TARGET_STATE_PREFIX,
    TASK_PREFIX,
    RestartRequest,
    SessionKey,
    parse_properties,
    parse_restart,
    parse_session_key,
    parse_target_state,
    parse_task_key,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterConfigState:
    """An immutable view of the config topic up to ``offset`` (Java's ClusterConfigState)."""

    offset: int = -1
    connector_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    task_configs: Mapping[ConnectorTaskId, Mapping[str, str]] = field(default_factory=dict)
    task_counts: Mapping[str, int] = field(default_factory=dict)
    target_states: Mapping[str, TargetState] = field(default_factory=dict)
    task_count_records: Mapping[str, int] = field(default_factory=dict)
    #: Connectors whose last task-config commit came after their last ``tasks-fencing-`` record (Java's
    #: ``connectorsPendingFencing``): under exactly-once that generation may not start yet (docs/exactly-once.md).
    pending_fencing: frozenset[str] = frozenset()
    inconsistent: frozenset[str] = frozenset()
    session_key: SessionKey | None = None
    #: How many task-config generations of each connector were committed (Java's ``taskConfigGeneration``):
    #: under exactly-once a task started for one generation must not produce once a newer one was written.
    task_config_generations: Mapping[str, int] = field(default_factory=dict)

    def connectors(self) -> list[str]:
        return sorted(self.connector_configs)

    def contains(self, name: str) -> bool:
        return name in self.connector_configs

    def connector_config(self, name: str) -> Mapping[str, str] | None:
        return self.connector_configs.get(name)

    def target_state(self, name: str) -> TargetState | None:
        """The connector's target state (STARTED when none was written), None for an unknown connector."""
        if name not in self.connector_configs:
            return None
        return self.target_states.get(name, TargetState.STARTED)

    def task_count(self, name: str) -> int:
        return self.task_counts.get(name, 0)

    def task_config_generation(self, name: str) -> int:
        """The number of complete task-config generations of ``name`` committed so far (0: none)."""
        return self.task_config_generations.get(name, 0)

    def tasks(self, name: str) -> list[ConnectorTaskId]:
        """The committed task ids of ``name`` (none while its configs are inconsistent)."""
        if name in self.inconsistent:
            return []
        ids = (ConnectorTaskId(name, i) for i in range(self.task_count(name)))
        return [t for t in ids if t in self.task_configs]

    def all_tasks(self) -> list[ConnectorTaskId]:
        return [t for name in self.connectors() for t in self.tasks(name)]

    def work(self) -> tuple[frozenset[str], frozenset[ConnectorTaskId]]:
        """Every connector and task: what the group's members share (a change means a rebalance is due)."""
        return frozenset(self.connectors()), frozenset(self.all_tasks())

    def task_config(self, task: ConnectorTaskId) -> Mapping[str, str] | None:
        return self.task_configs.get(task)

    def task_config_list(self, name: str) -> list[Mapping[str, str]]:
        return [self.task_configs[t] for t in self.tasks(name)]


class ConfigUpdateListener(Protocol):
    """What the herder is told as records are read (on the log thread: must not block)."""

    def on_connector_config_update(self, connector: str) -> None: ...

    def on_connector_config_remove(self, connector: str) -> None: ...

    def on_task_config_update(self, connector: str, tasks: Sequence[ConnectorTaskId]) -> None:
        """A new task generation of ``connector`` became visible (``tasks`` may be empty)."""
        ...

    def on_connector_target_state_change(self, connector: str) -> None: ...

    def on_restart_request(self, request: RestartRequest) -> None: ...

    def on_session_key_update(self) -> None:
        """A new session key became visible (Java's ``onSessionKeyUpdate``): a follower must sign its
        next internal request with it, or the leader refuses it (KIP-507)."""
        ...

    def on_fencing_update(self, connector: str) -> None:
        """A ``tasks-fencing-<connector>`` record: a task generation waiting for its fencing may start."""
        ...

    def on_logging_level_update(self, namespace: str, level: str) -> None:
        """A cluster-wide logger level (KIP-976) written after this store started: apply it here."""
        ...


class ConfigTopicState:
    """The config topic's records applied so far (not thread-safe: the store applies and snapshots under
    its lock)."""

    def __init__(self) -> None:
        self._connectors: dict[str, dict[str, str]] = {}
        self._tasks: dict[ConnectorTaskId, dict[str, str]] = {}
        self._task_counts: dict[str, int] = {}
        self._target_states: dict[str, TargetState] = {}
        self._fencing: dict[str, int] = {}
        self._pending_fencing: set[str] = set()
        #: Never reset, not even when a connector is deleted: a generation number is never used twice.
        self._generations: dict[str, int] = {}
        self._deferred: dict[str, dict[int, dict[str, str]]] = {}
        self._inconsistent: set[str] = set()
        self._session_key: SessionKey | None = None

    def connector_count(self) -> int:
        return len(self._connectors)

    def snapshot(self, offset: int) -> ClusterConfigState:
        """An immutable copy, as of the record before ``offset``."""
        return ClusterConfigState(
            offset=offset,
            connector_configs={k: dict(v) for k, v in self._connectors.items()},
            task_configs={k: dict(v) for k, v in self._tasks.items()},
            task_counts=dict(self._task_counts),
            target_states=dict(self._target_states),
            task_count_records=dict(self._fencing),
            pending_fencing=frozenset(self._pending_fencing),
            inconsistent=frozenset(self._inconsistent),
            session_key=self._session_key,
            task_config_generations=dict(self._generations),
        )

    def apply(self, key: str, value: Any, listener: ConfigUpdateListener | None) -> Callable[[], None] | None:
        """Apply one record (its key, its parsed JSON value or None for a tombstone); return the listener
        call to make, if any."""
        if key.startswith(CONNECTOR_PREFIX):
            return self._apply_connector(key[len(CONNECTOR_PREFIX):], value, listener)
        if key.startswith(TASK_PREFIX):
            task = parse_task_key(key)
            if task is None:
                logger.error("Ignoring config record with an invalid task key %s", key)
            elif value is None:
                self._deferred.get(task.connector, {}).pop(task.task, None)
            else:
                self._deferred.setdefault(task.connector, {})[task.task] = parse_properties(value)
            return None
        if key.startswith(COMMIT_PREFIX):
            return self._apply_commit(key[len(COMMIT_PREFIX):], value, listener)
        if key.startswith(TARGET_STATE_PREFIX):
            name = key[len(TARGET_STATE_PREFIX):]
            if value is None:
                self._target_states.pop(name, None)
            else:
                self._target_states[name] = parse_target_state(value)
            return (lambda: listener.on_connector_target_state_change(name)) if listener else None
        if key.startswith(RESTART_PREFIX):
            if value is None:
                return None
            request = parse_restart(key[len(RESTART_PREFIX):], value)
            return (lambda: listener.on_restart_request(request)) if listener else None
        if key.startswith(FENCING_PREFIX):
            name = key[len(FENCING_PREFIX):]
            if value is None:
                self._fencing.pop(name, None)
            else:
                self._fencing[name] = int(value["task-count"])
                self._pending_fencing.discard(name)
            return (lambda: listener.on_fencing_update(name)) if listener else None
        if key == SESSION_KEY:
            if value is not None:
                self._session_key = parse_session_key(value)
                return listener.on_session_key_update if listener else None
            return None
        if key.startswith(LOGGER_CLUSTER_PREFIX):
            return _logger_level_update(key[len(LOGGER_CLUSTER_PREFIX):], value, listener)
        return None

    def _apply_connector(self, name: str, value: Any,
                         listener: ConfigUpdateListener | None) -> Callable[[], None] | None:
        if value is None:
            self._connectors.pop(name, None)
            self._task_counts.pop(name, None)
            self._deferred.pop(name, None)
            self._inconsistent.discard(name)
            self._pending_fencing.discard(name)
            for task in [t for t in self._tasks if t.connector == name]:
                del self._tasks[task]
            return (lambda: listener.on_connector_config_remove(name)) if listener else None
        self._connectors[name] = parse_properties(value)
        return (lambda: listener.on_connector_config_update(name)) if listener else None

    def _apply_commit(self, name: str, value: Any,
                      listener: ConfigUpdateListener | None) -> Callable[[], None] | None:
        if value is None:
            return None
        count = int(value["tasks"])
        deferred = self._deferred.pop(name, {})
        if not all(i in deferred for i in range(count)):
            # Invariant "commit": a partial generation never becomes visible.
            logger.error("Connector %s: commit of %d task(s) does not match the %d task config(s) read; "
                         "keeping the previous task configs until a complete generation is written",
                         name, count, len(deferred))
            self._inconsistent.add(name)
            return None
        self._inconsistent.discard(name)
        for task in [t for t in self._tasks if t.connector == name]:
            del self._tasks[task]
        updated = [ConnectorTaskId(name, i) for i in range(count)]
        for task in updated:
            self._tasks[task] = deferred[task.task]
        self._task_counts[name] = count
        self._generations[name] = self._generations.get(name, 0) + 1
        self._pending_fencing.add(name)
        return (lambda: listener.on_task_config_update(name, updated)) if listener else None


def _logger_level_update(namespace: str, value: Any,
                         listener: ConfigUpdateListener | None) -> Callable[[], None] | None:
    """``logger-cluster-<namespace>``. Only records read after start count (the listener is told only
    then): levels set before this worker started are history, as in Java."""
    if value is None or listener is None:
        return None
    level = str(value["level"])
    return lambda: listener.on_logging_level_update(namespace, level)
