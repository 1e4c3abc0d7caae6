"""The herder interface: what the REST API (and the MM2 driver) may ask of a Connect cluster member.

A herder owns the cluster-wide view: connector configs (from the config topic), statuses (from the
status topic) and offsets (from the offsets topic), and decides which connectors and tasks this worker
runs. Every method is blocking and thread-safe; the REST layer calls them from its thread pool.

Errors are the ``connect_runtime.api.errors`` tree, which the REST layer maps to HTTP statuses:
NotFoundError 404, AlreadyExistsError/ConflictError 409, BadRequestError/ConfigError 400,
ForbiddenError 403, NotLeaderError/NotAssignedError: forward to ``target_url`` (docs/architecture.md).

The contract is explicit and complete: REST calls these methods unconditionally and builds its
routes from the types (mypy checks every herder and wrapper), never probing with ``getattr`` or
``isinstance``. Why one ABC with defaults rather than a Protocol per optional capability: with
separate Protocols, whether a herder has a capability is only known at run time, so REST would be
back to probing. Here an optional capability is a real method whose default answers "not supported"
the way Connect does (topic tracking: 403; cluster logger levels: applied on this worker only) and a
herder opts in by overriding it; Java's ``Herder`` interface is shaped the same way. The REST
resources that need only a few methods take a narrow Protocol (:class:`InternalHerder`,
:class:`ClusterLoggerLevels`); :class:`Herder` subclasses both, so every herder satisfies them and a
small test double can satisfy them structurally.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from connect_runtime.api.errors import ForbiddenError
from connect_runtime.api.records import SourceMap
from connect_runtime.lifecycle import ConnectorTaskId, State, TargetState
from connect_runtime.runtime.request_signing import DEFAULT_SIGNATURE_ALGORITHM

TOPIC_TRACKING_DISABLED_MESSAGE = "Topic tracking is disabled."
COMMIT_ON_REQUEST_UNSUPPORTED_MESSAGE = "This worker cannot commit its tasks' offsets on request."


@dataclass(frozen=True, slots=True)
class ConnectorInfo:
    """``{"name", "config", "tasks": [{"connector","task"}], "type"}``."""

    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: str = "source"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.config), "tasks": [t.to_json() for t in self.tasks],
                "type": self.type}


@dataclass(frozen=True, slots=True)
class TaskStateInfo:
    id: int
    state: State
    worker_id: str
    trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "state": self.state.value, "worker_id": self.worker_id}
        if self.trace:
            out["trace"] = self.trace
        return out


@dataclass(frozen=True, slots=True)
class ConnectorStateInfo:
    """``{"name", "connector": {"state","worker_id","trace"?}, "tasks": [...], "type"}``."""

    name: str
    connector_state: State
    connector_worker_id: str
    tasks: list[TaskStateInfo]
    type: str = "source"
    connector_trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        connector: dict[str, Any] = {"state": self.connector_state.value, "worker_id": self.connector_worker_id}
        if self.connector_trace:
            connector["trace"] = self.connector_trace
        return {"name": self.name, "connector": connector, "tasks": [t.to_json() for t in self.tasks],
                "type": self.type}


@dataclass(frozen=True, slots=True)
class TaskInfo:
    id: ConnectorTaskId
    config: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id.to_json(), "config": dict(self.config)}


@dataclass(frozen=True, slots=True)
class TaskOffsetCommit:
    """The outcome of one local task's commit on request (:meth:`Herder.commit_task_offsets`)."""

    id: ConnectorTaskId
    #: None: the offsets of every record acknowledged before the request are stored; else why not.
    error: str | None
    seconds: float

    @property
    def committed(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id.task, "committed": self.committed, "seconds": round(self.seconds, 3)}
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True)
class ConnectorOffset:
    partition: SourceMap
    offset: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"partition": dict(self.partition), "offset": None if self.offset is None else dict(self.offset)}


@dataclass(frozen=True, slots=True)
class PluginInfo:
    class_name: str
    type: str
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.class_name, "type": self.type}
        if self.version is not None:
            out["version"] = self.version
        return out


@dataclass(frozen=True, slots=True)
class WorkerHealth:
    """``GET /health``: healthy (200), starting (503), unhealthy (500)."""

    status: str
    message: str


@dataclass(slots=True)
class ConfigInfos:
    """Result of ``PUT /connector-plugins/{plugin}/config/validate``."""

    name: str
    error_count: int
    groups: list[str]
    configs: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "error_count": self.error_count, "groups": self.groups, "configs": self.configs}


@dataclass(frozen=True, slots=True)
class Created:
    """Result of a config PUT: whether the connector was created (201) or updated (200)."""

    created: bool
    info: ConnectorInfo


