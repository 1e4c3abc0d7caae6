"""kafka-python's warnings and errors without tracebacks, rate-limited per kind of message.

kafka-python runs group membership only (:mod:`connect_runtime.runtime.coordination.kafka_python_adapter`),
but it logs every failed connection attempt at ERROR, most with the exception's traceback, from several
modules at once, about every 100 ms while a broker is unreachable: a 5 s network cut gave about 180 ERROR
lines and 96 tracebacks per node in the soak (``bench/soak.py``). After the first, the same line tells an
operator nothing, and a flapping link fills the disk. So records of the ``kafka`` loggers at WARNING and
above pass a :class:`~connect_runtime.clients.librdkafka_logging.RepeatGate`, as librdkafka's lines do:
the first of each kind (logger, level and text with its numbers left out), then, after the interval, the
next one saying how many were held back. They lose their traceback (the message names the error).
INFO and below (coordinator found, joins, rebalances) pass untouched.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from connect_runtime.clients.librdkafka_logging import DEFAULT_INTERVAL_S, RepeatGate

_NUMBERS = re.compile(r"\d+")


class KafkaPythonRepeatFilter(logging.Filter):
    """A logger filter (it runs once per record, where the record is made; never raises)."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._gate = RepeatGate(interval_s, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        try:
            text = record.getMessage()
            held = self._gate.admit((record.name, record.levelno, _NUMBERS.sub("#", text)))
            if held is None:
                return False
            record.exc_info = record.exc_text = record.stack_info = None
            if held:
                record.msg, record.args = f"{text} ({held} more like this in the last {self.interval_s:.0f}s)", None
        except Exception:
            pass
        return True


#: The one filter every kafka-python logger gets (its rate limit spans the process).
KAFKA_PYTHON_FILTER = KafkaPythonRepeatFilter()


def limit_kafka_python_logs() -> None:
    """Put :data:`KAFKA_PYTHON_FILTER` on every kafka-python logger created so far (idempotent; kafka-python
    makes one logger per module, at import)."""
    for name, existing in list(logging.Logger.manager.loggerDict.items()):
        if ((name == "kafka" or name.startswith("kafka.")) and isinstance(existing, logging.Logger)
                and KAFKA_PYTHON_FILTER not in existing.filters):
            existing.addFilter(KAFKA_PYTHON_FILTER)
