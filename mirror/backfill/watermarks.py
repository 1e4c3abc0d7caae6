"""Exact partition watermarks from a fetch response (ListOffsets "latest" is wrong on some brokers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import TopicPartition as KafkaTopicPartition

from connect_runtime.clients.factory import new_consumer
from connect_runtime.clients.log_reader import end_offsets, raise_error

TopicPartitionT = tuple[str, int]


def snapshot_watermarks(consumer_config: Mapping[str, Any], partitions: Iterable[TopicPartitionT],
                        timeout_s: float = 60.0) -> dict[TopicPartitionT, tuple[int, int]]:
    """(log start, end) per partition, the end taken from a fetch response's high watermark.

    ListOffsets "latest" is wrong on some brokers (Tansu: the last batch's base offset + 1); the fetch
    high watermark is exact everywhere. Each partition is fetched from its start until it returned one
    record or its end-of-partition event (:func:`~connect_runtime.clients.log_reader.end_offsets`); the
    log start is the cached (fetch-response) low watermark.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    consumer = new_consumer({**consumer_config, "group.id": consumer_config.get("group.id", "mm2-backfill-plan"),
                         "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest",
                         "allow.auto.create.topics": False,
                         # small fetch limits make brokers that return whole batches (Tansu) retry for
                         # seconds; the defaults answer at once. At the end, do not wait for data.
                         "fetch.wait.max.ms": 10})
    try:
        # offset 0 + auto.offset.reset=earliest reaches the log start without a ListOffsets round trip
        ends = end_offsets(consumer, dict.fromkeys(wanted, 0), timeout_s, on_error=raise_error)
        if len(ends) < len(wanted):
            late = sorted(set(wanted) - set(ends))
            raise TimeoutError(f"no fetch response within {timeout_s}s for {late[:5]}")
        result = {}
        for topic, partition in wanted:
            low, _ = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), cached=True)
            if low < 0:  # not reported by the fetch: the log start is exact through ListOffsets
                low, _ = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=10)
            result[(topic, partition)] = (max(0, low), max(0, ends[(topic, partition)]))
        return result
    finally:
        consumer.close()
