"""The distributed herder's StatusListener: connector and task state changes -> the status topic.

The worker reports changes from its own threads; each becomes one status record carrying this
worker's id and the current group generation. Which write rule each change uses is Java's
``AbstractHerder``: a worker announcing that it *runs* something (startup, pause, resume, stop,
restarting) writes unconditionally; a worker announcing that it *no longer* runs something (shutdown,
failure) writes with ``put_safe``, so that a late report from the previous owner cannot hide the new
owner's state (invariant "generation" in :mod:`connect_runtime.storage.status_store`).
"""

from __future__ import annotations

import logging
import threading

from connect_runtime.lifecycle import ConnectorTaskId, State
from connect_runtime.storage.status_store import KafkaStatusStore, Status

logger = logging.getLogger(__name__)


class StatusWriter:
    """Implements :class:`connect_runtime.runtime.status.StatusListener` on a status store."""

    def __init__(self, store: KafkaStatusStore, worker_id: str) -> None:
        self._store = store
        self.worker_id = worker_id
        self._generation = 0
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def set_generation(self, generation: int) -> None:
        """Called by the herder after each rebalance."""
        with self._lock:
            self._generation = generation

    def _connector(self, name: str, state: State, trace: str | None = None, safe: bool = False) -> None:
        status = Status(name, state, self.worker_id, self.generation, trace)
        (self._store.put_safe if safe else self._store.put)(status)

    def _task(self, task: ConnectorTaskId, state: State, trace: str | None = None,
              safe: bool = False) -> None:
        status = Status(task.connector, state, self.worker_id, self.generation, trace, task.task)
        (self._store.put_safe if safe else self._store.put)(status)

    # -- connectors --------------------------------------------------------------------------------
    def on_connector_startup(self, name: str) -> None:
        self._connector(name, State.RUNNING)

    def on_connector_pause(self, name: str) -> None:
        self._connector(name, State.PAUSED)

    def on_connector_resume(self, name: str) -> None:
        self._connector(name, State.RUNNING)

    def on_connector_stop(self, name: str) -> None:
        self._connector(name, State.STOPPED)

    def on_connector_stalled(self, name: str, reason: str | None) -> None:
        """The connector runs here but what it must hand to the leader does not reach it (``reason`` as
        the status trace; None: no longer, see :mod:`connect_runtime.runtime.leader.stalled_handoffs`)."""
        self._connector(name, State.RUNNING, reason)

    def on_connector_failure(self, name: str, trace: str) -> None:
        logger.error("Connector %s failed", name)
        self._connector(name, State.FAILED, trace, safe=True)

    def on_connector_shutdown(self, name: str) -> None:
        self._connector(name, State.UNASSIGNED, safe=True)

    def on_connector_restart(self, name: str) -> None:
        self._connector(name, State.RESTARTING)

    def on_connector_deletion(self, name: str) -> None:
        """A deleted connector: DESTROYED is written as a tombstone, after its KIP-558 topic statuses'
        (Java's ``onDeletion``)."""
        for topic in self._store.get_all_topics(name):
            self._store.delete_topic(name, topic.topic)
        self._connector(name, State.DESTROYED)

    # -- tasks -------------------------------------------------------------------------------------
    def on_task_startup(self, task: ConnectorTaskId) -> None:
        self._task(task, State.RUNNING)

    def on_task_pause(self, task: ConnectorTaskId) -> None:
        self._task(task, State.PAUSED)

    def on_task_resume(self, task: ConnectorTaskId) -> None:
        self._task(task, State.RUNNING)

    def on_task_failure(self, task: ConnectorTaskId, trace: str) -> None:
        logger.error("Task %s failed", task)
        self._task(task, State.FAILED, trace, safe=True)

    def on_task_shutdown(self, task: ConnectorTaskId) -> None:
        self._task(task, State.UNASSIGNED, safe=True)

    def on_task_restart(self, task: ConnectorTaskId) -> None:
        self._task(task, State.RESTARTING)

    def on_task_deletion(self, task: ConnectorTaskId) -> None:
        self._task(task, State.DESTROYED)
