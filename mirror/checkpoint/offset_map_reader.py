"""Tails the offset-map topic on the target into an :class:`OffsetMap` (the checkpoint task's exact half).

Like :class:`~mirror.checkpoint.offset_sync_reader.OffsetSyncReader` (both are a
:class:`~mirror.checkpoint.topic_tail.TopicTail`): reads partition 0 from the beginning, marks the map
ready after the first read to the end and keeps following it. The topic may not exist (the flow's source
task runs Apache MM2, or ``emit.offset-map.enabled=false``): the map is then ready and empty, translation
uses MM2's rule, and the reader looks for the topic again every few seconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Message

from connect_runtime.clients.factory import new_consumer
from mirror.checkpoint.topic_tail import TopicTail
from mirror.client.offset_map import OffsetMap

logger = logging.getLogger(__name__)

_MISSING_RETRY_S = 5.0


class OffsetMapReader(TopicTail):
    """Follows ``topic`` partition 0 into ``offset_map`` until :meth:`stop`."""

    what = "offset-map reader"

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], offset_map: OffsetMap, *,
                 consumer_factory: Callable[[Mapping[str, Any]], Consumer] = new_consumer,
                 timeout_s: float = 30.0) -> None:
        super().__init__(topic, consumer_config, consumer_factory=consumer_factory)
        self.offset_map = offset_map
        self._timeout_s = timeout_s
        self._ready = threading.Event()

    @property
    def ready(self) -> bool:
        """The first read to the end finished (or the topic does not exist)."""
        return self._ready.is_set()

    def wait_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def start(self) -> None:
        self._start_thread()

    def _exists(self, consumer: Consumer) -> bool:
        metadata = consumer.list_topics(self.topic, timeout=self._timeout_s).topics.get(self.topic)
        return metadata is not None and metadata.error is None and 0 in metadata.partitions

    def _wait_for_topic(self, consumer: Consumer) -> bool:
        while not self._stopping.is_set() and not self._exists(consumer):
            if not self._ready.is_set():
                logger.info("%s does not exist: translating with offset syncs only until it does", self.topic)
            self._ready.set()
            self._stopping.wait(_MISSING_RETRY_S)
        return not self._stopping.is_set()

    def _caught_up(self, complete: bool) -> None:
        if complete:
            logger.info("Read %d offset-map runs from %s; exact translation is available",
                        self.offset_map.records_read, self.topic)
        self._ready.set()

    def _gave_up(self) -> None:
        self._ready.set()

    def _handle(self, records: list[Message]) -> None:
        for message in records:
            self.offset_map.add_record(message.key(), message.value())
