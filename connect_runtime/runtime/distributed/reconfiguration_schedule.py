"""When to recompute which connector's task configs (Java's
``reconfigureConnectorTasksWithExponentialBackoffRetries``).

A connector asks for new task configs from any thread; the herder's tick thread runs the due ones. A
failed attempt is retried after a per-connector backoff that doubles up to a maximum; a success (or
the connector stopping) resets it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time


class ReconfigurationSchedule:
    """A thread-safe timer heap of connector names plus per-connector exponential backoff (0.25 s
    doubling up to 60 s by default, Java's values)."""

    def __init__(self, initial_backoff_s: float = 0.25, max_backoff_s: float = 60.0) -> None:
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._backoff: dict[str, float] = {}
        self._initial_s = initial_backoff_s
        self._max_s = max_backoff_s

    def schedule(self, name: str, delay_s: float = 0.0) -> None:
        with self._lock:
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), name))

    def due(self) -> list[str]:
        """Connectors whose time has come, each once, in due order."""
        now = time.monotonic()
        names: list[str] = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now:
                names.append(heapq.heappop(self._heap)[2])
        return list(dict.fromkeys(names))

    def seconds_to_next(self) -> float | None:
        with self._lock:
            return None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic())

    def retry_later(self, name: str) -> float:
        """Schedule a retry after a doubled backoff; returns the delay."""
        with self._lock:
            delay = min(self._backoff.get(name, self._initial_s / 2) * 2, self._max_s)
            self._backoff[name] = delay
        self.schedule(name, delay)
        return delay

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._backoff.pop(name, None)
