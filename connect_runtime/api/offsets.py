"""Read access to the source offsets a connector stored in earlier lives."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from connect_runtime.api.records import SourceMap


class OffsetStorageReader(Protocol):
    """Looks up the last committed source offset for a connector's source partitions.

    Offsets returned are those the runtime committed: every record up to them was acknowledged by
    the target cluster. Thread-safe; answers from the worker's in-memory copy of the offsets topic.
    """

    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        """Return the stored offset of one source partition, or None if none is stored."""
        ...

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        """Return ``(partition, offset-or-None)`` for each requested partition, in order."""
        ...
