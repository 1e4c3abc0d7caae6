"""The writing half of a :class:`~connect_runtime.storage.kafka_log.KafkaBasedLog`: records to its topic.

Writes are asynchronous with a callback, or synchronous (wait for the acknowledgement); a full local
producer queue makes a write wait, as Java's blocking send does. With a transactional id each write is
its own transaction (the leader's fenced config writes: a zombie leader's write fails with a fenced
error). Kept apart from the log's reading (rounds to the end, following the topic on its own thread)
because the two share nothing but the topic name and the producer the log creates at start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from connect_runtime.api.errors import ConnectError, RetriableError
from connect_runtime.clients.errors import map_kafka_errors, to_connect_error
from connect_runtime.storage.log_record import LogRecord, WriteCallback, log_record

logger = logging.getLogger(__name__)


class LogWriter:
    """Writes to ``topic`` through the producer the log sets (``producer`` is None before start and
    after stop: a write then fails with ConnectError)."""

    def __init__(self, topic: str, *, transactional: bool) -> None:
        self.topic = topic
        self.producer: Producer | None = None
        self._transactional = transactional
        self._txn_lock = threading.Lock()

    def _require_producer(self) -> Producer:
        if self.producer is None:
            raise ConnectError(f"log on topic {self.topic} is not started")
        return self.producer

    def _produce(self, key: bytes | None, value: bytes | None, on_delivery: Callable[[Any, Any], None],
                 partition: int | None) -> None:
        producer = self._require_producer()
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        deadline = time.monotonic() + 30.0
        while True:
            try:
                with map_kafka_errors(f"writing to topic {self.topic}"):
                    producer.produce(self.topic, **kwargs)
                return
            except BufferError as exc:  # local queue full: wait for deliveries, as Java's send blocks
                if time.monotonic() >= deadline:
                    raise RetriableError(f"producer queue for topic {self.topic} stayed full") from exc
                producer.poll(0.05)

    def send(self, key: bytes | None, value: bytes | None, callback: WriteCallback | None = None,
             partition: int | None = None) -> None:
        """Write asynchronously; ``callback`` runs once acknowledged or failed."""
        if self._transactional:
            # One transaction per write: run it here and report through the callback like async sends.
            try:
                record = self.send_sync(key, value, partition=partition)
            except ConnectError as exc:
                self._call(callback, exc, None)
            else:
                self._call(callback, None, record)
            return

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                self._call(callback, to_connect_error(err, f"writing to topic {self.topic}"), None)
            else:
                self._call(callback, None, log_record(msg))

        self._produce(key, value, delivered, partition)

    def _call(self, callback: WriteCallback | None, error: Exception | None,
              record: LogRecord | None) -> None:
        if callback is None:
            if error is not None:
                logger.error("Write to topic %s failed: %s", self.topic, error)
            return
        try:
            callback(error, record)
        except Exception:
            logger.exception("Write callback for topic %s raised", self.topic)

    def send_sync(self, key: bytes | None, value: bytes | None, timeout_s: float = 30.0,
                  partition: int | None = None) -> LogRecord:
        """Write and wait for the acknowledgement. Raises ConnectError on failure."""
        result: Future[LogRecord] = Future()

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                result.set_exception(to_connect_error(err, f"writing to topic {self.topic}"))
            else:
                result.set_result(log_record(msg))

        if self._transactional:
            self._send_in_transaction(key, value, delivered, partition, timeout_s)
        else:
            self._produce(key, value, delivered, partition)
        try:
            return result.result(timeout=timeout_s)
        except FutureTimeout as exc:
            raise RetriableError(f"write to topic {self.topic} not acknowledged within {timeout_s}s") from exc

    def _send_in_transaction(self, key: bytes | None, value: bytes | None,
                             delivered: Callable[[Any, Any], None], partition: int | None,
                             timeout_s: float) -> None:
        producer = self._require_producer()
        with self._txn_lock:
            try:
                producer.begin_transaction()
                self._produce(key, value, delivered, partition)
                producer.commit_transaction(timeout_s)
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if error is not None and error.txn_requires_abort():
                    try:
                        producer.abort_transaction(timeout_s)
                    except KafkaException as abort_exc:
                        logger.warning("Aborting the transaction on topic %s failed: %s", self.topic,
                                       abort_exc)
                raise to_connect_error(exc, f"transactional write to topic {self.topic}") from exc

    def flush(self, timeout_s: float = 30.0) -> None:
        remaining = self._require_producer().flush(timeout_s)
        if remaining:
            raise RetriableError(f"{remaining} writes to topic {self.topic} not acknowledged in {timeout_s}s")
