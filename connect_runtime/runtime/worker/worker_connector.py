"""WorkerConnector: one connector instance on a worker and its target-state machine (Connect's
``WorkerConnector``).

States: INIT (initialized, not started) -> STARTED <-> PAUSED / STOPPED, and FAILED. As in Java, pausing
or stopping a connector *stops* the instance (``Connector.stop``) and resuming starts it again, so a
paused MM2 connector runs no background work. A connector created paused is initialized but not
started. ``start``/``stop``/``task_configs`` calls are serialized by one lock, honouring the API's
"never concurrently" promise even when the herder and a connector-owned thread race.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping

from connect_runtime.api.config import Type, parse_value, redact
from connect_runtime.api.connector import Connector
from connect_runtime.api.connector_config import TASKS_MAX_ENFORCE
from connect_runtime.api.errors import ConnectError
from connect_runtime.api.metrics_registry import MetricsRegistry
from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.lifecycle import TargetState
from connect_runtime.runtime.status import StatusListener, trace_of

logger = logging.getLogger(__name__)

TASK_CLASS = "task.class"


class ConnectorState(enum.Enum):
    INIT = "INIT"
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"


class ConnectorContextImpl:
    """The ConnectorContext handed to a connector."""

    def __init__(self, owner: WorkerConnector, on_reconfigure: Callable[[str], None],
                 reader: OffsetStorageReader, metrics_registry: MetricsRegistry) -> None:
        self._owner = owner
        self._on_reconfigure = on_reconfigure
        self._reader = reader
        self._metrics_registry = metrics_registry

    def request_task_reconfiguration(self) -> None:
        self._on_reconfigure(self._owner.name)

    def raise_error(self, error: BaseException) -> None:
        self._owner.fail(error)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    @property
    def metrics_registry(self) -> MetricsRegistry:
        return self._metrics_registry


class WorkerConnector:
    """A connector instance and its state; every method is blocking and thread-safe."""

    def __init__(self, name: str, connector: Connector, config: Mapping[str, str], listener: StatusListener,
                 on_reconfigure: Callable[[str], None], reader: OffsetStorageReader,
                 metrics_registry: MetricsRegistry) -> None:
        self.name = name
        self.connector = connector
        self.config = dict(config)
        self._listener = listener
        self._lock = threading.RLock()
        self.state = ConnectorState.INIT
        connector.initialize(ConnectorContextImpl(self, on_reconfigure, reader, metrics_registry))

    def is_running(self) -> bool:
        return self.state is ConnectorState.STARTED

    def transition_to(self, target: TargetState) -> bool:
        """Move to ``target``; False (and FAILED reported) if the connector's start/stop raised."""
        with self._lock:
            if self.state is ConnectorState.FAILED:
                logger.warning("connector %s is FAILED; ignoring the request to go to %s", self.name,
                               target.value)
                return False
            if target is TargetState.STARTED:
                return self._start()
            paused = target is TargetState.PAUSED
            return self._suspend(ConnectorState.PAUSED if paused else ConnectorState.STOPPED)

    def _start(self) -> bool:
        if self.state is ConnectorState.STARTED:
            return True
        resumed = self.state is ConnectorState.PAUSED
        try:
            self.connector.start(self.config)
        except Exception as exc:
            self.fail(exc)
            return False
        self.state = ConnectorState.STARTED
        logger.info("connector %s started", self.name)
        (self._listener.on_connector_resume if resumed else self._listener.on_connector_startup)(self.name)
        return True

    def _suspend(self, new_state: ConnectorState) -> bool:
        if self.state is new_state:
            return True
        if self.state is ConnectorState.STARTED and not self._stop_instance():
            return False
        self.state = new_state
        if new_state is ConnectorState.PAUSED:
            self._listener.on_connector_pause(self.name)
        else:
            self._listener.on_connector_stop(self.name)
        return True

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """The connector's task configs, each with ``task.class`` added (Java adds it too), as the connector
        names it (:meth:`Connector.stored_task_class`)."""
        with self._lock:
            if self.state is not ConnectorState.STARTED:
                raise ConnectError(f"Connector {self.name} is {self.state.value}, not running: "
                                   "it has no task configs")
            configs = self.connector.task_configs(max_tasks)
            if len(configs) > max_tasks:
                if parse_value(TASKS_MAX_ENFORCE, Type.BOOLEAN, self.config.get(TASKS_MAX_ENFORCE, "true")):
                    raise ConnectError(f"Connector {self.name} produced {len(configs)} task configs, more than "
                                       f"tasks.max={max_tasks}")
                # Java's deprecated escape hatch: run them all, say so.
                logger.warning("Connector %s produced %d task configs, more than tasks.max=%d; running them all "
                               "because tasks.max.enforce=false (deprecated)", self.name, len(configs), max_tasks)
            task_class = self.connector.stored_task_class()
            return [{**{str(k): str(v) for k, v in c.items()}, TASK_CLASS: task_class} for c in configs]

    def shutdown(self) -> None:
        """Stop the instance if it runs and report UNASSIGNED (the connector leaves this worker)."""
        with self._lock:
            if self.state is ConnectorState.STARTED:
                self._stop_instance()
            failed = self.state is ConnectorState.FAILED
            self.state = ConnectorState.STOPPED
        if not failed:
            self._listener.on_connector_shutdown(self.name)
        logger.info("connector %s shut down", self.name)

    def fail(self, error: BaseException) -> None:
        """Mark FAILED and report the trace (start/stop errors and ``context.raise_error``)."""
        self.state = ConnectorState.FAILED
        logger.error("connector %s failed: %s (config %s)", self.name, error, redact(self.config))
        try:
            self._listener.on_connector_failure(self.name, trace_of(error))
        except Exception:  # a status store hiccup must not hide the failure in the logs
            logger.exception("could not report the failure of connector %s", self.name)

    def _stop_instance(self) -> bool:
        try:
            self.connector.stop()
            return True
        except Exception as exc:
            self.fail(exc)
            return False
