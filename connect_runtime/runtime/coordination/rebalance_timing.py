"""How long this worker's rebalances take, for the rebalance metrics (``connect_runtime.metrics``).

A rebalance begins with the first JoinGroup this member sends after its last applied assignment and
ends when the herder is handed the next one. kafka-python's IO thread reports the JoinGroups, the
herder's tick thread the assignments, so :class:`RebalanceTimer` guards its one field with a lock.
"""

from __future__ import annotations

import threading
import time

from connect_runtime.metrics import RebalanceMetrics


class RebalanceTimer:
    """Feeds ``metrics`` (if any): a rebalance started, and one completed with its duration."""

    def __init__(self, metrics: RebalanceMetrics | None) -> None:
        self._metrics = metrics
        self._lock = threading.Lock()
        #: When the rebalance in progress began (None: none in progress).
        self._began: float | None = None

    def join_sent(self, at: float) -> None:
        """IO thread: a JoinGroup was sent at ``at`` (monotonic time); the first one starts a rebalance."""
        with self._lock:
            starting = self._began is None
            if starting:
                self._began = at
        if starting and self._metrics is not None:
            self._metrics.started()

    def completed(self, generation: int, leader: bool) -> None:
        """Tick thread: the assignment of ``generation`` was handed to the herder."""
        with self._lock:
            began, self._began = self._began, None
        if self._metrics is not None:
            self._metrics.completed(generation, leader, None if began is None else time.monotonic() - began)
