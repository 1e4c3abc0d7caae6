"""MemoryOffsetStore: source offsets in a dict, for tests and standalone runs without a cluster.

Partitions are matched by value, not by the byte order of their JSON: ``{"a":1,"b":2}`` and
``{"b":2,"a":1}`` are the same source partition (:func:`partition_id`), as the Kafka store does.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Sequence

from connect_runtime.api.records import SourceMap
from connect_runtime.storage.offset_store import OffsetMap


def partition_id(partition: SourceMap) -> str:
    """A canonical text of a source partition map: equal maps, whatever their key order, give equal ids."""
    return json.dumps(partition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class MemoryOffsetStore:
    """An :class:`~connect_runtime.storage.offset_store.OffsetStore` that forgets everything on exit.

    Stores deep copies and returns deep copies, so callers can never change stored offsets by mutating
    a map they passed in or got back.
    """

    def __init__(self) -> None:
        self._data: dict[str, dict[str, tuple[SourceMap, OffsetMap]]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def get(self, connector: str, partition: SourceMap) -> OffsetMap | None:
        with self._lock:
            entry = self._data.get(connector, {}).get(partition_id(partition))
        return copy.deepcopy(dict(entry[1])) if entry is not None else None

    def connector_offsets(self, connector: str) -> list[tuple[SourceMap, OffsetMap]]:
        with self._lock:
            entries = list(self._data.get(connector, {}).values())
        return [(copy.deepcopy(dict(p)), copy.deepcopy(dict(o))) for p, o in entries]

    def connectors(self) -> list[str]:
        """Connectors with at least one stored offset."""
        with self._lock:
            return sorted(c for c, entries in self._data.items() if entries)

    def put(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]],
            timeout_s: float = 30.0) -> None:
        with self._lock:
            entries = self._data.setdefault(connector, {})
            for partition, offset in offsets:
                key = partition_id(partition)
                if offset is None:
                    entries.pop(key, None)
                else:
                    entries[key] = (copy.deepcopy(dict(partition)), copy.deepcopy(dict(offset)))

    def refresh(self, timeout_s: float = 30.0) -> None:
        pass
