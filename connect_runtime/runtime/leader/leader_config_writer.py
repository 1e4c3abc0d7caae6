"""The leader's side of the config topic: write privileges (leader fencing), session keys, zombie fencing.

Writes to the config topic are leader-only: a follower gets NotLeaderError carrying the leader's URL
so that the REST layer forwards, pause and resume included (Java lets any worker write those;
here every config write is fenced, see below).

Leader fencing (a stale leader's config writes are refused). Chosen: a transactional producer with
one leader transactional id per group (Java's ``connect-cluster-<group.id>``, see
:func:`connect_runtime.storage.fenced_writer.leader_transactional_id`), created with
``KafkaConfigStore.claim_write_privileges`` whenever a *new assignment* makes this worker the leader.
Its ``init_transactions`` fences the previous leader's producer on the transaction coordinator, so a
leader that lost its membership without noticing (GC pause, network partition) gets PRODUCER_FENCED
on its next write instead of overwriting the new leader's configs. Why not generation checks: the
config topic is an ordinary topic, so a generation written into records could only be checked by
readers after the fact (every reader would have to agree which generation was current when each
record was written, which they cannot); the broker refuses a fenced producer's write at the source.
The config log reads ``read_committed`` (librdkafka's default): on Apache Kafka a transaction aborted
by fencing stays invisible. On Tansu a killed leader's open transaction blocks readers until the next
leader's ``init_transactions`` releases it; since only a leader writes, nothing is lost by waiting.
A write that fails fenced makes this worker request a rebalance, and it never re-claims until a new
assignment names it leader again (a re-claim by a stale leader would fence the real one).

Session keys (KIP-507): the leader writes a fresh key when there is none or it is older than
``inter.worker.key.ttl.ms`` (0 = never rotate, as in Java); followers sign forwarded task configs
with it (:mod:`connect_runtime.runtime.leader.task_config_forwarding`).

KIP-618 groundwork (docs/exactly-once.md): task transactional ids ``<group.id>-<connector>-<task>``
(:func:`connect_runtime.storage.fenced_writer.task_transactional_id`) and :meth:`fence_zombies`, which
the leader runs for a connector: it fences the ids of every task of the previous and the current
generation, then writes ``tasks-fencing-<connector>`` with the current task count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import NoReturn

from connect_runtime.api.errors import ConnectError, NotLeaderError, RetriableError
from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.runtime.request_signing import new_session_key
from connect_runtime.storage.config_store import KafkaConfigStore, WritePrivilegesError
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.fenced_writer import FencedError, task_transactional_id

logger = logging.getLogger(__name__)

class LeaderConfigWriter:
    """Leader-only config writes for one herder (tick thread only, except :meth:`task_transactional_ids`)."""

    def __init__(self, config_store: KafkaConfigStore, *, assignment: Callable[[], Assignment | None],
                 demote: Callable[[], None], request_rebalance: Callable[[], None], claim_timeout_s: float,
                 session_key_ttl_s: float, group_id: str,
                 fence_producers: Callable[[list[str]], None] | None) -> None:
        self._store = config_store
        self._assignment = assignment
        #: Drops the leader role from the herder's current assignment (after a fenced write).
        self._demote = demote
        self._request_rebalance = request_rebalance
        self._claim_timeout_s = claim_timeout_s
        self._session_key_ttl_s = session_key_ttl_s
        self._group_id = group_id
        self._fence_producers = fence_producers
        #: The current assignment made us leader and we have not yet claimed the config writer.
        self.claim_pending = False

    # -- leadership ----------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        assignment = self._assignment()
        return assignment is not None and assignment.leader

    def leader_url(self) -> str | None:
        assignment = self._assignment()
        return None if assignment is None else assignment.leader_url

    def on_assignment(self, assignment: Assignment) -> None:
        """A new assignment: claim the config topic if it made us leader, else give up any claim."""
        if assignment.leader:
            if not self._store.has_write_privileges():
                self.claim_pending = True
                self.claim()
        else:
            self.claim_pending = False
            self._store.release_write_privileges()

    def claim(self) -> bool:
        """Fence the previous leader's config writer (only right after an assignment made us leader)."""
        if not self.claim_pending:
            return self._store.has_write_privileges()
        try:
            self._store.claim_write_privileges(self._claim_timeout_s)
        except ConnectError as exc:
            logger.warning("Could not claim the config topic as leader (%s); retrying on the next write", exc)
            return False
        self.claim_pending = False
        return True

    def require_leader(self, what: str) -> None:
        """Raise unless this worker is the leader and holds (or can now claim) the config writer."""
        if not self.is_leader():
            raise NotLeaderError(f"Cannot {what}: only the leader can do this.", self.leader_url())
        if not self.claim():
            if self.claim_pending:
                raise RetriableError(f"Cannot {what} yet: this leader has not claimed the config topic")
            self._refused(WritePrivilegesError(f"Cannot {what}: this leader's writer was fenced"))

    def write(self, write: Callable[[], None]) -> None:
        """Run one config-topic write; a fenced one turns into NotLeaderError."""
        if self.claim_pending and not self.claim():
            raise RetriableError("This leader has not claimed the config topic yet")
        try:
            write()
        except (FencedError, WritePrivilegesError) as exc:
            self._refused(exc)

    def _refused(self, exc: ConnectError) -> NoReturn:
        """A config write was fenced (a newer leader exists): stop acting as leader until reassigned."""
        logger.error("Config write refused (%s); this worker is no longer the leader, rejoining", exc)
        self.claim_pending = False
        self._store.release_write_privileges()
        self._demote()
        self._request_rebalance()
        raise NotLeaderError("This worker was fenced as leader; the group is rebalancing", None) from exc

    # -- session keys (KIP-507) ----------------------------------------------------------------------
    def maybe_rotate_session_key(self, snapshot: ClusterConfigState) -> bool:
        """As the leader, write a session key when there is none or it expired; True if one was written."""
        if not self.is_leader():
            return False
        now_ms = int(time.time() * 1000)
        current = snapshot.session_key
        if current is not None and (self._session_key_ttl_s <= 0 or
                                    now_ms - current.creation_timestamp_ms < self._session_key_ttl_s * 1000):
            return False
        logger.info("Writing a new session key (the previous one %s)", "expired" if current else "was missing")
        self.write(lambda: self._store.put_session_key(new_session_key(now_ms)))
        return True

    # -- zombie fencing (KIP-618) --------------------------------------------------------------------
    def task_transactional_ids(self, connector: str, task_count: int) -> list[str]:
        return [task_transactional_id(self._group_id, connector, t) for t in range(task_count)]

    def check_fencing_configured(self) -> None:
        if self._fence_producers is None:
            raise ConnectError("Zombie fencing is not configured on this worker")

    def fence_zombies(self, snapshot: ClusterConfigState, connector: str) -> None:
        """Fence the producers of every task the previous and the current task generation of
        ``connector`` may run, then record the current task count (``tasks-fencing-<connector>``),
        after which the new generation's tasks may start. The caller checked leadership."""
        fence = self._fence_producers
        if fence is None:
            raise ConnectError("Zombie fencing is not configured on this worker")
        count = snapshot.task_count(connector)
        previous = snapshot.task_count_records.get(connector, 0)
        ids = self.task_transactional_ids(connector, max(count, previous))
        logger.info("Connector %s: fencing %d task producer(s) (previous task count %d, current %d)",
                    connector, len(ids), previous, count)
        fence(ids)
        self.write(lambda: self._store.put_task_count_record(connector, count))
