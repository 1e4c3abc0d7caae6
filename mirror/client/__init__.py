"""MM2's client library (Kafka ``connect/mirror-client``): naming policies, record formats, MirrorClient.

Usable without the Connect runtime: it depends on confluent-kafka only.
"""

from mirror.client.mirror_client import (
    MirrorClient,
    checkpoint_topics,
    heartbeat_topics,
    replication_hops,
    translate_offsets,
    upstream_clusters,
)
from mirror.client.models import (
    Checkpoint,
    Heartbeat,
    MalformedRecordError,
    OffsetAndMetadata,
    OffsetSync,
    TopicPartition,
)
from mirror.client.offset_map import OffsetMap, OffsetRun, offset_map_topic
from mirror.client.replication_policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
    load_policy_class,
    policy_from_config,
)

__all__ = [
    "Checkpoint",
    "DefaultReplicationPolicy",
    "Heartbeat",
    "IdentityReplicationPolicy",
    "MalformedRecordError",
    "MirrorClient",
    "OffsetAndMetadata",
    "OffsetMap",
    "OffsetRun",
    "OffsetSync",
    "ReplicationPolicy",
    "TopicPartition",
    "checkpoint_topics",
    "heartbeat_topics",
    "is_cycle",
    "load_policy_class",
    "offset_map_topic",
    "policy_from_config",
    "replication_hops",
    "translate_offsets",
    "upstream_clusters",
]
