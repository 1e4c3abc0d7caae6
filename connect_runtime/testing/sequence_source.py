"""A test-only source connector that writes numbered records (Kafka's ``VerifiableSourceConnector``).

Task ``n`` writes records with key ``b"n"`` and a JSON value
``{"task": n, "seq": s, "worker_id": ..., "ts": <ms>}`` for ``s = 0, 1, 2, ...``; its source partition
is ``{"task": n}`` and each record's source offset ``{"seq": s}``. After a restart it resumes at the
stored ``seq + 1``, so a consumer of the topic can check for loss (a missing seq) and measure
duplicates (a repeated seq) across restarts, rebalances and broker outages.

Keys (all strings, as in any connector config):

* ``topic`` (required): where to write;
* ``tasks.max``: number of tasks (default 1);
* ``records.per.second``: per-task throttle, ``0`` (default) for as fast as possible;
* ``max.records``: stop after this many records per task (across restarts); then ``poll`` returns None;
* ``batch.size``: records per ``poll`` at most (default 1000).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.config import ConfigDef, Importance, Type, at_least
from connect_runtime.api.connector import SourceConnector
from connect_runtime.api.records import SourceRecord
from connect_runtime.api.task import SourceTask, Task

TOPIC = "topic"
RECORDS_PER_SECOND = "records.per.second"
MAX_RECORDS = "max.records"
BATCH_SIZE = "batch.size"
TASK_ID = "task.id"

CONFIG_DEF = (
    ConfigDef()
    .define(TOPIC, Type.STRING, importance=Importance.HIGH, doc="Topic the records are written to.")
    .define(RECORDS_PER_SECOND, Type.DOUBLE, 0.0, Importance.MEDIUM,
            "Records per second per task; 0 means as fast as possible.", validator=at_least(0))
    .define(MAX_RECORDS, Type.LONG, -1, Importance.MEDIUM,
            "Stop producing after this many records per task; -1 means never.")
    .define(BATCH_SIZE, Type.INT, 1000, Importance.LOW, "Maximum records returned by one poll.",
            validator=at_least(1))
)

_IDLE_WAIT_S = 0.1


class SequenceSourceConnector(SourceConnector):
    """Splits into ``tasks.max`` identical tasks, each numbered by ``task.id``."""

    def __init__(self) -> None:
        self._config: dict[str, str] = {}

    def start(self, config: Mapping[str, str]) -> None:
        CONFIG_DEF.parse(config)  # fail fast on a bad config
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, TASK_ID: str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    @classmethod
    def config_def(cls) -> ConfigDef:
        return CONFIG_DEF


class SequenceSourceTask(SourceTask):
    """Writes ``seq`` 0, 1, 2, ... for its task number; resumes after the last committed seq."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._task = 0
        self._topic = ""
        self._next_seq = 0
        self._rate = 0.0
        self._max = -1
        self._batch = 1000
        self._key = b"0"
        self._partition: dict[str, Any] = {}
        self._started_at = 0.0
        self._first_seq = 0

    def start(self, config: Mapping[str, str]) -> None:
        values = CONFIG_DEF.parse(config)
        self._topic = values[TOPIC]
        self._rate = float(values[RECORDS_PER_SECOND])
        self._max = int(values[MAX_RECORDS])
        self._batch = int(values[BATCH_SIZE])
        self._task = int(config.get(TASK_ID, self.context.task_id))
        self._key = str(self._task).encode()
        # One dict per task, reused by every record: the runtime tracks partitions by identity first.
        self._partition = {"task": self._task}
        stored = self.context.offset_storage_reader().offset(self._partition)
        self._next_seq = int(stored["seq"]) + 1 if stored and stored.get("seq") is not None else 0
        self._first_seq = self._next_seq
        self._started_at = time.monotonic()

    def poll(self) -> list[SourceRecord] | None:
        if self._stopped.is_set():
            return None
        count = self._batch
        if self._max >= 0:
            count = min(count, self._max - self._next_seq)
        if self._rate > 0:
            due = int((time.monotonic() - self._started_at) * self._rate) - (self._next_seq - self._first_seq)
            if due <= 0:
                self._stopped.wait(min(_IDLE_WAIT_S, 1 / self._rate))
                return None
            count = min(count, due)
        if count <= 0:
            self._stopped.wait(_IDLE_WAIT_S)  # max.records reached: idle, but stay responsive to stop
            return None
        topic, key, partition = self._topic, self._key, self._partition
        # The JSON text is assembled by hand (same bytes as json.dumps with compact separators): this
        # task is also the load generator of the benchmarks, so it must not be their bottleneck.
        head = f'{{"task":{self._task},"seq":'
        tail = f',"worker_id":{json.dumps(self.context.worker_id)},"ts":{int(time.time() * 1000)}}}'
        seq = self._next_seq
        records = [
            SourceRecord(topic=topic, value=f"{head}{s}{tail}".encode(), key=key, source_partition=partition,
                         source_offset={"seq": s})
            for s in range(seq, seq + count)
        ]
        self._next_seq = seq + count
        return records

    def stop(self) -> None:
        self._stopped.set()
