"""Tails the offset-map topic on the target into an :class:`OffsetMap` (the checkpoint task's exact half).

Like :class:`~mirror.checkpoint.offset_sync_reader.OffsetSyncReader`: a daemon thread reads partition 0
from the beginning, marks the map ready after the first read to the end (fetch high watermark, exact on
every broker) and keeps following it. The topic may not exist (the flow's source task runs Apache MM2,
or ``emit.offset-map.enabled=false``): the map is then ready and empty, translation uses MM2's rule,
and the reader looks for the topic again every few seconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import read_to_end
from connect_runtime.logging_context import carry_context
from mirror.checkpoint.offset_sync_reader import read_only_consumer_config
from mirror.client.offset_map import OffsetMap

logger = logging.getLogger(__name__)

_POLL_S = 0.2
_MISSING_RETRY_S = 5.0


class OffsetMapReader:
    """Follows ``topic`` partition 0 into ``offset_map`` until :meth:`stop`."""

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], offset_map: OffsetMap, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 timeout_s: float = 30.0) -> None:
        self.topic = topic
        self.offset_map = offset_map
        self._config = read_only_consumer_config(consumer_config, topic)
        self._consumer_factory = consumer_factory
        self._timeout_s = timeout_s
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        """The first read to the end finished (or the topic does not exist)."""
        return self._ready.is_set()

    def wait_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=carry_context(self._run), name=f"offset-map-reader-{self.topic}",
                                        daemon=True)
        self._thread.start()

    def _exists(self, consumer: Consumer) -> bool:
        metadata = consumer.list_topics(self.topic, timeout=self._timeout_s).topics.get(self.topic)
        return metadata is not None and metadata.error is None and 0 in metadata.partitions

    def _run(self) -> None:
        try:
            consumer = self._consumer_factory(self._config)
        except (KafkaException, ValueError) as exc:
            logger.error("Cannot create the consumer of %s: %s", self.topic, exc)
            self._ready.set()
            return
        try:
            while not self._stopping.is_set() and not self._exists(consumer):
                if not self._ready.is_set():
                    logger.info("%s does not exist: translating with offset syncs only until it does",
                                self.topic)
                self._ready.set()
                self._stopping.wait(_MISSING_RETRY_S)
            if self._stopping.is_set():
                return
            reached = read_to_end(consumer, {(self.topic, 0): OFFSET_BEGINNING}, self._handle, None,
                                  on_error=self._warn, stop=self._stopping.is_set)
            if reached.complete:
                logger.info("Read %d offset-map runs from %s; exact translation is available",
                            self.offset_map.records_read, self.topic)
            self._ready.set()
            while not self._stopping.is_set():
                message = consumer.poll(_POLL_S)
                if message is None:
                    continue
                error = message.error()
                if error is None:
                    self._handle([message])
                elif error.code() != KafkaError._PARTITION_EOF:
                    self._warn(error)
        except Exception:
            logger.exception("Offset-map reader of %s failed", self.topic)
            self._ready.set()
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError):
                pass

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.offset_map.add_record(message.key(), message.value())

    def _warn(self, error: KafkaError) -> None:
        logger.warning("Error reading %s: %s", self.topic, error)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
