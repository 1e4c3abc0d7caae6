"""The session lease: when a Connect group member must stop all its work because the group may have moved on.

A member keeps running its connectors and tasks only while it can tell that the broker still counts it
as a member. :class:`SessionLease` is that rule as a pure class: it is told what the group coordinator
answered (events, with the times they happened) and answers the questions
:class:`~connect_runtime.runtime.coordination.kafka_membership.KafkaGroupMembership` asks at every
``poll``. It reads time only through the injected clock, opens no socket and starts no thread, so the
unit tests drive it through tables of events and clock readings.

The events
----------
* ``confirmed(at)``: the broker still counted this member at ``at``. That is the *send* time of a
  heartbeat or SyncGroup it answered as to a member (no error, or REBALANCE_IN_PROGRESS), because the
  broker restarts the session from the request's *arrival*, which is later; for a SyncGroup answered
  REBALANCE_IN_PROGRESS it is the answer's arrival, because the broker held that request and restarted
  the session when it answered (connect_runtime/clients/group_client.py). Confirmations only move the
  lease forward.
* ``join_in_flight(at)`` / ``join_in_flight(None)``: a JoinGroup + SyncGroup exchange is in flight
  since ``at`` / ended. Heartbeats pause meanwhile, and the broker does not expire a member whose
  JoinGroup it holds. Every JoinGroup attempt sends this again; kafka-python starts the next attempt
  only after the previous one ended and the coordinator was found (again).

The rule: when a worker stops its tasks
----------------------------------------
At every ``poll``, a member that owns anything stops *all* of it (the membership hands the herder an
empty assignment, which the herder applies before it polls again, then rejoins owning nothing) when

1. its generation is lost: a heartbeat, JoinGroup or SyncGroup was answered UNKNOWN_MEMBER_ID or
   ILLEGAL_GENERATION (the broker removed it: expired session, a rebalance that ended without it,
   kafka-python leaving after ``rebalance.timeout.ms`` without a poll), or
2. the lease lapsed: the clock is past ``confirmed + S``, or, while a JoinGroup is in flight since
   ``j``, past ``max(confirmed + S, j + R + S)`` (the broker may hold that JoinGroup for up to R, the
   rebalance timeout, then the member has a session to SyncGroup).

And it never sends a JoinGroup that reports work once its generation is lost
(:meth:`SessionLease.check_rejoin` raises :class:`MustStopFirst`): it stops the work first. A clean
departure stops everything before its LeaveGroup; a revocation stops the revoked work before the rejoin that lets the
leader reassign it (the KIP-415 handoff, assignor.py invariant A). This module is about the unclean
cases, where the leader reassigns work nobody reports any more.

Why no task runs on two workers beyond a bounded window
---------------------------------------------------------
Notation: S = ``session.timeout.ms``, R = ``rebalance.timeout.ms``, H = ``heartbeat.interval.ms``,
P = the longest gap between two polls of the herder's tick thread (the contract is at most H; a tick
that blocks stretches it), T = the time the herder takes to stop its tasks once the empty assignment
is applied (``task.shutdown.graceful.timeout.ms`` at most per task), d = one network latency.

The leader gives a member's work to another member only in a round the member is absent from (or does
not report the work). The broker removes a member at the earliest: (a) S after the last request of
that member *arrived* (session expiry), or (b) when a rebalance's join phase ends (at most R after it
began) without that member's JoinGroup, or (c) at its LeaveGroup. Work whose statuses still say
RUNNING is then reassigned in that same round (``scheduled.rebalance.crash.delay.ms``, default 0;
only work released by a clean stop is held for ``scheduled.rebalance.max.delay.ms``), so the new owner
may start it right after the removal. The overlap of old and new owner is therefore at most the
time from the removal to the old owner's stop. Let c be the last confirmation and j the send time of
the JoinGroup in flight, if any. The broker answered c as to a member, so the removal comes after c,
and after c + S when it is a session expiry.

* **Heartbeats stop while no JoinGroup is in flight** (a crash of the link or of the coordinator, a
  paused process, a stalled IO thread) and the broker expires the session: removal >= c + S, the lease
  lapses at c + S, so the member stops by c + S + P + T: **overlap <= P + T**. A paused process pauses
  its tasks too; they resume with the tick thread, which fences at its first poll.
* **A rebalance's join phase ends without this member's JoinGroup** (its herder did not poll in time,
  or its heartbeats stopped and R < S): the next heartbeat (within H + 2d) is answered
  UNKNOWN_MEMBER_ID, which loses the generation; if the coordinator is unreachable from then on, the
  lease lapses at c + S <= removal + S. **Overlap <= min(H + 2d, S) + P + T.**
* **A JoinGroup in flight when the coordinator becomes unreachable** (the request or its answer lost in
  a partition): the lease runs to j + R + S, and j <= c + S (a poll that finds the lease lapsed fences
  instead of joining). If the broker answered the JoinGroup, it removes the member no earlier than S
  after that answer (>= j): overlap <= R + P + T. If the JoinGroup never arrived and the session
  expired: removal >= c + S, overlap <= S + R + P + T. If the JoinGroup never arrived and a join phase
  ended without it (the herder missed that phase and the partition began right at its end): removal
  >= c, **overlap < R + 2S + P + T**. This assumes the cut-off member sends no further JoinGroup
  attempt: one that keeps finding a coordinator which answers every JoinGroup at once with a retriable
  error restarts ``j`` each time without being confirmed, and its lease stays open until an answer
  says its generation is lost.
* A SyncGroup answered REBALANCE_IN_PROGRESS confirms at the answer's arrival: up to d later than the
  broker's own restart of the session, so d is added to the first case there.

The window is therefore P + T (a few seconds) in the common failures, S + P + T at most when a
rebalance passes over a member whose herder stalled, and below R + 2S + P + T (with the defaults
60 s + 20 s + P + T) when a partition cuts a worker off in the middle of its own rejoin.
Java Connect held a crashed member's work for ``scheduled.rebalance.max.delay.ms`` (5 minutes), which
hid this window; this runtime reassigns it at once, so the window is real. Work that must never
overlap needs transactional fencing on top, as in Java: with exactly-once source support (KIP-618,
docs/exactly-once.md) the new owner's task starts with ``init_transactions`` on the same transactional
id, which fences the zombie's producer and aborts its open transaction, whatever the window.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable


class MustStopFirst(Exception):
    """Raised on the IO thread to abort a JoinGroup that would report work after losing membership."""


class FenceReason(enum.Enum):
    """Why the member must stop all its work now."""

    GENERATION_LOST = "its membership was lost"
    LEASE_LAPSED = "no heartbeat was acknowledged"


class SessionLease:
    """One member's session lease (see the module docstring). Not thread-safe: the membership calls it
    under its own state lock, events from kafka-python's IO thread, questions from the tick thread."""

    def __init__(self, session_timeout_s: float, rebalance_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.session_timeout_s = session_timeout_s
        self.rebalance_timeout_s = rebalance_timeout_s
        self._clock = clock
        #: The latest time the broker is known to have counted this member (None: never).
        self._confirmed_at: float | None = None
        #: When the JoinGroup in flight was sent (None: no exchange in flight).
        self._join_sent_at: float | None = None

    # -- events ----------------------------------------------------------------------------------------

    def confirmed(self, at: float) -> None:
        """The broker counted this member as of ``at``; an older confirmation never moves the lease back."""
        self._confirmed_at = at if self._confirmed_at is None else max(self._confirmed_at, at)

    def join_in_flight(self, sent_at: float | None) -> None:
        """A JoinGroup was sent at ``sent_at`` (the lease stretches to cover the broker holding it), or,
        with None, the JoinGroup + SyncGroup exchange ended (completed or failed)."""
        self._join_sent_at = sent_at

    # -- questions -------------------------------------------------------------------------------------

    @property
    def joining(self) -> bool:
        """Whether a JoinGroup + SyncGroup exchange is in flight."""
        return self._join_sent_at is not None

    def lapses_at(self) -> float:
        """The clock reading after which the lease has lapsed (minus infinity if never confirmed)."""
        deadline = -float("inf") if self._confirmed_at is None else self._confirmed_at + self.session_timeout_s
        if self._join_sent_at is not None:
            # The broker keeps a joining member for up to rebalance.timeout.ms, then it has a session
            # to sync; heartbeats pause meanwhile.
            deadline = max(deadline, self._join_sent_at + self.rebalance_timeout_s + self.session_timeout_s)
        return deadline

    def remaining_s(self) -> float:
        """Seconds until the lease lapses (negative once lapsed)."""
        return self.lapses_at() - self._clock()

    def fence_reason(self, owns_work: bool, generation_lost: bool) -> FenceReason | None:
        """Why a member owning work (``owns_work``) must stop all of it now, or None if it may go on.

        ``generation_lost`` is what the coordinator says of this member's generation (UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION, never joined). A member owning nothing has nothing to stop.
        """
        if not owns_work:
            return None
        lapses_at = self.lapses_at()
        if generation_lost:
            return FenceReason.GENERATION_LOST
        if self._clock() > lapses_at:
            return FenceReason.LEASE_LAPSED
        return None

    def describe(self, reason: FenceReason) -> str:
        """``reason`` as the end of the sentence "stopping all work of this worker because ..."."""
        text = str(reason.value)
        return f"{text} for {self.session_timeout_s} s" if reason is FenceReason.LEASE_LAPSED else text

    @staticmethod
    def check_rejoin(owns_work: bool, generation_lost: bool) -> None:
        """Raise :class:`MustStopFirst` if a JoinGroup about to be sent would report work this member may
        no longer own (its generation is lost): the work stops first, then it rejoins owning nothing."""
        if owns_work and generation_lost:
            raise MustStopFirst()

    def allows_local_round(self) -> bool:
        """Whether the lease is fresh enough for a sole leader to assign new work without a rebalance:
        no JoinGroup in flight and a confirmation at most half a session old (the broker cannot have
        removed this member, so no other member can have taken over the generation meanwhile)."""
        if self._join_sent_at is not None or self._confirmed_at is None:
            return False
        return not self._clock() - self._confirmed_at > self.session_timeout_s / 2
