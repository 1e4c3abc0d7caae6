"""librdkafka's log lines through Python logging, rate-limited per kind of message.

Without a ``logger`` in its config, librdkafka prints straight to the process's stderr, outside any
logging configuration: with a cluster down that is dozens of raw ``%3|...|FAIL|...`` lines a second
from every client. Every client the factory builds gets :data:`LIBRDKAFKA_LOG` as its ``logger``, so the
lines go to the ``librdkafka`` logger at the level confluent-kafka maps from syslog (3 -> ERROR, 4 ->
WARNING, 5/6 -> INFO, 7 -> DEBUG), with the operator's handlers, format and levels.

A broken connection repeats the same line for as long as it lasts, from every client that uses that
broker. The first line of each kind (level, facility and text, without the trailing "(after 3ms in
state CONNECT)" detail or the client's name) is logged; repeats within ``interval_s`` are counted and the
next line of that kind after the interval says how many were held back.

confluent-kafka hands a client's log lines to the thread that polls it (``producer.poll``,
``consumer.poll``); nobody polls an AdminClient, so :func:`pump_admin_logs` does, once a second, on
one daemon thread for all of them (while there is any), or their lines would pile up in librdkafka's queue.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Any

#: The logger librdkafka's lines go to (``etc/logging.yaml`` sets its level).
LOGGER_NAME = "librdkafka"
#: How long repeats of one kind of line are held back.
DEFAULT_INTERVAL_S = 60.0
_MAX_KINDS = 2048
_DETAIL = re.compile(r"\s*\((?:after|\d+ identical)[^()]*\)\s*$")
_ADMIN_POLL_S = 1.0
#: An idempotent producer closed with requests in flight: librdkafka calls the purge fatal (the ordering of
#: what it would send next cannot be kept), but the producer is being destroyed anyway, and the records
#: purged were never acknowledged, so their offsets are not committed. A warning, not a CRITICAL line in
#: every rolling restart under load.
PURGED_IN_FLIGHT = "Purged in flight"
PURGED_IN_FLIGHT_MEANS = (" (the producer was closed with records in flight: they were not acknowledged, so their "
                          "source offsets are not committed and they are sent again)")


class RepeatGate:
    """Lets the first line of each kind through, then holds back its repeats for ``interval_s``.

    Shared by librdkafka's lines (below) and kafka-python's (:mod:`connect_runtime.clients.group_client`).
    """

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: dict[Hashable, list[float]] = {}  # kind -> [logged at, held back]

    def admit(self, kind: Hashable) -> int | None:
        """None to hold this line back, else how many of its kind were held back since the last one."""
        now = self._clock()
        with self._lock:
            entry = self._kinds.get(kind)
            if entry is not None and now - entry[0] < self.interval_s:
                entry[1] += 1
                return None
            if entry is None and len(self._kinds) >= _MAX_KINDS:
                self._kinds = {k: v for k, v in self._kinds.items() if now - v[0] < self.interval_s}
                if len(self._kinds) >= _MAX_KINDS:
                    self._kinds.clear()
            self._kinds[kind] = [now, 0]
            return int(entry[1]) if entry is not None else 0


class RateLimitedLog:
    """The ``logger`` object confluent-kafka calls as ``log(level, "%s [%s] %s", facility, client, text)``.

    It must never raise: an exception in a log callback would surface in the poll of whichever client
    logged, on a hot path.
    """

    def __init__(self, logger: logging.Logger, interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._gate = RepeatGate(interval_s, clock)

    def log(self, level: int, msg: str, *args: Any) -> None:
        try:
            if not self.logger.isEnabledFor(level):
                return
            if len(args) != 3:
                self.logger.log(level, msg, *args)
                return
            facility, client, text = (str(a) for a in args)
            if PURGED_IN_FLIGHT in text and level > logging.WARNING:
                level, text = logging.WARNING, text + PURGED_IN_FLIGHT_MEANS
            held = self._gate.admit((level, facility, _DETAIL.sub("", text)))
            if held is None:
                return
            if held:
                self.logger.log(level, "%s [%s] %s (%d more like this in the last %.0fs)", facility, client, text,
                                held, self.interval_s)
            else:
                self.logger.log(level, "%s [%s] %s", facility, client, text)
        except Exception:
            pass

#: The one log sink every client gets (its rate limit spans all clients of the process).
LIBRDKAFKA_LOG = RateLimitedLog(logging.getLogger(LOGGER_NAME))


class _AdminLogPump:
    """Polls every live AdminClient once a second, so their log lines reach :data:`LIBRDKAFKA_LOG`."""

    def __init__(self) -> None:
        self._clients: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, client: Any) -> None:
        with self._lock:
            self._clients.add(client)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="librdkafka-admin-logs", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        """Poll until no client is left, then end (the next :meth:`add` starts a new thread)."""
        while True:
            time.sleep(_ADMIN_POLL_S)
            with self._lock:
                if not self._clients:
                    self._thread = None
                    return
            self._poll_all()

    def _poll_all(self) -> None:
        """One round, in its own frame: no reference to a client outlives it. (A loop variable left
        bound in ``_run`` kept the last client polled, and its librdkafka threads and sockets, alive
        after its owner had dropped it, for as long as no other admin client was polled.)"""
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            try:
                client.poll(0)
            except Exception:
                pass


_PUMP = _AdminLogPump()


def pump_admin_logs(client: Any) -> None:
    """Have ``client`` (an AdminClient built with ``logger``) polled for its log lines until it is gone."""
    _PUMP.add(client)
