"""Membership of a Connect group through Kafka's own group coordinator (Java's ``WorkerCoordinator``).

:class:`KafkaGroupMembership` implements :class:`~connect_runtime.runtime.coordination.membership.GroupMembership`
on kafka-python's ``BaseCoordinator``, reached only through :mod:`connect_runtime.clients.group_client` (the
one module that touches kafka-python): JoinGroup / SyncGroup / Heartbeat / LeaveGroup with protocol type
``connect`` and Java's ``sessioned`` protocol (:mod:`.connect_protocol`). The broker picks the leader;
the leader runs the incremental cooperative assignor (:mod:`connect_runtime.runtime.coordination.assignor`)
over the config snapshot the herder last handed to :meth:`KafkaGroupMembership.poll`; every member learns
its share in SyncGroup.

Threads. kafka-python runs one IO thread per client: heartbeats, and the JoinGroup/SyncGroup exchange
including the group client's callbacks (``_join_metadata``, ``_leader_assign`` - the leader's assignor -,
``_joined``, ``_confirm``), run there; a heartbeat that thread confirms late is named in the log
(:mod:`.late_heartbeats`). The herder's tick thread calls ``join`` / ``poll`` / ``leave``; ``poll`` drives
rejoins (``ensure_active_group``) and hands finished assignments over. The two sides share a few
fields under ``_state_lock``; the IO side never blocks on the herder.

The leader's rounds. The leader runs the assignor on the IO thread when the broker made this worker the
leader of a new generation (the SyncGroup phase, ``_leader_assign``: Java's ``performAssignment``), and on
the tick thread when this worker led its generation alone and only the work changed (below). Both feed the
same :class:`~connect_runtime.runtime.coordination.assignor.IncrementalCooperativeAssignor`, so its memory of
the previous round stays right whichever path ran last.

When a worker stops its tasks. Between live members revoked work stops before it is reassigned: the
assignor never assigns what a member reports owning (its invariant A), and a member rejoins without
revoked work only from the *next* :meth:`poll`, after the herder stopped it (KIP-415's two rounds). A
member the broker may have removed stops all its work at the first :meth:`poll` after its session lease
lapsed or its generation was lost, then rejoins owning nothing; :mod:`.session_lease` states the rule
and derives how long a task may still run there after the group reassigned it.

A sole leader assigns new work without a rebalance. When connectors or tasks are added or removed and
this worker led the current generation *alone* (its assignor's last round had no other member),
:meth:`KafkaGroupMembership.poll` runs the assignor over the same generation locally instead of rejoining
(Java's DistributedHerder names this optimisation in ``onTaskConfigUpdate``: "single-task connectors
clearly don't need any coordination"). A rebalance would hand all of it to this worker anyway; on Kafka it
costs a JoinGroup round trip, on brokers that hold every JoinGroup (Tansu: ``session.timeout.ms``/2)
seconds per change, twice at every start-up (the connectors, then their tasks). It is safe because the
work is new to the group: no other member of this generation exists to own it, a member joining meanwhile
makes this worker rejoin reporting the work as owned (the assignor balances it from there, invariant A),
and the assignor's memory is updated as by a real round. Not taken while a rejoin is due, a join is in
flight, the generation is lost, or the last acknowledged heartbeat is older than half a session
(:meth:`.SessionLease.allows_local_round`).

Connectors on the leader. Each member says in its JoinGroup whether it can reach the leader over
internal REST (``internal_rest``); if one cannot, the leader keeps every connector (assignor invariant F).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.group_client import (
    CoordinatorCallbacks,
    CoordinatorSettings,
    KafkaError,
    KafkaPythonCoordinator,
)
from connect_runtime.metrics import RebalanceMetrics
from connect_runtime.runtime import worker_config as wc
from connect_runtime.runtime.coordination import connect_protocol
from connect_runtime.runtime.coordination.assignor import (
    EMPTY,
    ConnectorsAndTasks,
    IncrementalCooperativeAssignor,
    MemberAssignment,
)
from connect_runtime.runtime.coordination.late_heartbeats import LateHeartbeats
from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.runtime.coordination.session_lease import MustStopFirst, SessionLease
from connect_runtime.storage.config_store import ClusterConfigState

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Completed:
    generation: int
    member_id: str
    data: bytes


class RebalanceTimer:
    """How long this worker's rebalances take: feeds ``metrics`` (if any, ``connect_runtime.metrics``) when one
    starts and when one completes, with its duration.

    A rebalance begins with the first JoinGroup this member sends after its last applied assignment and
    ends when the herder is handed the next one. kafka-python's IO thread reports the JoinGroups, the
    herder's tick thread the assignments, so the timer guards its one field with a lock.
    """

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


class KafkaGroupMembership:
    """This worker's membership of Connect group ``group_id`` on a Kafka cluster (see module doc).

    ``client_config`` holds kafka-python client keywords (at least ``bootstrap_servers``; see
    :meth:`~connect_runtime.runtime.worker_config.DistributedWorkerConfig.group_client_config`). Nothing
    connects before :meth:`join`. ``notify`` is called from the client's IO thread whenever :meth:`poll` has
    work to do (a rebalance began, a JoinGroup/SyncGroup finished, membership was lost); a herder that polls
    with a zero timeout and idles on its own condition passes a callback that wakes it. It must not block.
    ``released_work`` says which of the given work its last owner stopped cleanly (the assignor's
    invariant D); without it every departure counts as a crash.
    """

    def __init__(self, group_id: str, advertised_url: str | None, client_config: Mapping[str, Any], *,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 60_000, scheduled_rebalance_max_delay_ms: int = 300_000,
                 scheduled_rebalance_crash_delay_ms: int = 0, bootstrap_timeout_s: float = 30.0,
                 worker_sync_timeout_ms: int = 3_000, notify: Callable[[], None] | None = None,
                 released_work: Callable[[ConnectorsAndTasks], ConnectorsAndTasks] | None = None,
                 metrics: RebalanceMetrics | None = None, internal_rest: bool = True) -> None:
        self.group_id = group_id
        #: The group protocol this member offers and speaks: Java's ``sessioned`` (:mod:`.connect_protocol`).
        self.protocol = connect_protocol.PROTOCOL
        #: Whether this worker, as a follower, can reach the leader over internal REST (told to the
        #: leader in every JoinGroup; see "Connectors on the leader" in the module docstring).
        self.internal_rest = internal_rest
        self.advertised_url = advertised_url
        self._client_config = dict(client_config)
        self._heartbeat_s = heartbeat_interval_ms / 1000
        #: worker.sync.timeout.ms: how long a member whose leader was behind on the config topic gives
        #: the config readers to catch up (they read continuously) before it rejoins (Java's readConfigToEnd).
        self._sync_s = worker_sync_timeout_ms / 1000
        self._settings = CoordinatorSettings(
            group_id, session_timeout_ms, heartbeat_interval_ms, rebalance_timeout_ms,
            retry_backoff_ms=int(self._client_config.get("retry_backoff_ms", 100)),
            request_timeout_ms=int(self._client_config.get("request_timeout_ms", 30_000)))
        self._bootstrap_timeout_s = bootstrap_timeout_s
        self._notify_herder = notify
        self._assignor = IncrementalCooperativeAssignor(scheduled_rebalance_max_delay_ms,
                                                        scheduled_rebalance_crash_delay_ms)
        self._released_work = released_work
        self._rebalance_timer = RebalanceTimer(metrics)
        self._coordinator: KafkaPythonCoordinator | None = None
        self._wakeup = threading.Event()
        self._state_lock = threading.Lock()
        # Shared with the IO thread (under _state_lock):
        self._snapshot = ClusterConfigState()
        self._owned: ConnectorsAndTasks = EMPTY
        #: The last assignment received, sent back in every JoinGroup (Java's ``assignmentSnapshot``).
        self._previous: connect_protocol.WireAssignment | None = None
        self._completed: _Completed | None = None
        self._last_completed_generation: int | None = None
        self._lease = SessionLease(session_timeout_ms / 1000, rebalance_timeout_ms / 1000)
        # IO thread only: names a heartbeat confirmed late, before a lost membership (late_heartbeats.py).
        self._late_heartbeats = LateHeartbeats(group_id, session_timeout_ms / 1000, heartbeat_interval_ms / 1000)
        # Herder thread only:
        self._rejoin_at: float | None = None
        self._current: Assignment | None = None
        #: Work changed while this worker led its generation alone: the next poll assigns it locally.
        self._local_round = False

    @classmethod
    def from_worker_config(cls, config: wc.DistributedWorkerConfig, advertised_url: str | None,
                           notify: Callable[[], None] | None = None,
                           released_work: Callable[[ConnectorsAndTasks], ConnectorsAndTasks] | None = None,
                           metrics: RebalanceMetrics | None = None,
                           internal_rest: bool = True) -> KafkaGroupMembership:
        """From the worker config: group.id, the session / heartbeat / rebalance timeouts, the scheduled
        rebalance delays, worker.sync.timeout.ms, the connection and security settings (``admin.``-prefixed
        overrides included). ``connect.protocol`` has one value, ``sessioned``, which the
        worker config checks (:mod:`.connect_protocol`)."""
        return cls(config.group_id, advertised_url, config.group_client_config("coordinator"),
                   session_timeout_ms=int(config[wc.SESSION_TIMEOUT_MS]),
                   heartbeat_interval_ms=int(config[wc.HEARTBEAT_INTERVAL_MS]),
                   rebalance_timeout_ms=int(config[wc.REBALANCE_TIMEOUT_MS]),
                   scheduled_rebalance_max_delay_ms=int(config[wc.SCHEDULED_REBALANCE_MAX_DELAY_MS]),
                   scheduled_rebalance_crash_delay_ms=int(config[wc.SCHEDULED_REBALANCE_CRASH_DELAY_MS]),
                   worker_sync_timeout_ms=int(config[wc.WORKER_SYNC_TIMEOUT_MS]), notify=notify,
                   released_work=released_work, metrics=metrics, internal_rest=internal_rest)

    # -- what the herder and REST read ---------------------------------------------------------------

    @property
    def assignment(self) -> Assignment | None:
        """The last assignment handed to the herder (None before the first)."""
        return self._current

    @property
    def member_id(self) -> str | None:
        return None if self._coordinator is None else self._coordinator.member_id

    @property
    def generation(self) -> int:
        return -1 if self._current is None else self._current.generation

    @property
    def is_leader(self) -> bool:
        return self._current is not None and self._current.leader

    @property
    def leader_url(self) -> str | None:
        return None if self._current is None else self._current.leader_url

    # -- GroupMembership -----------------------------------------------------------------------------

    def join(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment:
        """Connect, join and return the first assignment; ConnectError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        self._start(min(timeout_s, self._bootstrap_timeout_s))
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ConnectError(f"worker did not join Connect group {self.group_id} within {timeout_s} s")
            result = self.poll(snapshot, remaining)
            if result is not None and self._coordinator is not None and self._coordinator.stable():
                return result

    def poll(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment | None:
        """Heartbeat bookkeeping, rejoin when needed; the new full assignment after a rebalance, else None.

        Calling ``poll`` again acknowledges the previous assignment: everything it no longer contains
        has been stopped. Blocks up to ``timeout_s`` when nothing happens.
        """
        if self._coordinator is None:
            return self.join(snapshot, timeout_s)
        coordinator = self._coordinator
        with self._state_lock:
            self._snapshot = snapshot
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                coordinator.poll_heartbeat()
            except KafkaError as exc:
                logger.warning("Group %s: heartbeat loop failed (%r); it restarts on the next join",
                               self.group_id, exc)
            fenced = self._fence_if_lost()
            if fenced is not None:
                return fenced
            if self._local_round:
                self._local_round = False
                alone = self._assign_alone(snapshot)
                if alone is not None:
                    return alone
                coordinator.request_rejoin()  # the group moved on meanwhile: a real round
            now = time.monotonic()
            if self._rejoin_at is not None and now >= self._rejoin_at:
                self._rejoin_at = None
                coordinator.request_rejoin()
            if coordinator.need_rejoin():
                result = self._join_once(deadline - now)
                if result is not None:
                    return result
            wait_until = deadline if self._rejoin_at is None else min(deadline, self._rejoin_at)
            remaining = wait_until - time.monotonic()
            if deadline - time.monotonic() <= 0:
                return None
            if not coordinator.need_rejoin():
                self._wakeup.wait(max(0.0, min(remaining, self._heartbeat_s)))
                self._wakeup.clear()

    def request_rebalance(self, work_changed: bool = False) -> None:
        if self._coordinator is None:
            return
        if work_changed and self._leads_alone():
            self._local_round = True  # see "A sole leader assigns new work without a rebalance"
        else:
            self._coordinator.request_rejoin()

    def wakeup(self) -> None:
        self._wakeup.set()

    def _notify(self) -> None:
        """IO thread: something for :meth:`poll` to do (rebalance started, join finished, membership lost)."""
        self._wakeup.set()
        if self._notify_herder is not None:
            self._notify_herder()

    def leave(self) -> None:
        """LeaveGroup and close the client. Call after stopping all owned work: the group reassigns it
        (after ``scheduled.rebalance.max.delay.ms``) without waiting for this worker's session to expire."""
        coordinator, self._coordinator = self._coordinator, None
        if coordinator is not None:
            try:
                coordinator.leave_group(timeout_ms=self._settings.request_timeout_ms)
            except (KafkaError, RuntimeError) as exc:
                logger.warning("Group %s: LeaveGroup failed: %r", self.group_id, exc)
            coordinator.close()
        with self._state_lock:
            self._owned = EMPTY
            self._previous = None
            self._completed = None
        self._current = None
        self._rejoin_at = None

    # -- internals -----------------------------------------------------------------------------------

    def _start(self, timeout_s: float) -> None:
        if self._coordinator is not None:
            return
        callbacks = CoordinatorCallbacks(metadata=self._join_metadata, assign=self._leader_assign,
                                         joined=self._joined, join_in_flight=self._set_join_started,
                                         confirmed=self._confirm, changed=self._notify)
        self._coordinator = KafkaPythonCoordinator.connect(
            {"client_id": f"connect-{self.group_id}", **self._client_config}, self._settings,
            connect_protocol.PROTOCOL_TYPE, self.protocol.protocol_name, callbacks, timeout_s)
        logger.info("Group %s: member client started (broker version %s, protocol %s), advertised URL %s",
                    self.group_id, self._coordinator.broker_version, self.protocol.protocol_name, self.advertised_url)

    def _join_once(self, timeout_s: float) -> Assignment | None:
        assert self._coordinator is not None
        try:
            joined = self._coordinator.ensure_active_group(timeout_s)
        except MustStopFirst:
            return self._fence("its membership was lost during a rejoin")
        except KafkaError as exc:
            raise ConnectError(f"worker cannot join Connect group {self.group_id}: {exc!r}") from exc
        with self._state_lock:
            completed, self._completed = self._completed, None
        if not joined or completed is None:
            return None
        return self._apply(completed)

    def _apply(self, completed: _Completed) -> Assignment | None:
        assert self._coordinator is not None
        try:
            wire = connect_protocol.decode_member_assignment(completed.data)
        except connect_protocol.ProtocolError as exc:
            logger.error("Group %s generation %d: %s; rejoining", self.group_id, completed.generation, exc)
            self._rejoin_at = time.monotonic() + self._heartbeat_s
            return None
        if wire.error == connect_protocol.CONFIG_MISMATCH:
            with self._state_lock:
                self._previous = wire  # as Java's snapshot: sent back, failed, with what this member still runs
            logger.info("Group %s generation %d: leader is behind on the config topic (members read up to "
                        "offset %d); rejoining once it has caught up", self.group_id, completed.generation,
                        wire.config_offset)
            self._rejoin_at = time.monotonic() + self._sync_s
            return None
        with self._state_lock:
            owned = (self._owned - wire.revoked) | wire.assigned
            self._owned = owned
            self._previous = wire
        if wire.revoked:
            # Revocation before assignment: rejoin from the next poll, after the herder stopped them.
            self._coordinator.request_rejoin()
        if wire.delay_ms > 0:
            self._rejoin_at = time.monotonic() + wire.delay_ms / 1000
        leader = wire.leader == completed.member_id
        self._current = Assignment.of(completed.generation, leader, wire.leader_url, owned.connectors,
                                      owned.tasks, wire.config_offset)
        self._rebalance_timer.completed(completed.generation, leader)
        logger.info("Group %s generation %d%s: %d connector(s), %d task(s); +%d/-%d since last; leader %s%s",
                    self.group_id, completed.generation, " (leader)" if leader else "", len(owned.connectors),
                    len(owned.tasks), len(wire.assigned), len(wire.revoked), wire.leader_url,
                    f"; lost work held for {wire.delay_ms} ms" if wire.delay_ms else "")
        return self._current

    def _leads_alone(self) -> bool:
        """Whether this worker led the current generation as its only member, and still may act on it."""
        coordinator, current = self._coordinator, self._current
        if coordinator is None or current is None or not current.leader or self._rejoin_at is not None:
            return False
        if coordinator.need_rejoin() or coordinator.generation_lost or not coordinator.stable():
            return False
        with self._state_lock:
            if self._completed is not None or self._last_completed_generation != current.generation:
                return False
            if not self._lease.allows_local_round():
                return False
        return self._assignor.led_alone(coordinator.member_id, current.generation)

    def _assign_alone(self, snapshot: ClusterConfigState) -> Assignment | None:
        """Tick thread: the assignor's round over this generation with this worker as its only member
        (no JoinGroup is in flight, so the IO thread's ``_leader_assign`` cannot run meanwhile)."""
        if not self._leads_alone():
            return None
        assert self._coordinator is not None and self._current is not None
        member, generation = self._coordinator.member_id, self._current.generation
        with self._state_lock:
            self._snapshot = snapshot
            owned = self._owned
        owned, delay_ms = self._sole_round(member, generation, owned, snapshot)
        with self._state_lock:
            self._owned = owned
        if delay_ms > 0:
            self._rejoin_at = time.monotonic() + delay_ms / 1000
        self._current = Assignment.of(generation, True, self._current.leader_url, owned.connectors, owned.tasks,
                                      snapshot.offset)
        return self._current

    def _fence_if_lost(self) -> Assignment | None:
        """Stop everything if the session lease says so (generation_lost takes the coordinator's lock)."""
        assert self._coordinator is not None
        generation_lost = self._coordinator.generation_lost
        with self._state_lock:
            reason = self._lease.fence_reason(bool(self._owned), generation_lost)
        return None if reason is None else self._fence(self._lease.describe(reason))

    def _fence(self, why: str) -> Assignment:
        with self._state_lock:
            dropped, self._owned = self._owned, EMPTY
            self._previous = None
        logger.warning("Group %s: stopping all %d connector(s) and %d task(s) of this worker because %s; "
                       "the group may already have reassigned them", self.group_id, len(dropped.connectors),
                       len(dropped.tasks), why)
        generation = self._current.generation if self._current is not None else -1
        self._current = Assignment.of(generation, False, None, (), (), -1)
        if self._coordinator is not None:
            # Rejoin owning nothing, so that the leader reassigns the dropped work. Without this a
            # member whose heartbeats stalled but whose membership survived (e.g. a process paused
            # for longer than the session, then resumed) would keep its seat with no work, and the
            # leader would believe the work still ran there: nothing would ever restart it.
            self._coordinator.request_rejoin()
        return self._current

    def _join_metadata(self, generation_lost: bool) -> bytes:
        """IO thread: what this member reports in its JoinGroup; refuses to report work it lost."""
        with self._state_lock:
            owned, snapshot, previous = self._owned, self._snapshot, self._previous
        SessionLease.check_rejoin(bool(owned), generation_lost)
        return connect_protocol.encode_member_metadata(connect_protocol.MemberMetadata(
            self.advertised_url, snapshot.offset, owned, self.internal_rest, previous))

    def _joined(self, generation: int, member_id: str, data: bytes) -> None:
        """IO thread: a JoinGroup + SyncGroup finished; the herder's next poll applies it."""
        with self._state_lock:
            self._completed = _Completed(generation, member_id, data)
            self._last_completed_generation = generation
        self._notify()

    def _leader_assign(self, leader_id: str, generation: int,
                       metadata: Mapping[str, bytes]) -> dict[str, bytes]:
        """IO thread, leader only (Java's ``performAssignment``): decode the members, check their config
        offsets, run the assignor over every member's metadata, encode every member's share."""
        with self._state_lock:
            snapshot, last_completed = self._snapshot, self._last_completed_generation
        members: dict[str, connect_protocol.MemberMetadata] = {}
        for member_id, data in metadata.items():
            try:
                members[member_id] = connect_protocol.decode_member_metadata(data)
            except connect_protocol.ProtocolError as exc:
                logger.error("Group %s: member %s: %s; treating it as owning nothing", self.group_id,
                             member_id, exc)
                members[member_id] = connect_protocol.MemberMetadata(None, -1)
        max_offset = max(m.config_offset for m in members.values())

        def wire(plan_member: MemberAssignment | None = None, *, error: int = connect_protocol.NO_ERROR,
                 delay_ms: int = 0) -> bytes:
            return connect_protocol.encode_member_assignment(connect_protocol.WireAssignment(
                error, leader_id, self.advertised_url, snapshot.offset if not error else max_offset,
                plan_member.assigned if plan_member else EMPTY, plan_member.revoked if plan_member else EMPTY,
                delay_ms))

        if snapshot.offset < max_offset:
            logger.info("Group %s generation %d: leader is behind (config topic read to offset %d, a member "
                        "to %d); everyone rejoins", self.group_id, generation, snapshot.offset, max_offset)
            self._assignor.note_generation(generation)
            return {member_id: wire(error=connect_protocol.CONFIG_MISMATCH) for member_id in members}
        configured = ConnectorsAndTasks.of(snapshot.connectors(), snapshot.all_tasks())
        released = self._released_work(configured) if self._released_work is not None else EMPTY
        # Invariant F of the assignor: a member that cannot reach the leader keeps connectors on it.
        unreachable = sorted(m for m, s in members.items() if not s.internal_rest)
        if unreachable and len(members) > 1:
            logger.info("Group %s generation %d: connectors stay on the leader (member(s) without internal REST "
                        "to reach it: %s)", self.group_id, generation, ", ".join(unreachable))
        plan = self._assignor.assign(configured, {m: s.owned for m, s in members.items()},
                                     generation=generation, last_completed_generation=last_completed,
                                     now_ms=time.monotonic() * 1000, released=released,
                                     connectors_on=leader_id if unreachable else None)
        return {member_id: wire(plan.members[member_id], delay_ms=plan.delay_ms) for member_id in members}

    def _sole_round(self, member: str, generation: int, owned: ConnectorsAndTasks,
                    snapshot: ClusterConfigState) -> tuple[ConnectorsAndTasks, int]:
        """Tick thread: the assignor's round over ``generation`` with ``member`` (owning ``owned``) as its only
        member (see "A sole leader assigns new work without a rebalance"): what it owns afterwards, and the
        plan's ``delay_ms``."""
        configured = ConnectorsAndTasks.of(snapshot.connectors(), snapshot.all_tasks())
        released = self._released_work(configured) if self._released_work is not None else EMPTY
        plan = self._assignor.assign(configured, {member: owned}, generation=generation,
                                     last_completed_generation=generation, now_ms=time.monotonic() * 1000,
                                     released=released, connectors_on=None if self.internal_rest else member)
        mine = plan.members[member]
        owned = (owned - mine.revoked) | mine.assigned
        logger.info("Group %s generation %d (leader, sole member): %d connector(s), %d task(s); +%d/-%d "
                    "assigned without a rebalance", self.group_id, generation, len(owned.connectors),
                    len(owned.tasks), len(mine.assigned), len(mine.revoked))
        return owned, plan.delay_ms

    def _confirm(self, send_time: float) -> None:
        with self._state_lock:
            self._lease.confirmed(send_time)
        self._late_heartbeats.confirmed(send_time)

    def _set_join_started(self, when: float | None) -> None:
        with self._state_lock:
            self._lease.join_in_flight(when)
        self._late_heartbeats.join_in_flight(when)
        if when is not None:
            self._rebalance_timer.join_sent(when)
