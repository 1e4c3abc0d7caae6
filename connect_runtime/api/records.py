"""Records that source tasks hand to the runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Header list as confluent-kafka takes and returns it: ordered, duplicates allowed, values may be None.
Headers = Sequence[tuple[str, bytes | None]]

#: A Connect source partition or offset: a JSON-able mapping (str keys; str/int/bool/None values).
SourceMap = Mapping[str, Any]


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
