"""The :class:`~connect_runtime.api.offsets.OffsetStorageReader` a connector and its tasks receive.

It is the worker's offset store seen through one connector name, so a connector can never read (or be
confused by) another connector's partitions that happen to look alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from connect_runtime.api.records import SourceMap
from connect_runtime.storage.offset_store import OffsetStore


class ConnectorOffsetReader:
    """Reads the committed source offsets of one connector from the worker's :class:`OffsetStore`."""

    __slots__ = ("_connector", "_store")

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: SourceMap) -> Mapping[str, Any] | None:
        return self._store.get(self._connector, partition)

    def offsets(self, partitions: Iterable[SourceMap]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
        return [(p, self._store.get(self._connector, p)) for p in partitions]
