"""The leader's rounds of the Connect group: the assignor over what every member reports, in the wire format.

:class:`~connect_runtime.runtime.coordination.kafka_membership.KafkaGroupMembership` runs
:meth:`LeaderRounds.group_round` on kafka-python's IO thread when the broker made this worker the
leader of a new generation (the SyncGroup phase), and :meth:`LeaderRounds.sole_round` on the tick
thread when this worker led its generation alone and only the work changed (below). Both feed the same
:class:`~connect_runtime.runtime.coordination.assignor.IncrementalCooperativeAssignor`, so its memory of the
previous round stays right whichever path ran last. Nothing here talks to the broker.

A sole leader assigns new work without a rebalance
--------------------------------------------------
When connectors or tasks are added or removed and this worker led the current generation *alone* (its
assignor's last round had no other member), ``KafkaGroupMembership.poll`` runs the assignor over
the same generation locally instead of rejoining (Java's DistributedHerder names this optimisation in
``onTaskConfigUpdate``: "single-task connectors clearly don't need any coordination"). A rebalance
would hand all of it to this worker anyway; on Kafka it costs a JoinGroup round trip, on brokers that
hold every JoinGroup (Tansu: ``session.timeout.ms``/2) seconds per change, twice at every start-up (the
connectors, then their tasks). It is safe because the work is new to the group: no other member of
this generation exists to own it, a member joining meanwhile makes this worker rejoin reporting the
work as owned (the assignor balances it from there, invariant A), and the assignor's memory is updated
as by a real round. Not taken while a rejoin is due, a join is in flight, the generation is lost, or
the last acknowledged heartbeat is older than half a session (:meth:`.SessionLease.allows_local_round`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from connect_runtime.runtime.coordination import connect_protocol
from connect_runtime.runtime.coordination.assignor import (
    EMPTY,
    ConnectorsAndTasks,
    IncrementalCooperativeAssignor,
    MemberAssignment,
)
from connect_runtime.storage.config_store import ClusterConfigState

logger = logging.getLogger(__name__)


class LeaderRounds:
    """The assignor's rounds for group ``group_id``, this worker (advertised as ``advertised_url``) leading.

    ``released_work`` says which of the given work its last owner stopped cleanly (the assignor's
    invariant D); without it every departure counts as a crash.
    """

    def __init__(self, group_id: str, advertised_url: str | None, assignor: IncrementalCooperativeAssignor,
                 released_work: Callable[[ConnectorsAndTasks], ConnectorsAndTasks] | None) -> None:
        self._group_id = group_id
        self._advertised_url = advertised_url
        self.assignor = assignor
        self._released_work = released_work

    def group_round(self, leader_id: str, generation: int, metadata: Mapping[str, bytes],
                    snapshot: ClusterConfigState, last_completed: int | None) -> dict[str, bytes]:
        """Decode the members, check config offsets, run the assignor, encode every member's share."""
        members: dict[str, connect_protocol.MemberMetadata] = {}
        for member_id, data in metadata.items():
            try:
                members[member_id] = connect_protocol.decode_member_metadata(data)
            except connect_protocol.ProtocolError as exc:
                logger.error("Group %s: member %s: %s; treating it as owning nothing", self._group_id,
                             member_id, exc)
                members[member_id] = connect_protocol.MemberMetadata(None, -1)
        max_offset = max(m.config_offset for m in members.values())

        def wire(plan_member: MemberAssignment | None = None, *, error: int = connect_protocol.NO_ERROR,
                 delay_ms: int = 0) -> bytes:
            return connect_protocol.encode_member_assignment(connect_protocol.WireAssignment(
                error, leader_id, self._advertised_url, snapshot.offset if not error else max_offset,
                plan_member.assigned if plan_member else EMPTY, plan_member.revoked if plan_member else EMPTY,
                delay_ms))

        if snapshot.offset < max_offset:
            logger.info("Group %s generation %d: leader is behind (config topic read to offset %d, a member "
                        "to %d); everyone rejoins", self._group_id, generation, snapshot.offset, max_offset)
            self.assignor.note_generation(generation)
            return {member_id: wire(error=connect_protocol.CONFIG_MISMATCH) for member_id in members}
        configured = ConnectorsAndTasks.of(snapshot.connectors(), snapshot.all_tasks())
        released = self._released_work(configured) if self._released_work is not None else EMPTY
        # Invariant F of the assignor: a member that cannot reach the leader keeps connectors on it.
        unreachable = sorted(m for m, s in members.items() if not s.internal_rest)
        if unreachable and len(members) > 1:
            logger.info("Group %s generation %d: connectors stay on the leader (member(s) without internal REST "
                        "to reach it: %s)", self._group_id, generation, ", ".join(unreachable))
        plan = self.assignor.assign(configured, {m: s.owned for m, s in members.items()},
                                    generation=generation, last_completed_generation=last_completed,
                                    now_ms=time.monotonic() * 1000, released=released,
                                    connectors_on=leader_id if unreachable else None)
        return {member_id: wire(plan.members[member_id], delay_ms=plan.delay_ms) for member_id in members}

    def sole_round(self, member: str, generation: int, owned: ConnectorsAndTasks, snapshot: ClusterConfigState,
                   internal_rest: bool) -> tuple[ConnectorsAndTasks, int]:
        """The assignor's round over ``generation`` with ``member`` (owning ``owned``) as its only member:
        what it owns afterwards, and the plan's ``delay_ms``."""
        configured = ConnectorsAndTasks.of(snapshot.connectors(), snapshot.all_tasks())
        released = self._released_work(configured) if self._released_work is not None else EMPTY
        plan = self.assignor.assign(configured, {member: owned}, generation=generation,
                                    last_completed_generation=generation, now_ms=time.monotonic() * 1000,
                                    released=released, connectors_on=None if internal_rest else member)
        mine = plan.members[member]
        owned = (owned - mine.revoked) | mine.assigned
        logger.info("Group %s generation %d (leader, sole member): %d connector(s), %d task(s); +%d/-%d "
                    "assigned without a rebalance", self._group_id, generation, len(owned.connectors),
                    len(owned.tasks), len(mine.assigned), len(mine.revoked))
        return owned, plan.delay_ms
