"""MM2's client library (Kafka ``connect/mirror-client``): naming policies, record formats, MirrorClient.

Usable without the Connect runtime: it depends on the runtime's boundary around the Kafka client libraries
(``connect_runtime.clients``) and nothing else of it, as Java's mirror-client depends on kafka-clients only.

Public names are imported on first use (PEP 562 ``__getattr__``): ``mirror.client.models`` and the other
submodules are imported by the runtime and every ``mirror`` command, and importing them must not import
``MirrorClient`` and confluent-kafka with them (``mirror <command> --help`` would pay ~60 ms for it).
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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

#: The submodule each public name lives in.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "mirror.client.mirror_client": ("MirrorClient", "checkpoint_topics", "heartbeat_topics", "replication_hops",
                                    "translate_offsets", "upstream_clusters"),
    "mirror.client.models": ("Checkpoint", "Heartbeat", "MalformedRecordError", "OffsetAndMetadata", "OffsetSync",
                             "TopicPartition"),
    "mirror.client.offset_map": ("OffsetMap", "OffsetRun", "offset_map_topic"),
    "mirror.client.replication_policy": ("DefaultReplicationPolicy", "IdentityReplicationPolicy", "ReplicationPolicy",
                                         "is_cycle", "load_policy_class", "policy_from_config"),
}
_LOCATIONS = {name: module for module, names in _SUBMODULES.items() for name in names}

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


def __getattr__(name: str) -> object:
    module = _LOCATIONS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
