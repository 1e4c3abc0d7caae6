"""Late heartbeats are named once per episode, judged against the previous heartbeat or the end of a join."""

from __future__ import annotations

import logging

import pytest

from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership
from connect_runtime.runtime.coordination.late_heartbeats import LateHeartbeats

LOGGER = "connect_runtime.runtime.coordination.late_heartbeats"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def watch(clock: Clock) -> LateHeartbeats:
    """S = 10 s, H = 3 s: a confirmation more than 5 s after its heartbeat was due is late, joined at 1000."""
    late = LateHeartbeats("g", 10.0, 3.0, clock)
    late.join_in_flight(clock.now - 1)
    late.join_in_flight(None)
    return late


def heartbeat(late: LateHeartbeats, clock: Clock, sent_at: float, answered_at: float) -> None:
    """A heartbeat sent at ``sent_at`` whose answer is read at ``answered_at`` (seconds after the join)."""
    clock.now = 1000.0 + answered_at
    late.confirmed(1000.0 + sent_at)


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_on_time_and_merely_slow_heartbeats_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    late = watch(clock)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        for sent in (3.0, 6.0, 9.0, 12.0):
            heartbeat(late, clock, sent, sent + 0.01)
        heartbeat(late, clock, 18.0, 19.9)  # due at 15: 4.9 s late, at most half a session
        heartbeat(late, clock, 21.0, 21.01)
    assert lines(caplog) == []


def test_a_late_episode_is_one_warning_naming_how_late_and_one_line_when_it_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    late = watch(clock)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        heartbeat(late, clock, 3.0, 3.01)
        heartbeat(late, clock, 12.0, 12.5)  # due at 6: sent 6 s late, answered 0.5 s later
        heartbeat(late, clock, 16.0, 23.0)  # due at 15: 8 s late, mostly waiting for its answer
        heartbeat(late, clock, 23.01, 23.02)  # due at 19: 4 s late, on time again
        heartbeat(late, clock, 26.01, 32.01)  # due at 26.01, answered 6 s later: a new episode
    logged = lines(caplog)
    assert [level for level, _ in logged] == [logging.WARNING, logging.INFO, logging.WARNING]
    assert ("Group g: a heartbeat was confirmed 6.5 s late (sent 6.0 s after it was due, answered 0.5 s after "
            "it was sent; heartbeat.interval.ms 3000, session.timeout.ms 10000)") in logged[0][1]
    assert logged[1][1] == "Group g: heartbeats on time again after 2 late one(s), the worst 8.0 s late"
    assert "confirmed 6.0 s late (sent 0.0 s after it was due, answered 6.0 s after it was sent" in logged[2][1]


def test_a_join_pauses_heartbeats_without_making_them_late(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    late = watch(clock)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        heartbeat(late, clock, 3.0, 3.01)
        clock.now = 1005.0
        late.join_in_flight(clock.now)  # the broker holds the JoinGroup for half a minute
        clock.now = 1035.0
        late.confirmed(1034.5)  # its SyncGroup: not judged
        late.join_in_flight(None)
        heartbeat(late, clock, 38.0, 38.01)  # due 3 s after the join ended: on time
        clock.now = 1039.0
        late.join_in_flight(clock.now)
        late.join_in_flight(None)
        heartbeat(late, clock, 48.0, 48.01)  # judged from the end of this join: 6 s late
    logged = lines(caplog)
    assert [level for level, _ in logged] == [logging.WARNING]
    assert "confirmed 6.0 s late" in logged[0][1]


def test_the_membership_feeds_it_from_the_coordinators_callbacks(caplog: pytest.LogCaptureFixture) -> None:
    member = KafkaGroupMembership("g", "http://w:8083/", {"bootstrap_servers": "127.0.0.1:1"},
                                  session_timeout_ms=10_000, heartbeat_interval_ms=3_000)
    clock = Clock()
    member._late_heartbeats = LateHeartbeats("g", 10.0, 3.0, clock)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        member._set_join_started(clock.now)  # the IO thread's callbacks: JoinGroup sent ...
        clock.now += 1
        member._confirm(clock.now)  # ... its SyncGroup answered ...
        member._set_join_started(None)  # ... the exchange ended
        clock.now += 12
        member._confirm(clock.now - 0.1)  # the first heartbeat, 9 s after it was due
    assert [level for level, _ in lines(caplog)] == [logging.WARNING]
