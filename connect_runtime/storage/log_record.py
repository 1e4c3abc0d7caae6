"""What a :class:`~connect_runtime.storage.kafka_log.KafkaBasedLog` hands its callbacks: one record of
its topic, consumed or just written.

Its own module because the log's reading half, its writing half
(:mod:`connect_runtime.storage.kafka_log_writer`) and the stores built on the log all speak it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Message


@dataclass(frozen=True, slots=True)
class LogRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


ConsumedCallback = Callable[[LogRecord], None]
#: Called once the write is acknowledged (error None) or failed (error set).
WriteCallback = Callable[[Exception | None, LogRecord | None], None]


def log_record(msg: Message) -> LogRecord:
    return LogRecord(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.key(), msg.value(),
                     msg.timestamp()[1])
