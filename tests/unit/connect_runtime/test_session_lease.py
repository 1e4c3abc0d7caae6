"""The session lease (connect_runtime/runtime/coordination/session_lease.py) as tables of events and clock readings.

Every row is a sequence of events at given clock times, then the clock reading at which the question is
asked, then the expected answer. The timeouts are Connect's defaults: session.timeout.ms 10 s,
rebalance.timeout.ms 60 s.
"""

from __future__ import annotations

import math
import time

import pytest

from connect_runtime.runtime.coordination.session_lease import FenceReason, MustStopFirst, SessionLease

S, R = 10.0, 60.0
Event = tuple[str, float | None]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def lease_after(events: list[Event]) -> tuple[SessionLease, Clock]:
    """A lease fed ``events``: ("confirmed", at), ("join", sent_at) or ("join", None) for the exchange's end."""
    clock = Clock()
    lease = SessionLease(S, R, clock)
    for kind, at in events:
        if kind == "confirmed":
            assert at is not None
            lease.confirmed(at)
        elif kind == "join":
            lease.join_in_flight(at)
        else:
            raise AssertionError(kind)
    return lease, clock


LAPSES_AT = [
    ("never confirmed: already lapsed", [], -math.inf),
    ("a confirmation gives a session", [("confirmed", 100.0)], 110.0),
    ("the latest confirmation counts", [("confirmed", 100.0), ("confirmed", 104.0)], 114.0),
    ("an older confirmation (answers out of order) never moves it back",
     [("confirmed", 104.0), ("confirmed", 100.0)], 114.0),
    ("a JoinGroup in flight stretches it to rebalance + session after the send",
     [("confirmed", 100.0), ("join", 105.0)], 175.0),
    ("a confirmation later than that still wins", [("join", 105.0), ("confirmed", 170.0)], 180.0),
    ("a JoinGroup alone, never confirmed", [("join", 105.0)], 175.0),
    ("every JoinGroup attempt restarts the stretch", [("confirmed", 100.0), ("join", 105.0), ("join", None),
                                                       ("join", 150.0)], 220.0),
    ("the exchange ended: back to the last confirmation",
     [("confirmed", 100.0), ("join", 105.0), ("join", None)], 110.0),
    ("the exchange ended with a SyncGroup confirmation",
     [("confirmed", 100.0), ("join", 105.0), ("confirmed", 130.0), ("join", None)], 140.0),
]


@pytest.mark.parametrize(("events", "lapses_at"), [row[1:] for row in LAPSES_AT], ids=[row[0] for row in LAPSES_AT])
def test_when_the_lease_lapses(events: list[Event], lapses_at: float) -> None:
    lease, clock = lease_after(events)
    assert lease.lapses_at() == lapses_at
    clock.now = 107.0
    assert lease.remaining_s() == lapses_at - 107.0
    joins = [at for kind, at in events if kind == "join"]
    assert lease.joining == (bool(joins) and joins[-1] is not None)


CONFIRMED_AT_100 = [("confirmed", 100.0)]
FENCE = [
    # name, events, clock, owns work, generation lost, expected
    ("fresh lease, owning work: keep running", CONFIRMED_AT_100, 105.0, True, False, None),
    ("exactly at the end of the session: still running", CONFIRMED_AT_100, 110.0, True, False, None),
    ("past the session: stop everything", CONFIRMED_AT_100, 110.001, True, False, FenceReason.LEASE_LAPSED),
    ("generation lost with a fresh lease: stop at once", CONFIRMED_AT_100, 101.0, True, True,
     FenceReason.GENERATION_LOST),
    ("generation lost and lapsed: the loss is named", CONFIRMED_AT_100, 200.0, True, True,
     FenceReason.GENERATION_LOST),
    ("owning nothing: nothing to stop, however lapsed", CONFIRMED_AT_100, 200.0, False, False, None),
    ("owning nothing: nothing to stop, generation lost", CONFIRMED_AT_100, 200.0, False, True, None),
    ("never confirmed, owning work", [], 1.0, True, False, FenceReason.LEASE_LAPSED),
    ("a JoinGroup in flight keeps it past the session", [*CONFIRMED_AT_100, ("join", 105.0)], 174.0, True, False,
     None),
    ("... until rebalance + session after the JoinGroup", [*CONFIRMED_AT_100, ("join", 105.0)], 175.5, True, False,
     FenceReason.LEASE_LAPSED),
    ("a JoinGroup that ended extends nothing", [*CONFIRMED_AT_100, ("join", 105.0), ("join", None)], 111.0, True,
     False, FenceReason.LEASE_LAPSED),
    ("heartbeats acknowledged every 3 s keep it", [("confirmed", t) for t in (100.0, 103.0, 106.0, 109.0)], 118.0,
     True, False, None),
]


@pytest.mark.parametrize(("events", "now", "owns_work", "generation_lost", "expected"),
                         [row[1:] for row in FENCE], ids=[row[0] for row in FENCE])
def test_when_a_member_must_stop_its_work(events: list[Event], now: float, owns_work: bool, generation_lost: bool,
                                          expected: FenceReason | None) -> None:
    lease, clock = lease_after(events)
    clock.now = now
    assert lease.fence_reason(owns_work, generation_lost) is expected


LOCAL_ROUND = [
    ("confirmed just now", CONFIRMED_AT_100, 100.0, True),
    ("confirmed exactly half a session ago", CONFIRMED_AT_100, 105.0, True),
    ("confirmed more than half a session ago", CONFIRMED_AT_100, 105.5, False),
    ("never confirmed", [], 0.0, False),
    ("a JoinGroup in flight", [*CONFIRMED_AT_100, ("join", 100.5)], 101.0, False),
    ("the JoinGroup ended and was confirmed", [*CONFIRMED_AT_100, ("join", 100.5), ("confirmed", 101.0),
                                               ("join", None)], 102.0, True),
]


@pytest.mark.parametrize(("events", "now", "allowed"), [row[1:] for row in LOCAL_ROUND],
                         ids=[row[0] for row in LOCAL_ROUND])
def test_when_a_sole_leader_may_assign_without_a_rebalance(events: list[Event], now: float, allowed: bool) -> None:
    lease, clock = lease_after(events)
    clock.now = now
    assert lease.allows_local_round() is allowed


@pytest.mark.parametrize(("owns_work", "generation_lost", "refused"),
                         [(True, True, True), (True, False, False), (False, True, False), (False, False, False)])
def test_a_join_group_never_reports_work_after_the_generation_was_lost(owns_work: bool, generation_lost: bool,
                                                                       refused: bool) -> None:
    if refused:
        with pytest.raises(MustStopFirst):
            SessionLease.check_rejoin(owns_work, generation_lost)
    else:
        SessionLease.check_rejoin(owns_work, generation_lost)


@pytest.mark.parametrize(("reason", "text"), [
    (FenceReason.GENERATION_LOST, "its membership was lost"),
    (FenceReason.LEASE_LAPSED, "no heartbeat was acknowledged for 10.0 s"),
])
def test_the_reason_is_logged_as_before(reason: FenceReason, text: str) -> None:
    assert SessionLease(S, R).describe(reason) == text


def test_the_default_clock_is_monotonic_time() -> None:
    lease = SessionLease(S, R)
    lease.confirmed(time.monotonic())
    assert 0 < lease.remaining_s() <= S
    assert lease.fence_reason(True, False) is None
