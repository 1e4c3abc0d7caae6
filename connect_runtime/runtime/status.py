"""How the worker reports connector and task state changes (Connect's ``ConnectorStatus.Listener`` and
``TaskStatus.Listener``).

The distributed herder implements :class:`StatusListener` by writing the status topic; the worker calls
it from whatever thread the change happens on (the herder thread for connector starts, a task's own
thread for task state changes), so implementations must be thread-safe and should not block for long.

State mapping (what the herder writes): startup -> RUNNING, pause -> PAUSED, resume -> RUNNING,
stop -> STOPPED (connectors only), failure -> FAILED with ``trace``, shutdown -> UNASSIGNED.
"""

from __future__ import annotations

import logging
import threading
import traceback
from dataclasses import dataclass
from typing import Protocol

from connect_runtime.api.secrets import scrub
from connect_runtime.lifecycle import ConnectorTaskId, State

logger = logging.getLogger(__name__)


def trace_of(exc: BaseException) -> str:
    """The full traceback text reported as a FAILED status ``trace`` (chained causes included), with
    every known secret value scrubbed: traces go to the status topic and REST."""
    return scrub("".join(traceback.format_exception(exc)))


def report_task_state(listener: StatusListener, task: ConnectorTaskId, state: State, previous: State,
                      trace: str | None) -> None:
    """Tell ``listener`` a task's new state (RUNNING after PAUSED is a resume)."""
    if state is State.RUNNING:
        (listener.on_task_resume if previous is State.PAUSED else listener.on_task_startup)(task)
    elif state is State.PAUSED:
        listener.on_task_pause(task)
    elif state is State.FAILED:
        listener.on_task_failure(task, trace or "")
    else:
        listener.on_task_shutdown(task)


class StatusListener(Protocol):
    """Receives connector and task state changes of one worker."""

    def on_connector_startup(self, name: str) -> None: ...

    def on_connector_pause(self, name: str) -> None: ...

    def on_connector_resume(self, name: str) -> None: ...

    def on_connector_stop(self, name: str) -> None: ...

    def on_connector_failure(self, name: str, trace: str) -> None: ...

    def on_connector_shutdown(self, name: str) -> None: ...

    def on_task_startup(self, task: ConnectorTaskId) -> None: ...

    def on_task_pause(self, task: ConnectorTaskId) -> None: ...

    def on_task_resume(self, task: ConnectorTaskId) -> None: ...

    def on_task_failure(self, task: ConnectorTaskId, trace: str) -> None: ...

    def on_task_shutdown(self, task: ConnectorTaskId) -> None: ...


@dataclass(frozen=True, slots=True)
class StatusEvent:
    """One reported change: ``subject`` is a connector name or a ConnectorTaskId."""

    subject: str | ConnectorTaskId
    state: State
    trace: str | None = None


class RecordingStatusListener:
    """A StatusListener that keeps every event in memory (tests, standalone tools).

    ``state(subject)`` gives the latest state, as the status topic would after compaction.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[StatusEvent] = []

    def _add(self, subject: str | ConnectorTaskId, state: State, trace: str | None = None) -> None:
        with self._lock:
            self.events.append(StatusEvent(subject, state, trace))
        logger.debug("status %s -> %s", subject, state.value)

    def state(self, subject: str | ConnectorTaskId) -> State | None:
        with self._lock:
            for event in reversed(self.events):
                if event.subject == subject:
                    return event.state
        return None

    def last(self, subject: str | ConnectorTaskId) -> StatusEvent | None:
        with self._lock:
            for event in reversed(self.events):
                if event.subject == subject:
                    return event
        return None

    def on_connector_startup(self, name: str) -> None:
        self._add(name, State.RUNNING)

    def on_connector_pause(self, name: str) -> None:
        self._add(name, State.PAUSED)

    def on_connector_resume(self, name: str) -> None:
        self._add(name, State.RUNNING)

    def on_connector_stop(self, name: str) -> None:
        self._add(name, State.STOPPED)

    def on_connector_failure(self, name: str, trace: str) -> None:
        self._add(name, State.FAILED, trace)

    def on_connector_shutdown(self, name: str) -> None:
        self._add(name, State.UNASSIGNED)

    def on_task_startup(self, task: ConnectorTaskId) -> None:
        self._add(task, State.RUNNING)

    def on_task_pause(self, task: ConnectorTaskId) -> None:
        self._add(task, State.PAUSED)

    def on_task_resume(self, task: ConnectorTaskId) -> None:
        self._add(task, State.RUNNING)

    def on_task_failure(self, task: ConnectorTaskId, trace: str) -> None:
        self._add(task, State.FAILED, trace)

    def on_task_shutdown(self, task: ConnectorTaskId) -> None:
        self._add(task, State.UNASSIGNED)
