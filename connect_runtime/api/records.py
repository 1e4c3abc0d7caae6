"""Records that source tasks hand to the runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
