"""Feeds the offset-syncs topic into an :class:`OffsetSyncStore` (the I/O half of Kafka's class).

A background thread reads partition 0 of the offset-syncs topic (the only one MM2 writes) from the
beginning, hands every record to the store, tells the store when it reached the end for the first time
(translation becomes available then, §6.2), and keeps tailing.

"The end" is taken from the fetch response (``enable.partition.eof``), not from ListOffsets: that is
exact on every broker, including those whose ListOffsets "latest" is wrong (tansu.md §2.1). The consumer
is assigned, never subscribed, so it joins no group and commits nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import read_to_end
from connect_runtime.logging_context import carry_context
from mirror.checkpoint.offset_sync_store import OffsetSyncStore

logger = logging.getLogger(__name__)

_POLL_S = 0.2


def read_only_consumer_config(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A librdkafka consumer config for reading an internal topic from the start with EOF events."""
    result = dict(config)
    result.setdefault("group.id", f"mm2-reader-{name}-{uuid.uuid4().hex[:8]}")
    result["enable.auto.commit"] = "false"
    result["enable.partition.eof"] = "true"
    result["auto.offset.reset"] = "earliest"
    result.setdefault("fetch.wait.max.ms", "100")
    return result


class OffsetSyncReader:
    """Tails ``topic`` partition 0 into ``store`` on a daemon thread until :meth:`stop`."""

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], store: OffsetSyncStore, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer) -> None:
        self._topic = topic
        self._config = read_only_consumer_config(consumer_config, topic)
        self._store = store
        self._consumer_factory = consumer_factory
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.records_read = 0

    def start(self, initialization_must_read_to_end: bool) -> None:
        """Start reading; returns at once (the store reports ``ready`` after the first read to the end)."""
        self._store.start_initial_load(initialization_must_read_to_end)
        self._thread = threading.Thread(target=carry_context(self._run), name=f"offset-sync-reader-{self._topic}",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            consumer = self._consumer_factory(self._config)
        except (KafkaException, ValueError) as exc:
            logger.error("Cannot create the consumer of %s: %s", self._topic, exc)
            return
        try:
            reached = read_to_end(consumer, {(self._topic, 0): OFFSET_BEGINNING}, self._handle, None,
                                  on_error=self._warn, stop=self._stopping.is_set)
            if reached.complete and not self._store.ready:
                self._store.finish_initial_load()
                logger.info("Read %d offset syncs from %s; offset translation is available",
                            self.records_read, self._topic)
            while not self._stopping.is_set():  # then follow the topic
                message = consumer.poll(_POLL_S)
                if message is None:
                    continue
                error = message.error()
                if error is None:
                    self._handle([message])
                elif error.code() != KafkaError._PARTITION_EOF:
                    self._warn(error)
        except Exception:
            logger.exception("Offset-sync reader of %s failed", self._topic)
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                pass

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.records_read += 1
            self._store.handle_record(message.key(), message.value())

    def _warn(self, error: KafkaError) -> None:
        logger.warning("Error reading %s: %s", self._topic, error)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
