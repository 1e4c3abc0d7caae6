"""librdkafka's log lines through Python logging: levels kept, repeats of one kind held back and counted.

The process-level proof (a real client against a closed port writes 0 lines to stderr) is
tests/integration/test_librdkafka_stderr.py.
"""

from __future__ import annotations

import logging

import pytest

from connect_runtime.clients.factory import new_admin, new_producer
from connect_runtime.clients.librdkafka_logging import LIBRDKAFKA_LOG, LOGGER_NAME, RateLimitedLog
from tests.support.kafka import wait_until

FAIL = ("[thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: "
        "Connection refused (after {}ms in state CONNECT)")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "test.librdkafka"]


def test_repeats_of_one_kind_are_logged_once_per_interval_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="test.librdkafka")
    clock = Clock()
    log = RateLimitedLog(logging.getLogger("test.librdkafka"), interval_s=60, clock=clock)
    for i in range(50):  # 50 clients' worth of the same failure, timings differing
        log.log(logging.ERROR, "%s [%s] %s", "FAIL", f"rdkafka#producer-{i}", FAIL.format(i))
    log.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", FAIL.format(0))  # another level
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1", FAIL.format(0).replace(":9", ":10"))
    assert _lines(caplog) == [
        (logging.ERROR, "FAIL [rdkafka#producer-0] " + FAIL.format(0)),
        (logging.WARNING, "FAIL [rdkafka#producer-1] " + FAIL.format(0)),
        (logging.ERROR, "FAIL [rdkafka#producer-1] " + FAIL.format(0).replace(":9", ":10")),
    ]
    caplog.clear()
    clock.now += 59.9
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-7", FAIL.format(3))
    assert _lines(caplog) == []
    clock.now += 0.2
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-7", FAIL.format(3))
    assert _lines(caplog) == [(logging.ERROR, "FAIL [rdkafka#producer-7] " + FAIL.format(3)
                               + " (50 more like this in the last 60s)")]


def test_disabled_levels_cost_nothing_and_a_broken_handler_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    target = logging.getLogger("test.librdkafka")
    caplog.set_level(logging.WARNING, logger="test.librdkafka")
    log = RateLimitedLog(target, interval_s=60)
    log.log(logging.INFO, "%s [%s] %s", "BGQUEUE", "rdkafka#producer-1", "Purging 1 unserved events")
    assert _lines(caplog) == [] and log._gate._kinds == {}

    class Broken(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            raise RuntimeError("handler failure")

        def handleError(self, record: logging.LogRecord) -> None:
            raise RuntimeError("handler failure")

    # on a logger of its own, and taken off again: left on test.librdkafka, it swallowed every record of
    # the tests that ran after this one in the same process (a CI rehearsal's order)
    broken_target = logging.getLogger("test.librdkafka-broken")
    broken = Broken()
    broken_target.addHandler(broken)
    try:
        RateLimitedLog(broken_target, interval_s=60).log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1",
                                                         "boom")  # must not raise
    finally:
        broken_target.removeHandler(broken)


def test_factory_clients_log_through_the_librdkafka_logger(caplog: pytest.LogCaptureFixture) -> None:
    """A real producer with no bootstrap.servers logs a CONFWARN (syslog 5, NOTICE) at once; it arrives as a
    Python record at INFO."""
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    LIBRDKAFKA_LOG._gate._kinds.clear()
    producer = new_producer({})
    wait_until(lambda: producer.poll(0.1) >= 0 and any(r.name == LOGGER_NAME for r in caplog.records), 10,
               "librdkafka's CONFWARN as a Python record")
    record = next(r for r in caplog.records if r.name == LOGGER_NAME)
    assert record.levelno == logging.INFO and "No `bootstrap.servers` configured" in record.getMessage()
    assert "CONFWARN [rdkafka#producer-" in record.getMessage()


def test_admin_clients_lines_are_collected_without_anyone_polling(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    LIBRDKAFKA_LOG._gate._kinds.clear()
    admin = new_admin({})
    wait_until(lambda: any("rdkafka#producer" in r.getMessage() and r.name == LOGGER_NAME
                           for r in caplog.records), 10, "the admin client's CONFWARN")
    del admin


def test_the_admin_log_pump_keeps_no_client_alive_and_ends_when_none_is_left() -> None:
    """Issue 32: the pump's loop variable kept the last admin client it polled (its librdkafka threads
    and sockets) alive after its owner dropped it, and its thread never ended."""
    import gc
    import threading

    from connect_runtime.clients import registry

    def pump_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "librdkafka-admin-logs"]

    admin = new_admin({"bootstrap.servers": "127.0.0.1:9", "log_level": "0"})
    wait_until(lambda: pump_threads(), 5, "the pump running")
    polled_once = 1.5  # the pump polls once a second: it has held this client in a round
    threading.Event().wait(polled_once)
    del admin
    gc.collect()
    assert (__name__, "admin") not in registry.open_clients()
    wait_until(lambda: not pump_threads(), 5, "the pump thread ended")


def test_a_purge_of_records_in_flight_at_close_is_a_warning_that_says_what_it_means(
        caplog: pytest.LogCaptureFixture) -> None:
    """Seen when a source task stops with a slow target: librdkafka calls it FATAL (CRITICAL here), yet the
    producer is being destroyed and the records were never acknowledged nor committed."""
    caplog.set_level(logging.DEBUG, logger="test.librdkafka")
    log = RateLimitedLog(logging.getLogger("test.librdkafka"), clock=Clock())
    text = ("[thrd:127.0.0.1:1/1]: Fatal error: Local: Gap-less ordering would not be guaranteed if proceeding: "
            "ProduceRequest for t [6] with 1 message(s) failed: Local: Purged in flight (broker 1 PID{Id:5,Epoch:0}, "
            "base seq 11289): unable to satisfy gap-less guarantee")
    log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-23", text)
    log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-23", "[thrd:x]: Fatal error: fenced")
    [(level, line), (other_level, _)] = _lines(caplog)
    assert level == logging.WARNING and "not committed" in line
    assert other_level == logging.CRITICAL  # any other fatal error keeps its level
