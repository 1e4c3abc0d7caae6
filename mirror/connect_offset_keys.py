"""The Connect source partition and offset maps MM2's connectors write (Kafka ``MirrorUtils.wrap*``).

They live in ``mm2-offsets.<src>.internal``, which Java MM2 may share, so the keys and their order are
Java's byte for byte; the connectors, the backfill hand-over and the KIP-875 validators
(:mod:`mirror.offset_validation`) all build or read them from here.
"""

from __future__ import annotations

from typing import Any

SOURCE_CLUSTER_KEY = "cluster"
TOPIC_KEY = "topic"
PARTITION_KEY = "partition"
OFFSET_KEY = "offset"
CONSUMER_GROUP_ID_KEY = "group"
SOURCE_CLUSTER_ALIAS_KEY = "sourceClusterAlias"
TARGET_CLUSTER_ALIAS_KEY = "targetClusterAlias"


def wrap_partition(source_alias: str, topic: str, partition: int) -> dict[str, Any]:
    """The source task's Connect partition, keys in Java ``HashMap`` order (cluster, partition, topic).

    The order matters only for byte-identical keys in a shared offsets topic (compaction compares bytes).
    """
    return {SOURCE_CLUSTER_KEY: source_alias, PARTITION_KEY: partition, TOPIC_KEY: topic}


def wrap_offset(offset: int) -> dict[str, int]:
    return {OFFSET_KEY: offset}
