"""Feeds the offset-syncs topic into an :class:`OffsetSyncStore` (the I/O half of Kafka's class).

A background thread reads partition 0 of the offset-syncs topic (the only one MM2 writes) from the
beginning, hands every record to the store, tells the store when it reached the end for the first time
(translation becomes available then), and keeps tailing (:class:`~mirror.checkpoint.topic_tail.TopicTail`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Message

from connect_runtime.clients.factory import new_consumer
from mirror.checkpoint.offset_sync_store import OffsetSyncStore
from mirror.checkpoint.topic_tail import TopicTail

logger = logging.getLogger(__name__)


class OffsetSyncReader(TopicTail):
    """Tails ``topic`` partition 0 into ``store`` on a daemon thread until :meth:`stop`."""

    what = "offset-sync reader"

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], store: OffsetSyncStore, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer) -> None:
        super().__init__(topic, consumer_config, consumer_factory=consumer_factory)
        self._store = store
        self.records_read = 0

    def start(self, initialization_must_read_to_end: bool) -> None:
        """Start reading; returns at once (the store reports ``ready`` after the first read to the end)."""
        self._store.start_initial_load(initialization_must_read_to_end)
        self._start_thread()

    def _caught_up(self, complete: bool) -> None:
        if complete and not self._store.ready:
            self._store.finish_initial_load()
            logger.info("Read %d offset syncs from %s; offset translation is available",
                        self.records_read, self.topic)

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.records_read += 1
            self._store.handle_record(message.key(), message.value())
