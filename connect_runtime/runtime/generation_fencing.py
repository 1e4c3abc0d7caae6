"""KIP-618's rule for a new task generation under exactly-once (reference §10.3), on the herder's tick thread.

The tasks of a connector whose task generation is not fenced yet (its ``tasks-fencing-<connector>``
record does not hold the current task count) must not start on any worker: a zombie of the previous
generation could still commit. The leader fences the transactional ids of the previous and the current
generation (:meth:`LeaderConfigWriter.fence_zombies`, which then writes the record); that config change
starts the waiting tasks everywhere. A fencing that fails (the target refuses transactions, a timeout)
is retried every :data:`RETRY_S` while the tasks wait.
"""

from __future__ import annotations

import logging
import time

from connect_runtime.runtime.leader_config_writer import LeaderConfigWriter
from connect_runtime.storage.config_store import ClusterConfigState

logger = logging.getLogger(__name__)

RETRY_S = 5.0


class GenerationFencing:
    """Which connectors wait for a fencing, and the leader's fencing of them (tick thread only)."""

    def __init__(self, enabled: bool, leader: LeaderConfigWriter) -> None:
        self.enabled = enabled
        self._leader = leader
        self._retry_at: float | None = None

    def pending(self, snapshot: ClusterConfigState) -> set[str]:
        """Connectors whose task generation is not fenced yet (none without exactly-once)."""
        if not self.enabled:
            return set()
        return {c for c in snapshot.connectors()
                if snapshot.task_count(c) and snapshot.task_count_records.get(c) != snapshot.task_count(c)}

    def fence(self, snapshot: ClusterConfigState, connectors: set[str]) -> None:
        """The leader fences each connector's generations (a failure is logged and retried later)."""
        self._retry_at = None
        for connector in sorted(connectors):
            try:
                self._leader.fence_zombies(snapshot, connector)
            except Exception as exc:
                self._retry_at = time.monotonic() + RETRY_S
                logger.error("Connector %s: its tasks wait: fencing the previous task generation failed "
                             "(exactly-once needs transactions on the target cluster); retrying in %.0f s: %s",
                             connector, RETRY_S, exc)

    def retry_due(self) -> bool:
        return self._retry_at is not None and time.monotonic() >= self._retry_at
