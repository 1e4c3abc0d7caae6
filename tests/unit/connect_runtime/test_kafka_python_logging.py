"""kafka-python's connection errors: the first of a kind logged without its traceback, repeats held back."""

from __future__ import annotations

import logging

import pytest

from connect_runtime.clients.kafka_python_logging import (
    KAFKA_PYTHON_FILTER,
    KafkaPythonRepeatFilter,
    limit_kafka_python_logs,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _error(logger: logging.Logger, node: int) -> None:
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        logger.exception("Error sending request to node %d: [Errno 104] Connection reset by peer", node)


def test_repeats_are_held_back_and_counted_tracebacks_dropped_info_untouched(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    logger = logging.getLogger("kafka.test_net")
    gate = KafkaPythonRepeatFilter(interval_s=60, clock=clock)
    logger.addFilter(gate)
    try:
        with caplog.at_level(logging.INFO, logger="kafka.test_net"):
            for node in range(40):  # the same line, another node id each time: one kind
                _error(logger, node)
                clock.now += 0.1
            logger.info("(Re-)joining group g")
            logger.info("(Re-)joining group g")
            clock.now += 60
            _error(logger, 7)
    finally:
        logger.removeFilter(gate)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "Error sending request to node 0: [Errno 104] Connection reset by peer",
        "Error sending request to node 7: [Errno 104] Connection reset by peer (39 more like this in the last 60s)"]
    assert all(r.exc_info is None for r in errors) and "Traceback" not in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == ["(Re-)joining group g"] * 2


def test_every_kafka_python_logger_gets_the_filter_once() -> None:
    import connect_runtime.runtime.coordination.kafka_python_adapter  # noqa: F401  (imports kafka-python)

    limit_kafka_python_logs()
    limit_kafka_python_logs()
    names = [n for n, lg in logging.Logger.manager.loggerDict.items()
             if n.startswith("kafka.") and isinstance(lg, logging.Logger)]
    assert "kafka.coordinator" in names and "kafka.cluster" in names
    for name in names:
        assert logging.getLogger(name).filters.count(KAFKA_PYTHON_FILTER) == 1, name
    assert KAFKA_PYTHON_FILTER not in logging.getLogger("connect_runtime").filters
