"""The value types every layer shares: task ids, target states and connector/task states.

They sit below storage (which keys task configs by :class:`ConnectorTaskId` and stores
:class:`TargetState` and :class:`State` records), the runtime and REST, so each concept has exactly one
representation in the process. The wire format stays Java Connect's: the stores write ``.value`` (the
enum's Java name) into JSON and parse it back at the edge, nowhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class State(enum.Enum):
    """Connector and task states as Connect reports them (Java's ``AbstractStatus.State``)."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"  # connectors only
    DESTROYED = "DESTROYED"  # internal: deleted (written as a tombstone); never shown by REST


class TargetState(enum.Enum):
    """What the user asked a connector to be (config topic ``target-state-<name>``)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass(frozen=True, slots=True, order=True)
class ConnectorTaskId:
    """One task of one connector; ordered by connector, then task number (the order tasks start in)."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"

    def to_json(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task}
