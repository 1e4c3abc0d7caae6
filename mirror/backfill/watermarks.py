"""Exact partition watermarks from a fetch response (ListOffsets "latest" is wrong on some brokers)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

TopicPartitionT = tuple[str, int]


def snapshot_watermarks(consumer_config: Mapping[str, Any], partitions: Iterable[TopicPartitionT],
                        timeout_s: float = 60.0) -> dict[TopicPartitionT, tuple[int, int]]:
    """(log start, end) per partition, the end taken from a fetch response's high watermark.

    ListOffsets "latest" is wrong on some brokers (Tansu: the last batch's base offset + 1); the fetch
    high watermark is exact everywhere. Each partition is fetched from its start until it returned one
    record or its end-of-partition event, then the cached (fetch-response) watermarks are read.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    consumer = Consumer({**consumer_config, "group.id": consumer_config.get("group.id", "mm2-backfill-plan"),
                         "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest",
                         "allow.auto.create.topics": False,
                         # small fetch limits make brokers that return whole batches (Tansu) retry for
                         # seconds; the defaults answer at once. At the end, do not wait for data.
                         "fetch.wait.max.ms": 10})
    try:
        # offset 0 + auto.offset.reset=earliest reaches the log start without a ListOffsets round trip
        consumer.assign([KafkaTopicPartition(t, p, 0) for t, p in wanted])
        pending = set(wanted)
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no fetch response within {timeout_s}s for {sorted(pending)[:5]}")
            for msg in consumer.consume(1000, 0.05):
                error = msg.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                tp = (msg.topic() or "", msg.partition() or 0)
                if tp in pending:
                    pending.discard(tp)
                    consumer.pause([KafkaTopicPartition(*tp)])
        result = {}
        for topic, partition in wanted:
            low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), cached=True)
            if low < 0:  # not reported by the fetch: the log start is exact through ListOffsets
                low, _ = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=10)
            result[(topic, partition)] = (max(0, low), max(0, high))
        return result
    finally:
        consumer.close()
