"""Where source offsets live: the interface shared by the worker, the herder and KIP-875 REST.

Connect's on-disk format (docs/migration.md) is kept byte for byte so that a Java Connect/MM2 worker
reads what we write and vice versa: the record key is the compact JSON array
``[<connector name>, <source partition map>]`` and the value the compact JSON offset map, or null (a
tombstone) to forget a partition. Implementations: :mod:`connect_runtime.storage.memory` (tests,
standalone) and :mod:`connect_runtime.storage.kafka_offset_store` (the ``offset.storage.topic``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from connect_runtime.api.records import SourceMap

OffsetMap = Mapping[str, Any]


def serialize_key(connector: str, partition: SourceMap) -> bytes:
    """Connect's offsets-topic key: compact JSON ``[connector, partition]`` (insertion order kept)."""
    return json.dumps([connector, dict(partition)], separators=(",", ":"), ensure_ascii=False).encode()


def serialize_value(offset: OffsetMap | None) -> bytes | None:
    return None if offset is None else json.dumps(dict(offset), separators=(",", ":"), ensure_ascii=False).encode()


class OffsetStore(Protocol):
    """Source offsets of every connector of one Connect cluster.

    ``start`` loads the whole store (for the Kafka store: reads the topic to its end) before returning.
    Reads are served from memory. ``put`` returns only once the write is durable (acknowledged by the
    cluster), so a caller that commits after ``put`` never claims an offset that could be lost.
    Thread-safe.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def get(self, connector: str, partition: SourceMap) -> OffsetMap | None:
        """The latest stored offset of one source partition of ``connector``, or None."""
        ...

    def connector_offsets(self, connector: str) -> list[tuple[SourceMap, OffsetMap]]:
        """Every (partition, offset) stored for ``connector`` (tombstoned partitions excluded)."""
        ...

    def put(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]],
            timeout_s: float = 30.0) -> None:
        """Durably store offsets (None = tombstone). Raises ConnectError on failure or timeout."""
        ...

    def refresh(self, timeout_s: float = 30.0) -> None:
        """Catch up with writes made by other workers (read to the end of the log)."""
        ...
