"""KIP-618's rule for a new task generation under exactly-once (docs/exactly-once.md), on the herder's tick thread.

The tasks of a connector whose task generation is not fenced yet (task configs committed after its last
``tasks-fencing-<connector>`` record, Java's ``connectorsPendingFencing``) must not start on any worker:
a zombie of the previous generation could still commit. Only the leader fences: it fences the
transactional ids of the previous and the current generation (:meth:`LeaderConfigWriter.fence_zombies`,
which then writes the record); that config change starts the waiting tasks everywhere.

Two paths lead there, as in Java:

* the leader fences as soon as it sees a pending generation (its own tasks, if any, stopped first);
* a follower assigned tasks of a pending connector asks the leader with the signed internal
  ``PUT /connectors/<c>/fence`` (KIP-618's round trip, sent off the tick thread by the
  :class:`~connect_runtime.runtime.leader.task_config_forwarding.TaskConfigForwarder`), so its tasks never
  depend on the leader having noticed: e.g. a leader whose own fencing failed, or one just elected.
  A follower that cannot reach the leader (MM2 without internal REST) does not ask: it waits for the
  first path, which the leader retries until it succeeds; a request that fails is a stall
  (:mod:`connect_runtime.runtime.leader.stalled_handoffs`) until the generation is fenced.

The leader serves a request (:meth:`GenerationFencing.serve`) only while the generation is pending: a
request that arrives after the fencing (the other path won) must not fence again, or it would fence the
new generation's tasks that already started. A fencing or a request that fails (the target refuses
transactions, the leader is unreachable) is retried every :data:`RETRY_S` while the tasks wait.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from connect_runtime.api.errors import ConnectError
from connect_runtime.runtime.leader.leader_config_writer import LeaderConfigWriter
from connect_runtime.runtime.leader.stalled_handoffs import FENCING, StalledHandoffs
from connect_runtime.runtime.leader.task_config_forwarding import TaskConfigForwarder
from connect_runtime.storage.config_store import KafkaConfigStore
from connect_runtime.storage.config_topic_state import ClusterConfigState

logger = logging.getLogger(__name__)

RETRY_S = 5.0


class GenerationFencing:
    """Which connectors wait for a fencing, the leader's fencing of them and a follower's requests for it.

    Tick thread only, except the request callbacks (sending thread), which touch only ``_next_ask`` and
    ``_retry_at`` under the lock."""

    def __init__(self, enabled: bool, leader: LeaderConfigWriter, config_store: KafkaConfigStore | None = None,
                 forwarder: TaskConfigForwarder | None = None, rest_prefix: str = "",
                 stalls: StalledHandoffs | None = None) -> None:
        self.enabled = enabled
        self._stalls = stalls or StalledHandoffs()
        self._leader = leader
        self._store = config_store
        self._forwarder = forwarder
        self._rest_prefix = rest_prefix
        self._lock = threading.Lock()
        self._retry_at: float | None = None
        #: Per connector, when a follower may ask the leader again (inf: a request is under way).
        self._next_ask: dict[str, float] = {}

    def pending(self, snapshot: ClusterConfigState) -> set[str]:
        """Connectors whose task generation is not fenced yet (none without exactly-once)."""
        if not self.enabled:
            return set()
        pending = {c for c in snapshot.connectors() if snapshot.task_count(c) and c in snapshot.pending_fencing}
        with self._lock:  # a fenced generation: the next one may ask at once
            fenced = [c for c, due in self._next_ask.items() if c not in pending and due != math.inf]
            for connector in fenced:
                del self._next_ask[connector]
        for connector in fenced:
            self._stalls.cleared(connector)
        return pending

    # -- the leader ----------------------------------------------------------------------------------
    def fence(self, snapshot: ClusterConfigState, connectors: set[str]) -> None:
        """The leader fences each connector's generations (a failure is logged and retried later)."""
        with self._lock:
            self._retry_at = None
        for connector in sorted(connectors):
            try:
                self._leader.fence_zombies(snapshot, connector)
            except Exception as exc:
                self._retry_later()
                logger.error("Connector %s: its tasks wait: fencing the previous task generation failed "
                             "(exactly-once needs transactions on the target cluster); retrying in %.0f s: %s",
                             connector, RETRY_S, exc)

    def serve(self, snapshot: ClusterConfigState, connector: str) -> bool:
        """A fencing request (``PUT .../fence``) on the leader: fence unless the current generation already
        is (fencing again would fence its running tasks); True if it fenced. The caller checked leadership."""
        if connector in snapshot.task_count_records and connector not in snapshot.pending_fencing:
            logger.info("Connector %s: fencing requested; the current task generation (%d task(s)) is fenced "
                        "already", connector, snapshot.task_count(connector))
            return False
        logger.info("Connector %s: fencing requested (by a follower about to start its tasks)", connector)
        self._leader.fence_zombies(snapshot, connector)
        return True

    def fence_for_offsets(self, snapshot: ClusterConfigState, connector: str) -> None:
        """KIP-875 under exactly-once, on the leader: before a STOPPED source connector's offsets change,
        fence every task id its last generation used (a zombie could still commit offsets over the new
        ones); a failure raises and the offsets are not written. Without exactly-once, nothing."""
        if self.enabled:
            logger.info("Connector %s: fencing its tasks before its offsets change (exactly-once)", connector)
            self._leader.fence_zombies(snapshot, connector)

    # -- a follower ----------------------------------------------------------------------------------
    def ask_leader(self, connectors: set[str]) -> None:
        """A follower assigned tasks of these pending connectors asks the leader to fence them (one
        request per connector at a time; again every :data:`RETRY_S` until the record arrives)."""
        now = time.monotonic()
        with self._lock:
            self._retry_at = None
            due_now = [c for c in sorted(connectors) if self._next_ask.get(c, 0.0) <= now]
            for c in connectors:
                if c not in due_now and self._next_ask[c] != math.inf:
                    self._retry_at = min(self._retry_at or math.inf, self._next_ask[c])
            for c in due_now:
                self._next_ask[c] = math.inf
        for connector in due_now:
            self._ask(connector)

    def _ask(self, connector: str) -> None:
        leader_url = self._leader.leader_url()
        key = None if self._store is None else self._store.snapshot().session_key
        if self._forwarder is not None and not self._forwarder.reaches_leader:
            logger.debug("Connector %s: its tasks wait for the leader to fence the previous task generation "
                         "(no internal REST to ask it; the leader fences on its own)", connector)
            self._answered(connector, None, quiet=True)
            return
        if self._forwarder is None or leader_url is None or key is None:
            missing = "leader URL" if leader_url is None else "session key" if key is None else "forwarder"
            logger.info("Connector %s: its tasks wait for a fencing; no %s yet to ask the leader, retrying in "
                        "%.0f s", connector, missing, RETRY_S)
            self._answered(connector, None, quiet=True)
            return
        logger.info("Connector %s: asking the leader at %s to fence the previous task generation before "
                    "starting this worker's tasks", connector, leader_url)
        self._forwarder.fence(leader_url.rstrip("/") + self._rest_prefix, connector, key,
                              lambda error: self._answered(connector, error))

    def _answered(self, connector: str, error: ConnectError | None, quiet: bool = False) -> None:
        """On the sending thread: the tasks start when the fencing record arrives; ask again if it does not."""
        if quiet:
            pass
        elif error is None:
            logger.info("Connector %s: the leader fenced the previous task generation; its tasks start once "
                        "the fencing record is read", connector)
        else:
            logger.error("Connector %s: its tasks wait: %s; retrying in %.0f s", connector, error, RETRY_S)
            self._stalls.failed(connector, FENCING, str(error))
        with self._lock:
            self._next_ask[connector] = time.monotonic() + RETRY_S
        self._retry_later()

    def _retry_later(self) -> None:
        with self._lock:
            due = time.monotonic() + RETRY_S
            self._retry_at = due if self._retry_at is None else min(self._retry_at, due)

    def retry_due(self) -> bool:
        with self._lock:
            return self._retry_at is not None and time.monotonic() >= self._retry_at
