"""Records that source tasks hand to the runtime."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Header list as confluent-kafka takes and returns it: ordered, duplicates allowed, values may be None.
Headers = Sequence[tuple[str, bytes | None]]

#: A Connect source partition or offset: a JSON-able mapping (str keys; str/int/bool/None values).
SourceMap = Mapping[str, Any]


# A source partition map is looked up in two places, for two reasons, so it has two keys and no more:
def canonical_partition_json(partition: SourceMap) -> str:
    """The partition as canonical JSON (sorted keys, no spaces): stable text, the key under which
    ``SourceConnector.alter_offsets`` receives KIP-875 offsets and the form users see."""
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"))


def partition_identity(partition: SourceMap) -> Hashable:
    """A hashable identity for the per-record path, independent of key order.

    ``frozenset(items)`` is several times cheaper than canonical JSON and covers the usual flat maps of
    str/int values; nested (unhashable) values fall back to sorted JSON.
    """
    try:
        return frozenset(partition.items())
    except TypeError:
        return json.dumps(partition, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(slots=True)
class SourceRecord:
    """One record a :class:`~connect_runtime.api.task.SourceTask` wants written to Kafka.

    ``source_partition`` / ``source_offset`` say where in the *external* system the record came from;
    the runtime stores the latest acknowledged offset per source partition and gives it back to the
    task after a restart through :class:`~connect_runtime.api.offsets.OffsetStorageReader`.
    ``partition=None`` lets the producer's partitioner choose. ``timestamp=None`` means "now".
    Key and value are bytes already (the byte-array converter is the identity).
    """

    topic: str
    value: bytes | None
    key: bytes | None = None
    partition: int | None = None
    headers: Headers | None = None
    timestamp: int | None = None
    source_partition: SourceMap = field(default_factory=dict)
    source_offset: SourceMap | None = None


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where the target cluster stored a record; given to ``SourceTask.commit_record``."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = None


class DeliveredRecord(Protocol):
    """Where the target stored an acknowledged record, as the producer reports it.

    This is the shape of ``confluent_kafka.Message``: the runtime hands the producer's own delivery
    report to :meth:`~connect_runtime.api.task.SourceTask.commit_records` instead of copying it into a
    :class:`RecordMetadata` per record, which costs more than the rest of the acknowledgement.
    """

    def topic(self) -> str | None: ...

    def partition(self) -> int | None: ...

    def offset(self) -> int | None: ...

    def timestamp(self) -> tuple[int, int]: ...


#: Records the target acknowledged since the last call, in delivery order, with their delivery reports.
Acknowledged = Sequence[tuple[SourceRecord, DeliveredRecord]]


def metadata_of(delivered: DeliveredRecord) -> RecordMetadata:
    """The :class:`RecordMetadata` of a delivery report (timestamp None when the broker gave none)."""
    ts_type, ts = delivered.timestamp()
    offset = delivered.offset()
    return RecordMetadata(delivered.topic() or "", delivered.partition() or 0, -1 if offset is None else offset,
                          ts if ts_type else None)
