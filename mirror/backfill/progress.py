"""Live progress of a backfill: records copied / total, rate and ETA, per topic and overall (tqdm).

The executors record each acknowledged batch in the marker topic; a thread on the driver re-reads that
topic every ``interval_s`` and moves the bars. So the display shows what the *target acknowledged*, the
same figure a retried task resumes from, not what was merely read.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from mirror.backfill_markers.marker_log import MarkerLog
from mirror.backfill_markers.markers import BACKFILLING, DONE, MarkerState, TopicPartitionT

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tracked:
    """A partition as the display sees it: copy ``[first, end)`` of which ``already`` were done before."""

    first: int
    end: int

    @property
    def total(self) -> int:
        return max(0, self.end - self.first)


def copied_of(state: MarkerState, tracked: Mapping[TopicPartitionT, Tracked]) -> dict[TopicPartitionT, int]:
    """Records acknowledged per partition since this run started (pure)."""
    result = {}
    for tp, t in tracked.items():
        marker = state.partitions.get(tp)
        done = 0
        if marker is not None and marker.end == t.end and marker.state in (BACKFILLING, DONE):
            done = min(t.total, max(0, marker.progress + 1 - t.first))
        result[tp] = done
    return result


class ProgressDisplay:
    """One tqdm bar per topic plus a total bar, fed from the marker topic by a background thread."""

    def __init__(self, markers: MarkerLog, tracked: Mapping[TopicPartitionT, Tracked], *,
                 interval_s: float = 1.0, enabled: bool = True, stream: TextIO | None = None) -> None:
        self._markers = markers
        self._tracked = dict(tracked)
        self._interval_s = interval_s
        self._enabled = enabled
        self._stream = stream or sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bars: dict[str, Any] = {}
        self.copied: dict[TopicPartitionT, int] = {tp: 0 for tp in self._tracked}

    def __enter__(self) -> ProgressDisplay:
        if self._enabled:
            from tqdm import tqdm

            topics = sorted({t for t, _ in self._tracked})
            total = sum(t.total for t in self._tracked.values())
            self._bars["*"] = tqdm(total=total, desc="backfill", unit="rec", unit_scale=True,
                                   file=self._stream, position=0, dynamic_ncols=True)
            for i, topic in enumerate(topics, start=1):
                topic_total = sum(t.total for (tt, _), t in self._tracked.items() if tt == topic)
                self._bars[topic] = tqdm(total=topic_total, desc=f"  {topic}", unit="rec", unit_scale=True,
                                         file=self._stream, position=i, leave=True, dynamic_ncols=True)
        self._thread = threading.Thread(target=self._loop, name="backfill-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.update()
        for bar in self._bars.values():
            bar.close()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.update()
            except Exception as exc:  # the display must never fail the copy
                logger.debug("progress refresh failed: %s", exc)

    def update(self) -> None:
        self.copied = copied_of(self._markers.read_to_end(), self._tracked)
        if not self._bars:
            return
        per_topic: dict[str, int] = {}
        for (topic, _), count in self.copied.items():
            per_topic[topic] = per_topic.get(topic, 0) + count
        for key, bar in self._bars.items():
            value = sum(per_topic.values()) if key == "*" else per_topic.get(key, 0)
            bar.update(value - bar.n)
