"""A MirrorSourceTask's source consumer: how it is configured and where each partition starts.

The consumer is *assigned* (no group membership). A partition with a stored Connect offset ``o >= 0``
resumes at ``o + 1``; one without starts where the consumer's ``auto.offset.reset`` says (``earliest``
unless configured), which is how "replicate from latest" works (KAFKA-13988). That start is given as a
logical offset (beginning or end), never as "no offset": librdkafka would first ask the group
coordinator for the committed offset of a group that never commits, and an answer of NOT_COORDINATOR
(the coordinator still loading or moving) left the partition unfetched for good, its task RUNNING and
copying nothing (found by the Apache Kafka tier, tests/kafka/test_kafka_chaos.py). A partition whose backfill is done
starts at ``max(stored offset + 1, backfill end)`` (docs/backfill.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connect_runtime.api.offsets import OffsetStorageReader
from connect_runtime.clients.factory import translate
from mirror.backfill_markers.markers import streaming_start
from mirror.connect_offset_keys import OFFSET_KEY, PARTITION_KEY, TOPIC_KEY, wrap_partition

#: Java's ``max.poll.records`` default: the most records one ``poll`` returns.
MAX_POLL_RECORDS_DEFAULT = 500

#: librdkafka prefetch settings for a copier (no Java equivalent; the user's keys win). With librdkafka's
#: defaults a partition stops being fetched for ``fetch.queue.backoff.ms`` (1 s) once
#: ``queued.min.messages`` (100,000) are queued: a task that drains them in a few milliseconds then idles
#: most of each second (measured on Tansu: 180-230k vs 758k records/s). The queue stays bounded in bytes by
#: ``queued.max.messages.kbytes`` (64 MiB).
COPIER_CONSUMER_DEFAULTS = {"queued.min.messages": "1000000", "fetch.queue.backoff.ms": "10"}


def copier_consumer_config(java_consumer: Mapping[str, str], label: str) -> dict[str, Any]:
    """The librdkafka config of the source consumer, from its Java-style keys."""
    consumer_config = translate(java_consumer, "consumer")
    # librdkafka needs a group.id even for assign(); Java MM2 has none, so nothing is ever committed
    # under it. Java's consumer default is read_uncommitted (aborted source data IS copied unless
    # the user asks for read_committed); librdkafka's default differs, so say it explicitly.
    consumer_config.setdefault("group.id", java_consumer.get("client.id", label))
    consumer_config.setdefault("isolation.level", "read_uncommitted")
    for key, value in COPIER_CONSUMER_DEFAULTS.items():
        consumer_config.setdefault(key, value)
    return consumer_config


def start_when_unknown(consumer_config: Mapping[str, Any]) -> int:
    """Where a partition with no stored offset starts: the consumer's ``auto.offset.reset`` as a logical
    offset (librdkafka's default is the end, as Java's). ``none``/``error`` stay OFFSET_INVALID: the
    consumer then reports the missing offset, as Java's throws."""
    reset = str(consumer_config.get("auto.offset.reset", "latest")).strip().lower()
    if reset in ("earliest", "smallest", "beginning"):
        return OFFSET_BEGINNING
    if reset in ("latest", "largest", "end"):
        return OFFSET_END
    return OFFSET_INVALID


def initial_assignment(reader: OffsetStorageReader, source: str, partitions: list[tuple[str, int]],
                       done_ends: Mapping[tuple[str, int], int],
                       unknown: int = OFFSET_INVALID) -> list[KafkaTopicPartition]:
    """Each partition at its start position; ``unknown`` (:func:`start_when_unknown`) where nothing is
    stored."""
    wrapped = [wrap_partition(source, topic, partition) for topic, partition in partitions]
    stored = reader.offsets(wrapped) if wrapped else []
    offsets: dict[tuple[str, int], int] = {}
    for partition_map, offset_map in stored:
        value = None if offset_map is None else offset_map.get(OFFSET_KEY)
        if isinstance(value, int) and value >= 0:
            offsets[(str(partition_map[TOPIC_KEY]), int(partition_map[PARTITION_KEY]))] = value + 1
    result = []
    for t, p in partitions:
        start = streaming_start(offsets.get((t, p)), done_ends.get((t, p)))
        result.append(KafkaTopicPartition(t, p, unknown if start is None else start))
    return result
