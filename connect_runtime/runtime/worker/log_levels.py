"""Logger levels changed at run time (KIP-495, KIP-976), for ``/admin/loggers`` and the herder.

Python's ``logging`` is process-wide, so there is one :data:`LOG_LEVELS` per process: the REST
resource (scope=worker) and every herder applying a cluster-scope level read from its config topic
(``logger-cluster-<namespace>`` records) change the same loggers and share ``last_modified``.

Levels are reported with log4j's names (``WARN``, ``FATAL``, ``TRACE``...) so tools written for Connect
read them; both log4j and Python names are accepted (``WARNING`` = ``WARN``, ``CRITICAL`` = ``FATAL``).
As in Connect, setting a namespace's level also sets it on every existing descendant logger.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger(__name__)

ROOT = "root"
TRACE = 5
OFF = logging.CRITICAL + 10

_BY_NAME = {"OFF": OFF, "FATAL": logging.CRITICAL, "CRITICAL": logging.CRITICAL, "ERROR": logging.ERROR,
            "WARN": logging.WARNING, "WARNING": logging.WARNING, "INFO": logging.INFO, "DEBUG": logging.DEBUG,
            "TRACE": TRACE, "ALL": 1}
_BY_LEVEL = {OFF: "OFF", logging.CRITICAL: "FATAL", logging.ERROR: "ERROR", logging.WARNING: "WARN",
             logging.INFO: "INFO", logging.DEBUG: "DEBUG", TRACE: "TRACE", 1: "ALL"}


def level_name(level: int) -> str:
    return _BY_LEVEL.get(level, logging.getLevelName(level))


def parse_level(name: str) -> int | None:
    """A log4j or Python level name (any case) -> its ``logging`` level; None if unknown."""
    return _BY_NAME.get(name.strip().upper())


def existing_loggers() -> dict[str, logging.Logger]:
    items = list(logging.Logger.manager.loggerDict.items())
    return {name: lg for name, lg in items if isinstance(lg, logging.Logger)}


class LogLevels:
    """Sets namespaces' levels and remembers when (``last_modified``, epoch ms)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_modified: dict[str, int] = {}

    def last_modified(self, name: str) -> int | None:
        with self._lock:
            return self._last_modified.get(name)

    def apply(self, namespace: str, level: int) -> list[str]:
        """Set ``namespace`` and its existing descendants to ``level``; the affected names, sorted."""
        logger.info("Setting level of namespace %s and children to %s", namespace, level_name(level))
        now_ms = int(time.time() * 1000)
        with self._lock:
            loggers = existing_loggers()
            if namespace == ROOT:
                targets = dict(loggers)
                targets[ROOT] = logging.getLogger()
            else:
                targets = {n: lg for n, lg in loggers.items() if n.startswith(namespace + ".")}
                targets[namespace] = logging.getLogger(namespace)
            for name, lg in targets.items():
                lg.setLevel(level)
                self._last_modified[name] = now_ms
        return sorted(targets)

    def apply_cluster_level(self, namespace: str, level: str) -> None:
        """A ``logger-cluster-<namespace>`` record read from a config topic (KIP-976)."""
        parsed = parse_level(level)
        if parsed is None:
            logger.warning("Ignoring cluster-wide level %r for namespace %s: not a log level", level, namespace)
            return
        logger.info("Applying cluster-wide level %s to namespace %s", level, namespace)
        self.apply(namespace, parsed)


#: The process's one instance (``logging`` is process-wide).
LOG_LEVELS = LogLevels()
