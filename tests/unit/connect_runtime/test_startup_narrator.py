"""The start-up narration: one INFO line per milestone with the time since start, one WARN per slow step."""

from __future__ import annotations

import logging
import threading

import pytest

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.logging_context import set_context
from connect_runtime.runtime.coordination.membership import Assignment
from connect_runtime.runtime.distributed.startup_narrator import StartupNarrator
from tests.support.kafka import wait_until

LOGGER = "connect_runtime.runtime.distributed.startup_narrator"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_milestones_are_logged_once_with_the_time_since_start(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    clock = Clock()
    narrator = StartupNarrator("w1:8083", "A-mm2", clock=clock, warn_after_s=60)
    narrator.starting()
    clock.now += 1.5
    narrator.cluster_reached("cid")
    clock.now += 3.0
    empty = Assignment.of(1, True, None, [], [])
    narrator.assigned(empty)
    narrator.assigned(empty)  # nothing changed: nothing new to say
    clock.now += 2.0
    tasks = [ConnectorTaskId("MirrorSourceConnector", 0)]
    narrator.assigned(Assignment.of(2, False, "http://w2:8083", ["MirrorSourceConnector"], tasks))
    narrator.close()
    assert lines(caplog) == [
        "Cluster reached (id cid): config and status topics read (1.5 s after start)",
        "Joined group A-mm2: generation 1, leader this worker (4.5 s after start)",
        "No connector or task assigned to this worker (generation 1)",
        "Assigned 1 connector(s) ['MirrorSourceConnector'] and 1 task(s) ['MirrorSourceConnector-0'] "
        "(generation 2) (6.5 s after start)",
    ]
    assert lines(caplog, logging.WARNING) == []


def test_a_slow_step_gets_one_warning_naming_what_it_waits_for(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    narrator = StartupNarrator("w1:8083", "A-mm2", warn_after_s=0.05)
    warned = threading.Event()
    contexts: list[str] = []

    class Spy(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno == logging.WARNING:
                from connect_runtime.logging_context import current_flow

                contexts.append(current_flow())
                warned.set()

    spy = Spy()
    logging.getLogger(LOGGER).addHandler(spy)
    try:
        set_context(flow="A->B")
        narrator.starting()
        wait_until(warned.is_set, 5, "the slow-step warning")
        narrator.cluster_reached(None)
        narrator.close()
    finally:
        logging.getLogger(LOGGER).removeHandler(spy)
        set_context(flow="-")
    warnings = lines(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert warnings[0].startswith("Still waiting for the Kafka cluster of group A-mm2: reading the config and "
                                  "status topics after 0 s")
    assert contexts == ["A->B"]  # logged in the context of the herder that waits, not the timer thread's


def test_a_step_that_completes_in_time_never_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    narrator = StartupNarrator("w1:8083", "g", warn_after_s=0.2)
    narrator.waiting_for("something")
    narrator.reached("Something happened")
    done = threading.Event()
    threading.Timer(0.4, done.set).start()  # longer than warn_after_s: a warning would have fired by then
    wait_until(done.is_set, 5, "the warning delay to pass")
    narrator.close()
    assert lines(caplog, logging.WARNING) == []
    assert lines(caplog)[0].startswith("Something happened (")