class InternalHerder(Protocol):
    """What the KIP-507/KIP-710 internal endpoints (``POST .../tasks``, ``PUT .../fence``) need."""

    @abstractmethod
    def session_key(self) -> bytes | None:
        """The current session key, or None while it has not been read from the config topic yet."""

    @abstractmethod
    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        """Write task configs a follower computed (leader only: NotLeaderError otherwise)."""

    @abstractmethod
    def fence_zombies(self, connector: str) -> None:
        """Run a zombie-fencing round for the connector's tasks (leader only)."""

    def verification_algorithms(self) -> Sequence[str]:
        """The signature algorithms accepted on internal requests (``inter.worker.verification.algorithms``)."""
        return (DEFAULT_SIGNATURE_ALGORITHM,)


class ClusterLoggerLevels(Protocol):
    """What ``PUT /admin/loggers/{name}?scope=cluster`` (KIP-976) needs."""

    def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
        """Have every worker of the cluster set ``namespace`` to ``level`` (a log4j level name).

        False (the default) when there is no cluster to tell: the caller then sets the level on this
        worker only, which is what Connect's standalone herder does.
        """
        return False


class Herder(InternalHerder, ClusterLoggerLevels, ABC):
    """One member of a Connect cluster, as the REST API sees it: public API, internal endpoints and
    cluster logger levels."""

    # -- cluster & worker ---------------------------------------------------------------------------
    @abstractmethod
    def worker_id(self) -> str: ...

    @abstractmethod
    def kafka_cluster_id(self) -> str | None: ...

    @abstractmethod
    def health(self) -> WorkerHealth: ...

    # -- connectors ---------------------------------------------------------------------------------
    @abstractmethod
    def connectors(self) -> list[str]: ...

    @abstractmethod
    def connector_info(self, name: str) -> ConnectorInfo: ...

    @abstractmethod
    def connector_config(self, name: str) -> dict[str, str]: ...

    @abstractmethod
    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        """Validate and store a connector config (leader only). ``allow_replace=False`` on an
        existing connector raises AlreadyExistsError."""

    @abstractmethod
    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo: ...

    @abstractmethod
    def delete_connector(self, name: str) -> None: ...

    @abstractmethod
    def connector_status(self, name: str) -> ConnectorStateInfo: ...

    @abstractmethod
    def task_status(self, task: ConnectorTaskId) -> TaskStateInfo: ...

    @abstractmethod
    def task_configs(self, name: str) -> list[TaskInfo]: ...

    @abstractmethod
    def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorStateInfo | None:
        """None when only the connector instance was restarted (REST 204), else the states (202)."""

    @abstractmethod
    def restart_task(self, task: ConnectorTaskId) -> None: ...

    @abstractmethod
    def pause_connector(self, name: str) -> None: ...

    @abstractmethod
    def resume_connector(self, name: str) -> None: ...

    @abstractmethod
    def stop_connector(self, name: str) -> None: ...

    # -- offsets (KIP-875) --------------------------------------------------------------------------
    @abstractmethod
    def connector_offsets(self, name: str) -> list[ConnectorOffset]: ...

    @abstractmethod
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None: ...

    @abstractmethod
    def reset_connector_offsets(self, name: str) -> None: ...

    def commit_task_offsets(self, name: str, timeout_s: float) -> list[TaskOffsetCommit]:
        """Have every task of source connector ``name`` running on *this* worker store its offsets now,
        instead of at its next ``offset.flush.interval.ms``, and wait up to ``timeout_s`` for them; one outcome
        per local task (none when no task runs here). Under exactly-once each commits its open transaction.
        Not supported by default: ForbiddenError (403)."""
        raise ForbiddenError(COMMIT_ON_REQUEST_UNSUPPORTED_MESSAGE)

    # -- plugins ------------------------------------------------------------------------------------
    @abstractmethod
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]: ...

    @abstractmethod
    def plugin_config(self, plugin: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def validate_connector_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos: ...

    # -- topic tracking (KIP-558), optional ---------------------------------------------------------
    def connector_active_topics(self, name: str) -> Collection[str]:
        """The topics the connector has used since its creation or its last reset.

        Not supported by default: ForbiddenError, Connect's 403 when ``topic.tracking.enable`` is false.
        """
        raise ForbiddenError(TOPIC_TRACKING_DISABLED_MESSAGE)

    def reset_connector_active_topics(self, name: str) -> None:
        """Forget the connector's active topics; ForbiddenError (403) when topic tracking is disabled."""
        raise ForbiddenError(TOPIC_TRACKING_DISABLED_MESSAGE)
