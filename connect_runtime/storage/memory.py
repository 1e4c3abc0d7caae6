"""MemoryOffsetStore: source offsets in a dict, for tests and standalone runs without a cluster.

The one in-memory offset store: unit tests, the one-task harness, fake herders and the hot-path
benchmark all use it, so a test double cannot drift from the store the runtime is tested with.

Partitions are matched by value, not by the byte order of their JSON: ``{"a":1,"b":2}`` and
``{"b":2,"a":1}`` are the same source partition (:func:`partition_id`), as the Kafka store does.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Sequence

from connect_runtime.api.errors import ConnectError
from connect_runtime.api.records import SourceMap
from connect_runtime.storage.offset_store import OffsetMap


def partition_id(partition: SourceMap) -> str:
    """A canonical text of a source partition map: equal maps, whatever their key order, give equal ids."""
    return json.dumps(partition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class MemoryOffsetStore:
    """An :class:`~connect_runtime.storage.offset_store.OffsetStore` that forgets everything on exit.

    Stores deep copies and returns deep copies, so callers can never change stored offsets by mutating
    a map they passed in or got back.

    What tests observe: ``started`` (between ``start`` and ``stop``), ``history`` (every successful
    ``put`` as ``(connector, [(partition, offset or None), ...])``, so a test can check what was
    committed when) and ``fail_puts`` (set it and ``put`` raises ConnectError, to test commit failures).
    """

    def __init__(self) -> None:
        self._data: dict[str, dict[str, tuple[SourceMap, OffsetMap]]] = {}
        self._lock = threading.Lock()
        self.started = False
        self.history: list[tuple[str, list[tuple[SourceMap, OffsetMap | None]]]] = []
        self.fail_puts = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def get(self, connector: str, partition: SourceMap) -> OffsetMap | None:
        with self._lock:
            entry = self._data.get(connector, {}).get(partition_id(partition))
        return copy.deepcopy(dict(entry[1])) if entry is not None else None

    def connector_offsets(self, connector: str) -> list[tuple[SourceMap, OffsetMap]]:
        """Ordered by :func:`partition_id`, so listings (REST ``GET /offsets``) are reproducible."""
        with self._lock:
            entries = [entry for _, entry in sorted(self._data.get(connector, {}).items())]
        return [(copy.deepcopy(dict(p)), copy.deepcopy(dict(o))) for p, o in entries]

    def connectors(self) -> list[str]:
        """Connectors with at least one stored offset."""
        with self._lock:
            return sorted(c for c, entries in self._data.items() if entries)

    def put(self, connector: str, offsets: Sequence[tuple[SourceMap, OffsetMap | None]],
            timeout_s: float = 30.0) -> None:
        if self.fail_puts:
            raise ConnectError("offset store unavailable (fail_puts is set)")
        with self._lock:
            entries = self._data.setdefault(connector, {})
            for partition, offset in offsets:
                key = partition_id(partition)
                if offset is None:
                    entries.pop(key, None)
                else:
                    entries[key] = (copy.deepcopy(dict(partition)), copy.deepcopy(dict(offset)))
            self.history.append((connector, [(copy.deepcopy(dict(p)), None if o is None else copy.deepcopy(dict(o)))
                                             for p, o in offsets]))

    def refresh(self, timeout_s: float = 30.0) -> None:
        pass
