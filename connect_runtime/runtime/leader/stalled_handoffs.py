"""What this worker could not hand to the group leader, so that a stalled flow is never a silent one.

A follower that runs a connector hands the connector's new task configs to the leader
(:mod:`connect_runtime.runtime.leader.task_config_forwarding`), and asks it to fence an exactly-once task
generation; only the leader writes the config topic. When that hand-off fails (no internal REST, as MM2
without ``dedicated.mode.enable.internal.rest``; the leader unreachable or refusing) the connector's
tasks keep their old configs, or wait, until it succeeds. The group avoids that state (the assignor
keeps connectors on the leader while a member cannot reach it, invariant F), so it should be short;
while it lasts this worker says so:

* ``GET /health`` answers unhealthy and names each stalled connector (:meth:`StalledHandoffs.problems`);
* for task configs, the connector's status (status topic, REST ``/status``) is RUNNING with the reason
  as its ``trace``, which ``mirror status`` reports; the next status without a trace clears it;
* ``connect_worker_leader_handoff_failures_total{request}`` counts each failed attempt (retried every
  second or so) and ``connect_worker_stalled_connectors`` is the number stalled now (docs/metrics.md).

Thread-safe: failures are reported from the tick thread or the forwarding thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

logger = logging.getLogger(__name__)

#: The ``request`` label values.
TASK_CONFIGS = "task-configs"
FENCING = "fencing"


class StalledHandoffs:
    """Connectors whose task configs or fencing request could not reach the leader, since when and why."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 on_change: Callable[[str, str | None], None] | None = None) -> None:
        """``on_change(connector, reason or None)`` runs when a connector running here becomes stalled on
        its task configs or stops being (the herder writes the connector's status with the reason as its
        trace, then without). A fencing request is about tasks here of a connector that may run elsewhere."""
        self._lock = threading.Lock()
        self._stalled: dict[str, tuple[float, str, str]] = {}
        self._on_change = on_change
        self.failures = Counter("connect_worker_leader_handoff_failures",
                                "Attempts of this worker to hand task configs or a fencing request to the "
                                "group leader that failed (retried until one succeeds)", ["request"],
                                registry=registry)
        self.stalled = Gauge("connect_worker_stalled_connectors",
                             "Connectors running here whose task configs or fencing request cannot reach the "
                             "group leader now", registry=registry)

    def failed(self, connector: str, request: str, reason: str) -> None:
        """One failed hand-off of ``request`` (:data:`TASK_CONFIGS` or :data:`FENCING`) for ``connector``."""
        self.failures.labels(request).inc()
        with self._lock:
            new = connector not in self._stalled
            if new:
                self._stalled[connector] = (time.monotonic(), request,
                                            f"its {request} cannot reach the leader: {reason}")
            self.stalled.set(len(self._stalled))
            message = self._stalled[connector][2]
        if new and request == TASK_CONFIGS and self._on_change is not None:
            self._on_change(connector, message)

    def cleared(self, connector: str, *, running: bool = True) -> None:
        """The hand-off succeeded, or is not needed any more; ``running``: the connector still runs here
        (its status is rewritten without the reason)."""
        with self._lock:
            was = self._stalled.pop(connector, None)
            self.stalled.set(len(self._stalled))
        if was is not None:
            logger.info("Connector %s: no longer stalled (%s)", connector, "hand-off done" if running else "stopped")
            if running and was[1] == TASK_CONFIGS and self._on_change is not None:
                self._on_change(connector, None)

    def problems(self, runs_here: Callable[[str], bool]) -> list[str]:
        """One line per connector stalled here; those of which nothing runs here any more are forgotten."""
        now = time.monotonic()
        with self._lock:
            for gone in [c for c in self._stalled if not runs_here(c)]:
                del self._stalled[gone]
            self.stalled.set(len(self._stalled))
            return [f"connector {c} stalled for {now - since:.0f} s: {why}"
                    for c, (since, _, why) in sorted(self._stalled.items())]
