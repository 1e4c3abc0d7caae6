"""A herder's start-up told in the log, so an operator sees where it is and what it waits for.

A worker that "does nothing" for a minute after start is the most common first question. The herder
tells this narrator each milestone; each becomes one INFO line with the time since the herder started:

* cluster reached: the internal topics were read (with the cluster id);
* group joined: generation, leader (this worker or which URL);
* connectors and tasks assigned: what this worker runs, each time that changes;
* further milestones a layer above adds (MM2's driver: the first record replicated per flow), through
  :meth:`StartupNarrator.waiting_for` and :meth:`StartupNarrator.reached`.

While a step is pending, a timer logs one WARN line if it takes longer than ``warn_after_s`` (10 s),
saying what it waits for; the step's INFO line follows when it completes. The timer thread logs in the
logging context of the step's caller (e.g. the flow name of MM2's herders). The narrator never touches
the per-record path.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable

from connect_runtime.runtime.coordination.membership import Assignment

logger = logging.getLogger(__name__)

WARN_AFTER_S = 10.0


class StartupNarrator:
    """Milestones of one herder's start-up, as INFO lines; a single WARN line per step that is slow."""

    def __init__(self, worker_id: str, group_id: str, *, warn_after_s: float = WARN_AFTER_S,
                 clock: Callable[[], float] = time.monotonic, log: logging.Logger = logger) -> None:
        self._worker_id = worker_id
        self._group_id = group_id
        self._warn_after_s = warn_after_s
        self._clock = clock
        self._log = log
        self._started = clock()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False
        self._joined = False
        self._work: tuple[frozenset[str], frozenset[str]] | None = None

    def elapsed(self) -> float:
        """Seconds since the herder started."""
        return self._clock() - self._started

    # -- generic steps ------------------------------------------------------------------------------
    def waiting_for(self, what: str) -> None:
        """A step begins: warn once, in the caller's logging context, if it lasts over ``warn_after_s``."""
        context = contextvars.copy_context()
        since = self._clock()

        def warn() -> None:
            context.run(self._log.warning, "Still waiting for %s after %.0f s (%.0f s since start)", what,
                        self._clock() - since, self.elapsed())

        timer = threading.Timer(self._warn_after_s, warn)
        timer.daemon = True
        with self._lock:
            if self._closed:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = timer
        timer.start()

    def reached(self, message: str, *args: object) -> None:
        """The pending step completed: cancel its warning and log ``message`` with the time since start."""
        self._cancel()
        self._log.info(message + " (%.1f s after start)", *args, self.elapsed())

    def close(self) -> None:
        """The herder stops: no warning fires any more."""
        with self._lock:
            self._closed = True
        self._cancel()

    def _cancel(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    # -- the herder's steps -------------------------------------------------------------------------
    def starting(self) -> None:
        """The tick thread starts the stores: the cluster must answer."""
        self.waiting_for(f"the Kafka cluster of group {self._group_id}: reading the config and status topics")

    def cluster_reached(self, cluster_id: str | None) -> None:
        self.reached("Cluster reached (id %s): config and status topics read", cluster_id or "unknown")
        self.waiting_for(f"group {self._group_id} to be joined (the group coordinator answers JoinGroup/SyncGroup)")

    def assigned(self, assignment: Assignment) -> None:
        """An assignment was applied: log the join once, then what this worker runs whenever it changes."""
        if not self._joined:
            self._joined = True
            leader = "this worker" if assignment.leader else (assignment.leader_url or "unknown")
            self.reached("Joined group %s: generation %d, leader %s", self._group_id, assignment.generation, leader)
        work = (frozenset(assignment.connectors), frozenset(str(t) for t in assignment.tasks))
        if work == self._work:
            return
        self._work = work
        if work[0] or work[1]:
            self.reached("Assigned %d connector(s) %s and %d task(s) %s (generation %d)", len(work[0]),
                         sorted(work[0]), len(work[1]), sorted(work[1]), assignment.generation)
        else:
            self._log.info("No connector or task assigned to this worker (generation %d)", assignment.generation)
            self.waiting_for(f"connectors or tasks to be assigned to this worker by group {self._group_id} "
                             f"(generation {assignment.generation} gave none; are any connectors configured?)")
