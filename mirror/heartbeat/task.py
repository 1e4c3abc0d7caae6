"""MirrorHeartbeatTask: one heartbeat record per ``emit.heartbeats.interval.seconds``.

Record: topic ``heartbeats`` partition 0, key (source alias, target alias), value (version 0, now ms),
timestamp now, Connect partition ``{sourceClusterAlias, targetClusterAlias}`` and offset ``{offset: 0}``.
The wait is interruptible so that ``stop`` returns the task promptly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from connect_runtime.api.records import SourceRecord
from connect_runtime.api.task import SourceTask
from mirror.client.models import Heartbeat
from mirror.client.replication_policy import policy_from_config
from mirror.config.heartbeat import MirrorHeartbeatConfig
from mirror.connect_offset_keys import wrap_offset


class MirrorHeartbeatTask(SourceTask):
    """Emits heartbeats until stopped."""

    def __init__(self, clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self._clock_ms = clock_ms
        self._stopped = threading.Event()
        self._source = ""
        self._target = ""
        self._topic = "heartbeats"
        self._interval_s = 1.0

    def start(self, config: Mapping[str, str]) -> None:
        cfg = MirrorHeartbeatConfig(config)
        self._stopped.clear()
        self._source = cfg.source_alias
        self._target = cfg.target_alias
        self._topic = policy_from_config(cfg.replication_policy_config()).heartbeats_topic()
        self._interval_s = float(cfg.get("emit.heartbeats.interval.seconds"))

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped.wait(self._interval_s):
            return None
        timestamp = self._clock_ms()
        heartbeat = Heartbeat(self._source, self._target, timestamp)
        return [SourceRecord(topic=self._topic, partition=0, key=heartbeat.key_bytes(),
                             value=heartbeat.value_bytes(), timestamp=timestamp,
                             source_partition=heartbeat.connect_partition(), source_offset=wrap_offset(0))]

    def stop(self) -> None:
        self._stopped.set()
