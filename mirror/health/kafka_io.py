"""The few Kafka reads the health probe needs, done the way that is exact on every broker.

End offsets come from the **fetch response high watermark** (``enable.partition.eof`` and
``get_watermark_offsets(cached=True)`` after a fetch), never from ListOffsets: that is exact on Kafka
and also on brokers whose ListOffsets "latest" is not (Tansu with multi-record batches). The same fetch
that tells the end also returns the first unread record, whose timestamp is the lag in seconds.

One consumer per cluster is reused for every read (``assign`` replaces the assignment and restarts the
fetch state, so each read ends with a fresh end-of-partition event). Nothing here joins a group or
commits: the group id only satisfies librdkafka.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

logger = logging.getLogger(__name__)

TP = tuple[str, int]

_UNKNOWN = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION})


@dataclass(frozen=True)
class PartitionProbe:
    """What one fetch told about a partition: its end and the first record at or after the position."""

    end_offset: int
    first_offset: int | None
    first_timestamp_ms: int | None


class ClusterIO:
    """Lazily built consumer + admin client of one cluster, for read-only probing. Not thread-safe."""

    def __init__(self, alias: str, consumer_config: Mapping[str, str], admin_config: Mapping[str, str]) -> None:
        self.alias = alias
        self._consumer_config = {
            **consumer_config,
            "group.id": f"mirror-health-{uuid.uuid4().hex[:8]}",  # never joined, never committed
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "auto.offset.reset": "earliest",
            "allow.auto.create.topics": "false",
            "fetch.wait.max.ms": "50",  # an empty fetch answers quickly: reads end at EOF sooner
            "max.partition.fetch.bytes": "65536",  # only the first record of a lagging partition matters
            "isolation.level": "read_uncommitted",
        }
        self._admin_config = {**admin_config, "allow.auto.create.topics": "false"}
        self._consumer: Consumer | None = None
        self._admin: AdminClient | None = None

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(dict(self._consumer_config))
        return self._consumer

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(dict(self._admin_config))
        return self._admin

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._admin = None

    def topics(self, timeout_s: float) -> dict[str, int]:
        """Topic name -> partition count (raises KafkaException when the cluster cannot be reached)."""
        metadata = self.admin.list_topics(timeout=timeout_s)
        return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}

    def read(self, positions: dict[TP, int], timeout_s: float) -> tuple[list[Message], bool]:
        """Every record from ``positions`` to each partition's current end; ``positions`` advance in place.

        A position may be ``OFFSET_BEGINNING``. Returns the records and whether every partition reached
        its end before the timeout (a partial read is still used: the next read continues from it).
        """
        if not positions:
            return [], True
        consumer = self.consumer
        consumer.assign([KafkaTopicPartition(t, p, o) for (t, p), o in positions.items()])
        pending = set(positions)
        records: list[Message] = []
        deadline = time.monotonic() + timeout_s
        try:
            while pending and (remaining := deadline - time.monotonic()) > 0:
                msg = consumer.poll(min(remaining, 0.2))
                if msg is None:
                    continue
                key = (msg.topic() or "", msg.partition() or 0)
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(key)
                        if (msg.offset() or 0) >= 0 and key in positions:
                            positions[key] = max(positions[key], msg.offset() or 0)
                    elif err.code() in _UNKNOWN:
                        pending.discard(key)
                    else:
                        logger.debug("%s: read error (retrying until the deadline): %s", self.alias, err)
                    continue
                records.append(msg)
                positions[key] = (msg.offset() or 0) + 1
        finally:
            consumer.unassign()
        return records, not pending

    def probe(self, positions: Mapping[TP, int], timeout_s: float) -> dict[TP, PartitionProbe]:
        """For each partition: its end offset and the first record at or after the given position.

        The end offset is the high watermark of the fetch response. Partitions that did not answer
        before the timeout are missing from the result.
        """
        if not positions:
            return {}
        consumer = self.consumer
        assignment = [KafkaTopicPartition(t, p, o if o >= 0 else OFFSET_BEGINNING) for (t, p), o in positions.items()]
        consumer.assign(assignment)
        result: dict[TP, PartitionProbe] = {}
        paused: list[KafkaTopicPartition] = []
        deadline = time.monotonic() + timeout_s
        try:
            while len(result) < len(positions) and (remaining := deadline - time.monotonic()) > 0:
                msg = consumer.poll(min(remaining, 0.2))
                if msg is None:
                    continue
                key = (msg.topic() or "", msg.partition() or 0)
                if key in result or key not in positions:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        result[key] = PartitionProbe(msg.offset() or 0, None, None)
                    elif err.code() in _UNKNOWN:
                        logger.debug("%s: %s-%d does not exist", self.alias, *key)
                    continue
                _, high = consumer.get_watermark_offsets(KafkaTopicPartition(*key), cached=True)
                offset = msg.offset() or 0
                result[key] = PartitionProbe(max(high, offset + 1), offset, _timestamp(msg))
                consumer.pause([KafkaTopicPartition(*key)])  # one record is all we need
                paused.append(KafkaTopicPartition(*key))
        finally:
            if paused:  # librdkafka keeps a partition paused across unassign/assign: undo it
                consumer.resume(paused)
            consumer.unassign()
        return result

    def committed_offsets(self, timeout_s: float) -> dict[str, dict[TP, int]]:
        """Every consumer group's committed offsets (group -> (topic, partition) -> offset)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        listing = self.admin.list_consumer_groups(request_timeout=timeout_s).result(timeout=timeout_s)
        groups = [g.group_id for g in listing.valid]
        result: dict[str, dict[TP, int]] = {}
        for group in groups:
            futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                             request_timeout=timeout_s)
            answer: Any = futures[group].result(timeout=timeout_s)
            result[group] = {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions
                             if tp.offset >= 0 and tp.error is None}
        return result


def _timestamp(msg: Message) -> int | None:
    kind, value = msg.timestamp()
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE

    return None if kind == TIMESTAMP_NOT_AVAILABLE or value < 0 else int(value)
