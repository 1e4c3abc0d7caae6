"""Sends the offset syncs the pure :class:`OffsetSyncWriter` decides on.

Syncs go to partition 0 of the offset-syncs topic (``mm2-offset-syncs.<other alias>.internal``) on the
cluster named by ``offset-syncs.topic.location``, through MM2's own non-transactional producer. At most
:data:`MAX_OUTSTANDING_OFFSET_SYNCS` are in flight: when all slots are taken the rest stay pending in the
writer (where a newer sync of the same partition replaces them) until a delivery frees a slot, exactly
like Java's ``tryAcquire`` on a 10-permit semaphore. A failed delivery is logged, never retried: the next
sync of that partition supersedes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from connect_runtime.clients.factory import close_producer, new_producer
from mirror.client.models import MalformedRecordError, OffsetSync, TopicPartition
from mirror.source.offset_sync_writer import MAX_OUTSTANDING_OFFSET_SYNCS, OffsetSyncWriter

logger = logging.getLogger(__name__)


class OffsetSyncProducer:
    """Owns the offset-syncs producer of one source task. Call from the task thread only."""

    def __init__(self, topic: str, producer_config: Mapping[str, Any], writer: OffsetSyncWriter, *,
                 producer_factory: Callable[[Mapping[str, Any]], Producer] = new_producer) -> None:
        self._topic = topic
        self._writer = writer
        self._producer = producer_factory(producer_config)
        self._in_flight = 0
        self._backlog = False
        self._keys: dict[TopicPartition, bytes] = {}  # encoded once per partition: it never changes
        self._lock = threading.Lock()
        self._closed = False

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def record(self, tp: TopicPartition, upstream: int, downstream: int) -> None:
        """A replicated record was acknowledged: update the writer and send whatever became due."""
        if self._closed:
            return
        # Only touch the producer when a sync became due or some are still waiting for a free slot.
        if self._writer.update(tp, upstream, downstream) or self._backlog:
            self.send_pending()

    def record_run(self, tp: TopicPartition, upstream: list[int], downstream: list[int]) -> None:
        """Several acknowledged records of one partition, in order: the same as :meth:`record` for each."""
        if self._closed:
            return
        self._writer.update_run(tp, upstream, downstream, self.send_pending)
        if self._backlog:
            self.send_pending()

    def record_range(self, tp: TopicPartition, upstream: int, downstream: int, count: int) -> None:
        """``count`` acknowledged records at consecutive offsets from (upstream, downstream): the same as
        :meth:`record` for each, deciding only where a sync fires."""
        if self._closed:
            return
        self._writer.update_range(tp, upstream, downstream, count, self.send_pending)
        if self._backlog:
            self.send_pending()

    def promote_delayed_and_send(self) -> None:
        """On task commit: every partition's latest sync becomes due (KAFKA-15906), then send."""
        if self._closed:
            return
        self._writer.promote_delayed()
        self.send_pending()

    def send_pending(self) -> None:
        self._producer.poll(0)  # serve delivery callbacks first: they free in-flight slots
        with self._lock:
            free = MAX_OUTSTANDING_OFFSET_SYNCS - self._in_flight
            syncs = self._writer.take_pending(free) if free > 0 else []
            self._in_flight += len(syncs)
            # all slots used: more may be pending, so retry on the next record even if none becomes due
            self._backlog = len(syncs) >= free
        for sync in syncs:
            self._send(sync)

    def _send(self, sync: OffsetSync) -> None:
        tp = sync.topic_partition
        key = self._keys.get(tp)
        if key is None:
            key = self._keys[tp] = sync.key_bytes()
        try:
            # positionally (topic, value, key, partition, on_delivery): keyword arguments cost the client
            # more than the call itself, and this runs on the task thread once per offset.lag.max records
            self._producer.produce(self._topic, sync.value_bytes(), key, 0, self._delivered)
        except (BufferError, Exception) as exc:  # KafkaException too: a sync is best-effort, never fatal
            with self._lock:
                self._in_flight -= 1
            logger.error("Failure sending offset sync %s to %s: %s", sync, self._topic, exc)

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        with self._lock:
            self._in_flight -= 1
        if error is not None:
            try:
                sync: object = OffsetSync.from_record(msg.key(), msg.value())
            except MalformedRecordError:
                sync = "?"
            logger.error("Failure sending offset sync %s to %s: %s", sync, self._topic, error)

    def flush(self, timeout_s: float = 10.0) -> None:
        if not self._closed:
            self._producer.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Deliver what was sent (bounded), then close the producer (what is left is dropped)."""
        if self._closed:
            return
        self._closed = True
        remaining = close_producer(self._producer, timeout_s)
        if remaining:
            logger.warning("%d offset syncs to %s were not delivered before close", remaining, self._topic)
